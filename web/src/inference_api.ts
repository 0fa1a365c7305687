// SPDX-License-Identifier: Apache-2.0
// What the Inference views share: the metric keys, labels and attributes of the inference
// source (src/agent/sources/inference/inference_metrics.h, docs/design/inference.md), the
// serving processes of a scope (a host, or a model across hosts) and the figures of a window.
import { getJson, knownMetrics } from './api';
import type { Params, Point, RangeResponse, Series } from './api';

export const M = {
  ttft: 'inference.time_to_first_token',
  itl: 'inference.inter_token_latency',
  e2e: 'inference.request_latency',
  queueTime: 'inference.queue_time',
  running: 'inference.requests.running',
  waiting: 'inference.requests.waiting',
  requestRate: 'inference.request.rate',
  tokenRate: 'inference.token.rate',
  kvCache: 'inference.kv_cache.usage',
  prefixHit: 'inference.prefix_cache.hit_ratio',
  batchSize: 'inference.batch.size',
  batchLimit: 'inference.batch.limit',
  efficiency: 'inference.batch.efficiency',
} as const;

export const ATTR_ENGINE = 'inference.engine';
export const ATTR_GPUS = 'inference.gpu.uuids';

// Said wherever a scope has no serving process.
export const NO_SERVER_HELP =
  'The agent discovers vLLM, SGLang, TensorRT-LLM and TGI servers from their command lines and scrapes their Prometheus endpoints (agent --enable-inference-metrics, on when a server is found; --inference-targets for servers it cannot discover).';

const ENGINES: Record<string, string> = { vllm: 'vLLM', sglang: 'SGLang', trtllm: 'TensorRT-LLM', tgi: 'TGI' };

export function engineName(e: string | undefined): string {
  return e ? (ENGINES[e] ?? e) : 'unknown engine';
}

// What the configured batch limit is, by basis.
export function basisLimitName(basis: string | undefined): string {
  return basis === 'tokens' ? 'max_num_batched_tokens' : basis === 'sequences' ? 'max_num_seqs' : 'limit';
}

// One serving process of the scope, from its series' entity attributes.
export interface Serving {
  host: string;
  entity: string;
  pid: number | undefined;
  engine: string;
  executable: string;
  gpus: string[]; // UUIDs, NVML index order
  models: string[];
}

export function gpusOf(attributes: Record<string, string>): string[] {
  return (attributes[ATTR_GPUS] ?? '')
    .split(',')
    .map((u) => u.trim())
    .filter((u) => u !== '');
}

export const servingKey = (host: string, entity: string): string => `${host}\u0000${entity}`;

// The serving processes that wrote `series`, in host then pid order.
export function servingOf(series: Series[]): Serving[] {
  const out = new Map<string, Serving>();
  for (const s of series) {
    const key = servingKey(s.host, s.entity);
    let p = out.get(key);
    if (!p) {
      const pid = Number(s.attributes['process.pid'] ?? /^pid\/(\d+)\//.exec(s.entity)?.[1] ?? NaN);
      p = {
        host: s.host,
        entity: s.entity,
        pid: Number.isFinite(pid) ? pid : undefined,
        engine: s.attributes[ATTR_ENGINE] ?? '',
        executable: s.attributes['process.executable.name'] ?? 'process',
        gpus: gpusOf(s.attributes),
        models: [],
      };
      out.set(key, p);
    }
    const model = s.labels['model'];
    if (model !== undefined && !p.models.includes(model)) p.models.push(model);
  }
  return [...out.values()].sort((a, b) => a.host.localeCompare(b.host) || (a.pid ?? 0) - (b.pid ?? 0) || a.entity.localeCompare(b.entity));
}

// A step that gives one bucket (or two, by alignment) over the window: the window's figures.
export function windowStep(start: number, end: number): string {
  return `${Math.max(10, Math.ceil(end - start))}s`;
}

// The mean of the non-null points, or null.
export function meanOf(points: Point[]): number | null {
  let n = 0;
  let sum = 0;
  for (const [, v] of points) {
    if (v !== null) {
      n++;
      sum += v;
    }
  }
  return n ? sum / n : null;
}

// The serving processes of a scope (`matchers`: host=, or label.model=) that wrote the running
// requests gauge in [start, end] (every scrape writes it); [] when no agent ever sent inference
// metrics. One request, one bucket per series.
export async function findServing(matchers: Params, start: number, end: number): Promise<Serving[]> {
  if (!(await knownMetrics()).has(M.running)) return [];
  const r = await getJson<RangeResponse>('/api/v1/query_range', { ...matchers, kind: 'process', metric: M.running, start, end, step: windowStep(start, end), agg: 'last' });
  return servingOf(r.series);
}

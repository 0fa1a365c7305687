// SPDX-License-Identifier: Apache-2.0
// The server's query API (docs/api.md), typed for the views.

export type Point = [number, number | null];

export interface MetricInfo {
  key: string;
  kind: 'gauge' | 'counter';
  unit: string;
  help: string;
  entity_kind: string;
}

export interface Series {
  host: string;
  entity: string;
  kind: string;
  labels: Record<string, string>;
  attributes: Record<string, string>;
  points: Point[];
}

export interface RangeResponse {
  metric: MetricInfo;
  start: number;
  end: number;
  step: number;
  series: Series[];
}

export interface TopEntry {
  host: string;
  entity: string;
  kind: string;
  attributes: Record<string, string>;
  value: number | null;
  latest: number | null;
  latest_time: number;
  sparkline?: Point[];
}

export interface EntityRecord {
  host: string;
  kind: string;
  id: string;
  parent: string;
  attributes: Record<string, string>;
  first_seen: number;
  last_seen: number;
}

export interface EventRecord {
  host: string;
  entity: string;
  time: number;
  kind: string;
  code: number;
  message: string;
  attributes: Record<string, string>;
}

export interface FleetHost {
  host: string;
  attributes: Record<string, string>;
  last_seen: number;
  gpus: number;
  gpu_utilization: number | null;
  power_watts: number | null;
  power_limit_watts: number | null;
  memory_used_bytes: number | null;
  memory_total_bytes: number | null;
  temperature_max: number | null;
  gpu_processes: number;
  degraded_gpus: number;
  events: number;
  xid_events: number;
}

export interface FleetResponse {
  start: number;
  end: number;
  totals: Omit<FleetHost, 'host' | 'attributes' | 'last_seen' | 'xid_events'> & {
    hosts: number;
    hosts_with_problems: number;
  };
  hosts: FleetHost[];
  utilization: Point[];
  power: Point[];
}

export interface BreakdownGroup {
  key: string;
  entities: number;
  series: number;
  points: Point[];
}

export interface BreakdownResponse {
  metric: MetricInfo;
  by: string;
  step: number;
  groups: BreakdownGroup[];
}

export interface ProfileMeta {
  id: number;
  host: string;
  entity: string;
  pid: number;
  executable: string;
  kind: string;
  start: number;
  end: number;
  labels: Record<string, string>;
  size_bytes: number;
}

export interface FlameNode {
  name: string;
  self: number[];
  total: number[];
  children?: FlameNode[];
}

export interface MergedTree {
  sample_types: { type: string; unit: string }[];
  value: number;
  profiles: number;
  skipped_profiles: number;
  root: FlameNode;
}

export class ApiError extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

export type Params = Record<string, string | number | undefined | null>;

export function apiUrl(path: string, params: Params = {}): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  }
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}

export async function getJson<T>(path: string, params: Params = {}, signal?: AbortSignal): Promise<T> {
  const res = await fetch(apiUrl(path, params), { signal, headers: { Accept: 'application/json' } });
  if (!res.ok) {
    let message = `HTTP ${res.status}`;
    try {
      const body = await res.json();
      if (body && typeof body.error === 'string') message = body.error;
    } catch {
      // not JSON: keep the status line
    }
    throw new ApiError(res.status, message);
  }
  return (await res.json()) as T;
}

let metricsCache: Promise<Map<string, MetricInfo>> | null = null;

// Every metric the server knows, by key (fetched once per page load; a metric appears the first
// time any agent sends it, so a miss is refetched at most once a minute).
let metricsFetched = 0;
export function knownMetrics(): Promise<Map<string, MetricInfo>> {
  if (!metricsCache || Date.now() - metricsFetched > 60_000) {
    metricsFetched = Date.now();
    metricsCache = getJson<{ metrics: MetricInfo[] }>('/api/v1/metrics').then(
      (r) => new Map(r.metrics.map((m) => [m.key, m])),
      (e) => {
        metricsCache = null;
        throw e;
      },
    );
  }
  return metricsCache;
}

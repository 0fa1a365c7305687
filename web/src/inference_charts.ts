// SPDX-License-Identifier: Apache-2.0
// The charts and the serving-process table of an inference scope (a host's Inference tab, one
// model across hosts): latency percentiles over time (TTFT, inter-token, end to end, queue time),
// throughput, queue, KV cache, prefix-cache hits, batch efficiency with its limit and basis, and
// the utilization and power of the GPUs the serving processes use (inference.gpu.uuids). Every
// query of a scope goes out in one batch request (one query per chart, the batch limit's shared
// by two); a click on a point opens the clicked process's GPU profile for that bucket.
import { knownMetrics, QueryBatcher } from './api';
import type { Params, RangeResponse, Series } from './api';
import type { ChartLine, Limit, Marker } from './chart';
import { h } from './dom';
import { formatValue } from './format';
import { ATTR_GPUS, basisLimitName, engineName, M, meanOf, servingKey } from './inference_api';
import type { Serving } from './inference_api';
import type { ViewContext } from './view';
import { Widget } from './widget';

export interface InferenceScope {
  // Selects the scope's series: host=, or label.model=.
  matchers: Params;
  serving: Serving[];
  // Whether lines and rows name their host (a scope across hosts).
  acrossHosts: boolean;
  // Opens the GPU profile of `p` (of every process of the scope when undefined) for [start, end].
  open: (c: ViewContext, p: Serving | undefined, start: number, end: number) => void;
}

interface ChartDef {
  id: string;
  title: string;
  note?: string;
  metric: string;
  agg?: string;
  unit?: string;
  yMax?: number;
  // What a series adds to its process's name (quantile, token type, basis).
  detail?: (s: Series) => string;
  latency?: boolean;
  missing: string;
}

const quantileName = (s: Series) => {
  const q = Number(s.labels['quantile']);
  return Number.isFinite(q) ? `p${Math.round(q * 100)}` : (s.labels['quantile'] ?? '?');
};

const LATENCY_MISSING = 'No request finished in this window, or the engine does not report this histogram.';

const GROUPS: { title: string; charts: ChartDef[] }[] = [
  {
    title: 'Latency',
    charts: [
      { id: 'inf-ttft', title: 'Time to first token', note: 'p50 / p95 / p99 of the requests finished', metric: M.ttft, detail: quantileName, latency: true, missing: `${LATENCY_MISSING} TGI has no time-to-first-token histogram.` },
      { id: 'inf-itl', title: 'Inter-token latency', note: 'time per output token', metric: M.itl, detail: quantileName, latency: true, missing: LATENCY_MISSING },
      { id: 'inf-e2e', title: 'End-to-end latency', note: 'arrival to last token', metric: M.e2e, detail: quantileName, latency: true, missing: LATENCY_MISSING },
      { id: 'inf-queue-time', title: 'Queue time', note: 'waiting before first scheduled', metric: M.queueTime, detail: quantileName, latency: true, missing: LATENCY_MISSING },
    ],
  },
  {
    title: 'Throughput and queue',
    charts: [
      { id: 'inf-requests', title: 'Requests', note: 'finished per second', metric: M.requestRate, missing: 'No request throughput reported.' },
      { id: 'inf-tokens', title: 'Tokens', note: 'per second, input (prompt) and output (generated)', metric: M.tokenRate, detail: (s) => s.labels['token_type'] ?? '?', missing: 'No token throughput reported.' },
      { id: 'inf-running', title: 'Requests running', note: 'in the batch', metric: M.running, missing: 'No running-requests gauge reported.' },
      { id: 'inf-waiting', title: 'Requests waiting', note: 'in the queue', metric: M.waiting, missing: 'No waiting-requests gauge reported.' },
    ],
  },
  {
    title: 'Cache and batching',
    charts: [
      { id: 'inf-kv', title: 'KV-cache use', note: 'share of blocks in use', metric: M.kvCache, yMax: 1, missing: 'The engine reports no KV-cache use.' },
      { id: 'inf-prefix', title: 'Prefix-cache hits', note: 'share of prompt tokens found', metric: M.prefixHit, yMax: 1, missing: 'No prefix-cache lookups in this window, or the engine does not report them (prefix caching off).' },
      { id: 'inf-efficiency', title: 'Batch efficiency', note: 'average batch over the configured limit', metric: M.efficiency, yMax: 1, detail: (s) => s.labels['basis'] ?? '', missing: 'No batch efficiency: the agent found no batch limit in the server\'s arguments, or no engine step ran.' },
      { id: 'inf-batch', title: 'Batch size', note: 'average per engine step, with the limit', metric: M.batchSize, unit: '', detail: (s) => s.labels['basis'] ?? '', missing: 'No batch size reported.' },
    ],
  },
];

const GPU_CHARTS: ChartDef[] = [
  { id: 'inf-gpu-util', title: 'GPU utilization', metric: 'gpu.utilization', yMax: 1, missing: 'No GPU utilization received for these GPUs.' },
  { id: 'inf-gpu-power', title: 'GPU power', metric: 'gpu.power.usage', missing: 'No GPU power received for these GPUs.' },
];

// With more latency lines than this, a latency chart shows the p95 of each process only.
const MAX_LATENCY_LINES = 9;

// The figures of a serving process over the window, for its table row.
interface Row {
  requests: number | null;
  ttftP95: number | null;
  efficiency: { value: number; basis: string } | null;
  limit: { value: number; basis: string } | null;
}

export class InferencePanel {
  readonly el: HTMLElement;
  private readonly widgets = new Map<string, Widget>();
  private readonly table = h('div', { 'data-testid': 'serving-table' });
  private readonly gpuNote = h('p.muted', { 'data-testid': 'inference-gpus' });
  private markers: Marker[] = [];

  constructor(private readonly scope: InferenceScope) {
    const section = (title: string, charts: ChartDef[], extra?: HTMLElement) => {
      const grid = h('div.widget-grid');
      for (const d of charts) {
        const w = new Widget(d.title, d.note, d.id);
        this.widgets.set(d.id, w);
        grid.append(w.el);
      }
      return h('section.group', { 'aria-label': title }, h('h2', {}, title), extra ?? null, grid);
    };
    this.el = h(
      'div.inference',
      {},
      h('section.group', { 'aria-label': 'Serving processes' }, h('h2', {}, 'Serving processes'), this.table),
      ...GROUPS.map((g) => section(g.title, g.charts)),
      section('GPUs of these processes', GPU_CHARTS, this.gpuNote),
    );
  }

  // The chart cards, for the page that destroys them.
  allWidgets(): Widget[] {
    return [...this.widgets.values()];
  }

  // Every chart and the table for the window of `c`, in one batch of range queries (`q`: the
  // page's batch); `markers` (events, finding bands, profile windows) are drawn on every chart.
  async load(c: ViewContext, q = new QueryBatcher(), markers: Marker[] = []): Promise<void> {
    this.markers = markers;
    const known = await knownMetrics();
    const range = { start: c.start, end: c.end };
    const get = (metric: string, params: Params): Promise<RangeResponse | null> => (known.has(metric) ? q.get<RangeResponse>('/api/v1/query_range', { ...params, metric, ...range }) : Promise.resolve(null));
    const proc = { ...this.scope.matchers, kind: 'process' };
    const defs = GROUPS.flatMap((g) => g.charts);
    const answers = defs.map((d) => get(d.metric, { ...proc, agg: d.agg }).then(ok, fail));
    const limit = get(M.batchLimit, { ...proc, agg: 'last' }).then(ok, fail);
    const gpuHosts = this.gpuHosts();
    const gpuAnswers = GPU_CHARTS.map((d) => Promise.all([...gpuHosts.keys()].map((host) => get(d.metric, { host, kind: 'gpu' }))).then(ok, fail));
    const [limitAnswer, ...results] = await Promise.all([limit, ...answers]);
    const limits = limitAnswer.r ? limitAnswer.r.series : [];
    defs.forEach((d, i) => this.draw(c, d, results[i], d.id === 'inf-batch' ? limits : []));
    this.table.replaceChildren(this.servingTable(c, results, defs, limits));
    const gpuResults = await Promise.all(gpuAnswers);
    this.drawGpus(c, gpuResults);
  }

  // The UUIDs of each host's GPUs that the scope's processes use.
  private gpuHosts(): Map<string, Set<string>> {
    const out = new Map<string, Set<string>>();
    for (const p of this.scope.serving) {
      if (!p.gpus.length) continue;
      const set = out.get(p.host) ?? new Set<string>();
      p.gpus.forEach((g) => set.add(g));
      out.set(p.host, set);
    }
    return out;
  }

  private byKey(): Map<string, Serving> {
    return new Map(this.scope.serving.map((p) => [servingKey(p.host, p.entity), p]));
  }

  // The name of a series' process in a line's label: as much as tells the scope's lines apart.
  private who(s: Series): string {
    const serving = this.scope.serving;
    const p = this.byKey().get(servingKey(s.host, s.entity));
    const parts: string[] = [];
    if (this.scope.acrossHosts && new Set(serving.map((x) => x.host)).size > 1) parts.push(s.host);
    if (serving.length > 1) parts.push(p?.pid !== undefined ? `pid ${p.pid}` : s.entity);
    if (new Set(serving.flatMap((x) => x.models)).size > 1 && s.labels['model']) parts.push(s.labels['model']);
    return parts.join(' · ');
  }

  private draw(c: ViewContext, d: ChartDef, a: Answer, limitSeries: Series[]): void {
    const w = this.widgets.get(d.id)!;
    if (a.error) {
      w.unavailable(`Cannot load ${d.title.toLowerCase()}: ${a.error}`);
      return;
    }
    if (!a.r || a.r.series.length === 0) {
      w.unavailable(a.r ? `${d.missing} (${d.metric}, none in this window)` : `No agent has sent ${d.metric}. ${d.missing}`);
      return;
    }
    let series = a.r.series;
    let note = '';
    if (d.latency && series.length > MAX_LATENCY_LINES) {
      series = series.filter((s) => s.labels['quantile'] === '0.95');
      note = `p95 of each of the ${this.scope.serving.length} processes; the p50 and p99 are on each host's Inference tab.`;
    }
    const owner = new Map<string, Serving | undefined>();
    const byKey = this.byKey();
    const lines: ChartLine[] = series.map((s) => {
      const label = [this.who(s), d.detail?.(s) ?? ''].filter((x) => x !== '').join(' · ') || d.title;
      owner.set(label, byKey.get(servingKey(s.host, s.entity)));
      return { label, points: s.points };
    });
    lines.sort((x, y) => x.label.localeCompare(y.label, undefined, { numeric: true }));
    const limits = distinctLimits(limitSeries);
    if (d.id === 'inf-efficiency') note = limitsNote(limitSeries);
    this.show(c, w, d, a.r, lines, limits, (label) => (label === null ? undefined : owner.get(label)));
    w.notes.replaceChildren(note ? h('p.muted', {}, note) : '');
  }

  private show(c: ViewContext, w: Widget, d: ChartDef, r: RangeResponse, lines: ChartLine[], limits: Limit[], owner: (label: string | null) => Serving | undefined): void {
    const step = r.step;
    w.show({
      unit: d.unit ?? r.metric.unit,
      lines,
      limits,
      start: c.start,
      end: c.end,
      step,
      yMax: d.yMax,
      markers: this.markers,
      ariaLabel: d.title,
      onZoom: (a, b) => c.navigate({ from: a, to: b, range: '', live: false }),
      onPick: (t, label) => {
        const width = Math.max(step, 60);
        const start = t - (width - step) / 2;
        this.scope.open(c, owner(label), start, start + width);
      },
    });
  }

  private drawGpus(c: ViewContext, results: { r: (RangeResponse | null)[] | null; error?: string }[]): void {
    const hosts = this.gpuHosts();
    const users = new Map<string, Serving>();
    for (const p of this.scope.serving) for (const g of p.gpus) if (!users.has(g)) users.set(g, p);
    const names = new Map<string, string>();
    GPU_CHARTS.forEach((d, i) => {
      const w = this.widgets.get(d.id)!;
      const a = results[i];
      if (hosts.size === 0) {
        w.unavailable(`The serving processes name no GPU (${ATTR_GPUS} is empty: NVML listed none of their processes).`);
        return;
      }
      if (a.error) {
        w.unavailable(`Cannot load ${d.title.toLowerCase()}: ${a.error}`);
        return;
      }
      const answers = (a.r ?? []).filter((x): x is RangeResponse => x !== null);
      const owner = new Map<string, Serving | undefined>();
      const lines: ChartLine[] = [];
      for (const r of answers) {
        for (const s of r.series) {
          if (!hosts.get(s.host)?.has(s.entity)) continue;
          const gpu = `GPU ${s.attributes['gpu.index'] ?? s.entity}`;
          const label = hosts.size > 1 ? `${s.host} · ${gpu}` : gpu;
          names.set(s.entity, label);
          owner.set(label, users.get(s.entity));
          lines.push({ label, points: s.points });
        }
      }
      lines.sort((x, y) => x.label.localeCompare(y.label, undefined, { numeric: true }));
      if (answers.length === 0 || lines.length === 0) {
        w.unavailable(`${d.missing} (${d.metric})`);
        return;
      }
      this.show(c, w, d, answers[0], lines, [], (label) => (label === null ? undefined : owner.get(label)));
    });
    const links = [...hosts].flatMap(([host, set]) => [...set].map((uuid) => ({ host, uuid, name: names.get(uuid) ?? uuid })));
    this.gpuNote.replaceChildren(
      ...(links.length
        ? ['The GPUs the serving processes use (', h('code', {}, ATTR_GPUS), '): ', ...links.flatMap((g, i) => [i ? ', ' : '', h('a', { href: c.href({ view: 'gpu', host: g.host, gpu: g.uuid }), title: g.uuid }, g.name)])]
        : []),
    );
  }

  // One row per serving process: who, engine, models, GPUs, and its figures over the window.
  private servingTable(c: ViewContext, results: Answer[], defs: ChartDef[], limits: Series[]): HTMLElement {
    const seriesOf = (id: string) => results[defs.findIndex((d) => d.id === id)].r?.series ?? [];
    const rows = new Map<string, Row>();
    const row = (s: Series) => {
      const k = servingKey(s.host, s.entity);
      if (!rows.has(k)) rows.set(k, { requests: null, ttftP95: null, efficiency: null, limit: null });
      return rows.get(k)!;
    };
    for (const s of seriesOf('inf-requests')) {
      const v = meanOf(s.points);
      if (v !== null) row(s).requests = (row(s).requests ?? 0) + v;
    }
    for (const s of seriesOf('inf-ttft')) {
      const v = s.labels['quantile'] === '0.95' ? meanOf(s.points) : null;
      if (v !== null) row(s).ttftP95 = Math.max(row(s).ttftP95 ?? 0, v);
    }
    for (const s of seriesOf('inf-efficiency')) {
      const v = meanOf(s.points);
      if (v !== null && (row(s).efficiency === null || v > row(s).efficiency!.value)) row(s).efficiency = { value: v, basis: s.labels['basis'] ?? '' };
    }
    for (const s of limits) {
      const v = lastOf(s);
      if (v !== null) row(s).limit = { value: v, basis: s.labels['basis'] ?? '' };
    }
    const across = this.scope.acrossHosts;
    const th = (t: string, num = false) => h(num ? 'th.num' : 'th', { scope: 'col' }, t);
    const body = this.scope.serving.map((p) => {
      const r = rows.get(servingKey(p.host, p.entity)) ?? { requests: null, ttftP95: null, efficiency: null, limit: null };
      const eff = r.efficiency ? `${formatValue(r.efficiency.value, '1')}${r.limit ? ` of ${basisLimitName(r.limit.basis)} ${Math.round(r.limit.value)}` : ` (${r.efficiency.basis})`}` : '–';
      const profile = c.href({ view: 'host', host: p.host, tab: 'inference', profile: { start: c.start, end: c.end, kind: 'gpu', pid: p.pid } });
      return h(
        'tr',
        { 'data-entity': p.entity, 'data-host': p.host },
        h('td', {}, h('a', { href: c.href({ view: 'process', host: p.host, process: p.entity }), 'data-testid': 'serving-process' }, `${p.executable} (pid ${p.pid ?? '?'})`)),
        across ? h('td', {}, h('a', { href: c.href({ view: 'host', host: p.host, tab: 'inference' }) }, p.host)) : null,
        h('td', {}, engineName(p.engine)),
        h('td', {}, ...p.models.flatMap((m, i) => [i ? ', ' : '', across ? m : h('a', { href: c.href({ view: 'model', model: m }) }, m)])),
        h('td', {}, p.gpus.length ? p.gpus.map((g) => g.slice(0, 12)).join(', ') : 'none known'),
        h('td.num', { 'data-col': 'requests' }, formatValue(r.requests, '')),
        h('td.num', { 'data-col': 'ttft' }, r.ttftP95 === null ? '–' : formatValue(r.ttftP95, 's')),
        h('td.num', { 'data-col': 'efficiency' }, eff),
        h('td', {}, p.pid !== undefined ? h('a', { href: profile, 'data-testid': 'serving-profile' }, 'GPU profile') : '–'),
      );
    });
    return h(
      'div.table-scroll',
      {},
      h(
        'table.data',
        {},
        h('thead', {}, h('tr', {}, th('Process'), across ? th('Host') : null, th('Engine'), th('Models'), th('GPUs'), th('Requests/s', true), th('TTFT p95', true), th('Batch efficiency', true), th('Profile'))),
        h('tbody', {}, ...body),
      ),
    );
  }
}

interface Answer {
  r: RangeResponse | null;
  error?: string;
}
function ok<T>(r: T): { r: T; error?: string } {
  return { r };
}
function fail(e: unknown): { r: null; error: string } {
  return { r: null, error: (e as Error).message };
}

function lastOf(s: Series): number | null {
  for (let k = s.points.length - 1; k >= 0; k--) {
    const v = s.points[k][1];
    if (v !== null) return v;
  }
  return null;
}

// The batch limits of the window as limit lines, one per distinct value and basis.
function distinctLimits(series: Series[]): Limit[] {
  const seen = new Map<string, Limit>();
  for (const s of series) {
    const v = lastOf(s);
    if (v === null) continue;
    const label = `${basisLimitName(s.labels['basis'])} ${Math.round(v)}`;
    seen.set(label, { label, value: v });
  }
  return [...seen.values()].slice(0, 3);
}

// "basis tokens: of max_num_batched_tokens 8192" for the efficiency chart.
function limitsNote(series: Series[]): string {
  const parts = distinctLimits(series).map((l) => l.label);
  return parts.length ? `Measured against ${parts.join(', ')} (the server's arguments or its defaults).` : '';
}

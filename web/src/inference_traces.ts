// SPDX-License-Identifier: Apache-2.0
// The request traces of one model (docs/design/inference.md, "Request traces"): the latency
// breakdown by phase (a stacked bar of where the time goes and a table of percentiles), time to
// first token by prefix/KV-cache reuse, the slowest and the latest requests, and one request's
// waterfall (trace= in the URL) with its attributes and its serving process's GPU profile.
// With no request in the window the slot stays hidden and one muted line says how to send them.
import { ApiError, getJson } from './api';
import { paletteColor } from './chart';
import { h } from './dom';
import { formatTicks, formatTime, formatValue, niceTicks } from './format';
import type { ViewContext } from './view';

export interface LatencyStats {
  count: number;
  mean: number | null;
  p50: number | null;
  p95: number | null;
  p99: number | null;
  max: number | null;
}

// Where a request came from, and the API's link to that process's GPU profile of the window.
export interface TraceOrigin {
  entity: { host: string; kind: 'process' | 'host'; pid?: number; entity_prefix?: string; service: string };
  profile: string;
}

export interface TraceBreakdown {
  model: string;
  start: number;
  end: number;
  requests: number;
  errors: number;
  truncated: boolean;
  phases: (LatencyStats & { phase: string })[];
  ttft: LatencyStats & { cache_hit: LatencyStats; cache_miss: LatencyStats; cache_unknown: number };
  e2e: LatencyStats;
  processes: TraceOrigin[];
}

export interface TracePhase {
  phase: string;
  offset: number;
  duration: number;
  name?: string;
  span_id?: string;
  start?: number;
  attributes?: Record<string, string>;
}

export interface TraceRequest extends TraceOrigin {
  trace_id: string;
  span_id: string;
  request_id: string;
  name: string;
  model: string;
  start: number;
  end: number;
  duration: number;
  ttft: number | null;
  prompt_tokens: number | null;
  completion_tokens: number | null;
  cached_tokens: number | null;
  error: boolean;
  phases: TracePhase[];
  attributes?: Record<string, string>;
}

// The lifecycle phases in request order; an engine's other phases come after them.
const PHASES = ['preprocess', 'receive', 'tokenize', 'queue', 'prefill', 'decode', 'detokenize', 'respond'];
const LIST_LIMIT = 10;

const phaseRank = (p: string) => {
  const i = PHASES.indexOf(p);
  return i < 0 ? PHASES.length : i;
};
const phaseColor = (p: string, others: string[]) => paletteColor(PHASES.includes(p) ? PHASES.indexOf(p) : PHASES.length + others.indexOf(p));
const secs = (v: number | null | undefined) => formatValue(v, 's');

// The UI's link to the GPU profile the API names (/api/v1/profiles/merged?host=&pid=&start=&end=):
// the host page's profile panel on that process and window.
export function profileHref(c: ViewContext, o: TraceOrigin): string | null {
  let u: URL;
  try {
    u = new URL(o.profile, window.location.origin);
  } catch {
    return null;
  }
  const host = u.searchParams.get('host') ?? o.entity.host;
  const start = Number(u.searchParams.get('start'));
  const end = Number(u.searchParams.get('end'));
  if (!host || !Number.isFinite(start) || !(end > start)) return null;
  const pid = u.searchParams.has('pid') ? Number(u.searchParams.get('pid')) : undefined;
  return c.href({ view: 'host', host, tab: 'inference', profile: { start, end, kind: 'gpu', pid } });
}

const originName = (o: TraceOrigin) => (o.entity.pid !== undefined ? `${o.entity.host} · pid ${o.entity.pid}` : o.entity.host);

export class TracePanel {
  // The slot between the serving processes and their charts; hidden without traces.
  readonly el = h('section.group', { 'data-testid': 'model-traces', 'aria-label': 'Request traces', hidden: true });
  // The line that says how to send traces, shown when there are none.
  readonly help = h('p.muted', { 'data-testid': 'traces-help', hidden: true });

  constructor(private readonly model: string) {}

  // `first`: the view's first load, which scrolls to the waterfall of trace=.
  async load(c: ViewContext, first = false): Promise<void> {
    const params = { model: this.model, start: Math.floor(c.start), end: Math.ceil(c.end) };
    const requests = (order: string) => getJson<{ requests: TraceRequest[] }>('/api/v1/traces/requests', { ...params, order, limit: LIST_LIMIT }).then((r) => r.requests);
    const [b, slowest, recent, trace] = await Promise.all([
      getJson<TraceBreakdown>('/api/v1/traces/breakdown', params).catch((e: Error) => e),
      requests('slowest').catch(() => [] as TraceRequest[]),
      requests('recent').catch(() => [] as TraceRequest[]),
      c.state.trace ? getJson<{ requests: TraceRequest[] }>(`/api/v1/traces/${c.state.trace}`).catch((e: Error) => e) : Promise.resolve(null),
    ]);
    const none = b instanceof ApiError && b.status === 404;
    if (none || (!(b instanceof Error) && b.requests === 0 && trace === null)) {
      this.el.hidden = true;
      this.el.replaceChildren();
      this.showHelp();
      return;
    }
    this.help.hidden = true;
    this.el.hidden = false;
    this.el.replaceChildren(
      h('h2', {}, 'Request traces'),
      b instanceof Error ? h('p.error', { role: 'alert' }, `Cannot load the latency breakdown: ${b.message}`) : this.summary(c, b),
      ...(trace === null ? [] : [this.waterfalls(c, trace)]),
      ...(b instanceof Error || b.requests === 0 ? [] : [h('div.trace-lists', {}, this.list(c, 'Slowest requests', 'slowest', slowest), this.list(c, 'Latest requests', 'recent', recent))]),
    );
    if (first && trace !== null) this.el.querySelector('[data-testid=waterfall]')?.scrollIntoView({ block: 'nearest' });
  }

  private showHelp(): void {
    const endpoint = `${window.location.origin}/v1/traces`;
    this.help.hidden = false;
    this.help.replaceChildren(
      'No request traces for this model in this window. To see latency by phase and request waterfalls, start vLLM with ',
      h('code', {}, `--otlp-traces-endpoint ${endpoint}`),
      ' and ',
      h('code', {}, 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/protobuf OTEL_RESOURCE_ATTRIBUTES=host.name=$(hostname),process.pid=$$'),
      ' (docs/design/inference.md, "Request traces").',
    );
  }

  // The counts, the stacked bar of where a request's time goes, the phase table and TTFT by reuse.
  private summary(c: ViewContext, b: TraceBreakdown): HTMLElement {
    const phases = [...b.phases].sort((x, y) => phaseRank(x.phase) - phaseRank(y.phase) || x.phase.localeCompare(y.phase));
    const others = phases.map((p) => p.phase).filter((p) => !PHASES.includes(p));
    const total = phases.reduce((s, p) => s + (p.mean ?? 0) * p.count, 0);
    const bar = h('div.phase-bar', { 'data-testid': 'phase-bar', role: 'img', 'aria-label': 'Share of the requests\u2019 time by phase' });
    const legend = h('ul.flame-legend', {});
    for (const p of phases) {
      const share = total > 0 ? ((p.mean ?? 0) * p.count) / total : 0;
      if (share <= 0) continue;
      const seg = h('span', { 'data-phase': p.phase, title: `${p.phase}: ${formatValue(share, '1')} of the time (mean ${secs(p.mean)} over ${p.count} requests)` });
      seg.style.width = `${share * 100}%`;
      seg.style.background = phaseColor(p.phase, others);
      bar.append(seg);
      const swatch = h('span.swatch', {});
      swatch.style.background = phaseColor(p.phase, others);
      legend.append(h('li', {}, swatch, `${p.phase} ${formatValue(share, '1')}`));
    }
    const th = (t: string, num = true, title?: string) => h(num ? 'th.num' : 'th', { scope: 'col', title }, t);
    const stats = (s: LatencyStats) => [
      h('td.num', { 'data-col': 'count' }, String(s.count)),
      h('td.num', { 'data-col': 'p50' }, secs(s.p50)),
      h('td.num', { 'data-col': 'p95' }, secs(s.p95)),
      h('td.num', { 'data-col': 'p99' }, secs(s.p99)),
      h('td.num', { 'data-col': 'mean' }, secs(s.mean)),
      h('td.num', { 'data-col': 'max' }, secs(s.max)),
    ];
    const head = (first: string) => h('thead', {}, h('tr', {}, th(first, false), th('Requests'), th('p50'), th('p95'), th('p99'), th('Mean'), th('Max')));
    const phaseTable = h(
      'table.data',
      { 'data-testid': 'phase-table' },
      head('Phase'),
      h('tbody', {}, ...phases.map((p) => h('tr', { 'data-phase': p.phase }, h('th', { scope: 'row' }, p.phase), ...stats(p)))),
      h('tfoot', {}, h('tr', { 'data-phase': 'e2e' }, h('th', { scope: 'row' }, 'end to end'), ...stats(b.e2e))),
    );
    const t = b.ttft;
    const split = t.cache_hit.count + t.cache_miss.count > 0;
    const ttftTable = h(
      'table.data',
      { 'data-testid': 'ttft-cache' },
      head('Time to first token'),
      h(
        'tbody',
        {},
        h('tr', { 'data-reuse': 'all' }, h('th', { scope: 'row' }, 'all requests'), ...stats(t)),
        split ? h('tr', { 'data-reuse': 'hit' }, h('th', { scope: 'row', title: 'gen_ai.usage.cache_read.input_tokens > 0' }, 'prefix/KV-cache hit'), ...stats(t.cache_hit)) : null,
        split ? h('tr', { 'data-reuse': 'miss' }, h('th', { scope: 'row', title: 'gen_ai.usage.cache_read.input_tokens = 0' }, 'cache miss'), ...stats(t.cache_miss)) : null,
        t.cache_unknown > 0 ? h('tr', { 'data-reuse': 'unknown' }, h('th', { scope: 'row' }, 'reuse not reported'), h('td.num', { 'data-col': 'count' }, String(t.cache_unknown)), h('td', { colspan: 5 }, '')) : null,
      ),
    );
    const profiles = b.processes
      .map((o) => ({ o, href: profileHref(c, o) }))
      .filter((x) => x.href !== null)
      .flatMap((x, i) => [i ? ', ' : '', h('a', { href: x.href!, 'data-testid': 'traces-profile', 'data-api': x.o.profile }, originName(x.o))]);
    return h(
      'div',
      {},
      h(
        'p.muted',
        { 'data-testid': 'traces-summary' },
        `${b.requests} request${b.requests === 1 ? '' : 's'}${b.errors ? `, ${b.errors} with errors` : ''} in this window${b.truncated ? ' (the latest ones only: more were sent)' : ''}`,
        profiles.length ? ['. GPU profile of the window: ', ...profiles] : '',
      ),
      h('div.phase-summary', {}, bar, legend),
      h('div.trace-tables', {}, h('div.table-scroll', {}, phaseTable), h('div.table-scroll', {}, ttftTable)),
      split ? null : h('p.muted', {}, 'The spans carry no gen_ai.usage.cache_read.input_tokens (vLLM\u2019s do not), so TTFT is not split by prefix/KV-cache reuse.'),
    );
  }

  private list(c: ViewContext, title: string, order: string, requests: TraceRequest[]): HTMLElement {
    const th = (t: string, num = false) => h(num ? 'th.num' : 'th', { scope: 'col' }, t);
    const tokens = (r: TraceRequest) => (r.prompt_tokens === null && r.completion_tokens === null ? '–' : `${r.prompt_tokens ?? '?'} → ${r.completion_tokens ?? '?'}${r.cached_tokens ? ` (${r.cached_tokens} cached)` : ''}`);
    return h(
      'div.table-scroll',
      {},
      h('h3', {}, title),
      requests.length === 0
        ? h('p.muted', {}, 'None in this window.')
        : h(
            'table.data',
            { 'data-testid': `trace-list-${order}` },
            h('thead', {}, h('tr', {}, th('Request'), th('Started'), th('Duration', true), th('TTFT', true), th('Tokens', true), th('Process'))),
            h(
              'tbody',
              {},
              ...requests.map((r) =>
                h(
                  'tr',
                  { 'data-trace': r.trace_id, class: r.trace_id === c.state.trace ? 'selected' : undefined },
                  h('td', {}, h('a', { href: c.href({ trace: r.trace_id }), 'data-testid': 'trace-link' }, r.request_id || r.trace_id.slice(0, 12)), r.error ? [' ', h('span.badge.bad', {}, 'error')] : null),
                  h('td', {}, formatTime(r.start)),
                  h('td.num', { 'data-col': 'duration' }, secs(r.duration)),
                  h('td.num', { 'data-col': 'ttft' }, secs(r.ttft)),
                  h('td.num', {}, tokens(r)),
                  h('td', {}, originName(r)),
                ),
              ),
            ),
          ),
    );
  }

  private waterfalls(c: ViewContext, answer: { requests: TraceRequest[] } | Error): HTMLElement {
    const close = h('a', { href: c.href({ trace: undefined }) }, 'Close');
    if (answer instanceof Error) {
      const why = answer instanceof ApiError && answer.status === 404 ? `Trace ${c.state.trace} is not kept: older than the server's --trace-retention, sampled out, or not an inference request.` : `Cannot load trace ${c.state.trace}: ${answer.message}`;
      return h('div.card', { 'data-testid': 'waterfall', role: 'alert' }, h('p', {}, why), h('p', {}, close));
    }
    return h('div.card', { 'data-testid': 'waterfall' }, h('p.muted', {}, `Trace ${c.state.trace} · `, close), ...answer.requests.map((r) => waterfall(c, r)));
  }
}

// One request: its phases as bars on a time axis from its start, its attributes beside.
function waterfall(c: ViewContext, r: TraceRequest): HTMLElement {
  const phases = [...r.phases].sort((x, y) => x.offset - y.offset || phaseRank(x.phase) - phaseRank(y.phase));
  const others = [...new Set(phases.map((p) => p.phase).filter((p) => !PHASES.includes(p)))];
  const span = Math.max(r.duration, ...phases.map((p) => p.offset + p.duration), 1e-9);
  const ticks = niceTicks(0, span, 5, 's');
  const pos = (v: number) => `${Math.min(100, Math.max(0, (v / span) * 100))}%`;
  const axis = h('div.wf-axis', { 'aria-hidden': 'true' });
  formatTicks(ticks, 's').forEach((label, i) => {
    const t = h('span', {}, label);
    t.style.left = pos(ticks[i]);
    axis.append(t);
  });
  const row = (name: string, offset: number, duration: number, color: string, attrs: Record<string, string>, title: string) => {
    const bar = h('span.wf-bar', { title });
    bar.style.left = pos(offset);
    bar.style.width = `max(2px, ${(Math.max(0, duration) / span) * 100}%)`;
    bar.style.background = color;
    return h('div.wf-row', attrs, h('span.wf-name', {}, name), h('span.wf-track', {}, bar), h('span.wf-dur.num', {}, secs(duration)));
  };
  const attrTitle = (a: Record<string, string> | undefined) => Object.entries(a ?? {}).map(([k, v]) => `${k}=${v}`).join('\n');
  const rows = [
    row('request', 0, r.duration, 'var(--fg-muted)', { 'data-phase': 'request' }, `${r.name}: ${secs(r.duration)}`),
    ...phases.map((p) => row(p.phase, p.offset, p.duration, phaseColor(p.phase, others), { 'data-phase': p.phase, 'data-offset': String(p.offset), 'data-duration': String(p.duration) }, [`${p.name ?? p.phase}: +${secs(p.offset)}, ${secs(p.duration)}`, attrTitle(p.attributes)].filter(Boolean).join('\n'))),
  ];
  if (r.ttft !== null) rows.push(row('first token', 0, r.ttft, 'var(--accent)', { 'data-phase': 'ttft' }, `time to first token ${secs(r.ttft)}`));
  const facts: [string, string][] = [
    ['request id', r.request_id || '–'],
    ['started', formatTime(r.start)],
    ['duration', secs(r.duration)],
    ['time to first token', secs(r.ttft)],
    ['prompt → completion tokens', `${r.prompt_tokens ?? '–'} → ${r.completion_tokens ?? '–'}`],
    ['cached prompt tokens', r.cached_tokens === null ? 'not reported' : String(r.cached_tokens)],
    ['process', originName(r) + (r.entity.service ? ` (${r.entity.service})` : '')],
    ...Object.entries(r.attributes ?? {}).sort(([a], [b]) => a.localeCompare(b)),
  ];
  const profile = profileHref(c, r);
  return h(
    'div.wf',
    { 'data-request': r.span_id },
    h('h3', {}, `${r.name} · ${r.model}`, r.error ? [' ', h('span.badge.bad', {}, 'error')] : null),
    h(
      'div.wf-layout',
      {},
      h('div.wf-chart', {}, axis, ...rows),
      h('div.table-scroll', {}, h('table.data.wf-attrs', { 'data-testid': 'trace-attributes' }, h('tbody', {}, ...facts.map(([k, v]) => h('tr', {}, h('th', { scope: 'row' }, k), h('td', {}, v)))))),
    ),
    profile ? h('p', {}, h('a', { href: profile, 'data-testid': 'trace-profile', 'data-api': r.profile }, `GPU profile of ${originName(r)} during this request`)) : null,
  );
}

// SPDX-License-Identifier: Apache-2.0
// The models served across hosts (/inference): one row per model with its hosts, engines,
// serving processes, request rate, TTFT p95 and batch efficiency over the window; and one model
// (/inference/<model>): its serving processes on every host, their latency, throughput, queue,
// caches and batching, and the GPUs they use (inference_charts.ts), and the model's request
// traces (inference_traces.ts).
import { batch, knownMetrics } from './api';
import type { Params, RangeResponse, Series } from './api';
import { h } from './dom';
import { formatValue } from './format';
import { InferencePanel } from './inference_charts';
import { engineName, findServing, M, meanOf, NO_SERVER_HELP, servingKey, windowStep } from './inference_api';
import { TracePanel } from './inference_traces';
import type { View, ViewContext } from './view';

interface ModelRow {
  model: string;
  hosts: Set<string>;
  engines: Set<string>;
  processes: Set<string>;
  requests: number | null;
  ttftP95: number | null;
  efficiency: number[];
  basis: Set<string>;
}

// The window's figures of every served model: four range queries of one bucket, in one batch.
async function modelRows(c: ViewContext): Promise<ModelRow[]> {
  const known = await knownMetrics();
  if (!known.has(M.running)) return [];
  const common: Params = { kind: 'process', start: c.start, end: c.end, step: windowStep(c.start, c.end) };
  const metrics: [string, Params][] = [
    [M.running, { agg: 'last' }],
    [M.requestRate, {}],
    [M.ttft, { 'label.quantile': '0.95' }],
    [M.efficiency, {}],
  ];
  const present = metrics.filter(([m]) => known.has(m));
  const answers = await batch(present.map(([metric, p]) => ({ path: 'query_range', params: { ...common, ...p, metric } })));
  const seriesOf = (metric: string): Series[] => {
    const i = present.findIndex(([m]) => m === metric);
    const a = answers[i] as RangeResponse | Error | undefined;
    return i < 0 || !a || a instanceof Error ? [] : a.series;
  };
  const rows = new Map<string, ModelRow>();
  const row = (s: Series) => {
    const model = s.labels['model'] ?? '(no model label)';
    if (!rows.has(model)) rows.set(model, { model, hosts: new Set(), engines: new Set(), processes: new Set(), requests: null, ttftP95: null, efficiency: [], basis: new Set() });
    const r = rows.get(model)!;
    r.hosts.add(s.host);
    if (s.attributes['inference.engine']) r.engines.add(s.attributes['inference.engine']);
    r.processes.add(servingKey(s.host, s.entity));
    return r;
  };
  seriesOf(M.running).forEach(row);
  for (const s of seriesOf(M.requestRate)) {
    const v = meanOf(s.points);
    if (v !== null) row(s).requests = (row(s).requests ?? 0) + v;
  }
  for (const s of seriesOf(M.ttft)) {
    const v = meanOf(s.points);
    if (v !== null) row(s).ttftP95 = Math.max(row(s).ttftP95 ?? 0, v);
  }
  for (const s of seriesOf(M.efficiency)) {
    const v = meanOf(s.points);
    if (v !== null) row(s).efficiency.push(v);
    if (s.labels['basis']) row(s).basis.add(s.labels['basis']);
  }
  return [...rows.values()].sort((a, b) => (b.requests ?? -1) - (a.requests ?? -1) || a.model.localeCompare(b.model));
}

function renderList(box: HTMLElement, c: ViewContext, rows: ModelRow[]): void {
  if (rows.length === 0) {
    box.replaceChildren(h('section.card', { 'data-testid': 'inference-empty' }, h('p', {}, 'No inference server reported in this window.'), h('p.muted', {}, NO_SERVER_HELP)));
    return;
  }
  const th = (t: string, num = false, title?: string) => h(num ? 'th.num' : 'th', { scope: 'col', title }, t);
  box.replaceChildren(
    h(
      'div.table-scroll',
      {},
      h(
        'table.data',
        { 'data-testid': 'model-table' },
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            th('Model'),
            th('Hosts'),
            th('Engines'),
            th('Processes', true),
            th('Requests/s', true, 'Requests finished per second, summed over the serving processes'),
            th('TTFT p95', true, 'The highest of the serving processes\u2019 mean p95 time to first token over the window'),
            th('Batch efficiency', true, 'The mean of the serving processes\u2019 batch efficiency over the window'),
          ),
        ),
        h(
          'tbody',
          {},
          ...rows.map((r) => {
            const eff = r.efficiency.length ? r.efficiency.reduce((a, b) => a + b, 0) / r.efficiency.length : null;
            return h(
              'tr',
              { 'data-model': r.model },
              h('td', {}, h('a', { href: c.href({ view: 'model', model: r.model }) }, r.model)),
              h('td', {}, ...[...r.hosts].sort().flatMap((host, i) => [i ? ', ' : '', h('a', { href: c.href({ view: 'host', host, tab: 'inference' }) }, host)])),
              h('td', {}, [...r.engines].map(engineName).sort().join(', ') || '–'),
              h('td.num', {}, String(r.processes.size)),
              h('td.num', { 'data-col': 'requests' }, formatValue(r.requests, '')),
              h('td.num', { 'data-col': 'ttft' }, r.ttftP95 === null ? '–' : formatValue(r.ttftP95, 's')),
              h('td.num', { 'data-col': 'efficiency' }, eff === null ? '–' : `${formatValue(eff, '1')}${r.basis.size ? ` (${[...r.basis].join(', ')})` : ''}`),
            );
          }),
        ),
      ),
    ),
  );
}

export async function inferenceView(root: HTMLElement, ctx: ViewContext): Promise<View> {
  const box = h('div', { 'data-testid': 'models' });
  root.append(h('div.host-head', {}, h('h1', {}, 'Inference'), h('p.muted', {}, 'Models served in this window, across hosts')), box);
  const load = async (c: ViewContext) => renderList(box, c, await modelRows(c));
  await load(ctx);
  return { refresh: load, destroy: () => {} };
}

export async function modelView(root: HTMLElement, ctx: ViewContext): Promise<View> {
  const model = ctx.state.model ?? '';
  const serving = await findServing({ 'label.model': model }, ctx.start, ctx.end);
  const head = h(
    'div.host-head',
    {},
    h('h1', {}, model),
    h('p.muted', {}, h('a', { href: ctx.href({ view: 'inference' }) }, 'Inference'), serving.length ? ` · ${serving.length} serving process${serving.length === 1 ? '' : 'es'} on ${new Set(serving.map((p) => p.host)).size} host(s)` : ''),
  );
  root.append(head);
  // The request traces of the model (latency by phase, a request waterfall) between the serving
  // processes and their charts; hidden, with a line on how to send them, when there are none.
  const traces = new TracePanel(model);
  head.append(traces.help);
  if (serving.length === 0) {
    root.append(
      h(
        'section.card.notfound',
        { 'data-testid': 'inference-empty', role: 'alert' },
        h('p', {}, `No serving process reported model ${model} in this window: check the name (as the engine labels it), or pick a longer window.`),
        h('p.muted', {}, NO_SERVER_HELP),
        h('p', {}, h('a', { href: ctx.href({ view: 'inference' }) }, 'Models served across the fleet')),
      ),
      traces.el,
    );
    await traces.load(ctx, true);
    return { refresh: (c) => traces.load(c), destroy: () => {} };
  }
  const panel = new InferencePanel({
    matchers: { 'label.model': model },
    serving,
    acrossHosts: true,
    open: (c, p, start, end) => c.navigate({ view: 'host', host: p?.host ?? serving[0].host, tab: 'inference', profile: { start, end, kind: 'gpu', pid: p?.pid } }),
  });
  panel.el.firstElementChild?.after(traces.el);
  root.append(panel.el);
  await Promise.all([panel.load(ctx), traces.load(ctx, true)]);
  return { refresh: async (c) => void (await Promise.all([panel.load(c), traces.load(c)])), destroy: () => panel.allWidgets().forEach((w) => w.destroy()) };
}

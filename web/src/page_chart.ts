// SPDX-License-Identifier: Apache-2.0
// What the process and GPU pages share: charts of one entity's metrics (each a Widget filled by
// range queries of the view's batch), a definition list of attributes, and the card that says an
// entity or its host is not known instead of a page of empty charts.
import { getJson, knownMetrics, QueryBatcher } from './api';
import type { EntityRecord, Params, RangeResponse, Series } from './api';
import type { ChartLine, Limit } from './chart';
import { h } from './dom';
import { formatValue } from './format';
import type { View, ViewContext } from './view';
import { Widget } from './widget';

export interface PageQuery {
  metric: string;
  agg?: string;
  // One line per series: its name (the metric's name when there is one series).
  label: (s: Series) => string;
}

// A metric of the chart's unit drawn as a dashed limit line at its latest value in the window
// (a temperature threshold), named `label` and the value.
export interface PageLimit {
  metric: string;
  label: string;
}

export interface PageChartDef {
  id: string;
  title: string;
  note?: string;
  queries: PageQuery[];
  limits?: PageLimit[];
  yMax?: number;
  stacked?: boolean;
  // Said when none of the metrics has been reported by any agent.
  missing: string;
}

export type PageLoader = (c: ViewContext, q: QueryBatcher) => Promise<void>;

// The unit of a query's values: a rate of a counter is per second.
function rateUnit(unit: string, agg: string | undefined): string {
  if (agg !== 'rate') return unit;
  if (unit === 'By') return 'By/s';
  if (/^\{.*\}$/.test(unit)) return `{${unit.slice(1, -1)}/s}`;
  return `${unit}/s`;
}

// A click on a point opens the host page's profile panel on this window.
export type OpenProfile = (c: ViewContext, start: number, end: number) => void;

// One chart per definition into `grid`; `matchers` select the entity (host, entity, labels).
// `onSeries` sees every series a chart drew (the process page lists the GPUs it found).
export function pageCharts(
  grid: HTMLElement,
  defs: PageChartDef[],
  matchers: Params,
  widgets: Widget[],
  loaders: PageLoader[],
  open: OpenProfile,
  onSeries?: (def: PageChartDef, series: Series[]) => void,
): void {
  for (const def of defs) {
    const w = new Widget(def.title, def.note, def.id);
    grid.append(w.el);
    widgets.push(w);
    loaders.push((c, q) =>
      loadChart(w, def, matchers, c, q, open, onSeries).catch((e) => w.unavailable(`Cannot load ${def.title.toLowerCase()}: ${(e as Error).message}`)),
    );
  }
}

async function loadChart(w: Widget, def: PageChartDef, matchers: Params, c: ViewContext, q: QueryBatcher, open: OpenProfile, onSeries?: (def: PageChartDef, series: Series[]) => void): Promise<void> {
  const known = await knownMetrics();
  const present = def.queries.filter((m) => known.has(m.metric));
  if (present.length === 0) {
    w.unavailable(def.missing);
    return;
  }
  const limitDefs = (def.limits ?? []).filter((l) => known.has(l.metric));
  // Queried in the same batch as the lines.
  const [results, limitResults] = await Promise.all([
    Promise.all(present.map((m) => q.get<RangeResponse>('/api/v1/query_range', { ...matchers, metric: m.metric, agg: m.agg, start: c.start, end: c.end }))),
    Promise.all(limitDefs.map((l) => q.get<RangeResponse>('/api/v1/query_range', { ...matchers, metric: l.metric, start: c.start, end: c.end }))),
  ]);
  const lines: ChartLine[] = [];
  let unit = '';
  let step = 60;
  const all: Series[] = [];
  results.forEach((r, i) => {
    unit ||= rateUnit(r.metric.unit, present[i].agg);
    step = r.step;
    // Lines of one query in their natural order: link 2 before link 10.
    const named = r.series.map((s) => ({ label: present[i].label(s), points: s.points }));
    named.sort((x, y) => x.label.localeCompare(y.label, undefined, { numeric: true }));
    all.push(...r.series);
    lines.push(...named);
  });
  onSeries?.(def, all);
  if (lines.length === 0) {
    w.unavailable(`No ${def.title.toLowerCase()} data in this window (${present.map((m) => m.metric).join(', ')}).`);
    return;
  }
  const limits: Limit[] = [];
  limitResults.forEach((r, i) => {
    const v = latestValue(r.series);
    if (v !== null) limits.push({ label: `${limitDefs[i].label} ${formatValue(v, unit)}`, value: v });
  });
  w.show({
    unit,
    lines,
    limits,
    stacked: def.stacked,
    start: c.start,
    end: c.end,
    step,
    yMax: def.yMax,
    ariaLabel: def.title,
    onZoom: (a, b) => c.navigate({ from: a, to: b, range: '', live: false }),
    // At least a minute around the clicked bucket, as on the host page.
    onPick: (t) => {
      const width = Math.max(step, 60);
      const start = t - (width - step) / 2;
      open(c, start, start + width);
    },
  });
}

// The last non-null value of the last series that has one, or null.
function latestValue(series: Series[]): number | null {
  for (let i = series.length - 1; i >= 0; i--) {
    const points = series[i].points;
    for (let k = points.length - 1; k >= 0; k--) {
      const v = points[k][1];
      if (v !== null) return v;
    }
  }
  return null;
}

// A <dl> of the rows that have a value.
export function factList(rows: [string, Node | string | undefined | null][], testid: string): HTMLElement {
  const shown = rows.filter(([, v]) => v !== undefined && v !== null && v !== '');
  return h('dl.facts', { 'data-testid': testid }, ...shown.flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v as Node | string)]));
}

// The entity `id` of `kind` on `host`, or null.
export async function findEntity(host: string, kind: string, id: string): Promise<EntityRecord | null> {
  const r = await getJson<{ entities: EntityRecord[] }>('/api/v1/entities', { host, kind, prefix: id, limit: 100 });
  return r.entities.find((e) => e.id === id) ?? null;
}

// Whether the server has ever heard of `host`.
export async function hostKnown(host: string): Promise<boolean> {
  const r = await getJson<{ entities: EntityRecord[] }>('/api/v1/entities', { host, limit: 1 });
  return r.entities.length > 0;
}

// The card shown instead of a page whose entity (or host) the server does not know.
export function unknownCard(root: HTMLElement, ctx: ViewContext, title: string, message: string, back?: { label: string; href: string }): View {
  root.append(
    h(
      'section.card.notfound',
      { 'data-testid': 'unknown-entity', role: 'alert' },
      h('h1', {}, title),
      h('p', {}, message),
      h('p', {}, back ? h('a', { href: back.href }, back.label) : null, back ? ' · ' : null, h('a', { href: ctx.href({ view: 'fleet' }) }, 'Fleet overview')),
    ),
  );
  return { refresh: async () => {}, destroy: () => {} };
}

// Runs the loaders of a page as one batch of range queries (each chart keeps its own errors).
export async function runLoaders(loaders: PageLoader[], c: ViewContext): Promise<void> {
  const q = new QueryBatcher();
  await Promise.all(loaders.map((l) => l(c, q)));
}

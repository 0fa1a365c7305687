// SPDX-License-Identifier: Apache-2.0
// The host page: "Host Metrics" (CPU, memory, load, disk, network, top processes) and
// "GPU Metrics" (one widget per metric, one line per GPU, grouped Performance / Memory /
// Hardware / Data transfer; expanding a widget shows its per-process breakdown stacked by
// executable). Clicking a point opens the profile panel for that window: the CPU charts open the
// CPU profile, of the host or of the process whose line was clicked. Hosts that serve models
// have a third tab, "Inference" (inference_tab.ts).
import { getJson, knownMetrics, QueryBatcher } from './api';
import type { BreakdownResponse, EntityRecord, EventRecord, MetricInfo, Params, Point, RangeResponse, Series } from './api';
import type { Finding } from './insights_api';
import type { ChartLine, Limit, Marker, StackCap } from './chart';
import { h } from './dom';
import { formatTime, formatValue } from './format';
import { buildHostTab } from './host_tab';
import { fetchFindings, findingMarkers, findingsStrip } from './host_findings';
import { findServing } from './inference_api';
import { LazyLoads } from './lazy_loads';
import type { ChartLoader } from './lazy_loads';
import { buildInferenceTab } from './inference_tab';
import type { HostTab } from './state';
import { hostKnown, unknownCard } from './page_chart';
import type { View, ViewContext } from './view';
import { executablePick, gpuPick, pickHandler, profileMarks, Widget } from './widget';

interface GpuWidgetDef {
  id: string;
  title: string;
  group: 'Performance' | 'Memory' | 'Hardware' | 'Data transfer';
  metric: string;
  // Sum the series of one GPU (per NVLink link) into one line.
  sumPerGpu?: boolean;
  // A per-GPU total of the same quantity, preferred when the GPU reports it (one series per GPU
  // reads 18x less than per-link series): NVML GPM's NVLink throughput on Hopper and newer.
  total?: string;
  // Shown stacked by executable instead of one line per GPU.
  consumer?: boolean;
  // The per-process metric of the expanded view, and what it shows when it is not the widget's
  // own metric per process.
  breakdown?: string;
  breakdownTitle?: string;
  yMax?: number;
  note?: string;
  // A per-GPU metric drawn as limit lines (its latest value on each GPU): the power limit. With
  // `one`, a single line: the value every GPU reports, else the lowest, named so (the slowdown
  // temperature: the first GPU to reach it slows down).
  limit?: { metric: string; label: string; one?: boolean };
}

const GPU_WIDGETS: GpuWidgetDef[] = [
  { id: 'util', title: 'GPU utilization', group: 'Performance', metric: 'gpu.utilization', breakdown: 'gpu.process.sm.utilization', yMax: 1 },
  { id: 'consumer', title: 'GPU consumer', group: 'Performance', metric: 'gpu.executable.sm.utilization', consumer: true, breakdown: 'gpu.executable.sm.utilization', note: 'SM utilization by executable, summed over the GPUs (100 % = one GPU)' },
  { id: 'sm', title: 'SM efficiency (SM active)', group: 'Performance', metric: 'gpu.sm.active', breakdown: 'gpu.process.sm.utilization', breakdownTitle: 'SM utilization by executable (NVML has no per-process SM activity)', yMax: 1 },
  { id: 'occupancy', title: 'SM occupancy', group: 'Performance', metric: 'gpu.sm.occupancy', breakdown: 'gpu.process.sm.utilization', breakdownTitle: 'SM utilization by executable (NVML has no per-process occupancy)', yMax: 1 },
  { id: 'tensor', title: 'Tensor-core utilization', group: 'Performance', metric: 'gpu.tensor.active', breakdown: 'gpu.process.sm.utilization', breakdownTitle: 'SM utilization by executable (NVML has no per-process tensor activity)', yMax: 1 },
  { id: 'memutil', title: 'Memory utilization', group: 'Memory', metric: 'gpu.memory.utilization', breakdown: 'gpu.process.memory.used', breakdownTitle: 'GPU memory used by executable', yMax: 1 },
  { id: 'memconsumer', title: 'Memory consumer', group: 'Memory', metric: 'gpu.executable.memory.used', consumer: true, breakdown: 'gpu.executable.memory.used', note: 'GPU memory by executable, summed over the GPUs' },
  { id: 'power', title: 'Power', group: 'Hardware', metric: 'gpu.power.usage', limit: { metric: 'gpu.power.limit', label: 'power limit' } },
  { id: 'temp', title: 'Temperature', group: 'Hardware', metric: 'gpu.temperature', limit: { metric: 'gpu.temperature.slowdown', label: 'slowdown', one: true } },
  { id: 'pcietx', title: 'PCIe TX (GPU → host)', group: 'Data transfer', metric: 'gpu.pcie.transmit.rate' },
  { id: 'pcierx', title: 'PCIe RX (host → GPU)', group: 'Data transfer', metric: 'gpu.pcie.receive.rate' },
  { id: 'nvlinktx', title: 'NVLink TX', group: 'Data transfer', metric: 'gpu.nvlink.transmit.rate', sumPerGpu: true, total: 'gpu.prof.nvlink.transmit.rate', note: 'all links' },
  { id: 'nvlinkrx', title: 'NVLink RX', group: 'Data transfer', metric: 'gpu.nvlink.receive.rate', sumPerGpu: true, total: 'gpu.prof.nvlink.receive.rate', note: 'all links' },
];

// Set by an arrow key on the tabs: the re-rendered page puts focus back on the selected tab.
let focusTab = false;

const THROTTLE_REASONS = new Set(['power_cap', 'hw_slowdown', 'sw_thermal', 'hw_thermal', 'hw_power_brake']);

interface Gpu {
  uuid: string;
  index: number;
  model: string;
}

function gpuLabel(g: Gpu | undefined, fallback: string): string {
  return g ? `GPU ${g.index}` : fallback;
}

// Sums points with the same time.
function sumPoints(lists: Point[][]): Point[] {
  const m = new Map<number, number>();
  for (const l of lists) for (const [t, v] of l) if (v !== null) m.set(t, (m.get(t) ?? 0) + v);
  return [...m.entries()].sort((a, b) => a[0] - b[0]);
}

type Query = [path: string, params: Params];

// The queries of the GPU Metrics tab's charts, by what they read. The first screen's are sent
// before the GPU list is in (firstScreenQueries); the charts then ask for the same ones.
function perGpuQuery(metric: string, c: ViewContext, host: string): Query {
  return ['/api/v1/query_range', { metric, host, kind: 'gpu', start: c.start, end: c.end }];
}

function perGpuSumQuery(metric: string, c: ViewContext, host: string): Query {
  return ['/api/v1/breakdown', { metric, host, kind: 'gpu', by: 'entity', start: c.start, end: c.end }];
}

function byExecutableQuery(metric: string, c: ViewContext, host: string): Query {
  return ['/api/v1/breakdown', { metric, host, start: c.start, end: c.end, by: 'process.executable.name' }];
}

function throttleQuery(reason: string, c: ViewContext, host: string): Query {
  return ['/api/v1/breakdown', { metric: 'gpu.clock.event_reason.active', host, kind: 'gpu', by: 'reason', 'label.reason': reason, start: c.start, end: c.end, agg: 'max' }];
}

// What a chart of the GPU Metrics tab asks for first (the metric list may change that: a GPU
// without the NVLink totals reads the per-link series; a prefetched answer nobody takes is
// dropped).
function firstQueryOf(def: GpuWidgetDef, c: ViewContext, host: string): Query {
  if (def.consumer) return byExecutableQuery(def.metric, c, host);
  if (def.total) return perGpuQuery(def.total, c, host);
  return def.sumPerGpu ? perGpuSumQuery(def.metric, c, host) : perGpuQuery(def.metric, c, host);
}

// The charts a first screen shows: two cards a row, about 330 px a card under a ~260 px head.
// A guess made before the page is laid out (the GPU list decides the head); a chart it leaves
// out loads as it would have, one round trip later.
function firstScreenQueries(c: ViewContext, host: string): Query[] {
  const height = window.innerHeight || 900;
  const perRow = window.innerWidth >= 1100 ? 2 : 1;
  const n = Math.max(1, Math.ceil((height - 260) / 330) * perRow);
  return [
    ...GPU_WIDGETS.slice(0, n).map((def) => firstQueryOf(def, c, host)),
    ...[...THROTTLE_REASONS].map((reason) => throttleQuery(reason, c, host)),
  ];
}

// The step of a read of latest values: an hour's buckets come from the hourly rollups, so a
// day's read is 25 points per GPU instead of the chart step's 300 (of which one is used).
const LATEST_STEP_S = 3600;

// The latest value of a per-GPU metric on each GPU of the host (all of them, or `gpu` alone).
async function latestPerGpu(metric: string, c: ViewContext, host: string, q: QueryBatcher, gpu?: string): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  if (!(await knownMetrics()).has(metric)) return out;
  const step = `${Math.min(LATEST_STEP_S, Math.max(10, Math.ceil(c.end - c.start)))}s`;
  const r = await q.get<RangeResponse>('/api/v1/query_range', { metric, host, kind: 'gpu', start: c.start, end: c.end, step, agg: 'last' });
  for (const s of r.series) {
    if (gpu && s.entity !== gpu) continue;
    for (let k = s.points.length - 1; k >= 0; k--) {
      const v = s.points[k][1];
      if (v !== null) {
        out.set(s.entity, v);
        break;
      }
    }
  }
  return out;
}

// Limit lines of a per-GPU limit: one per distinct value (8 GPUs at 700 W: one line), at most 3.
function distinctLimits(values: Iterable<number>, label: string, unit: string): Limit[] {
  const distinct = [...new Set([...values].map((v) => Math.round(v * 1000) / 1000))].sort((a, b) => b - a);
  return distinct.slice(0, 3).map((v) => ({ label: `${label} ${formatValue(v, unit)}`, value: v }));
}

// One limit line for a per-GPU limit: the value every GPU of the host reports ("slowdown 89 °C"),
// or else the lowest with the GPUs that have it ("lowest slowdown 87 °C (GPU 3)"), or the one
// value of the GPUs that report one ("slowdown 89 °C (6 of 8 GPUs)").
function commonOrLowestLimit(values: Map<string, number>, gpus: Map<string, Gpu>, label: string, unit: string): Limit[] {
  if (values.size === 0) return [];
  const rounded = new Map([...values].map(([id, v]) => [id, Math.round(v * 1000) / 1000]));
  const lowest = Math.min(...rounded.values());
  const text = `${label} ${formatValue(lowest, unit)}`;
  if (new Set(rounded.values()).size === 1) {
    return [{ label: values.size >= gpus.size ? text : `${text} (${values.size} of ${gpus.size} GPUs)`, value: lowest }];
  }
  const at = [...rounded]
    .filter(([, v]) => v === lowest)
    .map(([id]) => ({ id, gpu: gpus.get(id) }))
    .sort((a, b) => (a.gpu?.index ?? 1e9) - (b.gpu?.index ?? 1e9));
  const names = at.slice(0, 3).map((a) => gpuLabel(a.gpu, a.id));
  if (at.length > 3) names.push(`${at.length - 3} more`);
  return [{ label: `lowest ${text} (${names.join(', ')})`, value: lowest }];
}

// The GPU memory a per-executable stack may reach (the total of the GPUs it covers), as a limit
// line and a cap.
async function memoryLimit(c: ViewContext, host: string, q: QueryBatcher, gpu?: string): Promise<{ limits: Limit[]; cap?: StackCap }> {
  const totals = await latestPerGpu('gpu.memory.total', c, host, q, gpu);
  if (totals.size === 0) return { limits: [] };
  const total = [...totals.values()].reduce((a, b) => a + b, 0);
  const what = `the memory of ${totals.size === 1 ? '1 GPU' : `${totals.size} GPUs`}`;
  return { limits: [{ label: `memory total ${formatValue(total, 'By')}`, value: total }], cap: { value: total, what } };
}

// SM utilization stacked by executable cannot exceed 100 % of each GPU it covers.
function utilizationCap(gpus: number): StackCap {
  return { value: Math.max(1, gpus), what: gpus > 1 ? `100 % of each of the ${gpus} GPUs` : '100 % of 1 GPU' };
}

// What a per-executable stack of `unit` over `gpu` (or every GPU of the host) may reach.
async function stackBounds(unit: string, c: ViewContext, host: string, q: QueryBatcher, gpuCount: number, gpu?: string): Promise<{ limits: Limit[]; cap?: StackCap }> {
  if (unit === '1') return { limits: [], cap: utilizationCap(gpu ? 1 : gpuCount) };
  if (unit === 'By') return memoryLimit(c, host, q, gpu);
  return { limits: [] };
}

export async function hostView(root: HTMLElement, ctx: ViewContext): Promise<View> {
  const host = ctx.state.host!;
  const tab = ctx.state.tab;
  // The first screen's charts are asked for first, before the GPU list they are drawn with: their
  // batch and the lists travel side by side (one round trip before drawing, not two).
  const firstQ = new QueryBatcher();
  if (tab === 'gpu' && !ctx.state.expand) firstQ.prefetch(firstScreenQueries(ctx, host));
  // The GPU list next: the page is built from it while the batch is answered (sent after the
  // markers' requests, it came back after the batch).
  const gpuList = getJson<{ entities: EntityRecord[] }>('/api/v1/entities', { host, kind: 'gpu', limit: 1000 });
  // Every chart reads the metric list before its query: asked for with the GPU list, not after it
  // (a round trip less before the charts' batch goes out). A failure shows in the charts' own call.
  knownMetrics().catch(() => undefined);
  // The markers' requests of the first render need only the host and the window: they go out
  // with the GPU list's, not after it (the view then waits for one round trip after the GPU list).
  let early: MarkerFetches | null = fetchMarkers(ctx, host);
  let first: QueryBatcher | null = firstQ;
  // Whether the host serves models (the Inference tab) is asked for next to its GPUs.
  const [gpuEntities, serving] = await Promise.all([gpuList, findServing({ host }, ctx.start, ctx.end).catch(() => [])]);
  if (gpuEntities.entities.length === 0 && !(await hostKnown(host))) {
    return unknownCard(root, ctx, 'Unknown host', `The server has no data from a host named ${host}: check the name, or whether its agent sends to this server (warpscope agent --server).`);
  }
  const gpus = new Map<string, Gpu>();
  for (const e of gpuEntities.entities) {
    gpus.set(e.id, { uuid: e.id, index: Number(e.attributes['gpu.index'] ?? gpus.size), model: e.attributes['gpu.model'] ?? 'GPU' });
  }
  const models = [...new Set([...gpus.values()].map((g) => g.model))];
  const tabButton = (id: HostTab, label: string) =>
    h(
      'a.tab',
      {
        role: 'tab',
        id: `tab-${id}`,
        href: ctx.href({ tab: id, expand: undefined }),
        'aria-selected': String(tab === id),
        'aria-controls': 'tabpanel',
        tabindex: tab === id ? 0 : -1,
      },
      label,
    );
  // The Inference tab on hosts that serve models in the window (and when the URL asks for it).
  const tabs: HostTab[] = serving.length || tab === 'inference' ? ['host', 'gpu', 'inference'] : ['host', 'gpu'];
  const tabNames: Record<HostTab, string> = { host: 'Host Metrics', gpu: 'GPU Metrics', inference: 'Inference' };
  const tablist = h('div.tabs', { role: 'tablist', 'aria-label': 'Host page' }, ...tabs.map((t) => tabButton(t, tabNames[t])));
  tablist.addEventListener('keydown', (e) => {
    if (e.key === 'ArrowRight' || e.key === 'ArrowLeft') {
      e.preventDefault();
      focusTab = true;
      const i = tabs.indexOf(tab) + (e.key === 'ArrowRight' ? 1 : -1);
      ctx.navigate({ tab: tabs[(i + tabs.length) % tabs.length], expand: undefined });
    }
  });
  const eventsBox = h('div.events');
  const findingsBox = h('div.findings-strip', { 'data-testid': 'host-findings' });
  const panel = h('div', { id: 'tabpanel', role: 'tabpanel', 'aria-labelledby': `tab-${tab}` });
  root.append(
    h(
      'div.host-head',
      {},
      h('h1', {}, host),
      h('p.muted', {}, gpus.size ? `${gpus.size} × ${models.join(', ')}` : 'no GPUs reported'),
      gpus.size
        ? h(
            'nav.gpu-links',
            { 'aria-label': 'GPU pages', 'data-testid': 'gpu-links' },
            ...[...gpus.values()].sort((x, y) => x.index - y.index).map((g) => h('a', { href: ctx.href({ view: 'gpu', host, gpu: g.uuid }), title: `${g.model} ${g.uuid}` }, `GPU ${g.index}`)),
          )
        : null,
    ),
    tablist,
    findingsBox,
    eventsBox,
    panel,
  );
  if (focusTab) {
    focusTab = false;
    tablist.querySelector<HTMLElement>('[aria-selected=true]')?.focus();
  }
  const widgets: Widget[] = [];
  const loaders: ChartLoader[] = [];
  // The GPU Metrics tab's charts load as they come near the viewport (lazy_loads.ts).
  const lazy = new LazyLoads(`warpscope:view-all:host:${tab}`);

  if (tab === 'gpu') buildGpuTab(panel, ctx, host, gpus, widgets, lazy);
  else if (tab === 'inference') buildInferenceTab(panel, ctx, host, serving, widgets, loaders);
  else buildHostTab(panel, ctx, host, widgets, loaders);

  const render = async (c: ViewContext) => {
    // Markers load next to the charts (not before them): the charts draw them when they come.
    // The charts' range queries go to the server as one batch request (a browser opens at most
    // six connections to a host: seventeen separate requests would go in waves).
    const q = first ?? new QueryBatcher();
    first = null;
    const markers: Marker[] = [];
    // Markers join the charts' list as soon as they come; the charts drawn before draw again.
    const addMarkers = (list: Marker[]) => {
      markers.push(...list);
      if (list.length) widgets.forEach((w) => w.chart?.redraw());
    };
    const fetched = early ?? fetchMarkers(c, host);
    early = null;
    const withMarkers = loadMarkers(c, host, gpus, eventsBox, q, addMarkers, fetched.events);
    // Findings: a strip above the charts and bands on them.
    const withFindings = findingMarkers(c, host, (id) => gpuLabel(gpus.get(id), id), fetched.findings).then(({ open, bands }) => {
      findingsStrip(findingsBox, open, c);
      addMarkers(bands);
    });
    // The windows that have profiles: a strip under every chart.
    const withProfiles = fetched.profiles.then(addMarkers);
    const loads = lazy.loads(c, markers, q);
    // The first screen's charts draw once the page above them is filled (the findings strip and
    // the events list decide which of them the screen shows).
    const drawn = Promise.allSettled([withMarkers, withFindings, ...loads]).then(() => lazy.drawOnScreen());
    await Promise.all([withMarkers, withFindings, withProfiles, ...loaders.map((l) => l(c, markers, q)), ...loads, drawn]);
  };
  await render(ctx);
  lazy.watch();
  return {
    refresh: render,
    destroy: () => {
      lazy.destroy();
      widgets.forEach((w) => w.destroy());
    },
  };
}

// The requests of a render's markers that need only the host and the window.
interface MarkerFetches {
  events: Promise<EventRecord[]>;
  findings: Promise<Finding[]>;
  profiles: Promise<Marker[]>;
}

function fetchMarkers(c: ViewContext, host: string): MarkerFetches {
  const events = getJson<{ events: EventRecord[] }>('/api/v1/events', { host, start: c.start, end: c.end, limit: 200 }).then((r) => r.events);
  // Awaited later (after the GPU list): a failure meanwhile is not an unhandled rejection.
  events.catch(() => undefined);
  return { events, findings: fetchFindings(c, host), profiles: profileMarks(host, c.start, c.end).catch(() => []) };
}

// XID and other events from the events API, throttling from the clock event reasons, given to
// `add` in the same microtask as the batch answer that carries the throttling: the charts that
// answer builds have not drawn yet and draw them the first time (no second draw of every chart).
async function loadMarkers(
  c: ViewContext,
  host: string,
  gpus: Map<string, Gpu>,
  box: HTMLElement,
  q: QueryBatcher,
  add: (list: Marker[]) => void,
  fetchedEvents: Promise<EventRecord[]>,
): Promise<void> {
  const known = await knownMetrics();
  // One query per throttle reason (in the batch, run side by side): each reads that reason's
  // series only, where one query by reason read every reason's (nine per GPU, four of them not
  // throttling) and was the batch's slowest.
  const [events, ...throttle] = await Promise.all([
    fetchedEvents,
    ...(known.has('gpu.clock.event_reason.active') ? [...THROTTLE_REASONS] : []).map((reason) =>
      q.get<BreakdownResponse>(...throttleQuery(reason, c, host)),
    ),
  ]);
  const markers: Marker[] = events.map((e) => ({
    time: e.time,
    kind: e.kind,
    label: `${e.kind.toUpperCase()}${e.code ? ' ' + e.code : ''} on ${gpuLabel(gpus.get(e.entity), e.entity)}${e.message ? ': ' + e.message : ''}`,
  }));
  const throttled = new Map<number, Set<string>>();
  // Per reason, the number of GPUs held down at some point of each bucket.
  for (const g of throttle.flatMap((r) => r.groups)) {
    if (!THROTTLE_REASONS.has(g.key)) continue;
    for (const [t, v] of g.points) {
      if (v !== null && v > 0) {
        const set = throttled.get(t) ?? new Set<string>();
        set.add(`${g.key} on ${Math.round(v)} GPU${Math.round(v) === 1 ? '' : 's'}`);
        throttled.set(t, set);
      }
    }
  }
  for (const [t, set] of throttled) markers.push({ time: t, kind: 'throttle', label: `Clocks throttled: ${[...set].join(', ')}` });
  markers.sort((a, b) => a.time - b.time);
  add(markers);
  if (markers.length === 0) {
    box.replaceChildren();
  } else {
    const shown = markers.slice(-8).reverse();
    box.replaceChildren(
      h(
        'details.card',
        { open: markers.some((m) => m.kind === 'xid') },
        h('summary', {}, `${markers.length} event${markers.length === 1 ? '' : 's'} in this window (markers on the charts)`),
        h('ul.event-list', {}, ...shown.map((m) => h('li', {}, h('span', { class: `dot ${m.kind}` }), `${formatTime(m.time)} · ${m.label}`))),
      ),
    );
  }
}

function buildGpuTab(
  panel: HTMLElement,
  ctx: ViewContext,
  host: string,
  gpus: Map<string, Gpu>,
  widgets: Widget[],
  lazy: LazyLoads,
): void {
  const groups = ['Performance', 'Memory', 'Hardware', 'Data transfer'] as const;
  const sortedGpus = [...gpus.values()].sort((a, b) => a.index - b.index);
  for (const group of groups) {
    const grid = h('div.widget-grid');
    panel.append(h('section.group', { 'aria-label': group }, h('h2', {}, group), grid));
    for (const def of GPU_WIDGETS.filter((w) => w.group === group)) {
      const expanded = ctx.state.expand === def.id && !!def.breakdown;
      const expandBtn = !def.breakdown ? null : h(
        'button.btn',
        {
          type: 'button',
          'aria-expanded': String(expanded),
          'data-testid': `expand-${def.id}`,
          onclick: () => ctx.navigate({ expand: expanded ? undefined : def.id, bgpu: undefined }),
        },
        expanded ? 'Collapse' : 'Per process',
      );
      const profileBtn = h(
        'button.btn',
        { type: 'button', title: 'Open the profile of the whole window', onclick: () => ctx.openProfile({ start: ctx.start, end: ctx.end }) },
        'Profile',
      );
      const w = new Widget(def.title, def.note, def.id, expandBtn ? [expandBtn, profileBtn] : [profileBtn]);
      if (expanded) w.el.classList.add('expanded');
      grid.append(w.el);
      widgets.push(w);
      let breakdown: Widget | null = null;
      if (expanded) {
        const select = h(
          'select',
          { 'aria-label': 'GPU of the breakdown', onchange: (e: Event) => ctx.navigate({ bgpu: (e.target as HTMLSelectElement).value || undefined }, true) },
          def.consumer ? null : h('option', { value: '' }, 'all GPUs'),
          ...sortedGpus.map((g) => h('option', { value: g.uuid, selected: g.uuid === breakdownGpu(def, ctx, sortedGpus) }, `GPU ${g.index}`)),
        );
        breakdown = new Widget(def.breakdownTitle ?? `${def.title} by executable`, def.consumer ? 'per process on one GPU, stacked' : 'per process, stacked', `${def.id}-breakdown`, [select]);
        w.el.append(breakdown.el);
        widgets.push(breakdown);
      }
      lazy.add(w, async (c, markers, q) => {
        await loadGpuWidget(w, def, c, host, gpus, markers, q);
        if (breakdown) await loadBreakdown(breakdown, def, c, host, sortedGpus, markers, q);
      });
    }
  }
}

async function loadGpuWidget(w: Widget, def: GpuWidgetDef, c: ViewContext, host: string, gpus: Map<string, Gpu>, markers: Marker[], q: QueryBatcher): Promise<void> {
  const known = await knownMetrics();
  const info = known.get(def.metric);
  if (!info) {
    w.unavailable(`Unavailable: no GPU has reported ${def.title} (${def.metric}). ${def.metric.startsWith('gpu.sm') || def.metric.startsWith('gpu.tensor') ? 'It needs NVML GPM (Hopper or newer).' : 'The GPU or driver does not support it.'}`);
    return;
  }
  if (def.consumer) {
    const [r, bounds] = await Promise.all([
      q.get<BreakdownResponse>(...byExecutableQuery(def.metric, c, host)),
      stackBounds(info.unit, c, host, q, gpus.size),
    ]);
    if (r.groups.length === 0) {
      w.unavailable('No GPU process in this window.');
      return;
    }
    w.show({
      unit: info.unit,
      lines: r.groups.map((g) => ({ label: g.key, points: g.points })),
      stacked: true,
      limits: bounds.limits,
      stackCap: bounds.cap,
      fitData: c.state.range !== '',
      start: c.start,
      end: c.end,
      step: r.step,
      markers,
      ariaLabel: `${def.title} on ${host} by executable`,
      onZoom: (a, b) => c.navigate({ from: a, to: b, range: '', live: false }),
      onPick: pickHandler(c, r.step, executablePick()),
    });
    w.notes.textContent = '';
    return;
  }
  // Queried with the chart's data (one batch).
  const limitValues = def.limit ? latestPerGpu(def.limit.metric, c, host, q) : Promise.resolve(new Map<string, number>());
  // Several series per GPU (one per NVLink link) are summed by the server: one line per GPU.
  let step = 0;
  const byGpu = new Map<string, Point[]>();
  if (def.total && known.has(def.total)) {
    const r = await q.get<RangeResponse>(...perGpuQuery(def.total, c, host));
    step = r.step;
    for (const s of r.series) byGpu.set(s.entity, s.points);
  }
  if (byGpu.size === 0 && def.sumPerGpu) {
    const r = await q.get<BreakdownResponse>(...perGpuSumQuery(def.metric, c, host));
    step = r.step;
    for (const g of r.groups) byGpu.set(g.key, g.points);
  } else if (byGpu.size === 0) {
    const r = await q.get<RangeResponse>(...perGpuQuery(def.metric, c, host));
    step = r.step;
    const lists = new Map<string, Series[]>();
    for (const s of r.series) lists.set(s.entity, [...(lists.get(s.entity) ?? []), s]);
    for (const [id, list] of lists) byGpu.set(id, list.length > 1 ? sumPoints(list.map((s) => s.points)) : list[0].points);
  }
  const ordered = [...byGpu.keys()].sort((a, b) => (gpus.get(a)?.index ?? 1e9) - (gpus.get(b)?.index ?? 1e9) || a.localeCompare(b));
  const lines: ChartLine[] = ordered.map((id) => ({ label: gpuLabel(gpus.get(id), id), points: byGpu.get(id)! }));
  const missing = [...gpus.values()].filter((g) => !byGpu.has(g.uuid)).sort((a, b) => a.index - b.index);
  if (lines.length === 0) {
    w.unavailable(`Unavailable on ${gpus.size ? 'every GPU of this host' : 'this host'}: no ${def.metric} data in this window.`);
    return;
  }
  const limits = !def.limit
    ? []
    : def.limit.one
      ? commonOrLowestLimit(await limitValues, gpus, def.limit.label, info.unit)
      : distinctLimits((await limitValues).values(), def.limit.label, info.unit);
  w.show({
    unit: info.unit,
    lines,
    limits,
    fitData: c.state.range !== '',
    start: c.start,
    end: c.end,
    step,
    yMax: def.yMax,
    markers,
    ariaLabel: `${def.title} on ${host}, one line per GPU`,
    onZoom: (a, b) => c.navigate({ from: a, to: b, range: '', live: false }),
    onPick: pickHandler(c, step, gpuPick(host, new Map([...gpus.values()].map((g) => [gpuLabel(g, g.uuid), g])))),
  });
  w.notes.replaceChildren(
    missing.length ? h('p.unavailable', { 'data-testid': 'unavailable' }, `Unavailable on ${missing.map((g) => `GPU ${g.index}`).join(', ')} (not supported or not reported; not zero).`) : '',
  );
}

// The GPU an expanded widget's breakdown covers: the one chosen, or every GPU; a consumer
// widget already shows every GPU's stack, so its breakdown is of one GPU (the first by default)
// instead of drawing the same chart twice.
function breakdownGpu(def: GpuWidgetDef, c: ViewContext, sortedGpus: Gpu[]): string | undefined {
  return c.state.bgpu ?? (def.consumer ? sortedGpus[0]?.uuid : undefined);
}

async function loadBreakdown(w: Widget, def: GpuWidgetDef, c: ViewContext, host: string, sortedGpus: Gpu[], markers: Marker[], q: QueryBatcher): Promise<void> {
  if (!def.breakdown) {
    w.unavailable(`NVML reports ${def.title.toLowerCase()} per GPU only: there is no per-process breakdown. Use GPU consumer or Memory consumer, or open the profile of a window.`);
    return;
  }
  const known = await knownMetrics();
  const info: MetricInfo | undefined = known.get(def.breakdown);
  if (!info) {
    w.unavailable('No per-process GPU data has been received (NVML does not report per-process utilization on this GPU or driver).');
    return;
  }
  const gpu = breakdownGpu(def, c, sortedGpus);
  const [r, bounds] = await Promise.all([
    q.get<BreakdownResponse>('/api/v1/breakdown', {
      metric: def.breakdown,
      host,
      start: c.start,
      end: c.end,
      by: 'process.executable.name',
      'label.gpu.uuid': gpu,
    }),
    stackBounds(info.unit, c, host, q, sortedGpus.length, gpu),
  ]);
  if (r.groups.length === 0) {
    w.unavailable('No GPU process in this window.');
    return;
  }
  w.show({
    unit: info.unit,
    lines: r.groups.map((g) => ({ label: g.key, points: g.points })),
    stacked: true,
    limits: bounds.limits,
    stackCap: bounds.cap,
    fitData: c.state.range !== '',
    start: c.start,
    end: c.end,
    step: r.step,
    markers,
    ariaLabel: `${def.title} by executable on ${host}`,
    onZoom: (a, b) => c.navigate({ from: a, to: b, range: '', live: false }),
    onPick: pickHandler(c, r.step, executablePick(gpu ? sortedGpus.find((g) => g.uuid === gpu)?.index : undefined)),
  });
}

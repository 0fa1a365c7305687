// SPDX-License-Identifier: Apache-2.0
// Top Entities: hosts, GPUs, executables or processes ranked by one metric (click a column to
// sort by it), with a sparkline of the ranking metric over the window.
import { getJson, knownMetrics } from './api';
import type { BreakdownResponse, FleetResponse, Point, RangeResponse, TopEntry } from './api';
import { h, sparkline } from './dom';
import { formatValue } from './format';
import type { TopKind } from './state';
import type { View, ViewContext } from './view';

interface Column {
  metric: string;
  title: string;
  unit: string;
}

type EntityKind = Exclude<TopKind, 'host' | 'container' | 'pod'>;

const COLUMNS: Record<EntityKind, Column[]> = {
  gpu: [
    { metric: 'gpu.utilization', title: 'GPU util.', unit: '1' },
    { metric: 'gpu.sm.active', title: 'SM efficiency', unit: '1' },
    { metric: 'gpu.sm.occupancy', title: 'SM occupancy', unit: '1' },
    { metric: 'gpu.tensor.active', title: 'Tensor cores', unit: '1' },
    { metric: 'gpu.memory.used', title: 'Memory', unit: 'By' },
    { metric: 'gpu.power.usage', title: 'Power', unit: 'W' },
    { metric: 'gpu.temperature', title: 'Temp.', unit: 'Cel' },
  ],
  executable: [
    { metric: 'gpu.executable.sm.utilization', title: 'GPU consumer (100 % = 1 GPU)', unit: '1' },
    { metric: 'gpu.executable.memory.used', title: 'GPU memory', unit: 'By' },
    { metric: 'gpu.executable.processes', title: 'Processes', unit: '{process}' },
  ],
  process: [
    { metric: 'gpu.process.sm.utilization', title: 'GPU SM util.', unit: '1' },
    { metric: 'gpu.process.memory.used', title: 'GPU memory', unit: 'By' },
    { metric: 'process.cpu.utilization', title: 'CPU', unit: '1' },
    { metric: 'process.memory.rss', title: 'RSS', unit: 'By' },
  ],
};

const KIND_LABELS: Record<TopKind, string> = {
  host: 'Hosts',
  gpu: 'GPUs',
  executable: 'Executables',
  process: 'Processes',
  container: 'Containers',
  pod: 'Pods',
};

// Containers and pods: the per-process GPU metrics summed per container id / pod uid.
const GROUP_ATTRIBUTE: Record<'container' | 'pod', string> = { container: 'container.id', pod: 'k8s.pod.uid' };
const GROUP_COLUMNS: Column[] = [
  { metric: 'gpu.process.sm.utilization', title: 'GPU consumer', unit: '1' },
  { metric: 'gpu.process.memory.used', title: 'GPU memory', unit: 'By' },
];

const HOST_COLUMNS: { key: string; title: string; unit: string; value: (r: HostRow) => number | null }[] = [
  { key: 'gpu_utilization', title: 'GPU util.', unit: '1', value: (r) => r.fleet?.gpu_utilization ?? null },
  { key: 'power', title: 'GPU power', unit: 'W', value: (r) => r.fleet?.power_watts ?? null },
  { key: 'memory', title: 'GPU memory', unit: 'By', value: (r) => r.fleet?.memory_used_bytes ?? null },
  { key: 'temperature', title: 'Max GPU temp.', unit: 'Cel', value: (r) => r.fleet?.temperature_max ?? null },
  { key: 'load', title: 'Load (1 min)', unit: '{thread}', value: (r) => r.load?.value ?? null },
  { key: 'events', title: 'Events', unit: '{event}', value: (r) => r.fleet?.events ?? 0 },
];

interface HostRow {
  host: string;
  fleet?: FleetResponse['hosts'][number];
  load?: TopEntry;
}

function entityLabel(e: TopEntry): string {
  const a = e.attributes;
  if (e.kind === 'gpu') return `GPU ${a['gpu.index'] ?? '?'} · ${a['gpu.model'] ?? e.entity}`;
  if (e.kind === 'executable') return a['process.executable.name'] ?? e.entity;
  if (e.kind === 'process') return `${a['process.executable.name'] ?? e.entity} (pid ${a['process.pid'] ?? '?'})`;
  return e.entity;
}

export async function topView(root: HTMLElement, ctx: ViewContext): Promise<View> {
  const kind = ctx.state.kind;
  const tabs = h(
    'nav.subtabs',
    { 'aria-label': 'Entity kind' },
    ...(['host', 'gpu', 'executable', 'process', 'container', 'pod'] as TopKind[]).map((k) =>
      h('a', { href: ctx.href({ view: 'top', kind: k, sort: undefined, dir: 'desc' }), 'aria-current': k === kind ? 'page' : undefined }, KIND_LABELS[k]),
    ),
  );
  const tableBox = h('div', { 'data-testid': 'top-table' });
  root.append(h('h1', {}, 'Top entities'), tabs, h('section.card', {}, tableBox));

  const render = async (c: ViewContext) => {
    if (kind === 'host') {
      tableBox.replaceChildren(await hostTable(c));
    } else if (kind === 'container' || kind === 'pod') {
      tableBox.replaceChildren(await groupTable(c, kind));
    } else if (kind === 'executable') {
      tableBox.replaceChildren(await executableTable(c));
    } else {
      tableBox.replaceChildren(await entityTable(c, kind));
    }
  };
  await render(ctx);
  return { refresh: render, destroy: () => undefined };
}

function sortHeader(c: ViewContext, title: string, key: string, active: boolean): HTMLElement {
  const dir = c.state.dir;
  const next = active && dir === 'desc' ? 'asc' : 'desc';
  return h(
    'th.num',
    { scope: 'col', 'aria-sort': active ? (dir === 'desc' ? 'descending' : 'ascending') : 'none' },
    h('a.sort', { href: c.href({ sort: key, dir: next }), title: `Sort by ${title}` }, title, active ? (dir === 'desc' ? ' ▼' : ' ▲') : ''),
  );
}

async function entityTable(c: ViewContext, kind: EntityKind): Promise<HTMLElement> {
  const known = await knownMetrics();
  const columns = COLUMNS[kind].filter((col) => known.has(col.metric));
  if (columns.length === 0) {
    return h('p.empty', {}, `No ${KIND_LABELS[kind].toLowerCase()} metrics have been received yet.`);
  }
  const sortCol = columns.find((col) => col.metric === c.state.sort) ?? columns[0];
  const base = { kind, start: c.start, end: c.end };
  const [ranked, ...others] = await Promise.all([
    getJson<{ entries: TopEntry[] }>('/api/v1/top', { ...base, metric: sortCol.metric, limit: 50, order: c.state.dir, sparkline: 40 }),
    ...columns
      .filter((col) => col !== sortCol)
      .map((col) => getJson<{ entries: TopEntry[] }>('/api/v1/top', { ...base, metric: col.metric, limit: 10000 })),
  ]);
  const values = new Map<string, Map<string, number | null>>();
  columns
    .filter((col) => col !== sortCol)
    .forEach((col, i) => {
      const m = new Map<string, number | null>();
      for (const e of others[i].entries) m.set(`${e.host}\u0000${e.entity}`, e.value);
      values.set(col.metric, m);
    });
  if (ranked.entries.length === 0) {
    return h('p.empty', {}, `No ${KIND_LABELS[kind].toLowerCase()} have ${sortCol.title} data in this window.`);
  }
  return h(
    'table.data',
    {},
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        h('th', { scope: 'col' }, KIND_LABELS[kind].replace(/s$/, '')),
        h('th', { scope: 'col' }, 'Host'),
        ...columns.map((col) => sortHeader(c, col.title, col.metric, col === sortCol)),
        h('th', { scope: 'col' }, `${sortCol.title} over the window`),
      ),
    ),
    h(
      'tbody',
      {},
      ...ranked.entries.map((e) => {
        const key = `${e.host}\u0000${e.entity}`;
        // GPUs and processes have pages of their own; the other kinds open their host.
        const link =
          kind === 'gpu'
            ? c.href({ view: 'gpu', host: e.host, gpu: e.entity })
            : kind === 'process' && e.entity.startsWith('pid/')
              ? c.href({ view: 'process', host: e.host, process: e.entity })
              : c.href({ view: 'host', host: e.host, tab: kind === 'process' ? 'host' : 'gpu', expand: undefined, bgpu: undefined });
        return h(
          'tr',
          {},
          h('td', {}, h('a', { href: link }, entityLabel(e))),
          // The host's page, on the GPU tab (for a GPU: with its per-process breakdown selected).
          h('td', {}, h('a', { href: c.href({ view: 'host', host: e.host, tab: kind === 'process' && !e.entity.startsWith('pid/') ? 'host' : 'gpu', expand: undefined, bgpu: kind === 'gpu' ? e.entity : undefined }), 'data-testid': 'host-link' }, e.host)),
          ...columns.map((col) => h('td.num', {}, formatValue(col === sortCol ? e.value : values.get(col.metric)?.get(key) ?? null, col.unit))),
          h('td', {}, sparkline(e.sparkline ?? [], 140, 26)),
        );
      }),
    ),
  );
}

async function hostTable(c: ViewContext): Promise<HTMLElement> {
  const known = await knownMetrics();
  const [fleet, load] = await Promise.all([
    getJson<FleetResponse>('/api/v1/fleet', { start: c.start, end: c.end }),
    known.has('host.load.1m')
      ? getJson<{ entries: TopEntry[] }>('/api/v1/top', { kind: 'host', metric: 'host.load.1m', start: c.start, end: c.end, limit: 10000, sparkline: 40 })
      : Promise.resolve({ entries: [] as TopEntry[] }),
  ]);
  const rows = new Map<string, HostRow>();
  for (const f of fleet.hosts) rows.set(f.host, { host: f.host, fleet: f });
  for (const l of load.entries) {
    const r = rows.get(l.host) ?? { host: l.host };
    r.load = l;
    rows.set(l.host, r);
  }
  const sortCol = HOST_COLUMNS.find((col) => col.key === c.state.sort) ?? HOST_COLUMNS[0];
  const sign = c.state.dir === 'asc' ? 1 : -1;
  const sorted = [...rows.values()].sort((a, b) => {
    const va = sortCol.value(a);
    const vb = sortCol.value(b);
    if (va === null && vb === null) return a.host.localeCompare(b.host);
    if (va === null) return 1;
    if (vb === null) return -1;
    return sign * (va - vb) || a.host.localeCompare(b.host);
  });
  if (sorted.length === 0) return h('p.empty', {}, 'No host has reported in this window.');
  return h(
    'table.data',
    {},
    h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Host'), ...HOST_COLUMNS.map((col) => sortHeader(c, col.title, col.key, col === sortCol)), h('th', { scope: 'col' }, 'Load over the window'))),
    h(
      'tbody',
      {},
      ...sorted.map((r) =>
        h(
          'tr',
          {},
          h('td', {}, h('a', { href: c.href({ view: 'host', host: r.host, tab: 'host', expand: undefined, bgpu: undefined }) }, r.host)),
          ...HOST_COLUMNS.map((col) => h('td.num', {}, formatValue(col.value(r), col.unit))),
          h('td', {}, sparkline(r.load?.sparkline ?? [], 140, 26)),
        ),
      ),
    ),
  );
}

function mean(points: Point[]): number | null {
  const vals = points.map((p) => p[1]).filter((v): v is number => v !== null);
  return vals.length ? vals.reduce((a, b) => a + b, 0) / vals.length : null;
}

async function groupTable(c: ViewContext, kind: 'container' | 'pod'): Promise<HTMLElement> {
  const known = await knownMetrics();
  const columns = GROUP_COLUMNS.filter((col) => known.has(col.metric));
  const by = GROUP_ATTRIBUTE[kind];
  const label = KIND_LABELS[kind].toLowerCase();
  if (columns.length === 0) return h('p.empty', {}, 'No per-process GPU metrics have been received yet.');
  const answers = await Promise.all(
    columns.map((col) => getJson<BreakdownResponse>('/api/v1/breakdown', { metric: col.metric, kind: 'process', by, start: c.start, end: c.end })),
  );
  // Processes outside any container/pod fall back to their entity id ("pid/..."): left out.
  const rows = new Map<string, { key: string; values: (number | null)[]; spark: Point[] }>();
  answers.forEach((a, i) => {
    for (const g of a.groups) {
      if (g.key.startsWith('pid/')) continue;
      const row = rows.get(g.key) ?? { key: g.key, values: columns.map(() => null), spark: [] };
      row.values[i] = mean(g.points);
      if (i === 0) row.spark = g.points;
      rows.set(g.key, row);
    }
  });
  if (rows.size === 0) {
    return h('p.empty', {}, `No GPU process ran in a ${label.replace(/s$/, '')} in this window (processes carry ${by} when the agent can read it from their cgroup).`);
  }
  const sortIndex = Math.max(0, columns.findIndex((col) => col.metric === c.state.sort));
  const sign = c.state.dir === 'asc' ? 1 : -1;
  const sorted = [...rows.values()].sort((a, b) => sign * ((a.values[sortIndex] ?? -Infinity) - (b.values[sortIndex] ?? -Infinity)) || a.key.localeCompare(b.key));
  return h(
    'table.data',
    {},
    h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, KIND_LABELS[kind].replace(/s$/, '')), ...columns.map((col, i) => sortHeader(c, col.title, col.metric, i === sortIndex)), h('th', { scope: 'col' }, `${columns[0].title} over the window`))),
    h(
      'tbody',
      {},
      ...sorted.map((r) =>
        h('tr', {}, h('td', {}, h('code', {}, r.key)), ...columns.map((col, i) => h('td.num', {}, formatValue(r.values[i], col.unit))), h('td', {}, sparkline(r.spark, 140, 26))),
      ),
    ),
  );
}

// Executables: their series (one per GPU) summed per host and executable, so that "GPU consumer"
// reads 760 % for a job on 8 busy GPUs and memory is the executable's total.
async function executableTable(c: ViewContext): Promise<HTMLElement> {
  const known = await knownMetrics();
  const columns = COLUMNS.executable.filter((col) => known.has(col.metric));
  if (columns.length === 0) return h('p.empty', {}, 'No executable metrics have been received yet.');
  const answers = await Promise.all(
    columns.map((col) => getJson<RangeResponse>('/api/v1/query_range', { metric: col.metric, kind: 'executable', start: c.start, end: c.end })),
  );
  const rows = new Map<string, { host: string; entity: string; name: string; sums: Map<number, number>[] }>();
  answers.forEach((a, i) => {
    for (const s of a.series) {
      const key = `${s.host}\u0000${s.entity}`;
      const row = rows.get(key) ?? { host: s.host, entity: s.entity, name: s.attributes['process.executable.name'] ?? s.entity, sums: columns.map(() => new Map<number, number>()) };
      for (const [t, v] of s.points) if (v !== null) row.sums[i].set(t, (row.sums[i].get(t) ?? 0) + v);
      rows.set(key, row);
    }
  });
  if (rows.size === 0) return h('p.empty', {}, 'No GPU process in this window.');
  const points = (m: Map<number, number>): Point[] => [...m.entries()].sort((a, b) => a[0] - b[0]);
  const table = [...rows.values()].map((r) => ({ ...r, values: r.sums.map((m) => mean(points(m))), spark: points(r.sums[0]) }));
  const sortIndex = Math.max(0, columns.findIndex((col) => col.metric === c.state.sort));
  const sign = c.state.dir === 'asc' ? 1 : -1;
  table.sort((a, b) => sign * ((a.values[sortIndex] ?? -Infinity) - (b.values[sortIndex] ?? -Infinity)) || a.name.localeCompare(b.name));
  return h(
    'table.data',
    {},
    h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Executable'), h('th', { scope: 'col' }, 'Host'), ...columns.map((col, i) => sortHeader(c, col.title, col.metric, i === sortIndex)), h('th', { scope: 'col' }, `${columns[0].title} over the window`))),
    h(
      'tbody',
      {},
      ...table.slice(0, 50).map((r) =>
        h(
          'tr',
          {},
          h('td', {}, h('a', { href: c.href({ view: 'host', host: r.host, tab: 'gpu', expand: 'consumer', bgpu: undefined }) }, r.name)),
          h('td', {}, r.host),
          ...columns.map((col, i) => h('td.num', {}, formatValue(r.values[i], col.unit))),
          h('td', {}, sparkline(r.spark, 140, 26)),
        ),
      ),
    ),
  );
}

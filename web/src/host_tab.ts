// SPDX-License-Identifier: Apache-2.0
// The host page's "Host Metrics" tab: CPU (a click opens the host's CPU profile of that bucket),
// CPU by process (a click on a line opens that process's CPU profile), memory, load, disk,
// network, and the top processes by CPU.
import { getJson, knownMetrics, QueryBatcher } from './api';
import type { RangeResponse, Series, TopEntry } from './api';
import type { ChartLine, Limit, Marker } from './chart';
import { h, sparkline } from './dom';
import { formatValue } from './format';
import type { ProfileRef } from './state';
import type { ViewContext } from './view';
import { pickHandler, Widget } from './widget';

interface HostChartDef {
  id: string;
  title: string;
  profileKind?: string; // the profile a click opens (default: the panel's choice)
  // `limit`: drawn as a limit line (its latest value), not as a line.
  metrics: { metric: string; agg?: string; label?: (s: Series) => string; filter?: (s: Series) => boolean; limit?: boolean }[];
  stacked?: boolean;
  yMax?: number;
  maxLines?: number;
}

const HOST_CHARTS: HostChartDef[] = [
  { id: 'cpu', title: 'CPU', profileKind: 'cpu', stacked: true, yMax: 1, metrics: [{ metric: 'host.cpu.utilization', label: (s) => s.labels['mode'] ?? 'cpu', filter: (s) => s.labels['mode'] !== 'idle' }] },
  {
    id: 'memory',
    title: 'Memory',
    metrics: [
      { metric: 'host.memory.used', label: () => 'used' },
      { metric: 'host.memory.cached', label: () => 'cached' },
      { metric: 'host.memory.total', label: () => 'memory total', limit: true },
    ],
  },
  {
    id: 'load',
    title: 'Load average',
    metrics: [
      { metric: 'host.load.1m', label: () => '1 min' },
      { metric: 'host.load.5m', label: () => '5 min' },
      { metric: 'host.load.15m', label: () => '15 min' },
    ],
  },
  { id: 'disk', title: 'Disk I/O', maxLines: 8, metrics: [{ metric: 'host.disk.io', agg: 'rate', label: (s) => `${s.labels['device'] ?? ''} ${s.labels['direction'] ?? ''}` }] },
  { id: 'network', title: 'Network I/O', maxLines: 8, metrics: [{ metric: 'host.network.io', agg: 'rate', label: (s) => `${s.labels['interface'] ?? ''} ${s.labels['direction'] ?? ''}`, filter: (s) => s.labels['interface'] !== 'lo' }] },
];

export function buildHostTab(
  panel: HTMLElement,
  ctx: ViewContext,
  host: string,
  widgets: Widget[],
  loaders: ((c: ViewContext, markers: Marker[], q: QueryBatcher) => Promise<void>)[],
): void {
  const grid = h('div.widget-grid');
  panel.append(grid);
  for (const def of HOST_CHARTS) {
    const w = new Widget(def.title, undefined, def.id);
    grid.append(w.el);
    widgets.push(w);
    loaders.push((c, markers, q) => loadHostChart(w, def, c, host, markers, q));
  }
  const procCpu = new Widget('CPU by process', 'top processes; click a line for its CPU profile', 'cpu-processes');
  grid.append(procCpu.el);
  widgets.push(procCpu);
  loaders.push((c, markers, q) => loadProcessCpuChart(procCpu, c, host, markers, q));
  const procBox = h('div', { 'data-testid': 'top-processes' });
  panel.append(h('section.card', {}, h('h2', {}, 'Top processes by CPU'), procBox));
  loaders.push(async (c) => {
    const known = await knownMetrics();
    if (!known.has('process.cpu.utilization')) {
      procBox.replaceChildren(h('p.unavailable', {}, 'No per-process host metrics received (agent --enable-host-metrics).'));
      return;
    }
    const [cpu, rss] = await Promise.all([
      getJson<{ entries: TopEntry[] }>('/api/v1/top', { metric: 'process.cpu.utilization', host, kind: 'process', start: c.start, end: c.end, limit: 10, sparkline: 30 }),
      known.has('process.memory.rss')
        ? getJson<{ entries: TopEntry[] }>('/api/v1/top', { metric: 'process.memory.rss', host, kind: 'process', start: c.start, end: c.end, limit: 10000 })
        : Promise.resolve({ entries: [] as TopEntry[] }),
    ]);
    const rssBy = new Map(rss.entries.map((e) => [e.entity, e.latest]));
    // The training job of a rank's process (job.id, job.rank: docs/design/data-model.md), when
    // one of the listed processes belongs to one.
    const jobs = cpu.entries.some((e) => e.attributes['job.id']);
    const jobCell = (a: Record<string, string>) =>
      h('td', {}, a['job.id'] ? h('a', { href: c.href({ view: 'job', job: a['job.id'] }), 'data-testid': 'process-job' }, `${a['job.id']}${a['job.rank'] !== undefined ? ` · rank ${a['job.rank']}` : ''}`) : '');
    procBox.replaceChildren(
      h(
        'table.data',
        {},
        h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Process'), h('th.num', { scope: 'col' }, 'PID'), h('th.num', { scope: 'col' }, 'CPU (avg)'), h('th.num', { scope: 'col' }, 'RSS'), jobs ? h('th', { scope: 'col' }, 'Training job') : null, h('th', { scope: 'col' }, 'CPU over the window'))),
        h(
          'tbody',
          {},
          ...cpu.entries.map((e) =>
            h(
              'tr',
              {},
              h('td', { title: e.attributes['process.command_line'] ?? '' }, h('a', { href: c.href({ view: 'process', host, process: e.entity }) }, e.attributes['process.executable.name'] ?? e.entity)),
              h('td.num', {}, e.attributes['process.pid'] ?? ''),
              h('td.num', {}, formatValue(e.value, '1')),
              h('td.num', {}, formatValue(rssBy.get(e.entity) ?? null, 'By')),
              jobs ? jobCell(e.attributes) : null,
              h('td', {}, sparkline(e.sparkline ?? [], 140, 26, { max: 1 })),
            ),
          ),
        ),
      ),
    );
  });
}

async function loadHostChart(w: Widget, def: HostChartDef, c: ViewContext, host: string, markers: Marker[], q: QueryBatcher): Promise<void> {
  const known = await knownMetrics();
  const present = def.metrics.filter((m) => known.has(m.metric));
  if (present.length === 0) {
    w.unavailable(`Unavailable: no ${def.title.toLowerCase()} data has been received from this host.`);
    return;
  }
  const results = await Promise.all(
    present.map((m) => q.get<RangeResponse>('/api/v1/query_range', { metric: m.metric, host, kind: 'host', start: c.start, end: c.end, agg: m.agg })),
  );
  const lines: ChartLine[] = [];
  const limits: Limit[] = [];
  let unit = '';
  let step = 60;
  results.forEach((r, i) => {
    const m = present[i];
    unit = r.metric.unit === 'By' && m.agg === 'rate' ? 'By/s' : r.metric.unit;
    step = r.step;
    for (const s of r.series) {
      if (m.filter && !m.filter(s)) continue;
      const label = m.label ? m.label(s) : s.entity;
      if (m.limit) {
        const last = [...s.points].reverse().find((p) => p[1] !== null);
        if (last) limits.push({ label: `${label} ${formatValue(last[1], r.metric.unit)}`, value: last[1] as number });
      } else {
        lines.push({ label, points: s.points });
      }
    }
  });
  if (lines.length === 0) {
    w.unavailable(`No ${def.title.toLowerCase()} data in this window.`);
    return;
  }
  w.show({
    unit,
    lines,
    limits,
    // Past maxLines: the busiest lines and the rest summed as "others".
    maxLines: def.maxLines,
    fitData: c.state.range !== '',
    stacked: def.stacked,
    start: c.start,
    end: c.end,
    step,
    yMax: def.yMax,
    markers,
    ariaLabel: `${def.title} of ${host}`,
    onZoom: (a, b) => c.navigate({ from: a, to: b, range: '', live: false }),
    onPick: pickHandler(c, step, () => (def.profileKind ? { kind: def.profileKind } : {})),
  });
}

// The CPU of the host's busiest processes (process.cpu.utilization, one line each); a click
// opens that process's CPU profile of the bucket, on "others" that of every process but the ones
// shown.
async function loadProcessCpuChart(w: Widget, c: ViewContext, host: string, markers: Marker[], q: QueryBatcher): Promise<void> {
  const known = await knownMetrics();
  if (!known.has('process.cpu.utilization')) {
    w.unavailable('No per-process host metrics received (agent --enable-host-metrics).');
    return;
  }
  const r = await q.get<RangeResponse>('/api/v1/query_range', { metric: 'process.cpu.utilization', host, kind: 'process', start: c.start, end: c.end });
  const sum = (s: Series) => s.points.reduce((a, p) => a + (p[1] ?? 0), 0);
  // Every process: the chart keeps the top 7 and sums the rest as "others" (maxLines 8).
  const top = [...r.series].sort((a, b) => sum(b) - sum(a));
  if (top.length === 0) {
    w.unavailable('No process used CPU in this window.');
    return;
  }
  const byLabel = new Map<string, Partial<ProfileRef>>();
  const lines: ChartLine[] = top.map((s) => {
    const pid = Number(s.attributes['process.pid'] ?? NaN);
    const label = `${s.attributes['process.executable.name'] ?? s.entity}${Number.isFinite(pid) ? ` (pid ${pid})` : ''}`;
    byLabel.set(label, { kind: 'cpu', entity: s.entity, pid: Number.isFinite(pid) ? pid : undefined });
    return { label, points: s.points };
  });
  w.show({
    unit: r.metric.unit,
    lines,
    maxLines: 8,
    fitData: c.state.range !== '',
    start: c.start,
    end: c.end,
    step: r.step,
    markers,
    ariaLabel: `CPU by process on ${host}`,
    onZoom: (a, b) => c.navigate({ from: a, to: b, range: '', live: false }),
    onPick: pickHandler(c, r.step, (label, _start, _end, shown) => {
      if (shown) return { kind: 'cpu', notPids: shown.flatMap((l) => byLabel.get(l)?.pid ?? []) };
      return (label && byLabel.get(label)) || { kind: 'cpu' };
    }),
  });
}

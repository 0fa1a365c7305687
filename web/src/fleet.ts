// SPDX-License-Identifier: Apache-2.0
// Fleet overview (triage): tiles for GPU utilization, power, memory, processes and problems,
// the fleet's utilization over time, and every host; each links down.
import { getJson } from './api';
import type { FleetHost, FleetResponse } from './api';
import { TimeChart } from './chart';
import { h, sparkline } from './dom';
import { formatAge, formatValue } from './format';
import { SEVERITIES, fetchInsights, severityBadge } from './insights_api';
import type { Finding } from './insights_api';
import type { View, ViewContext } from './view';

export async function fleetView(root: HTMLElement, ctx: ViewContext): Promise<View> {
  const tiles = h('div.tiles', { 'data-testid': 'fleet-tiles' });
  const chartBox = h('div');
  const hostsBox = h('div', { id: 'hosts' });
  const clusterBox = h('div', { 'data-testid': 'fleet-findings' });
  root.append(
    h('h1', {}, 'Fleet overview'),
    tiles,
    clusterBox,
    h('section.card', {}, h('h2', {}, 'GPU utilization, fleet average'), chartBox),
    h('section.card', {}, h('h2', {}, 'Hosts'), hostsBox),
  );
  let chart: TimeChart | null = null;

  const render = async (c: ViewContext) => {
    const [fleet, firing] = await Promise.all([
      getJson<FleetResponse>('/api/v1/fleet', { start: c.start, end: c.end }),
      // The badges: firing findings per host (none when insights are off or unreachable).
      fetchInsights({ state: 'firing' }).then(
        (r) => r.list?.insights ?? [],
        (e) => {
          console.warn('findings unavailable', e);
          return [] as Finding[];
        },
      ),
    ]);
    const t = fleet.totals;
    const memShare =
      t.memory_used_bytes !== null && t.memory_total_bytes ? t.memory_used_bytes / t.memory_total_bytes : null;
    const powerShare = t.power_watts !== null && t.power_limit_watts ? t.power_watts / t.power_limit_watts : null;
    const worst = [...fleet.hosts].sort((a, b) => b.events + b.degraded_gpus - (a.events + a.degraded_gpus))[0];
    tiles.replaceChildren(
      tile('Hosts', String(t.hosts), `${t.hosts_with_problems} with errors`, '#hosts', t.hosts_with_problems > 0),
      tile('GPUs', String(t.gpus), t.degraded_gpus ? `${t.degraded_gpus} degraded` : 'none degraded', c.href({ view: 'top', kind: 'gpu', sort: 'gpu.utilization' }), t.degraded_gpus > 0),
      tile('GPU utilization', formatValue(t.gpu_utilization, '1'), 'average over the window', c.href({ view: 'top', kind: 'gpu', sort: 'gpu.utilization' }), false, fleet.utilization, 'gpu-utilization'),
      tile('GPU power', formatValue(t.power_watts, 'W'), powerShare !== null ? `${formatValue(powerShare, '1')} of ${formatValue(t.power_limit_watts, 'W')} limit` : 'now', c.href({ view: 'top', kind: 'gpu', sort: 'gpu.power.usage' }), false, fleet.power, 'gpu-power'),
      tile('GPU memory', formatValue(t.memory_used_bytes, 'By'), memShare !== null ? `${formatValue(memShare, '1')} of ${formatValue(t.memory_total_bytes, 'By')}` : 'in use now', c.href({ view: 'top', kind: 'gpu', sort: 'gpu.memory.used' })),
      tile('GPU processes', String(t.gpu_processes), 'that ran in the window', c.href({ view: 'top', kind: 'executable', sort: 'gpu.executable.sm.utilization' })),
      tile('Events', String(t.events), 'XID and other GPU events', worst && worst.events > 0 ? c.href({ view: 'host', host: worst.host, tab: 'gpu' }) : '#hosts', t.events > 0),
    );
    const spec = {
      unit: '1',
      lines: [{ label: 'fleet average', points: fleet.utilization }],
      start: c.start,
      end: c.end,
      yMax: 1,
      height: 180,
      ariaLabel: 'Fleet average GPU utilization over time',
      onZoom: (a: number, b: number) => c.navigate({ from: a, to: b, range: '', live: false }),
    };
    if (chart) chart.update(spec);
    else chart = new TimeChart(chartBox, spec);
    hostsBox.replaceChildren(hostsTable(fleet.hosts, c, firing));
    clusterBox.replaceChildren(...clusterFindings(firing, c));
  };
  await render(ctx);
  return {
    refresh: render,
    destroy: () => chart?.destroy(),
  };
}

function tile(
  title: string,
  value: string,
  sub: string,
  href: string,
  alert = false,
  spark?: [number, number | null][],
  testid?: string,
): HTMLElement {
  return h(
    'a.tile',
    { href, class: alert ? 'alert' : undefined, 'data-testid': testid ? `tile-${testid}` : undefined },
    h('span.tile-title', {}, title),
    h('span.tile-value', {}, value),
    h('span.tile-sub', {}, sub),
    spark && spark.length > 1 ? sparkline(spark, 160, 30) : null,
  );
}

const COLUMN_NOTES: Record<string, string> = {
  'GPU processes': 'Processes that had GPU memory at some time in the window, ended ones included, each once',
};

// A host's firing findings as one badge per severity, linking to the Insights page of the host.
function findingBadges(host: string, firing: Finding[], c: ViewContext): HTMLElement | string {
  const mine = firing.filter((f) => f.host === host);
  if (mine.length === 0) return '–';
  const counts = SEVERITIES.map((s) => [s, mine.filter((f) => f.severity === s).length] as const).filter(([, n]) => n > 0);
  return h(
    'a.badges',
    {
      href: c.href({ view: 'insights', insights: { host, state: 'firing' } }),
      'data-testid': 'host-badges',
      'aria-label': `${host}: ${counts.map(([s, n]) => `${n} ${s}`).join(', ')} firing`,
    },
    ...counts.map(([s, n]) => severityBadge(s, `${n} ${s}`)),
  );
}

// Firing findings about a whole cluster (no one host, such as fleet_regression): one line each,
// above the hosts, linking to the finding.
function clusterFindings(firing: Finding[], c: ViewContext): HTMLElement[] {
  const mine = firing.filter((f) => f.host === '');
  if (mine.length === 0) return [];
  return [
    h(
      'section.card',
      {},
      h('h2', {}, 'Fleet findings'),
      h(
        'ul.findings',
        {},
        ...mine.map((f) =>
          h(
            'li',
            {},
            severityBadge(f.severity),
            ' ',
            h('a', { href: c.href({ view: 'finding', finding: f.id }), 'data-testid': 'fleet-finding' }, f.title),
            ' ',
            h('span.muted', {}, f.summary),
          ),
        ),
      ),
    ),
  ];
}

function hostsTable(hosts: FleetHost[], c: ViewContext, firing: Finding[]): HTMLElement {
  if (hosts.length === 0) {
    return h('p.empty', {}, 'No host has reported in this window. Start an agent with --server pointing here, or widen the time range.');
  }
  const sorted = [...hosts].sort((a, b) => b.events + b.degraded_gpus - (a.events + a.degraded_gpus) || a.host.localeCompare(b.host));
  return h(
    'table.data',
    { 'data-testid': 'hosts-table' },
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        ...['Host', 'GPUs', 'GPU util.', 'Power', 'GPU memory', 'Max temp.', 'GPU processes', 'Events', 'Findings', 'Last seen'].map((x, i) =>
          h(i === 0 ? 'th' : 'th.num', { scope: 'col', title: COLUMN_NOTES[x] }, x),
        ),
      ),
    ),
    h(
      'tbody',
      {},
      ...sorted.map((x) =>
        h(
          'tr',
          {},
          h('td', {}, h('a', { href: c.href({ view: 'host', host: x.host, tab: x.gpus > 0 ? 'gpu' : 'host', expand: undefined, bgpu: undefined }) }, x.host)),
          h('td.num', {}, x.degraded_gpus ? `${x.gpus} (${x.degraded_gpus} degraded)` : String(x.gpus)),
          h('td.num', {}, formatValue(x.gpu_utilization, '1')),
          h('td.num', {}, x.power_limit_watts ? `${formatValue(x.power_watts, 'W')} / ${formatValue(x.power_limit_watts, 'W')}` : formatValue(x.power_watts, 'W')),
          h('td.num', {}, x.memory_total_bytes ? `${formatValue(x.memory_used_bytes, 'By')} / ${formatValue(x.memory_total_bytes, 'By')}` : formatValue(x.memory_used_bytes, 'By')),
          h('td.num', {}, formatValue(x.temperature_max, 'Cel')),
          h('td.num', {}, String(x.gpu_processes)),
          h('td.num', {}, x.events ? h('span.badge.bad', {}, x.xid_events ? `${x.events} (${x.xid_events} XID)` : String(x.events)) : '0'),
          h('td.num', {}, findingBadges(x.host, firing, c)),
          h('td.num', {}, formatAge(x.last_seen)),
        ),
      ),
    ),
  );
}

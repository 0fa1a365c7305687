// SPDX-License-Identifier: Apache-2.0
// One finding: what, where, when, why (its evidence figures and the series that raised it, drawn
// as charts), what to do, what it costs; links to the host page at that time and, when the rule
// names one, the profile that explains it.
import { getJson } from './api';
import type { Point } from './api';
import { TimeChart } from './chart';
import { h } from './dom';
import { formatTime } from './format';
import { entityHref, entityName, findingPlace, formatCost, formatGpuHours, severityBadge, stateBadge } from './insights_api';
import type { EvidenceSeries, Finding } from './insights_api';
import type { View, ViewContext } from './view';

// The host page's window around a finding: from a minute before to a minute after (or now).
function around(f: Finding): { from: number; to: number } {
  const from = Math.floor(f.start / 1000) - 60;
  const to = Math.min(Math.ceil(f.end / 1000) + 60, Math.ceil(Date.now() / 1000));
  return { from, to: Math.max(to, from + 120) };
}

export function seriesPoints(s: EvidenceSeries): Point[] {
  return s.values.map((v, i) => [(s.start + i * s.step_ms) / 1000, v]);
}

function figure(v: unknown): string {
  if (v === null || v === undefined) return '–';
  if (typeof v === 'number') return String(v);
  if (typeof v === 'string') return v;
  return JSON.stringify(v);
}

// The finding's entity, linked to its page when it has one (a GPU, a process).
function entityLink(f: Finding, ctx: ViewContext): Node | string {
  const text = `${f.kind} ${f.entity}`;
  const href = entityHref(f, ctx);
  return href ? h('a', { href, 'data-testid': 'finding-entity' }, text) : text;
}

export async function findingView(root: HTMLElement, ctx: ViewContext): Promise<View> {
  const id = ctx.state.finding!;
  const f = await getJson<Finding>(`/api/v1/insights/${encodeURIComponent(id)}`);
  document.title = `${f.title} · warpscope`;
  const charts: TimeChart[] = [];
  const win = around(f);
  // A cluster's finding has no one host: it opens the fleet view at that time instead.
  const hostLink = f.host
    ? h(
        'a.btn',
        { href: ctx.href({ view: 'host', host: f.host, tab: f.kind === 'gpu' ? 'gpu' : 'host', from: win.from, to: win.to, range: '', live: false }), 'data-testid': 'open-host' },
        'Open in host view',
      )
    : h('a.btn', { href: ctx.href({ view: 'fleet', from: win.from, to: win.to, range: '', live: false }), 'data-testid': 'open-fleet' }, 'Open in fleet view');
  const hostLinks = (hosts: unknown): Node | string => {
    if (!Array.isArray(hosts) || hosts.length === 0) return '–';
    const links = hosts.map((x) => {
      const name = typeof x === 'object' && x !== null && 'host' in x ? String((x as { host: unknown }).host) : String(x);
      return h('a', { href: ctx.href({ view: 'host', host: name, from: win.from, to: win.to, range: '', live: false }) }, name);
    });
    return h('span', {}, ...links.flatMap((l, i) => (i ? [', ', l] : [l])));
  };
  const p = f.evidence.profile;
  const profileBtn = p
    ? h(
        'button.btn.primary',
        {
          type: 'button',
          'data-testid': 'open-profile',
          title: `The ${p.kind} profile of ${p.entity} from ${formatTime(p.start / 1000)} to ${formatTime(p.end / 1000)}`,
          onclick: () =>
            ctx.navigate({
              view: 'host',
              host: p.host,
              tab: 'host',
              from: Math.floor(p.start / 1000) - 60,
              to: Math.ceil(p.end / 1000) + 60,
              range: '',
              live: false,
              profile: { kind: p.kind, entity: p.entity, pid: p.pid, start: p.start / 1000, end: p.end / 1000 },
            }),
        },
        `Open the ${p.kind.toUpperCase()} profile`,
      )
    : null;
  const attrs = Object.entries(f.attributes).sort(([a], [b]) => a.localeCompare(b));
  const figures = Object.entries(f.evidence).filter(([k]) => k !== 'series' && k !== 'profile');
  const dl = (rows: [string, Node | string][]) => h('dl.facts', {}, ...rows.flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
  root.append(
    h('p.crumbs', {}, h('a', { href: ctx.href({ view: 'insights', insights: {} }) }, 'Insights'), ' › ', f.rule),
    h('h1', { 'data-testid': 'finding-title' }, f.title),
    h('p.finding-head', {}, severityBadge(f.severity), ' ', stateBadge(f.state), ' ', h('span', {}, `${findingPlace(f)} · ${entityName(f)}`)),
    h('p.summary', { 'data-testid': 'finding-summary' }, f.summary),
    h('div.actions', {}, hostLink, profileBtn),
    h(
      'div.finding-grid',
      {},
      h(
        'section.card',
        {},
        h('h2', {}, 'Where and when'),
        dl([
          f.host ? ['Host', h('a', { href: ctx.href({ view: 'host', host: f.host }) }, f.host)] : ['Hosts', hostLinks(f.evidence['hosts'])],
          ['Entity', entityLink(f, ctx)],
          ['Since', formatTime(f.start / 1000)],
          [f.state === 'resolved' ? 'Until' : 'Last seen', formatTime(f.end / 1000)],
          ['GPU-hours lost', formatGpuHours(f.waste.gpu_hours)],
          ['Cost', formatCost(f.waste.cost)],
          ...attrs.map(([k, v]): [string, string] => [k, v]),
        ]),
      ),
      h(
        'section.card',
        {},
        h('h2', {}, 'What to do'),
        h('p', { 'data-testid': 'finding-suggestion' }, f.suggestion),
        h('h2', {}, 'Evidence'),
        figures.length
          ? h(
              'table.data.evidence',
              { 'data-testid': 'evidence-table' },
              h('tbody', {}, ...figures.map(([k, v]) => h('tr', {}, h('th', { scope: 'row' }, k), h('td.num', {}, figure(v))))),
            )
          : h('p.muted', {}, 'No figures.'),
      ),
    ),
  );
  const series = f.evidence.series ?? [];
  if (series.length) {
    const grid = h('div.widget-grid', { 'data-testid': 'evidence-charts' });
    root.append(h('section.group', { 'aria-label': 'Evidence series' }, h('h2', {}, 'The series behind it'), grid));
    for (const s of series) {
      const box = h('div');
      grid.append(h('section.widget', { 'aria-label': s.metric, 'data-testid': `evidence-${s.metric}` }, h('header.widget-head', {}, h('h3', {}, s.metric)), box));
      const points = seriesPoints(s);
      const start = points.length ? points[0][0] : f.start / 1000;
      const end = points.length ? points[points.length - 1][0] + s.step_ms / 1000 : f.end / 1000;
      charts.push(
        new TimeChart(box, {
          unit: s.unit,
          lines: [{ label: s.metric, points }],
          start,
          end,
          step: s.step_ms / 1000,
          yMax: s.unit === '1' ? 1 : undefined,
          height: 180,
          markers: [{ time: f.start / 1000, end: f.end / 1000, kind: 'finding', severity: f.severity, pending: f.state === 'pending', label: f.title }],
          ariaLabel: `${s.metric} behind the finding`,
        }),
      );
    }
  }
  // A finding page does not move with the time range: live mode leaves it as it is.
  return { refresh: async () => {}, destroy: () => charts.forEach((c) => c.destroy()) };
}

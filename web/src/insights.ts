// SPDX-License-Identifier: Apache-2.0
// The Insights page: the findings of the server's insights engine, most urgent first, filtered
// by severity, state, rule and host (in the URL), with the totals of what is listed.
import { h } from './dom';
import { formatAge, formatTime } from './format';
import { SEVERITIES, STATES, byUrgency, entityHref, entityName, fetchInsights, formatCost, formatGpuHours, severityBadge, stateBadge } from './insights_api';
import type { Finding, InsightsResponse } from './insights_api';
import type { InsightFilters } from './state';
import type { View, ViewContext } from './view';

export async function insightsView(root: HTMLElement, ctx: ViewContext): Promise<View> {
  const filters = ctx.state.insights ?? {};
  const totals = h('div.tiles', { 'data-testid': 'insight-totals' });
  const filterBox = h('form.filters', { 'aria-label': 'Filters', 'data-testid': 'insight-filters', onsubmit: (e: Event) => e.preventDefault() });
  const listBox = h('div', { id: 'findings', 'aria-live': 'polite' });
  root.append(h('h1', {}, 'Insights'), totals, h('section.card', {}, filterBox, listBox));
  const setFilter = (k: keyof InsightFilters, v: string) => ctx.navigate({ insights: { ...filters, [k]: v || undefined } }, true);

  const render = async (c: ViewContext) => {
    // Findings are listed whatever their time (the engine keeps them); the time range does not
    // filter them, so a finding stays on the page while it is open.
    const { list, off } = await fetchInsights({ severity: filters.severity, state: filters.state, rule: filters.rule, host: filters.host });
    if (!list) {
      totals.replaceChildren();
      filterBox.replaceChildren();
      listBox.replaceChildren(h('p.empty', { 'data-testid': 'insights-off' }, `The server says: ${off}.`));
      return;
    }
    totals.replaceChildren(
      totalTile('Firing', String(list.totals.firing), 'findings that hold now', list.totals.firing > 0),
      totalTile('Pending', String(list.totals.pending), 'seen, not yet held long enough'),
      totalTile('GPU-hours lost', formatGpuHours(list.totals.gpu_hours), 'by the listed findings'),
      totalTile('Cost', formatCost(list.totals.cost), list.totals.cost > 0 ? 'at the server\'s GPU-hour price' : 'no --gpu-hour-price set'),
    );
    if (!filterBox.firstChild) filterBox.append(...filterControls(list, filters, setFilter));
    listBox.replaceChildren(findingsTable([...list.insights].sort(byUrgency), c, filters));
  };
  await render(ctx);
  return { refresh: render, destroy: () => {} };
}

function totalTile(title: string, value: string, sub: string, alert = false): HTMLElement {
  return h(
    'div.tile',
    { class: alert ? 'alert' : undefined },
    h('span.tile-title', {}, title),
    h('span.tile-value', {}, value),
    h('span.tile-sub', {}, sub),
  );
}

function select(label: string, testid: string, value: string | undefined, options: [string, string][], onChange: (v: string) => void): HTMLElement {
  const id = `filter-${testid}`;
  return h(
    'span.filter',
    {},
    h('label', { for: id }, label),
    h(
      'select',
      { id, 'data-testid': id, onchange: (e: Event) => onChange((e.target as HTMLSelectElement).value) },
      h('option', { value: '' }, 'all'),
      ...options.map(([v, text]) => h('option', { value: v, selected: v === value }, text)),
    ),
  );
}

function filterControls(list: InsightsResponse, f: InsightFilters, set: (k: keyof InsightFilters, v: string) => void): HTMLElement[] {
  const hosts = [...new Set([...list.insights.map((x) => x.host).filter((x) => x !== ''), ...(f.host ? [f.host] : [])])].sort();
  return [
    select('Severity', 'severity', f.severity, SEVERITIES.map((s) => [s, s]), (v) => set('severity', v)),
    select('State', 'state', f.state, STATES.map((s) => [s, s]), (v) => set('state', v)),
    select('Rule', 'rule', f.rule, list.rules.map((r) => [r.name, r.title]), (v) => set('rule', v)),
    select('Host', 'host', f.host, hosts.map((x) => [x, x]), (v) => set('host', v)),
  ];
}

function findingsTable(list: Finding[], c: ViewContext, f: InsightFilters): HTMLElement {
  if (list.length === 0) {
    const filtered = Object.values(f).some(Boolean);
    return h(
      'p.empty',
      { 'data-testid': 'insights-empty' },
      filtered ? 'No finding matches these filters.' : 'Insights are on and nothing is wrong: no rule has found a problem in the data the agents send.',
    );
  }
  const cols = ['Severity', 'Finding', 'Where', 'State', 'Since', 'GPU-hours', 'Cost'];
  return h(
    'table.data.findings',
    { 'data-testid': 'findings-table' },
    h('thead', {}, h('tr', {}, ...cols.map((x, i) => h(i >= 5 ? 'th.num' : 'th', { scope: 'col' }, x)))),
    h(
      'tbody',
      {},
      ...list.map((x) =>
        h(
          'tr',
          { 'data-rule': x.rule, 'data-state': x.state },
          h('td', {}, severityBadge(x.severity)),
          h('td.finding-cell', {}, h('a', { href: c.href({ view: 'finding', finding: x.id }) }, x.title), h('p.muted.summary', {}, x.summary)),
          h(
            'td',
            {},
            x.host ? h('a', { href: c.href({ view: 'host', host: x.host, tab: x.kind === 'gpu' ? 'gpu' : 'host' }) }, x.host) : h('a', { href: c.href({ view: 'fleet' }) }, 'fleet'),
            h('br'),
            entityHref(x, c) ? h('a.muted', { href: entityHref(x, c)! }, entityName(x)) : h('span.muted', {}, entityName(x)),
          ),
          h('td', {}, stateBadge(x.state)),
          h('td', { title: formatTime(x.start / 1000) }, formatAge(x.start / 1000)),
          h('td.num', {}, formatGpuHours(x.waste.gpu_hours)),
          h('td.num', {}, formatCost(x.waste.cost)),
        ),
      ),
    ),
  );
}

// SPDX-License-Identifier: Apache-2.0
// The host page's findings: a strip above the charts listing the host's open findings (each
// links to its finding page), and the findings of the window as bands on the charts.
import type { Marker } from './chart';
import { h } from './dom';
import { formatAge } from './format';
import { byUrgency, entityName, fetchInsights, isOpen, severityBadge } from './insights_api';
import type { Finding } from './insights_api';
import type { ViewContext } from './view';

// The host's findings that overlap the window: the open ones, and every one as a band. A server
// with insights off has none (and the host page says nothing about it).
export async function findingMarkers(c: ViewContext, host: string, gpuName: (uuid: string) => string, fetched = fetchFindings(c, host)): Promise<{ open: Finding[]; bands: Marker[] }> {
  const list = await fetched;
  const bands: Marker[] = list.map((f) => {
    const where = f.kind === 'gpu' ? gpuName(f.entity) : entityName(f);
    return {
      time: f.start / 1000,
      end: Math.max(f.end, f.start) / 1000,
      kind: 'finding',
      severity: f.severity,
      pending: f.state === 'pending',
      line: f.kind === 'gpu' ? where : undefined,
      label: `${f.title} on ${where} (${f.severity}, ${f.state})`,
    };
  });
  return { open: list.filter(isOpen).sort(byUrgency), bands };
}

// The host's findings that overlap the window (none when the server cannot say).
export async function fetchFindings(c: ViewContext, host: string): Promise<Finding[]> {
  try {
    return (await fetchInsights({ host, start: Math.floor(c.start), end: Math.ceil(c.end) })).list?.insights ?? [];
  } catch (e) {
    console.warn('findings unavailable', e);
    return [];
  }
}

// Keeps its height while the list is the same length (live refresh does not move the charts).
export function findingsStrip(box: HTMLElement, open: Finding[], c: ViewContext): void {
  if (open.length === 0) {
    box.replaceChildren();
    return;
  }
  box.replaceChildren(
    h(
      'section.card.strip',
      { 'aria-label': 'Open findings of this host' },
      h('h2', {}, `${open.length} open finding${open.length === 1 ? '' : 's'}`),
      h(
        'ul.strip-list',
        {},
        ...open.map((f) =>
          h(
            'li',
            {},
            severityBadge(f.severity),
            ' ',
            h('a', { href: c.href({ view: 'finding', finding: f.id }), 'data-testid': 'host-finding', 'data-rule': f.rule }, f.title),
            h('span.muted', {}, ` · ${entityName(f)} · ${f.state} since ${formatAge(f.start / 1000)}`),
          ),
        ),
      ),
    ),
  );
}

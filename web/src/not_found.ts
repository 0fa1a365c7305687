// SPDX-License-Identifier: Apache-2.0
// The "not found" view of a path the UI does not know, and the notice of URL parameters it
// could not read (each says what the view shows instead).
import { h } from './dom';
import type { View, ViewContext } from './view';

export async function notFoundView(root: HTMLElement, ctx: ViewContext): Promise<View> {
  root.append(
    h(
      'section.card.notfound',
      { 'data-testid': 'not-found', role: 'alert' },
      h('h1', {}, 'Page not found'),
      h('p', {}, 'The UI has no page at ', h('code', {}, window.location.pathname), '.'),
      h(
        'p',
        {},
        'Its pages: ',
        h('a', { href: ctx.href({ view: 'fleet' }) }, 'Fleet'),
        ' · ',
        h('a', { href: ctx.href({ view: 'top' }) }, 'Top entities'),
        ' · ',
        h('a', { href: ctx.href({ view: 'insights' }) }, 'Insights'),
        ' · ',
        h('a', { href: ctx.href({ view: 'inference' }) }, 'Inference'),
        ' · ',
        h('a', { href: ctx.href({ view: 'jobs' }) }, 'Jobs'),
        ', and from there a host (/host/<host>), one of its processes (/host/<host>/process/<entity id>) or GPUs (/host/<host>/gpu/<uuid>).',
      ),
    ),
  );
  return { refresh: async () => {}, destroy: () => {} };
}

export function urlProblems(problems: string[]): HTMLElement {
  return h(
    'section.card.url-problems',
    { role: 'alert', 'data-testid': 'url-problems' },
    h('h2', {}, problems.length === 1 ? 'A parameter of this URL cannot be read' : 'Parameters of this URL cannot be read'),
    h('ul', {}, ...problems.map((p) => h('li', {}, p))),
  );
}

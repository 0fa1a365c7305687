// SPDX-License-Identifier: Apache-2.0
// The host page's building blocks: a chart card (Widget) and what a click on a chart's point
// opens (the profile panel for that bucket).
import { TimeChart } from './chart';
import type { ChartSpec } from './chart';
import { h } from './dom';
import type { ProfileRef } from './state';
import type { ViewContext } from './view';

// A card with a title, a chart and notes; `load` fills it for a window.
export class Widget {
  readonly el: HTMLElement;
  readonly body: HTMLElement;
  readonly notes: HTMLElement;
  chart: TimeChart | null = null;

  constructor(title: string, subtitle: string | undefined, testid: string, actions: HTMLElement[] = []) {
    this.body = h('div.widget-body');
    this.notes = h('div.widget-notes');
    this.el = h(
      'section.widget',
      { 'data-testid': `widget-${testid}`, 'aria-label': title },
      h('header.widget-head', {}, h('h3', {}, title, subtitle ? h('span.muted', {}, ` · ${subtitle}`) : null), h('div.widget-actions', {}, ...actions)),
      this.body,
      this.notes,
    );
  }

  show(spec: ChartSpec): void {
    if (this.chart) {
      this.chart.update(spec);
      return;
    }
    this.body.textContent = '';
    this.chart = new TimeChart(this.body, spec);
  }

  unavailable(message: string): void {
    this.chart?.destroy();
    this.chart = null;
    this.body.replaceChildren(h('p.unavailable', { 'data-testid': 'unavailable' }, message));
  }

  destroy(): void {
    this.chart?.destroy();
  }
}

// Opens the profile of the clicked bucket (at least a minute around it); `refine` adds what the
// clicked line says (a kind, a process).
export function pickHandler(
  c: ViewContext,
  step: number,
  refine: (label: string | null) => Partial<ProfileRef> = () => ({}),
): (t: number, label: string | null) => void {
  return (t: number, label: string | null) => {
    const width = Math.max(step, 60);
    const start = t - (width - step) / 2;
    c.openProfile({ ...refine(label), start, end: start + width });
  };
}

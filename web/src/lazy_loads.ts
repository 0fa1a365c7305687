// SPDX-License-Identifier: Apache-2.0
// Charts that load when they come near the viewport (the host page's GPU Metrics tab: a dozen
// charts, of which a 1440×900 screen shows four). The ones on the first screen load with the
// view, their queries in one batch; the others once that screen is drawn, when they come within
// a screen of the viewport (IntersectionObserver): those that come near together share a batch.
// The first screen is guessed before the page above the charts is filled; its charts draw once
// it is (drawOnScreen), those still on the screen then: the others (an open events list moves
// the second row below the fold) draw when they come near, with the data already loaded.
// A refresh (live mode) reloads the charts loaded so far; the others load with the latest
// window when they come near. When every chart has loaded, the app measures
// `warpscope:view-all:<view>` from the render's start (bench/ui_load.mjs reads it).
import { QueryBatcher } from './api';
import type { Marker } from './chart';
import type { ViewContext } from './view';
import type { Widget } from './widget';

export type ChartLoader = (c: ViewContext, markers: Marker[], q: QueryBatcher) => Promise<void>;

interface Entry {
  widget: Widget;
  load: ChartLoader;
  started: boolean;
  // Loaded with the first screen, not drawn yet (Widget.hold).
  held: boolean;
  loading: boolean;
}

// The cards' chart widths, read together (one layout) before any chart is built: building a
// chart changes the page, and a width read after that lays the page out again.
function readWidths(entries: Entry[]): void {
  for (const e of entries) e.widget.widthHint = e.widget.body.clientWidth;
}

// Whether any of the element lies in the viewport (`height` high).
function onScreen(el: HTMLElement, height: number): boolean {
  const r = el.getBoundingClientRect();
  return r.bottom > 0 && r.top < height;
}

// How far outside the viewport a chart starts loading: one screen above and below.
const NEAR_MARGIN = '100% 0px 100% 0px';

export class LazyLoads {
  private readonly entries: Entry[] = [];
  private observer: IntersectionObserver | null = null;
  private ctx: ViewContext | null = null;
  private markers: Marker[] = [];
  private loading = 0;
  private measured = false;

  constructor(private readonly measureName: string) {}

  add(widget: Widget, load: ChartLoader): void {
    this.entries.push({ widget, load, started: false, held: false, loading: false });
    widget.el.setAttribute('data-load', 'idle');
  }

  // The loads of a render: on the first, the charts on screen now (their positions read in one
  // layout); on a refresh, every chart loaded so far. The others wait for `watch`.
  loads(c: ViewContext, markers: Marker[], q: QueryBatcher): Promise<void>[] {
    this.ctx = c;
    this.markers = markers;
    const first = !this.entries.some((e) => e.started);
    const height = window.innerHeight || document.documentElement.clientHeight;
    const now = first ? this.entries.filter((e) => onScreen(e.widget.el, height)) : this.entries.filter((e) => e.started);
    readWidths(now);
    return now.map((e) => this.start(e, c, markers, q, first));
  }

  // Once the page above the charts is filled: the first screen's charts whose plots lie on the
  // screen draw now (their positions read in one layout); the others when they come near.
  drawOnScreen(): void {
    const height = window.innerHeight || document.documentElement.clientHeight;
    const on = this.entries.filter((e) => e.held && onScreen(e.widget.body, height));
    for (const e of on) this.release(e);
  }

  // After the first screen is drawn: the other charts load as they come near.
  watch(): void {
    if (this.observer || typeof IntersectionObserver === 'undefined') {
      if (!this.observer) this.loadRest();
      return;
    }
    this.observer = new IntersectionObserver((list) => this.onNear(list), { rootMargin: NEAR_MARGIN });
    for (const e of this.entries) if (!e.started || e.held) this.observer.observe(e.widget.el);
    this.checkAll();
  }

  destroy(): void {
    this.observer?.disconnect();
    this.observer = null;
    this.ctx = null;
  }

  private onNear(list: IntersectionObserverEntry[]): void {
    if (!this.ctx) return;
    const near = list
      .filter((item) => item.isIntersecting)
      .map((item) => this.entries.find((x) => x.widget.el === item.target))
      .filter((e): e is Entry => e !== undefined && (!e.started || e.held));
    for (const e of near) this.observer?.unobserve(e.widget.el);
    for (const e of near) if (e.held) this.release(e);
    const fresh = near.filter((e) => !e.started);
    readWidths(fresh);
    const q = new QueryBatcher();
    for (const e of fresh) void this.start(e, this.ctx, this.markers, q);
  }

  // Without IntersectionObserver: every chart, at once.
  private loadRest(): void {
    if (!this.ctx) return;
    for (const e of this.entries) if (e.held) this.release(e);
    const q = new QueryBatcher();
    for (const e of this.entries) if (!e.started) void this.start(e, this.ctx, this.markers, q);
  }

  // A chart's load (held: its drawing waits for release); a failure shows in its card (the page's
  // other charts are not affected).
  private async start(e: Entry, c: ViewContext, markers: Marker[], q: QueryBatcher, hold = false): Promise<void> {
    e.started = true;
    e.loading = true;
    e.widget.el.setAttribute('data-load', 'loading');
    if (hold) {
      e.held = true;
      e.widget.hold();
    }
    this.loading++;
    try {
      await e.load(c, markers, q);
    } catch (err) {
      if (this.ctx) e.widget.unavailable(`Cannot load this chart: ${(err as Error).message}`);
    } finally {
      this.loading--;
      e.loading = false;
      if (!e.held) e.widget.el.setAttribute('data-load', 'done');
    }
    this.checkAll();
  }

  // Draws a held chart (or, still loading, lets it draw when its data is in).
  private release(e: Entry): void {
    e.held = false;
    e.widget.release();
    if (!e.loading) e.widget.el.setAttribute('data-load', 'done');
    this.checkAll();
  }

  private checkAll(): void {
    if (this.measured || this.loading > 0 || !this.observer || this.entries.some((e) => !e.started || e.held)) return;
    this.measured = true;
    try {
      performance.measure(this.measureName, 'warpscope:render');
    } catch {
      // no render mark (a view built outside the app shell)
    }
  }
}

// SPDX-License-Identifier: Apache-2.0
// The host page's building blocks: a chart card (Widget), what a click on a chart's point opens
// (the profile panel for that bucket: of the clicked GPU, process or executable) and the marks of
// the windows that have profiles.
import { getJson } from './api';
import type { ProfileMeta, TopEntry } from './api';
import { TimeChart } from './chart';
import type { ChartSpec, Marker } from './chart';
import { h } from './dom';
import { formatTime } from './format';
import type { ProfileRef } from './state';
import type { ViewContext } from './view';

// A card with a title, a chart and notes; `load` fills it for a window.
export class Widget {
  readonly el: HTMLElement;
  readonly body: HTMLElement;
  readonly notes: HTMLElement;
  chart: TimeChart | null = null;
  // The chart's width, when read with other cards' in one layout (lazy_loads.ts).
  widthHint = 0;
  // While holding, show() keeps its spec and draws nothing: the card's data is in, but the card
  // may lie below the first screen (lazy_loads.ts decides once the page above it is filled).
  private holding = false;
  private held: ChartSpec | null = null;

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
    if (this.holding) {
      this.held = spec;
      return;
    }
    if (this.chart) {
      this.chart.update(spec);
      return;
    }
    this.body.textContent = '';
    this.chart = new TimeChart(this.body, spec, this.widthHint);
  }

  hold(): void {
    this.holding = true;
  }

  // Stops holding and draws the spec kept meanwhile, if any.
  release(): void {
    this.holding = false;
    const spec = this.held;
    this.held = null;
    if (spec) this.show(spec);
  }

  unavailable(message: string): void {
    this.held = null;
    this.chart?.destroy();
    this.chart = null;
    this.body.replaceChildren(h('p.unavailable', { 'data-testid': 'unavailable' }, message));
  }

  destroy(): void {
    this.chart?.destroy();
  }
}

// What a click on a line adds to the profile it opens (a kind, a process, a label filter),
// given the line's label, the window and, for the "others" line, the lines shown on their own;
// may ask the server first.
type Refine = (label: string | null, start: number, end: number, shown?: string[]) => Partial<ProfileRef> | Promise<Partial<ProfileRef>>;

// Opens the profile of the clicked bucket (at least a minute around it); `refine` adds what the
// clicked line says. A refinement that fails opens the bucket's profile unrefined.
export function pickHandler(c: ViewContext, step: number, refine: Refine = () => ({})): (t: number, label: string | null, shown?: string[]) => void {
  return (t: number, label: string | null, shown?: string[]) => {
    const width = Math.max(step, 60);
    const start = t - (width - step) / 2;
    const end = start + width;
    void Promise.resolve()
      .then(() => refine(label, start, end, shown))
      .catch(() => ({}))
      .then((more) => c.openProfile({ ...more, start, end }));
  };
}

// A click on a per-GPU line ("GPU 3"): the GPU profiles' samples of that GPU, of its process
// when one process used the GPU in the window (by its GPU memory). The profile's `device` label
// is the CUDA device ordinal in the launching process, which is NVML's index (the GPU entity's
// gpu.index) only when the process sees every GPU in PCI bus order (no CUDA_VISIBLE_DEVICES,
// CUDA_DEVICE_ORDER=PCI_BUS_ID); docs/ui.md says more.
export function gpuPick(host: string, gpus: Map<string, { index: number; uuid: string }>): Refine {
  return async (label, start, end) => {
    const gpu = label === null ? undefined : gpus.get(label);
    if (gpu === undefined) return { kind: 'gpu' };
    const ref: Partial<ProfileRef> = { kind: 'gpu', labels: [`device:${gpu.index}`] };
    // Which process used the GPU; should the server not say, the GPU's kernels of every process.
    const r = await getJson<{ entries: TopEntry[] }>('/api/v1/top', { metric: 'gpu.process.memory.used', host, 'label.gpu.uuid': gpu.uuid, start: Math.floor(start), end: Math.ceil(end), limit: 2 }).catch(() => null);
    if (r === null || r.entries.length !== 1) return ref;
    const pid = Number(r.entries[0].attributes['process.pid']);
    return { ...ref, entity: r.entries[0].entity, pid: Number.isFinite(pid) ? pid : undefined };
  };
}

// A click on a line of GPU use by executable: that executable's GPU profiles, of one GPU when
// the chart shows one; on "others", the GPU profiles of every executable but the ones shown.
export function executablePick(gpuIndex?: number): Refine {
  return (label, _start, _end, shown) => ({
    kind: 'gpu',
    exe: label && !shown ? label : undefined,
    notExes: shown,
    labels: gpuIndex === undefined ? undefined : [`device:${gpuIndex}`],
  });
}

// At most this many profiles are read for the marks of one view (the newest of its range).
const MARK_PROFILES = 1000;

// The windows of the host's profiles in [start, end] as chart marks (kind "profile": a strip
// under the plot), overlapping windows of one kind joined. One request per view, bounded.
export async function profileMarks(host: string, start: number, end: number): Promise<Marker[]> {
  const r = await getJson<{ profiles: ProfileMeta[] }>('/api/v1/profiles', { host, start, end, limit: MARK_PROFILES });
  return joinWindows(r.profiles);
}

export function joinWindows(list: ProfileMeta[]): Marker[] {
  const byKind = new Map<string, { start: number; end: number; n: number }[]>();
  for (const p of [...list].sort((a, b) => a.start - b.start)) {
    const spans = byKind.get(p.kind) ?? [];
    const last = spans[spans.length - 1];
    if (last && p.start <= last.end) {
      last.end = Math.max(last.end, p.end);
      last.n++;
    } else {
      spans.push({ start: p.start, end: p.end, n: 1 });
    }
    byKind.set(p.kind, spans);
  }
  const out: Marker[] = [];
  for (const [kind, spans] of byKind) {
    for (const s of spans) {
      out.push({
        time: s.start,
        end: s.end,
        kind: 'profile',
        label: `${s.n} ${kind} profile${s.n === 1 ? '' : 's'} ${formatTime(s.start)} – ${formatTime(s.end)}`,
      });
    }
  }
  return out;
}

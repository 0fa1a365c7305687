// SPDX-License-Identifier: Apache-2.0
// A flamegraph on a canvas (top-down icicle: callers above callees). Click a frame to zoom into
// it (click the root or press Escape to zoom out), type in the search box to highlight matching
// frames, hover for the frame's kind, source (file:line where the profile has it), self and total
// with their share of the window and, for CPU time, of all the host's cores. Frames are coloured by kind (flame_kinds.ts).
import type { FlameNode, FrameKind } from './api';
import { kindColor, kindLabel, kindOf } from './flame_kinds';
import { formatPercent, formatSample } from './format';

// Shares of all the host's cores: a frame's total[value] / capacityNs (null: unknown, and why).
export interface CoreShare {
  value: number;
  capacityNs: number | null;
  cores: number | null;
  unknownReason?: string;
}

export interface FlameOptions {
  coreShare?: CoreShare | null;
  label?: string; // what the graph is weighted by, for its accessible name
}

interface Frame {
  name: string;
  kind: FrameKind;
  source: string; // "file:line", "file" or 
  cpuNs: number; // total[coreShare.value], for the share of all cores
  depth: number;
  start: number; // in value units, from the root's left edge
  total: number;
  self: number;
  parent: number; // index, -1 for the root
}

const ROW = 20;

function hue(name: string): number {
  let h = 0;
  for (let i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) >>> 0;
  return h;
}

export class FlameGraph {
  private frames: Frame[] = [];
  private maxDepth = 0;
  private focus = 0;
  private search = '';
  private matches = new Set<number>();
  private canvas: HTMLCanvasElement;
  private tip: HTMLDivElement;
  private resize: ResizeObserver;
  private hover = -1;

  constructor(
    private readonly el: HTMLElement,
    root: FlameNode,
    private readonly valueIndex: number,
    private readonly unit: string,
    private readonly onSearchStats?: (matched: number, total: number) => void,
    private readonly options: FlameOptions = {},
  ) {
    this.flatten(root);
    this.el.classList.add('flame');
    this.canvas = document.createElement('canvas');
    this.canvas.tabIndex = 0;
    this.canvas.setAttribute('role', 'img');
    this.canvas.setAttribute(
      'aria-label',
      `Flamegraph${options.label ? ` by ${options.label}` : ''} of ${this.frames.length} frames; click a frame to zoom, Escape to zoom out`,
    );
    this.tip = document.createElement('div');
    this.tip.className = 'flame-tip';
    this.tip.hidden = true;
    this.el.append(this.canvas, this.tip);
    this.canvas.addEventListener('mousemove', (e) => this.onMove(e));
    this.canvas.addEventListener('mouseleave', () => {
      this.hover = -1;
      this.tip.hidden = true;
      this.draw();
    });
    this.canvas.addEventListener('click', (e) => {
      const i = this.hit(e);
      if (i >= 0) this.zoom(i === this.focus ? this.frames[i].parent : i);
    });
    this.canvas.addEventListener('keydown', (e) => {
      if (e.key === 'Escape' && this.focus !== 0) {
        this.zoom(0);
        e.stopPropagation();
      }
    });
    this.resize = new ResizeObserver(() => this.draw());
    this.resize.observe(this.el);
    this.draw();
  }

  get frameCount(): number {
    return this.frames.length;
  }

  destroy(): void {
    this.resize.disconnect();
    this.el.textContent = '';
  }

  zoom(i: number): void {
    this.focus = Math.max(0, i);
    this.draw();
  }

  setSearch(q: string): void {
    this.search = q;
    this.matches.clear();
    let matched = 0;
    if (q) {
      let re: RegExp;
      try {
        re = new RegExp(q, 'i');
      } catch {
        re = new RegExp(q.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'i');
      }
      // Share of the window under matching frames, counting nested matches once.
      const covered: boolean[] = [];
      this.frames.forEach((f, i) => {
        const hit = re.test(f.name);
        if (hit) this.matches.add(i);
        const parentCovered = f.parent >= 0 && covered[f.parent];
        covered[i] = hit || parentCovered;
        if (hit && !parentCovered) matched += f.total;
      });
    }
    this.onSearchStats?.(matched, this.frames[0]?.total ?? 0);
    this.draw();
  }

  private flatten(root: FlameNode): void {
    const v = this.valueIndex;
    const walk = (n: FlameNode, depth: number, start: number, parent: number) => {
      const idx = this.frames.length;
      const cpu = this.options.coreShare?.value;
      this.frames.push({
        name: n.name,
        kind: kindOf(n),
        source: sourceOf(n),
        cpuNs: cpu === undefined ? 0 : (n.total[cpu] ?? 0),
        depth,
        start,
        total: n.total[v] ?? 0,
        self: n.self[v] ?? 0,
        parent,
      });
      this.maxDepth = Math.max(this.maxDepth, depth);
      let x = start;
      for (const c of n.children ?? []) {
        const t = c.total[v] ?? 0;
        if (t <= 0) continue;
        walk(c, depth + 1, x, idx);
        x += t;
      }
    };
    walk(root, 0, 0, -1);
  }

  private isAncestorOfFocus(i: number): boolean {
    for (let p = this.frames[this.focus].parent; p >= 0; p = this.frames[p].parent) {
      if (p === i) return true;
    }
    return false;
  }

  // Pixel extent of frame i in the current zoom, or null when it is outside.
  private extent(i: number, width: number): [number, number] | null {
    const f = this.frames[i];
    const focus = this.frames[this.focus];
    if (i === this.focus || this.isAncestorOfFocus(i)) return [0, width];
    if (f.depth <= focus.depth) return null;
    const end = f.start + f.total;
    if (f.start >= focus.start + focus.total || end <= focus.start) return null;
    const scale = width / (focus.total || 1);
    return [(f.start - focus.start) * scale, (end - focus.start) * scale];
  }

  private draw(): void {
    const width = Math.max(200, this.el.clientWidth);
    const height = (this.maxDepth + 1) * ROW;
    const dpr = window.devicePixelRatio || 1;
    if (this.canvas.width !== Math.round(width * dpr) || this.canvas.height !== Math.round(height * dpr)) {
      this.canvas.width = Math.round(width * dpr);
      this.canvas.height = Math.round(height * dpr);
      this.canvas.style.width = `${width}px`;
      this.canvas.style.height = `${height}px`;
    }
    const ctx = this.canvas.getContext('2d');
    if (!ctx) return;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, width, height);
    const styles = getComputedStyle(document.documentElement);
    const dark = document.documentElement.dataset.theme === 'dark';
    const text = styles.getPropertyValue('--flame-text').trim() || '#000';
    ctx.font = '12px system-ui, sans-serif';
    ctx.textBaseline = 'middle';
    for (let i = 0; i < this.frames.length; i++) {
      const ext = this.extent(i, width);
      if (!ext) continue;
      const [x0, x1] = ext;
      const w = x1 - x0;
      if (w < 0.5) continue;
      const f = this.frames[i];
      const y = f.depth * ROW;
      const h = hue(f.name);
      let fill: string;
      if (this.search && this.matches.has(i)) {
        fill = dark ? 'hsl(275 70% 62%)' : 'hsl(275 70% 70%)';
      } else if (this.search) {
        fill = dark ? 'hsl(0 0% 30%)' : 'hsl(0 0% 82%)';
      } else if (i === 0) {
        fill = dark ? 'hsl(210 15% 40%)' : 'hsl(210 15% 78%)';
      } else if (f.kind === 'unknown') {
        fill = `hsl(${10 + (h % 45)} ${70 + (h % 20)}% ${dark ? 45 + (h % 10) : 62 + (h % 12)}%)`;
      } else {
        fill = kindColor(f.kind, dark, (h % 100) / 100);
      }
      ctx.fillStyle = fill;
      ctx.fillRect(x0, y, Math.max(w - 0.5, 0.5), ROW - 1);
      if (i === this.hover) {
        ctx.strokeStyle = text;
        ctx.lineWidth = 1.5;
        ctx.strokeRect(x0 + 0.75, y + 0.75, Math.max(w - 2, 0.5), ROW - 2.5);
      }
      if (w > 30) {
        ctx.fillStyle = text;
        const label = this.fit(ctx, f.name, w - 6);
        if (label) ctx.fillText(label, x0 + 3, y + ROW / 2);
      }
    }
  }

  private fit(ctx: CanvasRenderingContext2D, s: string, w: number): string {
    if (ctx.measureText(s).width <= w) return s;
    let lo = 0;
    let hi = s.length;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (ctx.measureText(s.slice(0, mid) + '…').width <= w) lo = mid;
      else hi = mid - 1;
    }
    return lo > 1 ? s.slice(0, lo) + '…' : '';
  }

  private hit(e: MouseEvent): number {
    const rect = this.canvas.getBoundingClientRect();
    const x = e.clientX - rect.left;
    const depth = Math.floor((e.clientY - rect.top) / ROW);
    const width = rect.width;
    for (let i = 0; i < this.frames.length; i++) {
      if (this.frames[i].depth !== depth) continue;
      const ext = this.extent(i, width);
      if (ext && x >= ext[0] && x < ext[1]) return i;
    }
    return -1;
  }

  private onMove(e: MouseEvent): void {
    const i = this.hit(e);
    if (i !== this.hover) {
      this.hover = i;
      this.draw();
    }
    if (i < 0) {
      this.tip.hidden = true;
      return;
    }
    const f = this.frames[i];
    const all = this.frames[0].total || 1;
    this.tip.hidden = false;
    this.tip.textContent = '';
    const name = document.createElement('strong');
    name.textContent = f.name;
    const kind = document.createElement('div');
    kind.className = 'muted';
    kind.textContent = i === 0 ? 'all frames' : `kind: ${kindLabel(f.kind)}`;
    const total = document.createElement('div');
    total.textContent = `total ${formatSample(f.total, this.unit)} (${formatPercent(f.total / all)} of the profile)`;
    const self = document.createElement('div');
    self.textContent = `self ${formatSample(f.self, this.unit)} (${formatPercent(f.self / all)})`;
    this.tip.append(name, kind);
    if (f.source) {
      const source = document.createElement('div');
      source.className = 'flame-source';
      source.textContent = f.source;
      this.tip.append(source);
    }
    this.tip.append(total, self);
    const share = this.options.coreShare;
    if (share) {
      const cores = document.createElement('div');
      cores.textContent =
        share.capacityNs && share.cores
          ? `${formatPercent(f.cpuNs / share.capacityNs)} of all ${share.cores} cores of the host`
          : `share of all cores unknown${share.unknownReason ? `: ${share.unknownReason}` : ''}`;
      this.tip.append(cores);
    }
    const rect = this.el.getBoundingClientRect();
    const x = Math.min(e.clientX - rect.left + 12, rect.width - 320);
    this.tip.style.left = `${Math.max(0, x)}px`;
    this.tip.style.top = `${e.clientY - rect.top + 16}px`;
  }
}

// Where a node's frames are: "file:line" (one line), "file" (several lines merged into the
// node), with " (inlined)" when one was inlined; "" when the profile has no source for it.
export function sourceOf(n: FlameNode): string {
  if (!n.file) return '';
  return `${n.file}${n.line ? `:${n.line}` : ''}${n.inlined ? ' (inlined)' : ''}`;
}

// Self and total per function name over the whole tree (a recursive function's total counts
// its outermost calls only), largest self first; `source` is the first node's with one.
export function topFunctions(
  root: FlameNode,
  valueIndex: number,
): { name: string; kind: FrameKind; source: string; self: number; total: number }[] {
  const byName = new Map<string, { kind: FrameKind; source: string; self: number; total: number }>();
  const onStack = new Map<string, number>();
  const walk = (n: FlameNode, isRoot: boolean) => {
    if (!isRoot) {
      const e = byName.get(n.name) ?? { kind: kindOf(n), source: '', self: 0, total: 0 };
      if (!e.source) e.source = sourceOf(n);
      e.self += n.self[valueIndex] ?? 0;
      if (!onStack.get(n.name)) e.total += n.total[valueIndex] ?? 0;
      byName.set(n.name, e);
      onStack.set(n.name, (onStack.get(n.name) ?? 0) + 1);
    }
    for (const c of n.children ?? []) walk(c, false);
    if (!isRoot) onStack.set(n.name, onStack.get(n.name)! - 1);
  };
  walk(root, true);
  return [...byName.entries()]
    .map(([name, v]) => ({ name, ...v }))
    .sort((a, b) => b.self - a.self || b.total - a.total);
}

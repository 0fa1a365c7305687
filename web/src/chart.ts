// SPDX-License-Identifier: Apache-2.0
// Time-series charts on uPlot: units on both axes, a crosshair shared by every chart of the
// page, drag to zoom (reported, the URL changes), click a point (reported: the profile panel),
// event markers (XID, throttling) as vertical lines, findings as bands over their time (hover
// names them), limit lines (power limit, memory total), stacked areas for breakdowns (clamped to
// what is physically possible, and marked where they were), the windows that have profiles as a
// strip along the bottom. Round ticks; a legend with
// min / max / avg / last (chart_legend.ts); the top lines and "others" when there are many;
// the keyboard moves the crosshair (arrows) and clicks (Enter).
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import type { Point } from './api';
import { ChartLegend, lineStats } from './chart_legend';
import { h } from './dom';
import { formatClock, formatTicks, formatTime, formatValue, niceTicks, tickStep, unitLabel } from './format';

export interface ChartLine {
  label: string;
  points: Point[];
  color?: string;
  // The "others" line: the labels of the lines drawn on their own (what it leaves out).
  shown?: string[];
}

export interface Marker {
  time: number;
  kind: string; // "xid", "throttle", "finding", ...
  label: string;
  // A band over [time, end] instead of a line: a finding, tinted by its severity, hatched while
  // pending; with `line`, drawn only on charts that have a line of that label (its GPU).
  end?: number;
  severity?: string;
  pending?: boolean;
  line?: string;
}

// A horizontal line at a limit of the quantity (power limit, memory total), dashed and named.
export interface Limit {
  label: string;
  value: number;
}

// The most a stack can physically reach (100 % of one GPU, the memory of the GPUs): stacked sums
// above it are clamped to it and the chart says where (a reused pid or a process counted twice).
export interface StackCap {
  value: number;
  what: string; // "100 % of 1 GPU"
}

export interface ChartSpec {
  unit: string;
  lines: ChartLine[];
  limits?: Limit[];
  stackCap?: StackCap;
  // More lines than this: the top ones by average and one "others" line summing the rest
  // (default MAX_LINES).
  maxLines?: number;
  // A relative window (range=1h) over younger data: the x axis starts at the data.
  fitData?: boolean;
  start: number;
  end: number;
  step?: number;
  stacked?: boolean;
  markers?: Marker[];
  height?: number;
  yMin?: number;
  yMax?: number;
  // Drag over the x axis: the new window.
  onZoom?: (start: number, end: number) => void;
  // Click on the plot: the time of the nearest point and the nearest line's label; for the
  // "others" line, `shown` lists the lines drawn on their own (the ones it leaves out).
  onPick?: (time: number, label: string | null, shown?: string[]) => void;
  ariaLabel: string;
}

const SYNC_KEY = 'warpscope';

const CHART_FONT_FAMILY = 'system-ui, sans-serif';
const CHART_FONT = `11px ${CHART_FONT_FAMILY}`;

// Ten lines are what a reader tells apart by colour (the palette has 16; past ten, neighbours
// look alike) and what a legend shows without scrolling; a host's 8 GPUs always fit.
export const MAX_LINES = 10;

// The `max` lines with the highest averages, in their order, and one "others (k)" line summing
// the rest point by point (a stack keeps its total).
export function topLines(lines: ChartLine[], max = MAX_LINES): ChartLine[] {
  if (lines.length <= max) return lines;
  const avg = (l: ChartLine) => {
    const vs = l.points.filter((p) => p[1] !== null);
    return vs.length ? vs.reduce((a, p) => a + (p[1] as number), 0) / vs.length : -Infinity;
  };
  const ranked = lines.map((l, i) => ({ l, i, a: avg(l) })).sort((x, y) => y.a - x.a);
  const keep = new Set(ranked.slice(0, max - 1).map((r) => r.i));
  const rest = lines.filter((_, i) => !keep.has(i));
  const sum = new Map<number, number>();
  for (const l of rest) for (const [t, v] of l.points) if (v !== null) sum.set(t, (sum.get(t) ?? 0) + v);
  const shown = lines.filter((_, i) => keep.has(i));
  const others: ChartLine = { label: `others (${rest.length})`, points: [...sum.entries()].sort((a, b) => a[0] - b[0]), color: '#9a9a9a', shown: shown.map((l) => l.label) };
  return [...shown, others];
}

// A qualitative palette that reads on light and dark backgrounds (Okabe-Ito based, extended).
const PALETTE = [
  '#0072b2', '#e69f00', '#009e73', '#cc79a7', '#56b4e9', '#d55e00', '#b8a100', '#7f7f7f',
  '#882255', '#44aa99', '#332288', '#aa4499', '#117733', '#999933', '#6699cc', '#dd7788',
];

export function paletteColor(i: number): string {
  return PALETTE[i % PALETTE.length];
}

// The theme's colours, read once per theme, all together: getComputedStyle brings the page's
// style up to date first, and a view builds and draws a dozen charts, each changing the page, in
// one task (one read per colour restyled the page between the first chart's build and its draw).
const themeColors = new Map<string, string>();
const THEME_VARS = ['--fg', '--fg-muted', '--grid', '--accent', '--card'];

function cssVar(name: string): string {
  const theme = document.documentElement.dataset.theme ?? '';
  const known = themeColors.get(`${theme}:${name}`);
  if (known !== undefined) return known;
  const style = getComputedStyle(document.documentElement);
  let v = '';
  for (const n of new Set([...THEME_VARS, name])) {
    const value = style.getPropertyValue(n).trim();
    if (value) themeColors.set(`${theme}:${n}`, value); // none yet (the style sheet still loading): read again next time
    if (n === name) v = value;
  }
  return v || '#888';
}

// One x axis for every line (the union of their times), gaps as null (absent is never zero).
// Stacked lines are cumulative where they have a point and null elsewhere: a process that ended
// leaves the stack (its line stops) instead of running on along the lines below it. With a cap,
// cumulative sums above it are clamped to it; `clamped` lists the x indexes where that happened.
function align(lines: ChartLine[], stacked: boolean, cap?: number): { data: uPlot.AlignedData; clamped: number[] } {
  const { xs, ys } = alignedValues(lines);
  const clamped = new Set<number>();
  if (stacked) {
    // Cumulative sums, drawn top line first so each area is visible above the next.
    const acc: (number | null)[] = new Array(xs.length).fill(null);
    const cum = ys.map((y) =>
      y.map((v, i) => {
        if (v === null) return null;
        acc[i] = (acc[i] ?? 0) + v;
        if (cap !== undefined && acc[i]! > cap * 1.001) {
          clamped.add(i);
          return cap;
        }
        return acc[i];
      }),
    );
    return { data: [xs as unknown as number[], ...cum.reverse()] as uPlot.AlignedData, clamped: [...clamped].sort((a, b) => a - b) };
  }
  return { data: [xs as unknown as number[], ...ys] as uPlot.AlignedData, clamped: [] };
}

// The union of the lines' times, and each line's values at them (null where it has none).
function alignedValues(lines: ChartLine[]): { xs: Float64Array; ys: (number | null)[][] } {
  const first = lines[0]?.points ?? [];
  // Usually every line has the same times (one series per GPU from one query, bucketed alike):
  // they are the axis as they are. A view aligns a dozen charts while its code is still cold,
  // where the general way's set, sort and map cost milliseconds a chart.
  if (increasing(first) && lines.every((l) => sameTimes(l.points, first))) {
    return { xs: Float64Array.from(first, (p) => p[0]), ys: lines.map((l) => l.points.map((p) => p[1])) };
  }
  const times = new Set<number>();
  for (const l of lines) for (const p of l.points) times.add(p[0]);
  const xs = Float64Array.from([...times].sort((a, b) => a - b));
  const index = new Map<number, number>();
  xs.forEach((t, i) => index.set(t, i));
  const ys = lines.map((l) => {
    const y: (number | null)[] = new Array(xs.length).fill(null);
    for (const [t, v] of l.points) y[index.get(t)!] = v;
    return y;
  });
  return { xs, ys };
}

function increasing(points: Point[]): boolean {
  for (let i = 1; i < points.length; i++) if (!(points[i][0] > points[i - 1][0])) return false;
  return true;
}

function sameTimes(a: Point[], b: Point[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i][0] !== b[i][0]) return false;
  return true;
}

// What a legend shows without a cursor: the line's value at the chart's latest time (its last
// point when that is at most one step older: hosts and windows do not all land at once). A line
// without a point there — a process that ended — has no current value (null, shown as "–"),
// never its last value as if it were still running.
export function currentValue(xs: ArrayLike<number>, ys: ArrayLike<number | null | undefined>, step = 0): number | null {
  if (xs.length === 0) return null;
  const latest = xs[xs.length - 1];
  for (let k = ys.length - 1; k >= 0 && latest - xs[k] <= step; k--) {
    const v = ys[k];
    if (v !== null && v !== undefined) return v;
  }
  return null;
}

const MARKER_COLORS: Record<string, string> = { xid: '#d62728', throttle: '#e69f00' };
const SEVERITY_COLORS: Record<string, [number, number, number]> = { page: [214, 39, 40], ticket: [230, 159, 0], info: [86, 180, 233] };

// The bands of a chart: markers with an end, on this chart: without `line`, on a chart with a line
// of that label, or on a chart without GPU lines (a finding on a GPU shows on every host chart).
export function chartBands(markers: Marker[], labels: string[]): Marker[] {
  const perGpu = labels.some((l) => /^GPU \d+$/.test(l));
  return markers.filter((m) => m.end !== undefined && m.kind !== 'profile' && (!m.line || !perGpu || labels.includes(m.line)));
}

// Windows with profiles (markers of kind "profile"): a thin strip along the plot's bottom edge;
// sets the chart's data-profile-marks to how many it drew.
function drawProfileMarks(u: uPlot, markers: Marker[]): void {
  const ctx = u.ctx;
  const px = devicePixelRatio;
  const bottom = u.bbox.top + u.bbox.height;
  let drawn = 0;
  ctx.save();
  ctx.fillStyle = cssVar('--accent');
  ctx.globalAlpha = 0.7;
  for (const m of markers) {
    if (m.kind !== 'profile' || m.end === undefined) continue;
    const extent = bandExtent(u, m, true);
    if (!extent) continue;
    ctx.fillRect(extent[0], bottom - 3 * px, extent[1] - extent[0], 3 * px);
    drawn++;
  }
  ctx.restore();
  u.root.parentElement?.setAttribute('data-profile-marks', String(drawn));
}

// Where a band lies on the plot, in canvas pixels (`canvas`) or CSS pixels from the plot's left:
// at least 4 CSS px wide, so that a short finding shows on a long window; null when outside.
function bandExtent(u: uPlot, b: Marker, canvas: boolean): [number, number] | null {
  const px = canvas ? devicePixelRatio : 1;
  const left = canvas ? u.bbox.left : 0;
  const right = left + (canvas ? u.bbox.width : u.bbox.width / devicePixelRatio);
  let x0 = Math.max(left, u.valToPos(b.time, 'x', canvas));
  let x1 = Math.min(right, u.valToPos(b.end!, 'x', canvas));
  if (x1 < left || x0 > right) return null;
  if (x1 - x0 < 4 * px) [x0, x1] = [Math.max(left, x1 - 4 * px), Math.max(left + 4 * px, x1)];
  return [x0, x1];
}

// Draws bands under the lines; sets the chart's data-bands to how many it drew.
function drawBands(u: uPlot, bands: Marker[]): void {
  const ctx = u.ctx;
  const { top, height } = u.bbox;
  const px = devicePixelRatio;
  let drawn = 0;
  ctx.save();
  for (const b of bands) {
    const extent = bandExtent(u, b, true);
    if (!extent) continue;
    const [x0, x1] = extent;
    const [r, g, bl] = SEVERITY_COLORS[b.severity ?? 'info'] ?? SEVERITY_COLORS.info;
    drawn++;
    if (b.pending) {
      // Hatched: diagonal strokes clipped to the band.
      ctx.save();
      ctx.beginPath();
      ctx.rect(x0, top, x1 - x0, height);
      ctx.clip();
      ctx.fillStyle = `rgba(${r},${g},${bl},0.06)`;
      ctx.fillRect(x0, top, x1 - x0, height);
      ctx.strokeStyle = `rgba(${r},${g},${bl},0.35)`;
      ctx.lineWidth = px;
      ctx.beginPath();
      for (let x = x0 - height; x < x1; x += 8 * px) {
        ctx.moveTo(x, top + height);
        ctx.lineTo(x + height, top);
      }
      ctx.stroke();
      ctx.restore();
    } else {
      ctx.fillStyle = `rgba(${r},${g},${bl},0.16)`;
      ctx.fillRect(x0, top, x1 - x0, height);
    }
  }
  ctx.restore();
  u.root.parentElement?.setAttribute('data-bands', String(drawn));
}

function markersPlugin(getMarkers: () => Marker[], labels: () => string[]): uPlot.Plugin {
  return {
    hooks: {
      drawClear: (u: uPlot) => drawBands(u, chartBands(getMarkers(), labels())),
      draw: (u: uPlot) => {
        const markers = getMarkers();
        drawProfileMarks(u, markers);
        if (!markers.length) return;
        const ctx = u.ctx;
        const { top, height } = u.bbox;
        ctx.save();
        ctx.lineWidth = Math.max(1, devicePixelRatio);
        for (const m of markers) {
          if (m.end !== undefined) continue;
          const x = u.valToPos(m.time, 'x', true);
          if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) continue;
          const color = MARKER_COLORS[m.kind] ?? cssVar('--fg-muted');
          ctx.strokeStyle = color;
          ctx.fillStyle = color;
          ctx.setLineDash([4 * devicePixelRatio, 3 * devicePixelRatio]);
          ctx.beginPath();
          ctx.moveTo(x, top);
          ctx.lineTo(x, top + height);
          ctx.stroke();
          ctx.setLineDash([]);
          const s = 5 * devicePixelRatio;
          ctx.beginPath();
          ctx.moveTo(x - s, top);
          ctx.lineTo(x + s, top);
          ctx.lineTo(x, top + s * 1.5);
          ctx.closePath();
          ctx.fill();
        }
        ctx.restore();
      },
    },
  };
}

// Limit lines: dashed, across the plot, named at their right end; a name
// that would overlap another's (limits a few units apart: 87, 89 and 92 °C) moves left of it.
// The chart's element carries how many it drew (data-limits) and their names
// (data-limit-labels, "|"-separated).
function limitsPlugin(getLimits: () => Limit[]): uPlot.Plugin {
  return {
    hooks: {
      draw: (u: uPlot) => {
        const limits = getLimits();
        if (!limits.length) return;
        const ctx = u.ctx;
        const { left, top, width, height } = u.bbox;
        const px = devicePixelRatio;
        const color = cssVar('--fg-muted');
        ctx.save();
        ctx.strokeStyle = color;
        ctx.lineWidth = px;
        ctx.setLineDash([6 * px, 4 * px]);
        ctx.font = `${11 * px}px ${CHART_FONT_FAMILY}`;
        ctx.textAlign = 'right';
        ctx.textBaseline = 'bottom';
        const lineHeight = 13 * px;
        const placed: { label: string; x0: number; x1: number; y: number }[] = [];
        for (const l of limits) {
          const y = u.valToPos(l.value, 'y', true);
          if (y < top - 1 || y > top + height + 1) continue;
          ctx.beginPath();
          ctx.moveTo(left, y);
          ctx.lineTo(left + width, y);
          ctx.stroke();
          const w = ctx.measureText(l.label).width;
          let x1 = left + width - 4 * px;
          for (let moved = true; moved; ) {
            moved = false;
            for (const p of placed) {
              if (Math.abs(p.y - y) < lineHeight && x1 > p.x0 - 8 * px && x1 - w < p.x1 + 8 * px) {
                x1 = p.x0 - 12 * px;
                moved = true;
              }
            }
          }
          placed.push({ label: l.label, x0: x1 - w, x1, y });
        }
        // Names after every line, on a veil of the card's colour: another limit's line does not
        // cross them, and data under them stays visible.
        const card = cssVar('--card');
        for (const p of placed) {
          ctx.globalAlpha = 0.7;
          ctx.fillStyle = card;
          ctx.fillRect(p.x0 - 2 * px, p.y - lineHeight, p.x1 - p.x0 + 4 * px, lineHeight - px);
          ctx.globalAlpha = 1;
          ctx.fillStyle = color;
          ctx.fillText(p.label, p.x1, p.y - 2 * px);
        }
        ctx.restore();
        u.root.parentElement?.setAttribute('data-limits', String(placed.length));
        u.root.parentElement?.setAttribute('data-limit-labels', placed.map((p) => p.label).join('|'));
      },
    },
  };
}

export class TimeChart {
  private plot: uPlot | null = null;
  private spec: ChartSpec;
  private lines: ChartLine[] = [];
  private resize: ResizeObserver;
  private downX = 0;
  private downY = 0;
  // Each line's own values (not the stacked sums), for the legend and the keyboard; index i + 1
  // is spec line i. Kept in step with the plotted data on every update.
  private own: uPlot.AlignedData = [[]];
  private legend: ChartLegend | null = null;
  private clampNote: HTMLElement;
  // The keyboard's crosshair: the x index and the line it is on.
  private keyIdx = -1;
  private keyLine = 0;
  // Whether the plot has drawn since it was built (uPlot draws in a microtask after the build).
  private drawn = false;

  // `width`: the element's width when the caller read it with other elements' in one layout (a
  // page of charts then lays out once, not once per chart); else it is read here.
  constructor(private readonly el: HTMLElement, spec: ChartSpec, private width = 0) {
    this.spec = spec;
    this.el.classList.add('chart');
    this.el.setAttribute('role', 'figure');
    this.el.setAttribute('aria-label', spec.ariaLabel);
    this.clampNote = h('p.chart-note', { 'data-testid': 'stack-clamped', hidden: true });
    this.build();
    this.resize = new ResizeObserver(() => {
      const w = this.el.clientWidth;
      if (this.plot && w > 0 && Math.abs(w - this.plot.width) > 2) {
        this.plot.setSize({ width: w, height: this.spec.height ?? 200 });
      }
    });
    this.resize.observe(this.el);
  }

  // New data with the same lines keeps the chart (no flicker in live mode); otherwise rebuilds.
  // Either way the legend's values and statistics are the new data's.
  update(spec: ChartSpec): void {
    const lines = topLines(spec.lines, spec.maxLines);
    const sameShape =
      this.plot !== null &&
      lines.length === this.lines.length &&
      lines.every((l, i) => l.label === this.lines[i].label) &&
      spec.stacked === this.spec.stacked &&
      spec.unit === this.spec.unit;
    this.spec = spec;
    if (!sameShape) {
      this.build();
      return;
    }
    this.lines = lines;
    const plot = this.plot!;
    const aligned = this.prepare();
    plot.batch(() => {
      plot.setData(aligned.data, false);
      plot.setScale('x', this.xRange());
    });
    this.refreshLegend(aligned.clamped);
  }

  // Draws again (e.g. after markers were added to the spec's list). A chart not drawn yet reads
  // the list when it draws; uPlot's redraw(false) then would also drop the pending first layout
  // of its axes (it clears the size convergence that the build queued).
  redraw(): void {
    if (this.drawn) this.plot?.redraw(false);
  }

  destroy(): void {
    this.resize.disconnect();
    this.plot?.destroy();
    this.plot = null;
  }

  // The x window: the spec's, starting at the first point when `fitData` and the data is younger.
  private xRange(): { min: number; max: number } {
    const { start, end } = this.spec;
    const xs = this.own[0] as ArrayLike<number>;
    let min = start;
    if (this.spec.fitData && xs.length > 0 && xs[0] > start) min = Math.min(Math.max(start, xs[0] - Math.max(this.spec.step ?? 0, 1)), end - 60);
    this.el.setAttribute('data-x-min', String(Math.round(min)));
    return { min, max: end };
  }

  // Aligns the lines (stacked and clamped for the plot, own values for the legend).
  private prepare(): { data: uPlot.AlignedData; clamped: number[] } {
    const stacked = !!this.spec.stacked;
    this.own = align(this.lines, false).data;
    return stacked ? align(this.lines, true, this.spec.stackCap?.value) : { data: this.own, clamped: [] };
  }

  private seriesOf(line: number): number {
    return this.spec.stacked ? this.lines.length - line : line + 1;
  }

  private lineColor(i: number): string {
    return this.lines[i].color ?? paletteColor(i);
  }

  private refreshLegend(clamped: number[]): void {
    this.legend?.setRows(
      this.lines.map((l, i) => ({ label: l.label, color: this.lineColor(i), series: this.seriesOf(i), ...lineStats(this.own[i + 1] as (number | null)[]) })),
      this.spec.unit,
    );
    this.showValues();
    const cap = this.spec.stackCap;
    if (cap && clamped.length) {
      // Which lines were stacked above the cap at the first clamped time.
      const at = clamped[0];
      const names = this.lines.filter((_, i) => this.own[i + 1][at] !== null && this.own[i + 1][at] !== undefined).map((l) => l.label);
      const sum = this.lines.reduce((a, _, i) => a + ((this.own[i + 1][at] as number | null) ?? 0), 0);
      this.clampNote.textContent =
        `Stack clamped to ${cap.what} at ${clamped.length} time${clamped.length === 1 ? '' : 's'} (first ${formatTime(this.own[0][at] as number)}: ` +
        `${names.join(' + ')} = ${formatValue(sum, this.spec.unit)}): a reused pid or a process counted twice, not real use.`;
      this.clampNote.hidden = false;
    } else {
      this.clampNote.textContent = '';
      this.clampNote.hidden = true;
    }
    this.el.setAttribute('data-clamped', String(clamped.length));
  }

  // The legend's value column: at the crosshair, or each line's current value without one.
  private showValues(): void {
    const u = this.plot;
    if (!u || !this.legend) return;
    const idx = u.cursor.idx;
    const xs = this.own[0] as number[];
    const onPlot = (u.cursor.left ?? -1) >= 0 && idx !== null && idx !== undefined && idx < xs.length;
    const values = this.lines.map((_, i) => {
      const ys = this.own[i + 1] as (number | null)[];
      return onPlot ? ys[idx!] ?? null : currentValue(xs, ys, this.spec.step);
    });
    this.legend.setValues(values, onPlot ? formatTime(xs[idx!]) : '');
  }

  private build(): void {
    this.plot?.destroy();
    this.el.textContent = '';
    this.keyIdx = -1;
    this.drawn = false;
    const spec = this.spec;
    this.lines = topLines(spec.lines, spec.maxLines);
    const stacked = !!spec.stacked;
    const fg = cssVar('--fg');
    const grid = cssVar('--grid');
    const unit = spec.unit;
    const aligned = this.prepare();
    const height = spec.height ?? 200;
    // About one y tick per 40 px.
    const yTicks = Math.max(2, Math.round((height - 40) / 40));
    const plotted = stacked ? [...this.lines.keys()].reverse() : [...this.lines.keys()];
    const width = this.width;
    this.width = 0; // a rebuild (new lines) reads the width then
    const series: uPlot.Series[] = [
      { value: (_u: uPlot, v: number | null) => (v === null ? '' : formatTime(v)) },
      ...plotted.map((li) => {
        const color = this.lineColor(li);
        const s: uPlot.Series = { label: this.lines[li].label, stroke: color, width: 1.5, spanGaps: false };
        // Opaque: each area is drawn over the one stacked above it, from the top line down.
        if (stacked) s.fill = color;
        return s;
      }),
    ];
    // One font for the axes' names and ticks (and the limit lines' names): a canvas's font
    // changes cost more than its text (four changes a draw were a third of the axes' time).
    const axisFont = { labelSize: 18, labelFont: CHART_FONT, font: CHART_FONT };
    const opts: uPlot.Options = {
      width: Math.max(200, width || this.el.clientWidth || 600),
      height,
      series,
      focus: { alpha: 0.25 },
      scales: {
        x: { time: true, ...this.xRange() },
        y: {
          // From 0 (or below) to a round value above the data and the limits.
          range: (_u, min, max) => {
            const limitMax = Math.max(-Infinity, ...(this.spec.limits ?? []).map((l) => l.value));
            const lo = spec.yMin ?? Math.min(0, min ?? 0);
            const top = Math.max(max ?? 1, Number.isFinite(limitMax) ? limitMax : -Infinity);
            if (spec.yMax !== undefined && top <= spec.yMax) return [lo, spec.yMax];
            let hi = top > lo ? top * 1.05 : lo + 1;
            const step = tickStep((hi - lo) / yTicks, unit, Math.max(Math.abs(lo), Math.abs(hi)));
            hi = Math.ceil(hi / step - 1e-9) * step;
            return [lo, hi];
          },
        },
      },
      axes: [
        {
          stroke: fg,
          grid: { stroke: grid, width: 1 },
          ticks: { stroke: grid, width: 1 },
          label: 'time',
          ...axisFont,
          // One clock for every chart: HH:MM (with seconds under a minute apart), the day on the
          // first tick of a window longer than a day and at midnight.
          values: (u: uPlot, ticks: number[], _ai: number, _space: number, incr: number) => {
            const long = (u.scales.x.max ?? 0) - (u.scales.x.min ?? 0) > 86400;
            return ticks.map((t, k) => formatClock(t, incr, long && (k === 0 || new Date(t * 1000).getHours() * 60 + new Date(t * 1000).getMinutes() < incr / 60)));
          },
        },
        {
          stroke: fg,
          grid: { stroke: grid, width: 1 },
          ticks: { stroke: grid, width: 1 },
          label: unitLabel(unit),
          ...axisFont,
          // Room for the longest tick label ("381.5 MiB/s") plus the rotated unit label.
          size: (_u: uPlot, values: string[]) => 18 + 14 + Math.ceil(6.2 * Math.max(4, ...(values ?? []).map((v) => v.length))),
          splits: (_u: uPlot, _ai: number, min: number, max: number) => niceTicks(min, max, yTicks, unit),
          // The labels also go to data-y-ticks (what the axis reads, for tests and tools).
          values: (_u: uPlot, ticks: number[]) => {
            const labels = formatTicks(ticks, unit);
            this.el.setAttribute('data-y-ticks', labels.join('|'));
            return labels;
          },
        },
      ],
      cursor: {
        sync: { key: SYNC_KEY, setSeries: false },
        drag: { x: true, y: false, setScale: false },
        focus: { prox: 30 },
      },
      legend: { show: false },
      plugins: [markersPlugin(() => this.spec.markers ?? [], () => this.lines.map((l) => l.label)), limitsPlugin(() => this.spec.limits ?? [])],
      hooks: {
        draw: [
          () => {
            this.drawn = true;
          },
        ],
        setCursor: [
          (u: uPlot) => {
            this.showValues();
            // Hovering a band names its findings (the chart's tooltip).
            const left = u.cursor.left ?? -1;
            const bands = left < 0 ? [] : chartBands(this.spec.markers ?? [], this.lines.map((l) => l.label));
            const names = bands
              .filter((b) => {
                const e = bandExtent(u, b, false);
                return e !== null && left >= e[0] - 2 && left <= e[1] + 2;
              })
              .map((b) => b.label);
            const title = names.join('\n');
            if (u.over.title !== title) u.over.title = title;
            if (title) u.over.setAttribute('data-finding', title);
            else u.over.removeAttribute('data-finding');
          },
        ],
        // The focused line (pointer near it, or its legend row hovered): its row highlighted.
        setSeries: [
          (u: uPlot, si: number | null) => {
            const label = si === null || si === undefined || si < 1 ? null : String(u.series[si].label ?? '');
            this.legend?.highlight(label);
            this.el.setAttribute('data-focused', label ?? '');
          },
        ],
        setSelect: [
          (u: uPlot) => {
            if (u.select.width < 5 || !this.spec.onZoom) return;
            const a = u.posToVal(u.select.left, 'x');
            const b = u.posToVal(u.select.left + u.select.width, 'x');
            u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
            this.spec.onZoom(a, b);
          },
        ],
      },
    };
    this.plot = new uPlot(opts, aligned.data, this.el);
    this.legend = new ChartLegend(unit, (si) => this.plot?.setSeries(si, { focus: true }));
    this.el.append(this.legend.el, this.clampNote);
    this.refreshLegend(aligned.clamped);
    const over = this.plot.over;
    over.addEventListener('mousedown', (e) => {
      this.downX = e.clientX;
      this.downY = e.clientY;
    });
    over.addEventListener('click', (e) => {
      if (Math.abs(e.clientX - this.downX) > 3 || Math.abs(e.clientY - this.downY) > 3) return;
      this.pick();
    });
    over.style.cursor = this.spec.onPick ? 'pointer' : 'crosshair';
    // The keyboard reaches the points: the plot is focusable, arrows move the crosshair.
    over.tabIndex = 0;
    over.setAttribute('role', 'application');
    over.setAttribute('aria-label', `${spec.ariaLabel}: arrow keys move along the time and between lines${spec.onPick ? ', Enter opens the profile of that point' : ''}`);
    over.addEventListener('keydown', (e) => this.onKey(e));
    over.addEventListener('blur', () => {
      this.keyIdx = -1;
      this.plot?.setCursor({ left: -10, top: -10 });
    });
  }

  // Left/Right: the previous/next time (with Shift ten of them), Home/End: the first/last;
  // Up/Down: the next line above/below at that time; Enter: a click at the crosshair.
  private onKey(e: KeyboardEvent): void {
    const u = this.plot;
    const xs = this.own[0] as number[];
    if (!u || xs.length === 0) return;
    const last = xs.length - 1;
    let idx = this.keyIdx < 0 ? last : this.keyIdx;
    const stride = e.shiftKey ? 10 : 1;
    switch (e.key) {
      case 'ArrowLeft':
        idx = this.keyIdx < 0 ? last : Math.max(0, idx - stride);
        break;
      case 'ArrowRight':
        idx = Math.min(last, idx + stride);
        break;
      case 'Home':
        idx = 0;
        break;
      case 'End':
        idx = last;
        break;
      case 'ArrowUp':
      case 'ArrowDown':
        this.keyLine = (this.keyLine + (e.key === 'ArrowUp' ? 1 : this.lines.length - 1)) % Math.max(1, this.lines.length);
        break;
      case 'Enter':
      case ' ':
        if (this.keyIdx >= 0) {
          e.preventDefault();
          this.pick(this.seriesOf(this.keyLine)); // the line the keys chose, even where lines meet
        }
        return;
      default:
        return;
    }
    e.preventDefault();
    this.keyIdx = idx;
    const si = this.seriesOf(this.keyLine);
    const v = u.data[si]?.[idx];
    const top = v === null || v === undefined ? u.over.clientHeight / 2 : u.valToPos(v as number, 'y');
    u.setCursor({ left: u.valToPos(xs[idx], 'x'), top });
    this.el.setAttribute('data-cursor-time', String(xs[idx]));
    this.el.setAttribute('data-cursor-line', String(u.series[si]?.label ?? ''));
  }

  // A click at the crosshair: the time under it, and the line `series` (the keyboard's) or else
  // the line nearest to the pointer at that time.
  private pick(series?: number): void {
    const u = this.plot;
    if (!u || !this.spec.onPick) return;
    const idx = u.cursor.idx;
    const left = u.cursor.left ?? -1;
    if (idx === null || idx === undefined || left < 0) return;
    const t = u.data[0][idx];
    const emit = (label: string | null) => this.spec.onPick?.(t, label, this.lines.find((l) => l.label === label)?.shown);
    if (series !== undefined && u.series[series]) {
      emit(String(u.series[series].label ?? ''));
      return;
    }
    let best: string | null = null;
    let bestDist = Infinity;
    const top = u.cursor.top ?? 0;
    for (let si = 1; si < u.series.length; si++) {
      const v = u.data[si][idx];
      if (v === null || v === undefined) continue;
      const d = Math.abs(u.valToPos(v as number, 'y') - top);
      if (d < bestDist) {
        bestDist = d;
        best = String(u.series[si].label ?? '');
      }
    }
    emit(best);
  }
}

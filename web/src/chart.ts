// SPDX-License-Identifier: Apache-2.0
// Time-series charts on uPlot: units on both axes, a crosshair shared by every chart of the
// page, drag to zoom (reported, the URL changes), click a point (reported: the profile panel),
// event markers (XID, throttling) as vertical lines, findings as bands over their time (hover
// names them), the windows that have profiles as a strip along the bottom, stacked areas for
// breakdowns.
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import type { Point } from './api';
import { formatTick, formatValue, unitLabel } from './format';

export interface ChartLine {
  label: string;
  points: Point[];
  color?: string;
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

export interface ChartSpec {
  unit: string;
  lines: ChartLine[];
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
  // Click on the plot: the time of the nearest point and the nearest line's label.
  onPick?: (time: number, label: string | null) => void;
  ariaLabel: string;
}

const SYNC_KEY = 'warpscope';

// A qualitative palette that reads on light and dark backgrounds (Okabe-Ito based, extended).
const PALETTE = [
  '#0072b2', '#e69f00', '#009e73', '#cc79a7', '#56b4e9', '#d55e00', '#b8a100', '#7f7f7f',
  '#882255', '#44aa99', '#332288', '#aa4499', '#117733', '#999933', '#6699cc', '#dd7788',
];

export function paletteColor(i: number): string {
  return PALETTE[i % PALETTE.length];
}

function cssVar(name: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || '#888';
}

// One x axis for every line (the union of their times), gaps as null (absent is never zero).
// Stacked lines are cumulative where they have a point and null elsewhere: a process that ended
// leaves the stack (its line stops) instead of running on along the lines below it.
function align(lines: ChartLine[], stacked: boolean): uPlot.AlignedData {
  const times = new Set<number>();
  for (const l of lines) for (const p of l.points) times.add(p[0]);
  const xs = Float64Array.from([...times].sort((a, b) => a - b));
  const index = new Map<number, number>();
  xs.forEach((t, i) => index.set(t, i));
  const ys: (number | null)[][] = lines.map((l) => {
    const y: (number | null)[] = new Array(xs.length).fill(null);
    for (const [t, v] of l.points) y[index.get(t)!] = v;
    return y;
  });
  if (stacked) {
    // Cumulative sums, drawn top line first so each area is visible above the next.
    const acc: (number | null)[] = new Array(xs.length).fill(null);
    const cum = ys.map((y) =>
      y.map((v, i) => {
        if (v === null) return null;
        acc[i] = (acc[i] ?? 0) + v;
        return acc[i];
      }),
    );
    return [xs as unknown as number[], ...cum.reverse()] as uPlot.AlignedData;
  }
  return [xs as unknown as number[], ...ys] as uPlot.AlignedData;
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

export class TimeChart {
  private plot: uPlot | null = null;
  private spec: ChartSpec;
  private resize: ResizeObserver;
  private downX = 0;
  private downY = 0;
  // Stacked charts: each line's own values (not the stacked sums), for the legend; kept in step
  // with the plotted data on every update.
  private own: uPlot.AlignedData | null = null;

  constructor(private readonly el: HTMLElement, spec: ChartSpec) {
    this.spec = spec;
    this.el.classList.add('chart');
    this.el.setAttribute('role', 'img');
    this.el.setAttribute('aria-label', spec.ariaLabel);
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
  update(spec: ChartSpec): void {
    const sameShape =
      this.plot !== null &&
      spec.lines.length === this.spec.lines.length &&
      spec.lines.every((l, i) => l.label === this.spec.lines[i].label) &&
      spec.stacked === this.spec.stacked &&
      spec.unit === this.spec.unit;
    this.spec = spec;
    if (!sameShape) {
      this.build();
      return;
    }
    this.own = spec.stacked ? align(spec.lines, false) : null;
    const plot = this.plot!;
    plot.batch(() => {
      plot.setData(align(spec.lines, !!spec.stacked), false);
      plot.setScale('x', { min: spec.start, max: spec.end });
    });
    // uPlot recomputes the legend on cursor moves only: without a cursor, show the new data's
    // current values (a line that ended must not keep the value it had at the last rebuild).
    if ((plot.cursor.left ?? -1) < 0) plot.setLegend({}, false);
  }

  // Draws again (e.g. after markers were added to the spec's list).
  redraw(): void {
    this.plot?.redraw(false);
  }

  destroy(): void {
    this.resize.disconnect();
    this.plot?.destroy();
    this.plot = null;
  }

  private build(): void {
    this.plot?.destroy();
    this.el.textContent = '';
    const spec = this.spec;
    const stacked = !!spec.stacked;
    const fg = cssVar('--fg');
    const grid = cssVar('--grid');
    const unit = spec.unit;
    const lines = stacked ? [...spec.lines].reverse() : spec.lines;
    const n = spec.lines.length;
    this.own = stacked ? align(spec.lines, false) : null;
    const series: uPlot.Series[] = [
      {},
      ...lines.map((l, i) => {
        const color = l.color ?? paletteColor(stacked ? n - 1 - i : i);
        const s: uPlot.Series = {
          label: l.label,
          stroke: color,
          width: 1.5,
          spanGaps: false,
          // uPlot's default: dots where points are sparse (a fresh server), none on dense lines.
          value: (u: uPlot, v: number | null, si: number, idx: number | null) => {
            // Stacked lines show their own value, not the stacked sum.
            const own = (stacked && this.own ? this.own[n - i] : u.data[si]) as (number | null)[];
            if (idx === null || idx === undefined) return formatValue(currentValue(u.data[0] as number[], own, this.spec.step), unit);
            return stacked ? formatValue(own[idx] ?? null, unit) : formatValue(v, unit);
          },
        };
        // Opaque: each area is drawn over the one stacked above it, from the top line down.
        if (stacked) s.fill = color;
        return s;
      }),
    ];
    const opts: uPlot.Options = {
      width: Math.max(200, this.el.clientWidth || 600),
      height: spec.height ?? 200,
      series,
      scales: {
        x: { time: true, min: spec.start, max: spec.end },
        y: {
          range: (_u, min, max) => {
            const lo = spec.yMin ?? Math.min(0, min ?? 0);
            let hi = spec.yMax !== undefined ? Math.max(spec.yMax, max ?? 0) : max ?? 1;
            if (!(hi > lo)) hi = lo + 1;
            return [lo, hi * (spec.yMax !== undefined ? 1 : 1.05)];
          },
        },
      },
      axes: [
        {
          stroke: fg,
          grid: { stroke: grid, width: 1 },
          ticks: { stroke: grid, width: 1 },
          label: 'time',
          labelSize: 18,
          labelFont: '12px system-ui, sans-serif',
          font: '11px system-ui, sans-serif',
        },
        {
          stroke: fg,
          grid: { stroke: grid, width: 1 },
          ticks: { stroke: grid, width: 1 },
          label: unitLabel(unit),
          labelSize: 18,
          labelFont: '12px system-ui, sans-serif',
          font: '11px system-ui, sans-serif',
          // Room for the longest tick label ("381.5 MiB/s") plus the rotated unit label.
          size: (_u: uPlot, values: string[]) =>
            18 + 14 + Math.ceil(6.2 * Math.max(4, ...(values ?? []).map((v) => v.length))),
          values: (_u, ticks) => ticks.map((t) => formatTick(t, unit)),
        },
      ],
      cursor: {
        sync: { key: SYNC_KEY, setSeries: false },
        drag: { x: true, y: false, setScale: false },
        focus: { prox: 30 },
      },
      legend: { show: true, live: true },
      plugins: [markersPlugin(() => this.spec.markers ?? [], () => this.spec.lines.map((l) => l.label))],
      hooks: {
        // Hovering a band names its findings (the chart's tooltip).
        setCursor: [
          (u: uPlot) => {
            const left = u.cursor.left ?? -1;
            const bands = left < 0 ? [] : chartBands(this.spec.markers ?? [], this.spec.lines.map((l) => l.label));
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
    this.plot = new uPlot(opts, align(spec.lines, stacked), this.el);
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
  }

  private pick(): void {
    const u = this.plot;
    if (!u || !this.spec.onPick) return;
    const idx = u.cursor.idx;
    const left = u.cursor.left ?? -1;
    if (idx === null || idx === undefined || left < 0) return;
    const t = u.data[0][idx];
    // The line nearest to the pointer at that time.
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
    this.spec.onPick(t, best);
  }
}

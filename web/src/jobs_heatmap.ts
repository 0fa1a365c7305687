// SPDX-License-Identifier: Apache-2.0
// The job page's heatmap of step time: one row per rank ("rank N · host"), one column per step
// (oldest left), each cell coloured by that rank's step time on a sequential scale from the
// fastest step to three times the median (slower cells take the darkest colour), with a legend.
// The cell of the rank that started the step's last large collective last carries a dot. Hover
// or focus a cell for its step, rank, host and duration; the grid is one Tab stop, and the arrow
// keys, Home and End move between cells (the ARIA grid pattern).
import { h } from './dom';
import { formatValue } from './format';
import type { JobDetail } from './jobs_api';
import { rankName } from './jobs_api';

// Pale to dark, readable in both themes and by the common colour-vision deficiencies
// (ColorBrewer YlOrRd).
const SCALE = ['#ffffcc', '#fed976', '#fd8d3c', '#e31a1c', '#800026'];
// Cells drawn at most: a job of many ranks keeps its newest steps.
const MAX_CELLS = 40_000;
// The top of the scale, in median step times: a stall does not wash out every other cell.
const CAP = 3;

function hex(c: string): number[] {
  return [1, 3, 5].map((i) => parseInt(c.slice(i, i + 2), 16));
}

// The colour of t in [0, 1] along SCALE, interpolated.
export function scaleColor(t: number): string {
  const x = Math.min(1, Math.max(0, t)) * (SCALE.length - 1);
  const i = Math.min(SCALE.length - 2, Math.floor(x));
  const a = hex(SCALE[i]);
  const b = hex(SCALE[i + 1]);
  const f = x - i;
  return `rgb(${a.map((v, k) => Math.round(v + (b[k] - v) * f)).join(', ')})`;
}

function median(xs: number[]): number {
  if (xs.length === 0) return 0;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

export interface HeatmapScale {
  lo: number;
  hi: number;
  median: number;
  capped: boolean; // some step is slower than hi
}

export function heatmapScale(values: number[]): HeatmapScale {
  if (values.length === 0) return { lo: 0, hi: 0, median: 0, capped: false };
  const lo = Math.min(...values);
  const max = Math.max(...values);
  const med = median(values);
  const hi = Math.min(max, Math.max(lo, med * CAP));
  return { lo, hi, median: med, capped: max > hi };
}

function position(v: number, s: HeatmapScale): number {
  return s.hi > s.lo ? (v - s.lo) / (s.hi - s.lo) : 0.5;
}

export class Heatmap {
  readonly el: HTMLElement;
  private readonly grid: HTMLElement;
  private readonly tip: HTMLElement;
  private cells: HTMLElement[][] = [];
  private at: [number, number] = [0, 0];

  constructor() {
    this.grid = h('div.heatmap', { role: 'grid', 'data-testid': 'heatmap' });
    this.tip = h('div.hm-tip', { role: 'status', 'aria-live': 'polite', hidden: true, 'data-testid': 'heatmap-tip' });
    this.el = h('div.hm-box', {}, this.grid, this.tip);
    this.grid.addEventListener('keydown', (e) => this.onKey(e));
    this.grid.addEventListener('mouseover', (e) => {
      const cell = (e.target as HTMLElement).closest<HTMLElement>('.hm-cell');
      if (cell) this.showTip(cell);
    });
    this.grid.addEventListener('mouseleave', () => {
      if (!this.grid.contains(document.activeElement)) this.tip.hidden = true;
    });
    this.grid.addEventListener('focusin', (e) => {
      const cell = (e.target as HTMLElement).closest<HTMLElement>('.hm-cell');
      if (!cell) return;
      this.at = [Number(cell.dataset.row), Number(cell.dataset.col)];
      this.showTip(cell);
    });
    this.grid.addEventListener('focusout', (e) => {
      if (!this.grid.contains(e.relatedTarget as Node | null)) this.tip.hidden = true;
    });
  }

  render(job: JobDetail): void {
    const ranks = job.ranks;
    const keep = Math.max(1, Math.floor(MAX_CELLS / Math.max(1, ranks.length)));
    const steps = [...job.steps].sort((a, b) => a.step - b.step).slice(-keep);
    this.tip.hidden = true;
    if (ranks.length === 0 || steps.length === 0) {
      this.cells = [];
      this.grid.replaceChildren(h('p.empty', { role: 'row' }, h('span', { role: 'gridcell' }, 'No step in this window.')));
      this.el.replaceChildren(this.grid, this.tip);
      return;
    }
    const values: number[] = [];
    for (const s of steps) for (const d of s.duration_s) if (d !== null && Number.isFinite(d)) values.push(d);
    const scale = heatmapScale(values);
    this.grid.setAttribute('aria-label', `Step time of ${ranks.length} ranks over ${steps.length} steps (${steps[0].step} to ${steps[steps.length - 1].step})`);
    this.grid.setAttribute('aria-rowcount', String(ranks.length));
    this.grid.setAttribute('aria-colcount', String(steps.length + 1));
    const columns = `var(--hm-label) repeat(${steps.length}, minmax(0, 1fr))`;
    const straggler = job.straggler?.rank;
    this.cells = [];
    const rows = ranks.map((r, i) => {
      const row = h('div.hm-row', { role: 'row', 'data-rank': r.rank, class: r.rank === straggler ? 'straggler' : undefined });
      row.style.gridTemplateColumns = columns;
      row.append(h('div.hm-label', { role: 'rowheader', title: `${rankName(r)}${r.rank === straggler ? ' (the straggler)' : ''}: ${r.entity}` }, rankName(r)));
      const cells = steps.map((s, j) => {
        const d = s.duration_s[i];
        const last = s.last_rank === r.rank;
        const cell = h('div.hm-cell', {
          role: 'gridcell',
          tabindex: i === 0 && j === steps.length - 1 ? 0 : -1,
          'data-row': i,
          'data-col': j,
          'data-step': s.step,
          'data-rank': r.rank,
          'data-host': r.host,
          'data-duration': d ?? '',
          'data-slowest': s.max_s ?? '',
          class: [d === null || d === undefined ? 'missing' : '', last ? 'last' : ''].filter(Boolean).join(' ') || undefined,
          'aria-label': cellText(s.step, r, d ?? null, last),
        });
        if (d !== null && d !== undefined) cell.style.background = scaleColor(position(d, scale));
        return cell;
      });
      this.cells.push(cells);
      row.append(...cells);
      return row;
    });
    this.at = [0, steps.length - 1];
    const axis = h('div.hm-axis', { 'aria-hidden': 'true' }, h('span', {}, `step ${steps[0].step}`), h('span', {}, `step ${steps[steps.length - 1].step}`));
    this.grid.replaceChildren(...rows);
    this.el.replaceChildren(
      this.grid,
      axis,
      steps.length < job.steps.length ? h('p.muted.chart-note', {}, `The newest ${steps.length} of ${job.steps.length} steps (${ranks.length} ranks).`) : '',
      legend(scale),
      this.tip,
    );
  }

  private showTip(cell: HTMLElement): void {
    const d = cell.dataset.duration ? Number(cell.dataset.duration) : null;
    const slowest = cell.dataset.slowest ? Number(cell.dataset.slowest) : null;
    this.tip.replaceChildren(
      h('strong', {}, `step ${cell.dataset.step}`),
      ` · rank ${cell.dataset.rank} · ${cell.dataset.host}`,
      h('br'),
      d === null ? 'no step reported' : `step time ${formatValue(d, 's')}`,
      slowest !== null && d !== null ? h('span.muted', {}, ` (slowest rank ${formatValue(slowest, 's')})`) : '',
    );
    if (cell.classList.contains('last')) this.tip.append(h('br'), 'started the step\u2019s last collective last');
    this.tip.hidden = false;
    const box = this.el.getBoundingClientRect();
    const r = cell.getBoundingClientRect();
    const left = Math.min(Math.max(0, r.left - box.left - 60), Math.max(0, box.width - 260));
    this.tip.style.left = `${left}px`;
    this.tip.style.top = `${r.bottom - box.top + 6}px`;
  }

  private onKey(e: KeyboardEvent): void {
    if (this.cells.length === 0) return;
    let [i, j] = this.at;
    const cols = this.cells[0].length;
    switch (e.key) {
      case 'ArrowLeft':
        j = Math.max(0, j - 1);
        break;
      case 'ArrowRight':
        j = Math.min(cols - 1, j + 1);
        break;
      case 'ArrowUp':
        i = Math.max(0, i - 1);
        break;
      case 'ArrowDown':
        i = Math.min(this.cells.length - 1, i + 1);
        break;
      case 'Home':
        j = 0;
        break;
      case 'End':
        j = cols - 1;
        break;
      default:
        return;
    }
    e.preventDefault();
    this.focusCell(i, j);
  }

  private focusCell(i: number, j: number): void {
    const [pi, pj] = this.at;
    this.cells[pi]?.[pj]?.setAttribute('tabindex', '-1');
    const cell = this.cells[i][j];
    cell.setAttribute('tabindex', '0');
    this.at = [i, j];
    cell.focus();
  }
}

function cellText(step: number, r: { rank: number; host: string }, d: number | null, last: boolean): string {
  const time = d === null ? 'no step reported' : formatValue(d, 's');
  return `step ${step}, ${rankName(r)}: ${time}${last ? ', started the last collective last' : ''}`;
}

// The colour scale with its fastest, median and top step times; the missing-step and
// last-to-collective keys.
function legend(s: HeatmapScale): HTMLElement {
  const bar = h('span.hm-gradient', { 'aria-hidden': 'true' });
  bar.style.background = `linear-gradient(to right, ${[0, 0.25, 0.5, 0.75, 1].map(scaleColor).join(', ')})`;
  const mid = s.hi > s.lo ? (s.median - s.lo) / (s.hi - s.lo) : 0.5;
  const mark = h('span.hm-median', { 'aria-hidden': 'true' });
  mark.style.left = `${(Math.min(1, mid) * 100).toFixed(1)}%`;
  bar.append(mark);
  const ticks = h('span.hm-ticks', {}, h('span', {}, formatValue(s.lo, 's')), h('span', {}, `${s.capped ? '\u2265 ' : ''}${formatValue(s.hi, 's')}`));
  return h(
    'div.hm-legend',
    { 'data-testid': 'heatmap-legend' },
    h('span.muted', {}, 'Step time'),
    h('span.hm-scale', {}, bar, ticks),
    h('span.hm-key', {}, h('span.hm-median-key', { 'aria-hidden': 'true' }), `median ${formatValue(s.median, 's')}`),
    h('span.hm-key', {}, h('span.hm-swatch.missing', { 'aria-hidden': 'true' }), 'no step reported'),
    h('span.hm-key', {}, h('span.hm-swatch.last', { 'aria-hidden': 'true' }), 'started the step\u2019s last collective last'),
  );
}

// SPDX-License-Identifier: Apache-2.0
// A chart's legend: one row per line with its value (at the crosshair, or its current value),
// and its min / max / avg / last over the window; sortable by any column (click its header);
// hovering a row highlights that line. Recomputed on every update, so live mode moves the
// numbers too. Rows keep uPlot's class names (u-series, u-label, u-value) so that the charts'
// legends read alike everywhere.
import { h } from './dom';
import { formatValue } from './format';

export interface LegendRow {
  label: string;
  color: string;
  series: number; // the uPlot series index of the line
  min: number | null;
  max: number | null;
  avg: number | null;
  last: number | null;
}

type SortKey = 'label' | 'value' | 'min' | 'max' | 'avg' | 'last';
const COLUMNS: [SortKey, string][] = [
  ['label', 'series'],
  ['value', 'value'],
  ['min', 'min'],
  ['max', 'max'],
  ['avg', 'avg'],
  ['last', 'last'],
];

// min / max / avg / last of the non-null values (null when there is none).
export function lineStats(values: ArrayLike<number | null | undefined>): Pick<LegendRow, 'min' | 'max' | 'avg' | 'last'> {
  let min = Infinity;
  let max = -Infinity;
  let sum = 0;
  let n = 0;
  let last: number | null = null;
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (v === null || v === undefined || !Number.isFinite(v)) continue;
    if (v < min) min = v;
    if (v > max) max = v;
    sum += v;
    n++;
    last = v;
  }
  return n ? { min, max, avg: sum / n, last } : { min: null, max: null, avg: null, last: null };
}

export class ChartLegend {
  readonly el: HTMLTableElement;
  private readonly body: HTMLTableSectionElement;
  private rows: LegendRow[] = [];
  private values: (number | null)[] = [];
  private time = '';
  private sortKey: SortKey | null = null;
  private descending = true;
  private highlighted: string | null = null;
  // The value cells by row, and the value column's header: a crosshair move updates them in
  // place (it happens on every chart of the page at each pointer move).
  private valueCells: HTMLElement[] = [];
  private timeCell: HTMLElement | null = null;

  constructor(
    private unit: string,
    private readonly onHover: (series: number | null) => void,
  ) {
    this.body = h('tbody') as HTMLTableSectionElement;
    this.el = h('table.u-legend.ws-legend', { 'data-testid': 'legend' }, this.body) as HTMLTableElement;
  }

  // New lines (a rebuild or a live update); keeps the sort order the user chose.
  setRows(rows: LegendRow[], unit: string): void {
    this.rows = rows;
    this.unit = unit;
    this.render();
  }

  // The value column: the lines' values at the crosshair (with its time) or their current values.
  setValues(values: (number | null)[], time: string): void {
    this.values = values;
    this.time = time;
    if (this.sortKey === 'value' || this.valueCells.length !== this.rows.length || !this.timeCell) {
      this.render();
      return;
    }
    this.valueCells.forEach((cell, i) => (cell.textContent = formatValue(values[i] ?? null, this.unit)));
    this.timeCell.textContent = time ? ` ${time}` : '';
  }

  highlight(label: string | null): void {
    if (this.highlighted === label) return;
    this.highlighted = label;
    for (const tr of this.body.querySelectorAll<HTMLElement>('tr[data-label]')) {
      tr.classList.toggle('highlighted', tr.dataset.label === label);
      tr.classList.toggle('dimmed', label !== null && tr.dataset.label !== label);
    }
  }

  private sortBy(key: SortKey): void {
    if (this.sortKey === key) this.descending = !this.descending;
    else [this.sortKey, this.descending] = [key, key !== 'label'];
    this.render();
  }

  private ordered(): number[] {
    const idx = this.rows.map((_, i) => i);
    const key = this.sortKey;
    if (!key) return idx;
    const val = (i: number): number | string | null => (key === 'label' ? this.rows[i].label : key === 'value' ? this.values[i] ?? null : this.rows[i][key]);
    return idx.sort((a, b) => {
      const [x, y] = [val(a), val(b)];
      if (x === null || y === null) return x === y ? 0 : x === null ? 1 : -1; // no value: last
      const c = typeof x === 'string' ? x.localeCompare(String(y), undefined, { numeric: true }) : x - (y as number);
      return this.descending ? -c : c;
    });
  }

  private render(): void {
    const f = (v: number | null) => formatValue(v, this.unit);
    const head = h(
      'tr.u-series.legend-head',
      {},
      ...COLUMNS.map(([key, name]) => {
        const sorted = this.sortKey === key;
        const button = h('button.legend-sort', { type: 'button', 'data-sort': key, onclick: () => this.sortBy(key) }, name, sorted ? (this.descending ? ' ▼' : ' ▲') : '');
        const th = h(key === 'value' ? 'th.u-value' : 'th', { scope: 'col', 'aria-sort': sorted ? (this.descending ? 'descending' : 'ascending') : 'none' }, button);
        return th;
      }),
    );
    // The time at the crosshair names the value column.
    const valueHead = head.children[1] as HTMLElement;
    this.timeCell = h('span.legend-time', {}, this.time ? ` ${this.time}` : '');
    valueHead.append(this.timeCell);
    this.valueCells = new Array(this.rows.length);
    const rows = this.ordered().map((i) => {
      const r = this.rows[i];
      const valueCell = h('td.u-value', {}, f(this.values[i] ?? null));
      this.valueCells[i] = valueCell;
      const tr = h(
        'tr.u-series',
        { 'data-label': r.label },
        h('th.u-label', { scope: 'row' }, h('span.u-marker', { style: `border-color:${r.color};background:${r.color}` }), r.label),
        valueCell,
        h('td.stat', { 'data-stat': 'min' }, f(r.min)),
        h('td.stat', { 'data-stat': 'max' }, f(r.max)),
        h('td.stat', { 'data-stat': 'avg' }, f(r.avg)),
        h('td.stat', { 'data-stat': 'last' }, f(r.last)),
      );
      if (this.highlighted !== null) tr.classList.add(r.label === this.highlighted ? 'highlighted' : 'dimmed');
      tr.addEventListener('mouseenter', () => this.onHover(r.series));
      tr.addEventListener('mouseleave', () => this.onHover(null));
      return tr;
    });
    this.body.replaceChildren(head, ...rows);
  }
}

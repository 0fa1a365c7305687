// SPDX-License-Identifier: Apache-2.0
// Parts of the job page (jobs_page.ts): where each rank's step time goes (a stacked bar of
// compute, overlap, communication and idle per rank, with a legend), the slow steps, and the
// collectives per operation and communicator with each rank's count, mean time and bus
// bandwidth. The straggler's row is marked in each.
import { h } from './dom';
import { formatTime, formatValue } from './format';
import type { JobDetail, RankRow } from './jobs_api';
import { rankName } from './jobs_api';
import type { ViewContext } from './view';

// The parts of a step, stacked in this order. Compute overlapped by communication is counted
// once, as overlap: compute alone = compute - overlap (the step record's compute holds the
// overlap, its comm does not: compute + comm + idle = the step).
const PARTS = [
  { id: 'compute', label: 'compute', color: '#0072b2', note: 'kernels other than NCCL, with no NCCL kernel running beside them' },
  { id: 'overlap', label: 'overlap', color: '#56b4e9', note: 'NCCL kernels running while compute kernels run' },
  { id: 'comm', label: 'communication', color: '#e69f00', note: 'NCCL kernels that compute does not overlap' },
  { id: 'idle', label: 'idle', color: '#9a9a9a', note: 'no kernel on the GPU (data loading, the CPU, waiting)' },
] as const;

type PartId = (typeof PARTS)[number]['id'] | 'unknown';

// The segments of one rank's bar, as fractions of its step time; compute unknown (no kernel
// records) gives communication (the NCCL operations' share) and an unknown rest.
export function segments(r: RankRow): [PartId, number][] {
  const clamp = (v: number) => Math.min(1, Math.max(0, v));
  if (r.compute_share === null) {
    const comm = clamp(r.comm_share ?? 0);
    return [
      ['comm', comm],
      ['unknown', 1 - comm],
    ];
  }
  const overlap = clamp(r.overlap_share ?? 0);
  const compute = clamp(r.compute_share - overlap);
  const comm = clamp(r.comm_share ?? 0);
  const idle = clamp(r.idle_share ?? 1 - r.compute_share - comm);
  return [
    ['compute', compute],
    ['overlap', overlap],
    ['comm', comm],
    ['idle', idle],
  ];
}

const partLabel = (id: PartId) => (id === 'unknown' ? 'compute and idle unknown' : PARTS.find((p) => p.id === id)!.label);

export function shareBars(c: ViewContext, j: JobDetail): HTMLElement {
  if (j.ranks.length === 0) return h('p.empty', {}, 'No rank reported steps in this window.');
  const unknown = j.ranks.some((r) => r.compute_share === null);
  const legend = h(
    'ul.flame-legend.share-legend',
    { 'data-testid': 'share-legend' },
    ...PARTS.map((p) => h('li', { title: p.note }, swatch(p.color), p.label)),
    unknown ? h('li', { title: 'No kernel records: the CUDA profiler is not injected, only the NCCL plugin reports' }, h('span.swatch.unknown-part', { 'aria-hidden': 'true' }), 'compute unknown') : null,
  );
  const rows = j.ranks.map((r) => {
    const segs = segments(r);
    const bar = h('div.share-bar', { role: 'img', 'aria-label': `${rankName(r)}: ${segs.map(([id, v]) => `${partLabel(id)} ${formatValue(v, '1')}`).join(', ')}` });
    for (const [id, v] of segs) {
      if (v <= 0) continue;
      const seg = h('span', { 'data-part': id, title: `${partLabel(id)}: ${formatValue(v, '1')} of ${rankName(r)}\u2019s step time`, class: id === 'unknown' ? 'unknown-part' : undefined });
      seg.style.width = `${(v * 100).toFixed(2)}%`;
      if (id !== 'unknown') seg.style.background = PARTS.find((p) => p.id === id)!.color;
      bar.append(seg);
    }
    const figures = r.compute_share === null ? `comm ${formatValue(r.comm_share, '1')} · compute unknown` : `compute ${formatValue(r.compute_share, '1')} · comm ${formatValue(r.comm_share, '1')}`;
    return h(
      'div.share-row',
      { 'data-rank': r.rank, class: r.straggler ? 'straggler' : undefined },
      h('span.share-label', {}, h('a', { href: c.href({ view: 'host', host: r.host }) }, rankName(r)), r.straggler ? h('span.badge.sev-page', {}, 'straggler') : null, r.slow_interconnect ? h('span.badge.sev-ticket', { title: 'Much longer in NCCL than the median rank' }, 'slow interconnect') : null),
      bar,
      h('span.share-figures.muted', {}, `${figures} · p50 ${formatValue(r.step_time_p50_s, 's')}`),
    );
  });
  return h('div', { 'data-testid': 'share-bars' }, legend, ...rows);
}

function swatch(color: string): HTMLElement {
  const s = h('span.swatch', { 'aria-hidden': 'true' });
  s.style.background = color;
  return s;
}

export function slowStepsTable(j: JobDetail): HTMLElement {
  const slow = j.slow_steps ?? [];
  if (slow.length === 0) return h('p.empty', { 'data-testid': 'slow-steps-empty' }, j.complete_steps < 5 ? 'Too few complete steps to judge (5 are needed).' : 'No slow step in this window.');
  const th = (t: string, num = false) => h(num ? 'th.num' : 'th', { scope: 'col' }, t);
  return h(
    'div.table-scroll',
    {},
    h(
      'table.data',
      { 'data-testid': 'slow-steps' },
      h('thead', {}, h('tr', {}, th('Step'), th('Started'), th('Step time', true), th('Trailing median', true), th('Slower by', true), th(''))),
      h(
        'tbody',
        {},
        ...[...slow].reverse().map((s) =>
          h(
            'tr',
            { 'data-step': s.step },
            h('td', {}, String(s.step)),
            h('td', {}, formatTime(s.start / 1000)),
            h('td.num', {}, formatValue(s.duration_s, 's')),
            h('td.num', {}, formatValue(s.trailing_median_s, 's')),
            h('td.num', {}, s.trailing_median_s > 0 ? `${(s.duration_s / s.trailing_median_s).toFixed(1)} x` : '–'),
            h('td', {}, s.stall ? h('span.badge.sev-page', {}, 'stall') : ''),
          ),
        ),
      ),
    ),
  );
}

// One table: a group of rows per operation and communicator, a row per rank (the straggler's
// marked), its operations' count, mean GPU time and bus bandwidth over the window.
export function collectivesTable(j: JobDetail): HTMLElement {
  const list = j.collectives ?? [];
  if (list.length === 0) {
    return h(
      'p.empty',
      { 'data-testid': 'collectives-empty' },
      'No NCCL operation metrics for this job\u2019s processes in this window: load the NCCL profiler plugin (NCCL_PROFILER_PLUGIN=libwarpscope_nccl.so) with the agent\u2019s --cuda-profiler.',
    );
  }
  const straggler = j.straggler?.rank;
  const th = (t: string, num = false) => h(num ? 'th.num' : 'th', { scope: 'col' }, t);
  const groups = list.map((op) => {
    const ranks = [...op.per_rank].sort((a, b) => a.rank - b.rank);
    const bws = ranks.map((r) => r.bus_bandwidth_bytes_per_second).filter((v): v is number => v !== null);
    // The lowest bus bandwidth, marked when it is below the others' (not when all are equal).
    const lowest = bws.length > 1 && Math.min(...bws) < Math.max(...bws) * 0.999 ? Math.min(...bws) : null;
    const name = `${op.collective} · ${op.comm_name || op.comm}`;
    return h(
      'tbody',
      { 'data-collective': op.collective, 'data-comm': op.comm },
      ...ranks.map((r, i) =>
        h(
          'tr',
          { 'data-rank': r.rank, class: r.rank === straggler ? 'straggler' : undefined },
          i === 0 ? h('th', { scope: 'rowgroup', rowspan: ranks.length, title: op.comm }, op.collective, h('br'), h('span.muted', {}, op.comm_name || op.comm)) : null,
          h('td', {}, rankName(r), r.rank === straggler ? [' ', h('span.badge.sev-page', {}, 'straggler')] : ''),
          h('td.num', { 'data-col': 'count' }, formatValue(r.count, '')),
          h('td.num', { 'data-col': 'mean' }, formatValue(r.mean_time_s, 's')),
          h('td.num', { 'data-col': 'gpu-time' }, formatValue(r.gpu_time_s, 's')),
          h('td.num', { 'data-col': 'bandwidth', class: lowest !== null && r.bus_bandwidth_bytes_per_second === lowest ? 'lowest' : undefined, title: lowest !== null && r.bus_bandwidth_bytes_per_second === lowest ? `The lowest bus bandwidth of ${name}` : undefined }, formatValue(r.bus_bandwidth_bytes_per_second, 'By/s')),
        ),
      ),
    );
  });
  return h(
    'div.table-scroll',
    {},
    h(
      'table.data.collectives',
      { 'data-testid': 'collectives' },
      h('thead', {}, h('tr', {}, th('Operation · communicator'), th('Rank'), th('Count', true), th('Mean time', true), th('GPU time', true), th('Bus bandwidth', true))),
      ...groups,
    ),
  );
}

// SPDX-License-Identifier: Apache-2.0
// The training jobs (/jobs): one row per job with steps in the window (ranks, hosts, step time
// p50, communication share, straggler, findings), sortable; and one job (/jobs/<job>): its
// headline figures, the straggler banner with links to where it runs, the ranks x steps heatmap
// of step time (jobs_heatmap.ts), where each rank's step time goes, the slow steps, the
// collectives per rank (jobs_parts.ts) and the job's findings. Data: GET /api/v1/jobs and
// /api/v1/jobs/{job} (docs/design/training.md).
import { getJson } from './api';
import type { EntityRecord } from './api';
import { h } from './dom';
import { formatAge, formatTime, formatValue } from './format';
import { Heatmap } from './jobs_heatmap';
import { fetchJob, fetchJobs, NO_STEPS_HELP, rankName, reasonText } from './jobs_api';
import type { JobDetail, JobSummary, RankRow } from './jobs_api';
import { collectivesTable, shareBars, slowStepsTable } from './jobs_parts';
import { findingList, formatGpuHours } from './insights_api';
import type { View, ViewContext } from './view';

interface Column {
  key: string;
  title: string;
  note?: string;
  value: (j: JobSummary) => number | string | null;
}

const COLUMNS: Column[] = [
  { key: 'job', title: 'Job', value: (j) => j.job },
  { key: 'ranks', title: 'Ranks', note: 'Ranks with steps in the window / the job\u2019s world size', value: (j) => j.ranks },
  { key: 'hosts', title: 'Hosts', value: (j) => j.hosts.length },
  { key: 'step', title: 'Step time p50', note: 'The median of the complete steps\u2019 time (the slowest rank\u2019s)', value: (j) => j.step_time_p50_s },
  { key: 'comm', title: 'Comm share', note: 'Share of step time spent in communication that compute does not overlap, mean over the ranks', value: (j) => j.comm_share },
  { key: 'straggler', title: 'Straggler', note: 'The rank that holds the others back, where one does', value: (j) => (j.straggler ? j.straggler.rank : null) },
  { key: 'findings', title: 'Findings', value: (j) => j.findings },
  { key: 'last', title: 'Last step', value: (j) => j.last },
];

function sortHeader(c: ViewContext, col: Column, active: boolean): HTMLElement {
  const dir = c.state.dir;
  const next = active && dir === 'desc' ? 'asc' : 'desc';
  return h(
    ['job', 'hosts', 'straggler'].includes(col.key) ? 'th' : 'th.num',
    { scope: 'col', title: col.note, 'aria-sort': active ? (dir === 'desc' ? 'descending' : 'ascending') : 'none' },
    h('a.sort', { href: c.href({ sort: col.key, dir: next }), title: `Sort by ${col.title}` }, col.title, active ? (dir === 'desc' ? ' ▼' : ' ▲') : ''),
  );
}

function compare(a: number | string | null, b: number | string | null): number {
  if (a === null || b === null) return a === b ? 0 : a === null ? -1 : 1;
  return typeof a === 'string' || typeof b === 'string' ? String(a).localeCompare(String(b)) : a - b;
}

function hostLinks(c: ViewContext, hosts: string[], max = 4): (Node | string)[] {
  const shown = hosts.slice(0, max).flatMap((host, i) => [i ? ', ' : '', h('a', { href: c.href({ view: 'host', host }) }, host)]);
  return hosts.length > max ? [...shown, ` and ${hosts.length - max} more`] : shown;
}

function emptyCard(testid: string, message: string, extra: Node | null = null): HTMLElement {
  return h(
    'section.card',
    { 'data-testid': testid },
    h('p', {}, message),
    h('p.muted', {}, NO_STEPS_HELP, ' How steps are found and analysed: ', h('code', {}, 'docs/design/training.md'), '.'),
    extra,
  );
}

function jobsTable(c: ViewContext, jobs: JobSummary[]): HTMLElement {
  if (jobs.length === 0) return emptyCard('jobs-empty', 'No training job reported steps in this window.');
  const col = COLUMNS.find((x) => x.key === c.state.sort) ?? COLUMNS[COLUMNS.length - 1];
  const sign = c.state.dir === 'asc' ? 1 : -1;
  const sorted = [...jobs].sort((a, b) => sign * compare(col.value(a), col.value(b)) || a.job.localeCompare(b.job));
  return h(
    'div.table-scroll',
    {},
    h(
      'table.data',
      { 'data-testid': 'jobs-table' },
      h('thead', {}, h('tr', {}, ...COLUMNS.map((x) => sortHeader(c, x, x === col)))),
      h(
        'tbody',
        {},
        ...sorted.map((j) =>
          h(
            'tr',
            { 'data-job': j.job },
            h('td', {}, h('a', { href: c.href({ view: 'job', job: j.job }) }, j.job)),
            h('td.num', { 'data-col': 'ranks' }, j.world_size && j.world_size !== j.ranks ? `${j.ranks} / ${j.world_size}` : String(j.ranks)),
            h('td', { 'data-col': 'hosts' }, ...hostLinks(c, j.hosts)),
            h('td.num', { 'data-col': 'step' }, formatValue(j.step_time_p50_s, 's')),
            h('td.num', { 'data-col': 'comm' }, formatValue(j.comm_share, '1')),
            h('td', { 'data-col': 'straggler' }, j.straggler ? h('a', { href: c.href({ view: 'host', host: j.straggler.host }) }, rankName(j.straggler)) : '–'),
            h('td.num', { 'data-col': 'findings' }, j.findings ? h('span.badge.bad', {}, String(j.findings)) : '0'),
            h('td.num', { 'data-col': 'last', title: formatTime(j.last / 1000) }, `step ${j.last_step} · ${formatAge(j.last / 1000)}`),
          ),
        ),
      ),
    ),
  );
}

export async function jobsView(root: HTMLElement, ctx: ViewContext): Promise<View> {
  const box = h('div', { 'data-testid': 'jobs' });
  root.append(h('div.host-head', {}, h('h1', {}, 'Jobs'), h('p.muted', {}, 'Distributed training jobs with steps in this window')), box);
  const load = async (c: ViewContext) => box.replaceChildren(jobsTable(c, await fetchJobs(c.start, c.end)));
  await load(ctx);
  return { refresh: load, destroy: () => {} };
}

function tile(title: string, value: string, sub: string, testid: string, alert = false): HTMLElement {
  return h('div.tile', { class: alert ? 'alert' : undefined, 'data-testid': `job-${testid}` }, h('span.tile-title', {}, title), h('span.tile-value', {}, value), h('span.tile-sub', {}, sub));
}

function headline(j: JobDetail): HTMLElement[] {
  const share = (v: number | null) => (v === null ? 'unknown' : formatValue(v, '1'));
  const seen = new Set(j.ranks.map((r) => r.rank)).size;
  return [
    tile('Ranks', String(j.world_size || seen), `${seen} reporting, on ${j.hosts.length} host${j.hosts.length === 1 ? '' : 's'}`, 'ranks'),
    tile('Step time p50', formatValue(j.step_time_p50_s, 's'), `over ${j.complete_steps} complete step${j.complete_steps === 1 ? '' : 's'}`, 'step'),
    tile('Compute', share(j.compute_share), `overlap ${share(j.overlap_share)} · idle ${share(j.idle_share)}`, 'compute'),
    tile('Communication', share(j.comm_share), j.compute_share === null ? 'NCCL operations\u2019 share (no kernel records)' : 'not overlapped by compute', 'comm', (j.comm_share ?? 0) > 0.25),
    tile('GPU-hours', j.gpu_hours === null ? '–' : formatGpuHours(j.gpu_hours), 'world size x the steps\u2019 wall time', 'gpu-hours'),
    tile('Straggler', j.straggler ? `rank ${j.straggler.rank}` : 'none', j.straggler ? j.straggler.host : 'no rank holds the others back', 'straggler-tile', j.straggler !== null),
  ];
}

// The job's time range (the analysis's from and to), whole seconds, at least a minute: the
// window of the straggler's links and of its GPU profile.
function jobWindow(j: JobDetail): { from: number; to: number } {
  const from = Math.floor(j.from / 1000);
  return { from, to: Math.max(Math.ceil(j.to / 1000), from + 60) };
}

// The straggler: which rank on which host and GPU, why, what it costs, and links to its host,
// GPU, process and GPU profile over the job's window.
function stragglerBanner(c: ViewContext, j: JobDetail, gpuName: (uuid: string) => string): HTMLElement | null {
  const s = j.straggler;
  if (!s) return null;
  const rank: RankRow | undefined = j.ranks.find((r) => r.rank === s.rank);
  const gpus = rank?.gpus ?? [];
  const pid = rank?.pid ?? undefined;
  const w = jobWindow(j);
  const at = { from: w.from, to: w.to, range: '', live: false };
  const links: (HTMLElement | null)[] = [
    h('a.btn', { href: c.href({ view: 'host', host: s.host, tab: 'gpu', ...at }), 'data-testid': 'straggler-host' }, `Host ${s.host}`),
    ...gpus.map((g) => h('a.btn', { href: c.href({ view: 'gpu', host: s.host, gpu: g, ...at }), 'data-testid': 'straggler-gpu' }, gpuName(g))),
    s.entity.startsWith('pid/') ? h('a.btn', { href: c.href({ view: 'process', host: s.host, process: s.entity, ...at }), 'data-testid': 'straggler-process' }, pid !== undefined ? `Process ${pid}` : 'Process') : null,
    pid !== undefined
      ? h(
          'a.btn.primary',
          { href: c.href({ view: 'host', host: s.host, tab: 'gpu', ...at, profile: { start: w.from, end: w.to, kind: 'gpu', pid } }), 'data-testid': 'straggler-profile' },
          'GPU profile of the job\u2019s window',
        )
      : null,
  ];
  const figures: string[] = [];
  if (s.lag_s !== null) figures.push(`${formatValue(s.lag_s, 's')} behind the median rank per step`);
  if (s.step_share !== null) figures.push(`${formatValue(s.step_share, '1')} of every step lost`);
  if (s.gpu_hours_lost !== null) figures.push(`${formatGpuHours(s.gpu_hours_lost)} GPU-hours lost across the ${j.world_size || j.ranks.length} ranks`);
  return h(
    'section.card.straggler-banner',
    { role: 'status', 'data-testid': 'straggler', 'data-rank': s.rank, 'data-host': s.host, 'data-reason': s.reason },
    h('h2', {}, `Straggler: rank ${s.rank} on ${s.host}`, gpus.length ? ` (${gpus.map(gpuName).join(', ')})` : ''),
    h(
      'p',
      {},
      `It ${reasonText(s.reason)}`,
      s.late_fraction !== null && s.reason === 'late_collective' ? ` in ${formatValue(s.late_fraction, '1')} of the steps` : '',
      ', so every other rank waits for it. ',
      figures.length ? `${figures.join('; ')}.` : '',
    ),
    h('div.actions', {}, ...links),
  );
}

// GPU names ("GPU 3") of the straggler's host, from its GPU entities; the UUID when unknown.
async function gpuNames(j: JobDetail): Promise<(uuid: string) => string> {
  if (!j.straggler) return (u) => u;
  const r = await getJson<{ entities: EntityRecord[] }>('/api/v1/entities', { host: j.straggler.host, kind: 'gpu', limit: 1000 }).catch(() => ({ entities: [] as EntityRecord[] }));
  const index = new Map(r.entities.map((e) => [e.id, e.attributes['gpu.index']]));
  return (u) => (index.get(u) !== undefined ? `GPU ${index.get(u)}` : u);
}

function section(title: string, testid: string, note: string, ...body: (Node | string | null)[]): HTMLElement {
  return h('section.card', { 'aria-label': title, 'data-testid': testid }, h('h2', {}, title), note ? h('p.muted.section-note', {}, note) : null, ...body);
}

export async function jobView(root: HTMLElement, ctx: ViewContext): Promise<View> {
  const name = ctx.state.job ?? '';
  const head = h('div.host-head', {}, h('h1', { 'data-testid': 'job-title' }, `Job ${name}`), h('p.muted', { 'data-testid': 'job-sub' }, h('a', { href: ctx.href({ view: 'jobs' }) }, 'Jobs')));
  const body = h('div', { 'data-testid': 'job-body' });
  root.append(head, body);
  const heatmap = new Heatmap();
  const load = async (c: ViewContext) => {
    const j = await fetchJob(name, c.start, c.end);
    if (!j) {
      body.replaceChildren(
        h(
          'section.card.notfound',
          { 'data-testid': 'job-unknown', role: 'alert' },
          h('h1', {}, 'Job not found'),
          h('p', {}, `No rank of a job ${name} reported steps in this window: check the job id (the job.id attribute of its processes, or comm-<communicator id>), or pick a longer window.`),
          h('p', {}, h('a', { href: c.href({ view: 'jobs' }) }, 'Training jobs'), ' · ', h('a', { href: c.href({ view: 'fleet' }) }, 'Fleet overview')),
        ),
      );
      return;
    }
    const gpuName = await gpuNames(j);
    head.lastElementChild?.replaceChildren(
      h('a', { href: c.href({ view: 'jobs' }) }, 'Jobs'),
      ` · ${formatTime(j.from / 1000)} to ${formatTime(j.to / 1000)} · `,
      ...hostLinks(c, j.hosts, 8),
    );
    heatmap.render(j);
    const bandwidthNote = j.slow_interconnect_ranks.length
      ? `Slow interconnect: rank${j.slow_interconnect_ranks.length === 1 ? '' : 's'} ${j.slow_interconnect_ranks.join(', ')} spend${j.slow_interconnect_ranks.length === 1 ? 's' : ''} much longer in NCCL than the median rank.`
      : '';
    body.replaceChildren(
      h('div.tiles', { 'data-testid': 'job-tiles' }, ...headline(j)),
      stragglerBanner(c, j, gpuName) ?? '',
      section(
        'Step time by rank',
        'job-heatmap',
        'Each row a rank, each column a step (oldest left); darker is slower. A dot marks the rank that started the step\u2019s last collective last.',
        heatmap.el,
      ),
      section('Where each rank\u2019s step time goes', 'job-shares', bandwidthNote, shareBars(c, j)),
      section('Slow steps', 'job-slow-steps', 'Steps longer than 1.5 x the median of the 20 before them; 5 x is a stall.', slowStepsTable(j)),
      section('Collectives', 'job-collectives', 'Per NCCL operation and communicator, each rank\u2019s operations over the window (from the NCCL profiler plugin\u2019s metrics).', collectivesTable(j)),
      section('Findings', 'job-findings', '', j.findings.length ? findingList(j.findings, c) : h('p.empty', {}, 'No finding about this job.')),
    );
  };
  await load(ctx);
  return { refresh: load, destroy: () => {} };
}

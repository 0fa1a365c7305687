// SPDX-License-Identifier: Apache-2.0
// The whole view lives in the URL (shareable, and the back button works):
//   /                         fleet overview
//   /top?kind=gpu&sort=gpu.utilization&dir=desc     (kind: host, gpu, executable, process,
//                                                   container, pod)
//   /host/<host>?tab=host|gpu|inference&expand=<widget>&bgpu=<uuid>
//   /host/<host>/process/<entity id>   one process (entity id "pid/<pid>/<start ticks>")
//   /host/<host>/gpu/<uuid>            one GPU
//   /insights?severity=page|ticket|info&state=firing|pending|resolved&rule=<rule>&host=<host>
//   /insights/<finding id>        one finding with its evidence
//   /inference                    the served models across hosts
//   /inference/<model>            one model: its serving processes, their latency and load
//   /inference/<model>?trace=<trace id>   and one request trace's waterfall (32 hex digits)
//   /jobs?sort=<column>&dir=asc   the training jobs (columns: jobs_page.ts)
//   /jobs/<job>                   one training job: its ranks, steps, straggler, collectives
// plus, on every view:
//   range=15m|1h|6h|24h|7d      a window ending now (default 1h), or from=<unix s>&to=<unix s>
//   live=1                    refresh every 10 s (relative ranges only)
//   p=<start>-<end>           the profile panel for that window, with pk=<kind> (cpu, gpu, ...),
//                             pe=<entity> or pp=<pid> (one process), pv=<sample type index>,
//                             pq=<search>, pt=<tid> (one thread), pm=1 (the merged CPU + GPU
//                             view of the process) and pw=cpu|gpu|both (its weight),
//                             pl=<KEY:VALUE> (a sample label filter, repeatable: device:0,
//                             stream:7, nvtx:forward*, attribution:measured), px=<executable>
//                             (its process, when the clicked line named an executable), and
//                             for a chart's "others" line pxp=<pid,pid,...> and pxx=<executable>
//                             (repeatable): every process but those
// Any other path is the "not found" view; a parameter that cannot be read is reported in
// ViewState.problems (and the view uses its default).

export type ViewName = 'fleet' | 'top' | 'host' | 'insights' | 'finding' | 'process' | 'gpu' | 'inference' | 'model' | 'jobs' | 'job' | 'notfound';
export type HostTab = 'host' | 'gpu' | 'inference';
const HOST_TABS: HostTab[] = ['host', 'gpu', 'inference'];
export type TopKind = 'host' | 'gpu' | 'executable' | 'process' | 'container' | 'pod';

export type ProfileWeight = 'cpu' | 'gpu' | 'both';

export interface ProfileRef {
  start: number;
  end: number;
  kind?: string;
  entity?: string;
  pid?: number;
  value?: number;
  search?: string;
  thread?: string;
  merged?: boolean;
  weight?: ProfileWeight;
  labels?: string[];
  exe?: string;
  // The "others" of a chart: every process but these pids, and but those of these executables.
  notPids?: number[];
  notExes?: string[];
}

const WEIGHTS: ProfileWeight[] = ['cpu', 'gpu', 'both'];

export interface ViewState {
  view: ViewName;
  host?: string;
  tab: HostTab;
  kind: TopKind;
  sort?: string;
  dir: 'asc' | 'desc';
  range: string; // preset, or '' when from/to are set
  from?: number;
  to?: number;
  live: boolean;
  expand?: string;
  bgpu?: string;
  profile?: ProfileRef;
  // The Insights page's filters; the finding page's finding.
  insights?: InsightFilters;
  finding?: string;
  // The process page's process entity id; the GPU page's GPU UUID; the model page's model.
  process?: string;
  gpu?: string;
  model?: string;
  // The model page's request trace (its waterfall), 32 lowercase hex digits.
  trace?: string;
  // The job page's training job (the job.id of its processes, or comm-<communicator id>).
  job?: string;
  // URL parameters that could not be read, each with what the view does instead.
  problems?: string[];
}

export interface InsightFilters {
  severity?: string;
  state?: string;
  rule?: string;
  host?: string;
}

const INSIGHT_FILTERS: (keyof InsightFilters)[] = ['severity', 'state', 'rule', 'host'];

export const RANGE_PRESETS: { id: string; seconds: number; label: string }[] = [
  { id: '15m', seconds: 15 * 60, label: '15 min' },
  { id: '1h', seconds: 3600, label: '1 hour' },
  { id: '6h', seconds: 6 * 3600, label: '6 hours' },
  { id: '24h', seconds: 24 * 3600, label: '24 hours' },
  { id: '7d', seconds: 7 * 86400, label: '7 days' },
];

const TOP_KINDS: TopKind[] = ['host', 'gpu', 'executable', 'process', 'container', 'pod'];

function num(v: string | null): number | undefined {
  if (v === null || v === '') return undefined;
  const n = Number(v);
  return Number.isFinite(n) ? n : undefined;
}

function decode(part: string): string | undefined {
  try {
    return decodeURIComponent(part);
  } catch {
    return undefined; // a malformed %-escape
  }
}

// The view a path names, with its host, finding, process or GPU; 'notfound' for any other path.
function parsePath(pathname: string): Pick<ViewState, 'view' | 'host' | 'finding' | 'process' | 'gpu' | 'model' | 'job'> {
  const parts = pathname.split('/').filter((p) => p !== '');
  const decoded = parts.map(decode);
  if (decoded.some((p) => p === undefined)) return { view: 'notfound' };
  const [first, host, sub, id] = decoded as string[];
  if (parts.length === 0) return { view: 'fleet' };
  if (first === 'top' && parts.length === 1) return { view: 'top' };
  if (first === 'insights' && parts.length === 1) return { view: 'insights' };
  if (first === 'insights') return { view: 'finding', finding: (decoded as string[]).slice(1).join('/') };
  if (first === 'inference' && parts.length === 1) return { view: 'inference' };
  // A model name may hold slashes (meta-llama/Llama-3.1-8B-Instruct), escaped or not.
  if (first === 'inference') return { view: 'model', model: (decoded as string[]).slice(1).join('/') };
  if (first === 'jobs' && parts.length === 1) return { view: 'jobs' };
  if (first === 'jobs') return { view: 'job', job: (decoded as string[]).slice(1).join('/') };
  if (first === 'host' && parts.length === 2) return { view: 'host', host };
  if (first === 'host' && parts.length === 4 && sub === 'process') return { view: 'process', host, process: id };
  if (first === 'host' && parts.length === 4 && sub === 'gpu') return { view: 'gpu', host, gpu: id };
  return { view: 'notfound' };
}

export function parseUrl(loc: { pathname: string; search: string }): ViewState {
  const q = new URLSearchParams(loc.search);
  const { view, host, finding, process, gpu, model, job } = parsePath(loc.pathname);
  const problems: string[] = [];
  const presets = RANGE_PRESETS.map((p) => p.id).join(', ');
  const kind = q.get('kind') as TopKind | null;
  if (view === 'top' && kind !== null && !TOP_KINDS.includes(kind)) {
    problems.push(`kind=${kind} is not one of ${TOP_KINDS.join(', ')}: showing GPUs.`);
  }
  const from = num(q.get('from'));
  const to = num(q.get('to'));
  if (q.has('from') || q.has('to')) {
    if (from === undefined || to === undefined) {
      problems.push(`from= and to= must both be Unix times in seconds (got from=${q.get('from') ?? ''}, to=${q.get('to') ?? ''}): showing the last hour.`);
    } else if (to <= from) {
      problems.push(`to= (${to}) is not after from= (${from}): the window is inverted or empty; showing the last hour.`);
    }
  }
  const absolute = from !== undefined && to !== undefined && to > from;
  let range = q.get('range') ?? '1h';
  if (!RANGE_PRESETS.some((p) => p.id === range)) {
    problems.push(`range=${range} is not one of ${presets} (or use from= and to=): showing 1h.`);
    range = '1h';
  }
  const tab = q.get('tab');
  const hostTab = HOST_TABS.find((t) => t === tab);
  if (view === 'host' && tab !== null && !hostTab) {
    problems.push(`tab=${tab} is not host, gpu or inference: showing Host Metrics.`);
  }
  const dir = q.get('dir');
  if (dir !== null && dir !== 'asc' && dir !== 'desc') problems.push(`dir=${dir} is not asc or desc: sorting descending.`);
  const live = q.get('live');
  if (live !== null && live !== '1' && live !== '0') problems.push(`live=${live} is not 1 or 0: live mode is off.`);
  const state: ViewState = {
    view,
    host,
    tab: hostTab ?? 'host',
    kind: kind && TOP_KINDS.includes(kind) ? kind : 'gpu',
    sort: q.get('sort') ?? undefined,
    dir: dir === 'asc' ? 'asc' : 'desc',
    range: absolute ? '' : range,
    from: absolute ? from : undefined,
    to: absolute ? to : undefined,
    live: !absolute && q.get('live') === '1',
    expand: q.get('expand') ?? undefined,
    bgpu: q.get('bgpu') ?? undefined,
  };
  if (view === 'insights') {
    const f: InsightFilters = {};
    for (const k of INSIGHT_FILTERS) f[k] = q.get(k) || undefined;
    state.insights = f;
  }
  if (finding) state.finding = finding;
  if (process) state.process = process;
  if (gpu) state.gpu = gpu;
  if (model !== undefined) state.model = model;
  if (job !== undefined) state.job = job;
  const trace = q.get('trace');
  if (view === 'model' && trace !== null) {
    if (/^[0-9a-fA-F]{32}$/.test(trace)) state.trace = trace.toLowerCase();
    else problems.push(`trace=${trace} is not a trace id of 32 hex digits: no request waterfall shown.`);
  }
  const p = q.get('p');
  if (p) {
    const m = /^(\d+(?:\.\d+)?)-(\d+(?:\.\d+)?)$/.exec(p);
    if (!m || Number(m[2]) <= Number(m[1])) problems.push(`p=${p} is not a profile window <start>-<end> in Unix seconds with end after start: no profile shown.`);
    if (m && Number(m[2]) > Number(m[1])) {
      state.profile = {
        start: Number(m[1]),
        end: Number(m[2]),
        kind: q.get('pk') ?? undefined,
        entity: q.get('pe') ?? undefined,
        pid: num(q.get('pp')),
        value: num(q.get('pv')),
        search: q.get('pq') ?? undefined,
        thread: q.get('pt') ?? undefined,
        merged: q.get('pm') === '1' || undefined,
        weight: WEIGHTS.find((w) => w === q.get('pw')),
      };
      const labels = q.getAll('pl').filter((l) => /^[^:]+:.+$/.test(l));
      if (labels.length) state.profile.labels = labels;
      if (q.get('px')) state.profile.exe = q.get('px')!;
      const notPids = q.get('pxp');
      if (notPids) {
        const pids = notPids.split(',').map(Number);
        if (pids.every((n) => Number.isInteger(n) && n > 0)) state.profile.notPids = pids;
        else problems.push(`pxp=${notPids} is not a list of process ids: every process is shown.`);
      }
      const notExes = q.getAll('pxx').filter((x) => x !== '');
      if (notExes.length) state.profile.notExes = notExes;
    }
  }
  if (problems.length) state.problems = problems;
  return state;
}

export function buildUrl(s: ViewState): string {
  let path = '/';
  if (s.view === 'top') path = '/top';
  if (s.view === 'host' && s.host) path = `/host/${encodeURIComponent(s.host)}`;
  if (s.view === 'insights') path = '/insights';
  if (s.view === 'finding' && s.finding) path = `/insights/${encodeURIComponent(s.finding)}`;
  if (s.view === 'process' && s.host && s.process) path = `/host/${encodeURIComponent(s.host)}/process/${encodeURIComponent(s.process)}`;
  if (s.view === 'gpu' && s.host && s.gpu) path = `/host/${encodeURIComponent(s.host)}/gpu/${encodeURIComponent(s.gpu)}`;
  if (s.view === 'inference') path = '/inference';
  if (s.view === 'model' && s.model !== undefined) path = `/inference/${encodeURIComponent(s.model)}`;
  if (s.view === 'jobs') path = '/jobs';
  if (s.view === 'job' && s.job !== undefined) path = `/jobs/${encodeURIComponent(s.job)}`;
  const q = new URLSearchParams();
  if (s.view === 'insights' && s.insights) {
    for (const k of INSIGHT_FILTERS) if (s.insights[k]) q.set(k, s.insights[k]!);
  }
  if (s.view === 'host') {
    if (s.tab !== 'host') q.set('tab', s.tab);
    if (s.expand) q.set('expand', s.expand);
    if (s.bgpu) q.set('bgpu', s.bgpu);
  }
  if (s.view === 'model' && s.trace) q.set('trace', s.trace);
  if (s.view === 'top') {
    q.set('kind', s.kind);
    if (s.sort) q.set('sort', s.sort);
    if (s.dir === 'asc') q.set('dir', 'asc');
  }
  if (s.view === 'jobs') {
    if (s.sort) q.set('sort', s.sort);
    if (s.dir === 'asc') q.set('dir', 'asc');
  }
  if (s.from !== undefined && s.to !== undefined) {
    q.set('from', String(Math.round(s.from)));
    q.set('to', String(Math.round(s.to)));
  } else if (s.range && s.range !== '1h') {
    q.set('range', s.range);
  }
  if (s.live && s.from === undefined) q.set('live', '1');
  if (s.profile) {
    q.set('p', `${Math.floor(s.profile.start)}-${Math.ceil(s.profile.end)}`);
    if (s.profile.kind) q.set('pk', s.profile.kind);
    if (s.profile.entity) q.set('pe', s.profile.entity);
    if (s.profile.value !== undefined) q.set('pv', String(s.profile.value));
    if (s.profile.pid !== undefined) q.set('pp', String(s.profile.pid));
    if (s.profile.search) q.set('pq', s.profile.search);
    if (s.profile.thread) q.set('pt', s.profile.thread);
    if (s.profile.merged) q.set('pm', '1');
    if (s.profile.weight) q.set('pw', s.profile.weight);
    for (const l of s.profile.labels ?? []) q.append('pl', l);
    if (s.profile.exe) q.set('px', s.profile.exe);
    if (s.profile.notPids?.length) q.set('pxp', s.profile.notPids.join(','));
    for (const x of s.profile.notExes ?? []) q.append('pxx', x);
  }
  const qs = q.toString();
  return qs ? `${path}?${qs}` : path;
}

// The time window of the view in Unix seconds.
export function timeWindow(s: ViewState, now = Date.now() / 1000): { start: number; end: number } {
  if (s.from !== undefined && s.to !== undefined) return { start: s.from, end: s.to };
  const preset = RANGE_PRESETS.find((p) => p.id === s.range) ?? RANGE_PRESETS[1];
  return { start: now - preset.seconds, end: now };
}

// SPDX-License-Identifier: Apache-2.0
// One process of a host: who it is (pid, command line, user, container, pod, when it was first
// and last seen), the GPUs it uses with its SM utilization and memory on each, its CPU and RSS,
// the CUDA runtime metrics of the injected CUDA profiler where it runs, its profiles (links to
// the host page's profile panel) and its findings.
import { getJson } from './api';
import type { EntityRecord, ProfileMeta, Series } from './api';
import { h } from './dom';
import { formatAge, formatTime, formatValue } from './format';
import { fetchInsights, findingList } from './insights_api';
import { factList, findEntity, hostKnown, pageCharts, runLoaders, unknownCard } from './page_chart';
import type { OpenProfile, PageChartDef, PageLoader } from './page_chart';
import type { ViewContext, View } from './view';
import type { Widget } from './widget';

const NO_CUDA = 'No CUDA runtime metrics: the process does not run with the injected CUDA profiler (CUDA_INJECTION64_PATH, docs/cuda-profiler.md).';

function processCharts(gpuName: (uuid: string) => string): PageChartDef[] {
  const byGpu = (s: Series) => gpuName(s.labels['gpu.uuid'] ?? s.entity);
  const device = (s: Series) => `device ${s.labels['cuda.device'] ?? '?'}`;
  return [
    { id: 'p-gpu-util', title: 'GPU SM utilization', note: 'per GPU', yMax: 1, queries: [{ metric: 'gpu.process.sm.utilization', label: byGpu }], missing: 'No per-process GPU utilization received (NVML reports none on this GPU or driver, or in MIG mode).' },
    { id: 'p-gpu-mem', title: 'GPU memory', note: 'per GPU', queries: [{ metric: 'gpu.process.memory.used', label: byGpu }], missing: 'No per-process GPU memory received.' },
    { id: 'p-cpu', title: 'CPU', note: '1 = every CPU of the host', queries: [{ metric: 'process.cpu.utilization', label: () => 'CPU' }], missing: 'No per-process host metrics received (agent --enable-host-metrics).' },
    { id: 'p-rss', title: 'Resident memory (RSS)', queries: [{ metric: 'process.memory.rss', label: () => 'RSS' }], missing: 'No per-process host metrics received (agent --enable-host-metrics).' },
    { id: 'p-launches', title: 'Kernel launches', note: 'per second', queries: [{ metric: 'cuda.kernel.launches', agg: 'rate', label: device }], missing: NO_CUDA },
    { id: 'p-streams', title: 'Stream busy', note: 'share of time each stream ran kernels', yMax: 1, queries: [{ metric: 'cuda.stream.busy', label: (s) => `${device(s)} stream ${s.labels['stream'] ?? '?'}` }], missing: NO_CUDA },
    { id: 'p-memcpy', title: 'Memory copies', note: 'bytes per second by direction', queries: [{ metric: 'cuda.memcpy.bytes', agg: 'rate', label: (s) => `${s.labels['direction'] ?? '?'} · ${device(s)}` }], missing: NO_CUDA },
    { id: 'p-allocated', title: 'Device memory allocated', note: 'through the CUDA allocator', queries: [{ metric: 'cuda.memory.allocated', label: (s) => `${device(s)} ${s.labels['kind'] ?? ''}`.trim() }], missing: NO_CUDA },
  ];
}

export async function processView(root: HTMLElement, ctx: ViewContext): Promise<View> {
  const host = ctx.state.host!;
  const id = ctx.state.process!;
  const [entity, gpuList] = await Promise.all([
    findEntity(host, 'process', id),
    getJson<{ entities: EntityRecord[] }>('/api/v1/entities', { host, kind: 'gpu', limit: 1000 }),
  ]);
  if (!entity) {
    const known = await hostKnown(host);
    return known
      ? unknownCard(root, ctx, 'Process not found', `Host ${host} has reported no process ${id}. It may have been a process of another host, or its data has expired.`, { label: `Host ${host}`, href: ctx.href({ view: 'host', host, tab: 'host' }) })
      : unknownCard(root, ctx, 'Unknown host', `The server has no data from a host named ${host}: check the name, or whether its agent sends to this server.`);
  }
  const a = entity.attributes;
  const pid = Number(a['process.pid'] ?? NaN);
  const exe = a['process.executable.name'] ?? 'process';
  const gpus = new Map(gpuList.entities.map((g) => [g.id, g]));
  const gpuName = (uuid: string) => (gpus.has(uuid) ? `GPU ${gpus.get(uuid)!.attributes['gpu.index'] ?? '?'}` : uuid);
  const gpuBox = h('span', { 'data-testid': 'process-gpus' }, '…');
  const container = a['container.id'];
  const pod = a['k8s.pod.uid'];
  const ticks = /^pid\/\d+\/(\d+)$/.exec(id)?.[1];
  root.append(
    h('div.host-head', {}, h('h1', {}, `${exe} (pid ${a['process.pid'] ?? '?'})`), h('p.muted', {}, 'on ', h('a', { href: ctx.href({ view: 'host', host, tab: 'host' }) }, host))),
    h(
      'section.card',
      { 'aria-label': 'Process' },
      factList(
        [
          ['PID', a['process.container_pid'] ? `${a['process.pid']} (${a['process.container_pid']} in its container)` : a['process.pid']],
          ['Command line', a['process.command_line'] ? h('code.cmdline', {}, a['process.command_line']) : undefined],
          ['Executable', a['process.executable.path'] ?? exe],
          ['User', a['process.owner']],
          ['Container', container ? h('a', { href: ctx.href({ view: 'top', kind: 'container' }), title: container }, container.slice(0, 12)) : 'none (runs on the host)'],
          ['Pod', pod ? `${a['k8s.namespace.name'] ? a['k8s.namespace.name'] + '/' : ''}${pod}` : undefined],
          ['Slurm job', a['slurm.job_id']],
          ['Training job', a['job.id'] ? h('a', { href: ctx.href({ view: 'job', job: a['job.id'] }), 'data-testid': 'process-job' }, `${a['job.id']}${a['job.rank'] !== undefined ? ` · rank ${a['job.rank']}${a['job.world_size'] ? ` of ${a['job.world_size']}` : ''}` : ''}`) : undefined],
          ['Started', started(a['process.creation.time'], ticks)],
          ['First seen', formatTime(entity.first_seen)],
          ['Last seen', formatTime(entity.last_seen)],
          ['GPUs', gpuBox],
        ],
        'process-facts',
      ),
    ),
  );
  const findingsBox = h('div', { 'data-testid': 'process-findings' });
  const profilesBox = h('div', { 'data-testid': 'process-profiles' });
  const grid = h('div.widget-grid');
  root.append(
    h('section.group', { 'aria-label': 'Findings' }, h('h2', {}, 'Findings'), findingsBox),
    h('section.group', { 'aria-label': 'Metrics' }, h('h2', {}, 'Metrics'), grid),
    h('section.group', { 'aria-label': 'Profiles' }, h('h2', {}, 'Profiles'), profilesBox),
  );
  const widgets: Widget[] = [];
  const loaders: PageLoader[] = [];
  const used = new Set<string>();
  const open: OpenProfile = (c, start, end) =>
    c.navigate({ view: 'host', host, tab: 'host', profile: { start, end, entity: id, pid: Number.isFinite(pid) ? pid : undefined } });
  pageCharts(grid, processCharts(gpuName), { host, entity: id }, widgets, loaders, open, (def, series) => {
    if (def.id !== 'p-gpu-mem' && def.id !== 'p-gpu-util') return;
    for (const s of series) if (s.labels['gpu.uuid']) used.add(s.labels['gpu.uuid']);
    gpuBox.replaceChildren(
      ...(used.size
        ? [...used].sort((x, y) => gpuName(x).localeCompare(gpuName(y), undefined, { numeric: true })).flatMap((u, i) => [i ? ', ' : '', h('a', { href: ctx.href({ view: 'gpu', host, gpu: u }) }, gpuName(u))])
        : ['none in this window']),
    );
  });
  loaders.push((c) => loadProfiles(profilesBox, c, host, id, pid));
  loaders.push((c) => loadFindings(findingsBox, c, host, id));
  await runLoaders(loaders, ctx);
  return {
    refresh: (c) => runLoaders(loaders, c),
    destroy: () => widgets.forEach((w) => w.destroy()),
  };
}

// The process's profiles in the window: by entity (CPU profiles) and by pid (GPU profiles are
// stored by pid, without an entity).
async function loadProfiles(box: HTMLElement, c: ViewContext, host: string, id: string, pid: number): Promise<void> {
  const [byEntity, byPid] = await Promise.all([
    getJson<{ profiles: ProfileMeta[] }>('/api/v1/profiles', { host, entity: id, start: c.start, end: c.end, limit: 200 }),
    Number.isFinite(pid) ? getJson<{ profiles: ProfileMeta[] }>('/api/v1/profiles', { host, pid, start: c.start, end: c.end, limit: 200 }) : Promise.resolve({ profiles: [] as ProfileMeta[] }),
  ]);
  const seen = new Map<number, ProfileMeta>();
  for (const p of [...byEntity.profiles, ...byPid.profiles]) seen.set(p.id, p);
  const list = [...seen.values()].sort((x, y) => y.start - x.start);
  if (list.length === 0) {
    box.replaceChildren(h('p.empty', {}, 'No profile of this process in this window.'));
    return;
  }
  const link = (p: ProfileMeta) =>
    c.href({ view: 'host', host, tab: p.kind === 'cpu' ? 'host' : 'gpu', profile: { start: p.start, end: p.end, kind: p.kind, entity: p.kind === 'cpu' ? id : undefined, pid: Number.isFinite(pid) ? pid : undefined } });
  box.replaceChildren(
    h(
      'div.table-scroll',
      {},
      h(
        'table.data',
        {},
        h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Kind'), h('th', { scope: 'col' }, 'From'), h('th', { scope: 'col' }, 'To'), h('th.num', { scope: 'col' }, 'Size'))),
        h(
          'tbody',
          {},
          ...list.slice(0, 50).map((p) =>
            h('tr', {}, h('td', {}, h('a', { href: link(p) }, `${p.kind} profile`)), h('td', {}, formatTime(p.start)), h('td', {}, formatTime(p.end)), h('td.num', {}, formatValue(p.size_bytes, 'By'))),
          ),
        ),
      ),
    ),
    list.length > 50 ? h('p.muted', {}, `The newest 50 of ${list.length}.`) : '',
  );
}

async function loadFindings(box: HTMLElement, c: ViewContext, host: string, id: string): Promise<void> {
  const { list, off } = await fetchInsights({ host, entity: id, start: Math.floor(c.start), end: Math.ceil(c.end) });
  if (!list) {
    box.replaceChildren(h('p.muted', {}, off));
    return;
  }
  box.replaceChildren(list.insights.length === 0 ? h('p.empty', {}, 'No finding about this process in this window.') : findingList(list.insights, c));
}

// The start as a clock time and an age (the agent's process.creation.time); from older agents,
// the entity id's start in clock ticks since boot (0: not known).
function started(creation: string | undefined, ticks: string | undefined): string | undefined {
  const ms = creation ? Date.parse(creation) : NaN;
  if (Number.isFinite(ms)) return `${formatTime(ms / 1000)} (${formatAge(ms / 1000)})`;
  return ticks && ticks !== '0' ? `${ticks} clock ticks after the host booted` : undefined;
}

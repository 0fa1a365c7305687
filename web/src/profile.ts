// SPDX-License-Identifier: Apache-2.0
// The profile panel: the profiles of one host and window, merged, as a flamegraph with search
// and zoom, frames coloured by kind, a thread filter, a top-functions table and a pprof
// download; for a process with both CPU and GPU profiles, the merged CPU + GPU view weighted by
// CPU time, GPU time or both side by side; filters by process and sample labels (device, stream,
// NVTX range, attribution); or, when there is none, the nearest profile and what to enable.
import { ApiError, download, getJson } from './api';
import type { MergedTree, Params, ProfileMeta } from './api';
import { h } from './dom';
import { FlameGraph } from './flame';
import type { CoreShare } from './flame';
import { kindLegend } from './flame_kinds';
import { formatDuration, formatPercent, formatSample, formatTime } from './format';
import { commandLines, excludedPids, labelChips, nearestLink, nearestProfile, pickProcess, processesOf, processSelect } from './profile_filters';
import { functionsTable } from './profile_table';
import type { ProfileRef, ProfileWeight } from './state';

export interface ProfilePanelOptions {
  host: string;
  ref: ProfileRef;
  onChange: (ref: ProfileRef) => void; // kind, process, thread, view, sample type or search changed
  onClose: () => void;
}

const WEIGHT_LABELS: Record<ProfileWeight, string> = { cpu: 'CPU time', gpu: 'GPU time', both: 'CPU and GPU time side by side' };

// The profile kinds of docs/api.md ("kind" of a stored profile) and what each holds.
const KIND_LABELS: Record<string, string> = { cpu: 'cpu · CPU samples', gpu: 'gpu · CUDA kernels' };

export class ProfilePanel {
  readonly el: HTMLElement;
  private flames: FlameGraph[] = [];
  private aborter = new AbortController();

  constructor(private readonly opts: ProfilePanelOptions) {
    const { ref } = opts;
    const title = h(
      'h2',
      { id: 'profile-title' },
      `Profile · ${opts.host} · ${formatTime(ref.start)} – ${formatTime(ref.end)} (${formatDuration(ref.end - ref.start)})`,
    );
    const close = h('button.btn', { type: 'button', 'aria-label': 'Close the profile panel (Escape)', onclick: () => opts.onClose() }, '✕ Close');
    this.el = h(
      'section.profile-panel',
      { role: 'region', 'aria-labelledby': 'profile-title', 'data-testid': 'profile-panel' },
      h('header.panel-head', {}, title, close),
      h('div.panel-body', {}, h('p.loading', {}, 'Loading profiles…')),
    );
    void this.load();
  }

  destroy(): void {
    this.aborter.abort();
    for (const f of this.flames) f.destroy();
    this.el.remove();
  }

  private body(): HTMLElement {
    return this.el.querySelector('.panel-body') as HTMLElement;
  }

  private fail(message: string): void {
    this.body().replaceChildren(h('p.error', { role: 'alert' }, message));
  }

  // No profile for the window (of the asked kind): what to enable, and the nearest one.
  private async showNone(kind?: string, others: string[] = []): Promise<void> {
    const { host, ref } = this.opts;
    const box = noProfileMessage(host, kind);
    if (others.length) {
      box.append(
        h('p', {}, `This window has ${others.join(', ')} profiles: `, h('button.btn', { type: 'button', 'data-testid': 'other-kinds', onclick: () => this.opts.onChange({ start: ref.start, end: ref.end, kind: others[0] }) }, `show ${others[0]}`)),
      );
    }
    this.body().replaceChildren(box);
    const nearest = await nearestProfile(host, { ...ref, kind }, this.aborter.signal).catch(() => null);
    if (!nearest || this.aborter.signal.aborted) return;
    box.firstElementChild?.after(
      nearestLink(nearest, (p) => this.opts.onChange({ start: p.start, end: p.end, kind: p.kind, entity: ref.entity, pid: ref.pid, exe: ref.exe, labels: ref.labels })),
    );
  }

  private async load(): Promise<void> {
    const { host, ref } = this.opts;
    const body = this.body();
    let list: ProfileMeta[];
    const commands = commandLines(host, this.aborter.signal);
    try {
      const r = await getJson<{ profiles: ProfileMeta[] }>('/api/v1/profiles', { host, start: ref.start, end: ref.end, limit: 1000 }, this.aborter.signal);
      list = r.profiles;
    } catch (e) {
      if (!this.aborter.signal.aborted) this.fail(`Cannot list profiles: ${(e as Error).message}`);
      return;
    }
    if (list.length === 0) {
      await this.showNone(ref.kind);
      return;
    }
    const kinds = [...new Set(list.map((p) => p.kind))].sort();
    if (ref.kind && !kinds.includes(ref.kind)) {
      await this.showNone(ref.kind, kinds);
      return;
    }
    const kind = ref.kind ?? (kinds.includes('cpu') ? 'cpu' : kinds[0]);
    const ofKind = list.filter((p) => p.kind === kind);
    const procs = processesOf(ofKind);
    const proc = pickProcess(procs, ref);
    // A chart's "others": every process but the ones it showed on their own.
    const excluded = proc ? [] : excludedPids(processesOf(list), ref);
    // A GPU process: CPU and other (GPU) profiles of one process in the window.
    const procKinds = proc ? (processesOf(list).get(proc.key)?.kinds ?? proc.kinds) : new Set<string>();
    const gpuKinds = [...procKinds].filter((k) => k !== 'cpu').sort();
    const mergeable = procKinds.has('cpu') && gpuKinds.length > 0;
    const merged = mergeable && !!ref.merged;
    const weight: ProfileWeight = ref.weight ?? 'cpu';
    // The process by its entity when its profiles have one (else by pid).
    const scope: Params = { host, start: ref.start, end: ref.end, entity: proc?.entity, pid: proc?.entity ? undefined : proc?.pid, exclude_pid: excluded.length ? excluded.map(String) : undefined };
    const labels = ref.labels ?? [];
    const params: Params = { ...scope, kind: merged ? ['cpu', ...gpuKinds].join('+') : kind, thread: ref.thread, label: labels };
    const value = merged ? (weight === 'gpu' ? 'gpu_time' : 'cpu') : ref.value;

    let tree: MergedTree;
    try {
      tree = await getJson<MergedTree>('/api/v1/profiles/merged', { ...params, format: 'tree', value, label_values: 12 }, this.aborter.signal);
    } catch (e) {
      if (this.aborter.signal.aborted) return;
      if (e instanceof ApiError && e.status === 404) void this.showNone(kind);
      else this.fail(`Cannot load the profile: ${(e as Error).message}`);
      return;
    }
    const base: ProfileRef = { start: ref.start, end: ref.end, kind, entity: proc?.entity, pid: proc?.pid, exe: proc ? undefined : ref.exe, thread: ref.thread, search: ref.search, merged: merged || undefined, weight: merged ? ref.weight : undefined, labels: labels.length ? labels : undefined, notPids: excluded.length ? ref.notPids : undefined, notExes: excluded.length ? ref.notExes : undefined };
    const change = (patch: Partial<ProfileRef>) => this.opts.onChange({ ...base, value: merged ? undefined : tree.value, ...patch });

    // Another kind keeps the process (all processes where it has no profile of that kind).
    const kindSelect = h(
      'select',
      { 'aria-label': 'Profile kind', disabled: merged, onchange: (e: Event) => this.opts.onChange({ start: ref.start, end: ref.end, kind: (e.target as HTMLSelectElement).value, entity: proc?.entity, pid: proc?.pid, search: ref.search, notPids: base.notPids, notExes: base.notExes }) },
      ...kinds.map((k) => h('option', { value: k, selected: k === kind }, KIND_LABELS[k] ?? k)),
    );
    const procSelect = processSelect(procs, proc, ofKind.length, await commands, (p) =>
      this.opts.onChange({ start: ref.start, end: ref.end, kind, entity: p?.entity, pid: p?.pid, search: ref.search, labels: ref.labels }),
      excluded,
    );
    const chips = labelChips(tree, labels, (next) => change({ labels: next.length ? next : undefined }));
    const threads = tree.threads ?? [];
    const threadSelect = threads.length === 0 ? null : h(
      'select',
      { 'aria-label': 'Thread', 'data-testid': 'profile-thread', onchange: (e: Event) => change({ thread: (e.target as HTMLSelectElement).value || undefined }) },
      h('option', { value: '' }, `all threads (${threads.length}${tree.threads_omitted ? ` of ${threads.length + tree.threads_omitted}` : ''})`),
      ...threads.map((t) => h('option', { value: String(t.tid), selected: ref.thread === String(t.tid) || ref.thread === t.name }, `${t.name || 'thread'} (tid ${t.tid})`)),
    );
    const mergedBtn = !mergeable ? null : h(
      'button.btn',
      { type: 'button', 'aria-pressed': String(merged), 'data-testid': 'profile-merged', title: 'One flamegraph of this process\'s CPU samples and GPU kernels', onclick: () => change({ merged: merged ? undefined : true, weight: undefined, value: undefined }) },
      'CPU + GPU',
    );
    const weightSelect = !merged ? null : h(
      'select',
      { 'aria-label': 'Weight', 'data-testid': 'profile-weight', onchange: (e: Event) => change({ weight: (e.target as HTMLSelectElement).value as ProfileWeight }) },
      ...(['cpu', 'gpu', 'both'] as ProfileWeight[]).map((w) => h('option', { value: w, selected: w === weight }, WEIGHT_LABELS[w])),
    );
    const valueSelect = merged ? null : h(
      'select',
      { 'aria-label': 'Sample type', onchange: (e: Event) => change({ value: Number((e.target as HTMLSelectElement).value) }) },
      // Types without a sample in the window (pc_samples without PC sampling) are not offered.
      ...tree.sample_types.flatMap((t, i) => (i === tree.value || (tree.root.total[i] ?? 0) !== 0 ? [h('option', { value: i, selected: i === tree.value }, `${t.type} (${t.unit})`)] : [])),
    );
    const searchStats = h('span.muted', { 'aria-live': 'polite' });
    const search = h('input', { type: 'search', placeholder: 'Search functions (regex)', 'aria-label': 'Search functions', value: ref.search ?? '', 'data-testid': 'flame-search' });
    const downloadStatus = h('span.dl-status', { role: 'status' });
    const downloadBtn = h(
      'button.btn',
      {
        type: 'button',
        title: 'Download the merged profile (pprof) for go tool pprof, speedscope or Perfetto',
        'data-testid': 'pprof-download',
        onclick: () => {
          downloadStatus.textContent = '';
          download('/api/v1/profiles/merged', { ...params, format: 'pprof' }, 'profile-merged.pb.gz').catch((e) => {
            downloadStatus.textContent = `Download failed: ${(e as Error).message}`;
          });
        },
      },
      '⬇ pprof',
    );
    const reset = h('button.btn', { type: 'button', onclick: () => this.flames.forEach((f) => f.zoom(0)) }, 'Reset zoom');

    // The graphs: one per weight (two side by side for "both"), each by one sample type.
    const typeIndex = (type: string) => tree.sample_types.findIndex((t) => t.type === type);
    const graphs: { index: number; label: string; testid: string }[] = !merged
      ? [{ index: tree.value, label: tree.sample_types[tree.value]?.type ?? 'samples', testid: 'flamegraph' }]
      : weight === 'both'
        ? [
            { index: typeIndex('cpu'), label: 'CPU time', testid: 'flamegraph' },
            { index: typeIndex('gpu_time'), label: 'GPU time', testid: 'flamegraph-gpu' },
          ]
        : [{ index: typeIndex(weight === 'gpu' ? 'gpu_time' : 'cpu'), label: WEIGHT_LABELS[weight], testid: 'flamegraph' }];
    if (graphs.some((g) => g.index < 0)) {
      this.fail(`The merged profile has no ${graphs.find((g) => g.index < 0)!.label} (sample types: ${tree.sample_types.map((t) => t.type).join(', ')}).`);
      return;
    }
    const cpu = tree.cpu ?? null;
    const coreShare = (index: number): CoreShare | null => {
      const type = tree.sample_types[index];
      const isCpu = !!cpu && !!type && (type.type === 'cpu' || (type.type === 'samples' && !merged) || index === cpu.value);
      return isCpu && cpu ? { value: cpu.value, capacityNs: cpu.capacity_ns, cores: cpu.cores, unknownReason: cpu.unknown_reason } : null;
    };
    const primary = graphs[0];
    const unitOf = (i: number) => tree.sample_types[i]?.unit ?? 'count';
    const total = tree.root.total[primary.index] ?? 0;
    const cores = cpu && cpu.capacity_ns && cpu.cores ? ` · ${formatPercent((tree.root.total[cpu.value] ?? 0) / cpu.capacity_ns)} of all ${cpu.cores} cores over ${formatDuration(cpu.window_seconds)}` : '';
    const summary = h(
      'p.muted',
      { 'data-testid': 'profile-summary' },
      `${tree.profiles} profile${tree.profiles === 1 ? '' : 's'} merged${merged ? ` (${(tree.kinds ?? []).join(' + ')})` : ''} · ${primary.label}: ${formatSample(total, unitOf(primary.index))}${cores}` +
        (ref.thread ? ` · thread ${ref.thread}` : '') +
        (labels.length ? ` · only ${labels.join(', ')}` : '') +
        (tree.skipped_profiles ? ` · ${tree.skipped_profiles} could not be decoded` : ''),
    );
    const boxes = graphs.map((g) => h('div.flame-box', { 'data-testid': g.testid, 'data-weight': g.label }));
    const flameArea =
      graphs.length === 1
        ? boxes[0]
        : h('div.flame-pair', {}, ...graphs.map((g, i) => h('div.flame-col', {}, h('h3', {}, g.label), boxes[i])));
    const table = functionsTable(tree.root, primary.index, unitOf(primary.index), coreShare(primary.index), (name) => {
      search.value = `^${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`;
      search.dispatchEvent(new Event('input'));
    });
    body.replaceChildren(
      h('div.toolbar', {}, kindSelect, procSelect, mergedBtn, weightSelect, valueSelect, threadSelect, search, searchStats, reset, downloadBtn, downloadStatus),
      chips ?? '',
      summary,
      kindLegend(tree.root),
      flameArea,
      h('h3', {}, `Top functions${graphs.length > 1 ? ` by ${primary.label}` : ''}`),
      table,
    );
    this.flames = graphs.map(
      (g, i) =>
        new FlameGraph(
          boxes[i],
          tree.root,
          g.index,
          unitOf(g.index),
          i === 0 ? (matched, all) => (searchStats.textContent = search.value ? `${formatPercent(all ? matched / all : 0)} of the window matches` : '') : undefined,
          { coreShare: coreShare(g.index), label: g.label },
        ),
    );
    let timer = 0;
    search.addEventListener('input', () => {
      for (const f of this.flames) f.setSearch(search.value);
      window.clearTimeout(timer);
      // A panel closed or replaced since (another kind, process, filter) keeps its new URL.
      timer = window.setTimeout(() => this.aborter.signal.aborted || change({ search: search.value || undefined }), 400);
    });
    if (ref.search) for (const f of this.flames) f.setSearch(ref.search);
  }
}

function noProfileMessage(host: string, kind?: string): HTMLElement {
  return h(
    'div.empty',
    { role: 'status', 'data-testid': 'no-profile' },
    h('p', {}, h('strong', {}, `No ${kind ? `${kind} ` : ''}profile for this window`), ` on ${host}.`),
    h(
      'p',
      {},
      'Enable the CUDA profiler: run the agent with ',
      h('code', {}, '--cuda-profiler'),
      ' (on by default in warpscope up) and start the application with the ',
      h('code', {}, 'CUDA_INJECTION64_PATH=…/lib/libwarpscope_cupti.so'),
      ' line warpscope up prints (the library sits in the lib/ directory next to the bin/ of warpscope), or enable the CPU profiler on the agent (',
      h('code', {}, '--enable-cpu-profiler'),
      ', on in warpscope up); then pick a window in which it ran (the strip under the charts marks the windows with profiles). Any pprof file can also be posted to ',
      h('code', {}, 'POST /api/v1/ingest/profile'),
      ' (see docs/api.md).',
    ),
  );
}

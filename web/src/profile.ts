// SPDX-License-Identifier: Apache-2.0
// The profile panel: the profiles of one host and window, merged, as a flamegraph with search
// and zoom, a top-functions table and a pprof download; or, when there is none, what to enable.
import { ApiError, download, getJson } from './api';
import type { MergedTree, ProfileMeta } from './api';
import { h } from './dom';
import { FlameGraph, topFunctions } from './flame';
import { formatDuration, formatPercent, formatSample, formatTime } from './format';
import type { ProfileRef } from './state';

export interface ProfilePanelOptions {
  host: string;
  ref: ProfileRef;
  onChange: (ref: ProfileRef) => void; // kind, process, sample type or search changed
  onClose: () => void;
}

export class ProfilePanel {
  readonly el: HTMLElement;
  private flame: FlameGraph | null = null;
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
    this.flame?.destroy();
    this.el.remove();
  }

  private body(): HTMLElement {
    return this.el.querySelector('.panel-body') as HTMLElement;
  }

  private async load(): Promise<void> {
    const { host, ref } = this.opts;
    const body = this.body();
    let list: ProfileMeta[];
    try {
      const r = await getJson<{ profiles: ProfileMeta[] }>(
        '/api/v1/profiles',
        { host, start: ref.start, end: ref.end, limit: 1000 },
        this.aborter.signal,
      );
      list = r.profiles;
    } catch (e) {
      if (this.aborter.signal.aborted) return;
      body.replaceChildren(h('p.error', { role: 'alert' }, `Cannot list profiles: ${(e as Error).message}`));
      return;
    }
    if (list.length === 0) {
      body.replaceChildren(noProfileMessage(host));
      return;
    }
    const kinds = [...new Set(list.map((p) => p.kind))].sort();
    const kind = ref.kind && kinds.includes(ref.kind) ? ref.kind : kinds.includes('cpu') ? 'cpu' : kinds[0];
    const ofKind = list.filter((p) => p.kind === kind);
    const processes = new Map<string, string>();
    for (const p of ofKind) {
      if (p.entity) processes.set(p.entity, `${p.executable || p.entity}${p.pid ? ` (pid ${p.pid})` : ''}`);
    }
    const entity = ref.entity && processes.has(ref.entity) ? ref.entity : undefined;
    const params = { host, kind, entity, start: ref.start, end: ref.end };

    let tree: MergedTree;
    try {
      tree = await getJson<MergedTree>(
        '/api/v1/profiles/merged',
        { ...params, format: 'tree', value: ref.value },
        this.aborter.signal,
      );
    } catch (e) {
      if (this.aborter.signal.aborted) return;
      if (e instanceof ApiError && e.status === 404) {
        body.replaceChildren(noProfileMessage(host));
      } else {
        body.replaceChildren(h('p.error', { role: 'alert' }, `Cannot load the profile: ${(e as Error).message}`));
      }
      return;
    }

    const valueIndex = tree.value;
    const sampleType = tree.sample_types[valueIndex] ?? { type: 'samples', unit: 'count' };
    const kindSelect = h(
      'select',
      { 'aria-label': 'Profile kind', onchange: (e: Event) => this.opts.onChange({ ...ref, kind: (e.target as HTMLSelectElement).value, entity: undefined, value: undefined }) },
      ...kinds.map((k) => h('option', { value: k, selected: k === kind }, k)),
    );
    const procSelect = h(
      'select',
      { 'aria-label': 'Process', onchange: (e: Event) => this.opts.onChange({ ...ref, kind, entity: (e.target as HTMLSelectElement).value || undefined }) },
      h('option', { value: '' }, `all processes (${ofKind.length} profiles)`),
      ...[...processes.entries()].map(([id, label]) => h('option', { value: id, selected: id === entity }, label)),
    );
    const valueSelect = h(
      'select',
      { 'aria-label': 'Sample type', onchange: (e: Event) => this.opts.onChange({ ...ref, kind, entity, value: Number((e.target as HTMLSelectElement).value) }) },
      ...tree.sample_types.map((t, i) => h('option', { value: i, selected: i === valueIndex }, `${t.type} (${t.unit})`)),
    );
    const searchStats = h('span.muted', { 'aria-live': 'polite' });
    const search = h('input', {
      type: 'search',
      placeholder: 'Search functions (regex)',
      'aria-label': 'Search functions',
      value: ref.search ?? '',
      'data-testid': 'flame-search',
    });
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
    const reset = h('button.btn', { type: 'button', onclick: () => this.flame?.zoom(0) }, 'Reset zoom');
    const total = tree.root.total[valueIndex] ?? 0;
    const summary = h(
      'p.muted',
      {},
      `${tree.profiles} profile${tree.profiles === 1 ? '' : 's'} merged · ${sampleType.type}: ${formatSample(total, sampleType.unit)}` +
        (tree.skipped_profiles ? ` · ${tree.skipped_profiles} could not be decoded` : ''),
    );
    const flameBox = h('div.flame-box', { 'data-testid': 'flamegraph' });
    const table = this.functionsTable(tree, valueIndex, sampleType.unit, (name) => {
      search.value = `^${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`;
      search.dispatchEvent(new Event('input'));
    });
    body.replaceChildren(
      h('div.toolbar', {}, kindSelect, procSelect, valueSelect, search, searchStats, reset, downloadBtn, downloadStatus),
      summary,
      flameBox,
      h('h3', {}, 'Top functions'),
      table,
    );
    this.flame = new FlameGraph(flameBox, tree.root, valueIndex, sampleType.unit, (matched, all) => {
      searchStats.textContent = search.value ? `${formatPercent(all ? matched / all : 0)} of the window matches` : '';
    });
    let timer = 0;
    search.addEventListener('input', () => {
      this.flame?.setSearch(search.value);
      window.clearTimeout(timer);
      timer = window.setTimeout(() => this.opts.onChange({ ...ref, kind, entity, value: valueIndex, search: search.value || undefined }), 400);
    });
    if (ref.search) this.flame.setSearch(ref.search);
  }

  private functionsTable(
    tree: MergedTree,
    valueIndex: number,
    unit: string,
    onPick: (name: string) => void,
  ): HTMLElement {
    const all = tree.root.total[valueIndex] || 1;
    const rows = topFunctions(tree.root, valueIndex).slice(0, 25);
    return h(
      'table.data',
      { 'data-testid': 'top-functions' },
      h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Function'), h('th.num', { scope: 'col' }, 'Self'), h('th.num', { scope: 'col' }, 'Self %'), h('th.num', { scope: 'col' }, 'Total'), h('th.num', { scope: 'col' }, 'Total %'))),
      h(
        'tbody',
        {},
        ...rows.map((r) =>
          h(
            'tr',
            {},
            h('td', {}, h('button.linklike', { type: 'button', title: 'Highlight in the flamegraph', onclick: () => onPick(r.name) }, r.name)),
            h('td.num', {}, formatSample(r.self, unit)),
            h('td.num', {}, formatPercent(r.self / all)),
            h('td.num', {}, formatSample(r.total, unit)),
            h('td.num', {}, formatPercent(r.total / all)),
          ),
        ),
      ),
    );
  }
}

function noProfileMessage(host: string): HTMLElement {
  return h(
    'div.empty',
    { role: 'status', 'data-testid': 'no-profile' },
    h('p', {}, h('strong', {}, 'No profile for this window'), ` on ${host}.`),
    h(
      'p',
      {},
      'Enable the CUDA profiler: run the agent with ',
      h('code', {}, '--cuda-profiler'),
      ' (on by default in warpscope up, which prints the exact command) and start the application with ',
      h('code', {}, 'CUDA_INJECTION64_PATH=<prefix>/lib/libwarpscope_cupti.so'),
      ', or enable the CPU profiler on the agent; then pick a window in which it ran. Any pprof file can also be posted to ',
      h('code', {}, 'POST /api/v1/ingest/profile'),
      ' (see docs/api.md).',
    ),
  );
}

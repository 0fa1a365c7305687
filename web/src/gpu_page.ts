// SPDX-License-Identifier: Apache-2.0
// One GPU of a host: its identity (model, UUID, PCI bus id, serial, driver, CUDA, compute
// capability, MIG mode), the processes on it, its XID history with each XID's meaning (the
// agent's message: model/xid.cc), its findings, and charts of what NVML reports of it: clocks
// against their maximum, throttle reasons, power against its limits, temperatures (die and
// memory) against the GPU's thresholds, memory, SM and DRAM activity, the tensor and FP pipes, NVLink per link, PCIe, ECC
// errors and remapped rows.
import { getJson, knownMetrics } from './api';
import type { EventRecord, RangeResponse, TopEntry } from './api';
import { h } from './dom';
import { formatTime, formatValue } from './format';
import { fetchInsights, findingList } from './insights_api';
import { factList, findEntity, hostKnown, pageCharts, runLoaders, unknownCard } from './page_chart';
import type { OpenProfile, PageChartDef, PageLoader } from './page_chart';
import type { View, ViewContext } from './view';
import type { Widget } from './widget';

const GPM = 'Needs NVML GPM (Hopper or newer).';
const one = (name: string) => () => name;

const GPU_CHARTS: PageChartDef[] = [
  { id: 'g-util', title: 'Utilization', yMax: 1, queries: [{ metric: 'gpu.utilization', label: one('GPU busy') }, { metric: 'gpu.memory.utilization', label: one('memory busy') }], missing: 'No utilization reported.' },
  { id: 'g-sm', title: 'SM activity', yMax: 1, queries: [{ metric: 'gpu.sm.active', label: one('SM active') }, { metric: 'gpu.sm.occupancy', label: one('SM occupancy') }, { metric: 'gpu.graphics_engine.active', label: one('graphics engine') }], missing: `No SM activity reported. ${GPM}` },
  { id: 'g-dram', title: 'DRAM activity', note: 'device memory interface busy', yMax: 1, queries: [{ metric: 'gpu.dram.active', label: one('DRAM active') }], missing: `No DRAM activity reported. ${GPM}` },
  {
    id: 'g-pipes',
    title: 'Tensor and FP pipes',
    yMax: 1,
    queries: [
      { metric: 'gpu.tensor.active', label: one('tensor (any)') },
      { metric: 'gpu.tensor.hmma.active', label: one('tensor HMMA') },
      { metric: 'gpu.tensor.imma.active', label: one('tensor IMMA') },
      { metric: 'gpu.tensor.dfma.active', label: one('tensor DFMA') },
      { metric: 'gpu.fp64.active', label: one('FP64') },
      { metric: 'gpu.fp32.active', label: one('FP32') },
      { metric: 'gpu.fp16.active', label: one('FP16') },
      { metric: 'gpu.int.active', label: one('integer') },
    ],
    missing: `No pipe activity reported. ${GPM}`,
  },
  { id: 'g-clocks', title: 'Clocks', note: 'against their maximum', queries: [{ metric: 'gpu.clock.sm', label: one('SM') }, { metric: 'gpu.clock.sm.max', label: one('SM max') }, { metric: 'gpu.clock.memory', label: one('memory') }, { metric: 'gpu.clock.memory.max', label: one('memory max') }], missing: 'No clocks reported.' },
  { id: 'g-throttle', title: 'Throttle reasons', note: '1 while the reason holds the clocks down', yMax: 1, queries: [{ metric: 'gpu.clock.event_reason.active', agg: 'max', label: (s) => s.labels['reason'] ?? 'reason' }], missing: 'No clock event reasons reported.' },
  { id: 'g-power', title: 'Power', note: 'against its limits', queries: [{ metric: 'gpu.power.usage', label: one('draw') }, { metric: 'gpu.power.limit', label: one('limit') }, { metric: 'gpu.power.enforced_limit', label: one('enforced limit') }], missing: 'No power reported.' },
  {
    id: 'g-temp',
    title: 'Temperatures',
    note: 'against the GPU\'s thresholds',
    queries: [{ metric: 'gpu.temperature', label: one('GPU die') }, { metric: 'gpu.memory.temperature', label: one('memory (HBM)') }],
    limits: [
      { metric: 'gpu.temperature.max_operating', label: 'GPU max operating' },
      { metric: 'gpu.temperature.slowdown', label: 'slowdown' },
      { metric: 'gpu.temperature.shutdown', label: 'shutdown' },
      { metric: 'gpu.memory.temperature.max', label: 'memory max' },
    ],
    missing: 'No temperature reported.',
  },
  { id: 'g-memory', title: 'Memory', queries: [{ metric: 'gpu.memory.used', label: one('used') }, { metric: 'gpu.memory.reserved', label: one('reserved') }, { metric: 'gpu.memory.total', label: one('total') }], missing: 'No memory figures reported.' },
  { id: 'g-nvlink-tx', title: 'NVLink TX', note: 'per link', queries: [{ metric: 'gpu.nvlink.transmit.rate', label: (s) => `link ${s.labels['link'] ?? '?'}` }], missing: 'No NVLink throughput reported (no active link, or not supported).' },
  { id: 'g-nvlink-rx', title: 'NVLink RX', note: 'per link', queries: [{ metric: 'gpu.nvlink.receive.rate', label: (s) => `link ${s.labels['link'] ?? '?'}` }], missing: 'No NVLink throughput reported (no active link, or not supported).' },
  { id: 'g-pcie', title: 'PCIe', queries: [{ metric: 'gpu.pcie.transmit.rate', label: one('TX (GPU → host)') }, { metric: 'gpu.pcie.receive.rate', label: one('RX (host → GPU)') }], missing: 'No PCIe throughput reported.' },
  {
    id: 'g-ecc',
    title: 'ECC errors',
    note: 'volatile: since the driver loaded; aggregate: lifetime',
    queries: [
      { metric: 'gpu.ecc.corrected.volatile', agg: 'max', label: one('corrected, volatile') },
      { metric: 'gpu.ecc.uncorrected.volatile', agg: 'max', label: one('uncorrected, volatile') },
      { metric: 'gpu.ecc.corrected.aggregate', agg: 'max', label: one('corrected, aggregate') },
      { metric: 'gpu.ecc.uncorrected.aggregate', agg: 'max', label: one('uncorrected, aggregate') },
    ],
    missing: 'No ECC counts reported (ECC off, or not supported).',
  },
  {
    id: 'g-remap',
    title: 'Remapped rows',
    queries: [
      { metric: 'gpu.remapped_rows.correctable', agg: 'max', label: one('correctable') },
      { metric: 'gpu.remapped_rows.uncorrectable', agg: 'max', label: one('uncorrectable') },
      { metric: 'gpu.remapped_rows.pending', agg: 'max', label: one('pending (reset needed)') },
      { metric: 'gpu.remapped_rows.failure', agg: 'max', label: one('failure (replace the GPU)') },
    ],
    missing: 'No row remapping reported (Ampere and newer).',
  },
];

// XID history: the last 30 days up to the end of the window.
const XID_HISTORY_S = 30 * 86400;

export async function gpuView(root: HTMLElement, ctx: ViewContext): Promise<View> {
  const host = ctx.state.host!;
  const uuid = ctx.state.gpu!;
  const entity = await findEntity(host, 'gpu', uuid);
  if (!entity) {
    const known = await hostKnown(host);
    return known
      ? unknownCard(root, ctx, 'GPU not found', `Host ${host} has reported no GPU ${uuid}.`, { label: `Host ${host}`, href: ctx.href({ view: 'host', host, tab: 'gpu' }) })
      : unknownCard(root, ctx, 'Unknown host', `The server has no data from a host named ${host}: check the name, or whether its agent sends to this server.`);
  }
  const a = entity.attributes;
  const migBox = h('span', { 'data-testid': 'gpu-mig' }, '…');
  root.append(
    h('div.host-head', {}, h('h1', {}, `GPU ${a['gpu.index'] ?? '?'} · ${a['gpu.model'] ?? 'GPU'}`), h('p.muted', {}, 'on ', h('a', { href: ctx.href({ view: 'host', host, tab: 'gpu' }) }, host))),
    h(
      'section.card',
      { 'aria-label': 'Identity' },
      factList(
        [
          ['Model', a['gpu.model']],
          ['UUID', h('code', {}, uuid)],
          ['PCI bus id', a['gpu.pci_bus_id']],
          ['Serial', a['gpu.serial']],
          ['Architecture', a['gpu.architecture']],
          ['Compute capability', a['gpu.compute_capability']],
          ['Driver', a['gpu.driver_version']],
          ['CUDA (driver)', a['gpu.cuda_driver_version']],
          ['MIG instance', a['mig.profile'] ? `${a['mig.profile']} (GPU instance ${a['mig.gpu_instance_id'] ?? '?'}, compute instance ${a['mig.compute_instance_id'] ?? '?'})` : undefined],
          ['MIG mode', migBox],
          ['Last seen', formatTime(entity.last_seen)],
        ],
        'gpu-facts',
      ),
    ),
  );
  const processesBox = h('div', { 'data-testid': 'gpu-processes' });
  const xidBox = h('div', { 'data-testid': 'gpu-xids' });
  const findingsBox = h('div', { 'data-testid': 'gpu-findings' });
  const grid = h('div.widget-grid');
  root.append(
    h('section.group', { 'aria-label': 'Processes' }, h('h2', {}, 'Processes on this GPU'), processesBox),
    h('section.group', { 'aria-label': 'Findings' }, h('h2', {}, 'Findings'), findingsBox),
    h('section.group', { 'aria-label': 'XID errors' }, h('h2', {}, 'XID errors'), xidBox),
    h('section.group', { 'aria-label': 'Metrics' }, h('h2', {}, 'Metrics'), grid),
  );
  const widgets: Widget[] = [];
  const loaders: PageLoader[] = [];
  const open: OpenProfile = (c, start, end) => c.navigate({ view: 'host', host, tab: 'gpu', profile: { start, end, kind: 'gpu' } });
  pageCharts(grid, GPU_CHARTS, { host, entity: uuid }, widgets, loaders, open);
  loaders.push((c) => loadMig(migBox, c, host, uuid));
  loaders.push((c) => loadProcesses(processesBox, c, host, uuid));
  loaders.push((c) => loadXids(xidBox, c, host, uuid));
  loaders.push((c) => loadFindings(findingsBox, c, host, uuid));
  await runLoaders(loaders, ctx);
  return {
    refresh: (c) => runLoaders(loaders, c),
    destroy: () => widgets.forEach((w) => w.destroy()),
  };
}

async function loadMig(box: HTMLElement, c: ViewContext, host: string, uuid: string): Promise<void> {
  const known = await knownMetrics();
  if (!known.has('gpu.mig.enabled')) {
    box.textContent = 'not reported (no GPU of this server has MIG)';
    return;
  }
  // Read at agent start: the last value of the last day is the current mode.
  const r = await getJson<RangeResponse>('/api/v1/query_range', { metric: 'gpu.mig.enabled', host, entity: uuid, start: c.end - 86400, end: c.end, agg: 'last' });
  const points = r.series.flatMap((s) => s.points).filter((p) => p[1] !== null);
  box.textContent = points.length === 0 ? 'not reported (this GPU has no MIG)' : points[points.length - 1][1]! > 0 ? 'enabled' : 'disabled';
}

async function loadProcesses(box: HTMLElement, c: ViewContext, host: string, uuid: string): Promise<void> {
  const known = await knownMetrics();
  if (!known.has('gpu.process.memory.used')) {
    box.replaceChildren(h('p.empty', {}, 'No per-process GPU memory received.'));
    return;
  }
  const r = await getJson<{ entries: TopEntry[] }>('/api/v1/top', { metric: 'gpu.process.memory.used', host, 'label.gpu.uuid': uuid, start: c.start, end: c.end, limit: 100 });
  if (r.entries.length === 0) {
    box.replaceChildren(h('p.empty', {}, 'No process used this GPU in this window.'));
    return;
  }
  box.replaceChildren(
    h(
      'div.table-scroll',
      {},
      h(
        'table.data',
        {},
        h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Process'), h('th.num', { scope: 'col' }, 'PID'), h('th', { scope: 'col' }, 'User'), h('th.num', { scope: 'col' }, 'GPU memory (avg)'), h('th.num', { scope: 'col' }, 'latest'))),
        h(
          'tbody',
          {},
          ...r.entries.map((e) =>
            h(
              'tr',
              {},
              h('td', { title: e.attributes['process.command_line'] ?? '' }, h('a', { href: c.href({ view: 'process', host, process: e.entity }) }, e.attributes['process.executable.name'] ?? e.entity)),
              h('td.num', {}, e.attributes['process.pid'] ?? ''),
              h('td', {}, e.attributes['process.owner'] ?? ''),
              h('td.num', {}, formatValue(e.value, 'By')),
              h('td.num', {}, formatValue(e.latest, 'By')),
            ),
          ),
        ),
      ),
    ),
  );
}

async function loadXids(box: HTMLElement, c: ViewContext, host: string, uuid: string): Promise<void> {
  const r = await getJson<{ events: EventRecord[] }>('/api/v1/events', { host, entity: uuid, kind: 'xid', start: Math.floor(c.end - XID_HISTORY_S), end: Math.ceil(c.end), limit: 200 });
  if (r.events.length === 0) {
    box.replaceChildren(h('p.empty', {}, 'No XID error in the last 30 days.'));
    return;
  }
  const list = [...r.events].sort((x, y) => y.time - x.time);
  box.replaceChildren(
    h(
      'div.table-scroll',
      {},
      h(
        'table.data',
        {},
        h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Time'), h('th.num', { scope: 'col' }, 'XID'), h('th', { scope: 'col' }, 'Meaning'))),
        h('tbody', {}, ...list.map((e) => h('tr', { class: e.time >= c.start && e.time <= c.end ? 'in-window' : undefined }, h('td', {}, formatTime(e.time)), h('td.num', {}, e.code), h('td', {}, e.message || 'not in the agent\'s table of XIDs (see NVIDIA\'s XID catalog)')))),
      ),
    ),
  );
}

async function loadFindings(box: HTMLElement, c: ViewContext, host: string, uuid: string): Promise<void> {
  const { list, off } = await fetchInsights({ host, entity: uuid, start: Math.floor(c.start), end: Math.ceil(c.end) });
  if (!list) {
    box.replaceChildren(h('p.muted', {}, off));
    return;
  }
  box.replaceChildren(list.insights.length === 0 ? h('p.empty', {}, 'No finding about this GPU in this window.') : findingList(list.insights, c));
}

// SPDX-License-Identifier: Apache-2.0
// Browser test of the Jobs views against a real `warpscope up --simulate healthy-8xh100` (port 0),
// fed through the native JSON ingest with the training steps of one job, JOB, as the agents'
// step trackers send them: 8 ranks on 2 hosts (ranks 0-3 on train-a, 4-7 on train-b, one GPU
// each: GPU-<host>-<local rank>), 30 steps. Rank 6 (train-b, GPU 2, pid 7006) is the straggler:
// it starts each step's last collective 250 ms after the others and computes 250 ms longer;
// rank 7 reports no kernels (compute unknown: only the NCCL plugin). Then the ranks' NCCL
// operation metrics (AllReduce on one communicator) are posted.
// Checks: the Jobs link in the top bar; the jobs list's row (ranks, hosts, straggler with its
// host); the job page's heatmap rows ("rank N · host", a cell per step, rank 6's cells marked as
// last to the collective), hover and keyboard focus on its cells; the straggler banner naming
// rank 6, train-b and GPU 2 with links to its host, GPU, process and GPU profile pages; the share
// bars (rank 6 computes more, rank 7's compute unknown); no collectives table before the NCCL
// metrics and one row per rank, the straggler's marked, after; the process page and the host
// page's top processes link the rank's job; an unknown job says so; nothing wider than 800 px;
// no console errors. Screenshots go to --out.
//
//   node jobs.mjs --warpscope <build>/bin/warpscope --out <build>/test-output/browser \
//        [--node-modules <dir with playwright-core>] [--chromium /usr/bin/chromium]
// Exit codes: 0 pass, 1 fail, 77 skipped (no Chromium or no playwright-core; fails with CI=true).
import fs from 'node:fs';
import path from 'node:path';
import { browserTestArgs, check, runBrowserTest, setUpBrowserTest, until } from './harness.mjs';

const { warpscope, outDir, chromiumPath, nodeModules } = browserTestArgs();
const bt = setUpBrowserTest({ name: 'jobs', what: 'the jobs browser test', timeoutMs: 120_000, warpscope, outDir, chromiumPath, nodeModules });

const JOB = 'run-7f3a';
const COMM = '0f1e2d3c4b5a6978';
const HOSTS = ['train-a', 'train-b'];
const WORLD = 8;
const SLOW = 6;
const NO_KERNELS = 7;
const STEPS = 30;
const FIRST_STEP = 100;
const PERIOD_S = 1.1;
const PER_BATCH = 10;
const kv = (o) => Object.entries(o).map(([key, value]) => ({ key, value: String(value) }));
const ns = (s) => String(Math.round(s * 1e9));

const RANKS = Array.from({ length: WORLD }, (_, rank) => {
  const host = HOSTS[Math.floor(rank / 4)];
  const local = rank % 4;
  return { rank, local, host, pid: 7000 + rank, entity: `pid/${7000 + rank}/0`, gpu: `GPU-${host}-${local}` };
});

// One rank's step: everyone's steps take 1 s but the straggler's (1.08 s); the straggler
// computes 0.85 s and starts the last collective at 0.95 s, the others compute 0.6 s and start
// it at 0.7 s, then wait 250 ms in it for the straggler (more communication time; their own
// transfers take as long as the straggler's: no slow interconnect).
function step(r, i, t0) {
  const slow = r.rank === SLOW;
  const start = t0 + i * PERIOD_S + r.rank * 0.001;
  const duration = slow ? 1.08 : 1.0;
  const compute = slow ? 0.85 : 0.6;
  const comm = slow ? 0.05 : 0.3;
  return {
    entity: r.entity,
    job: JOB,
    comm: COMM,
    rank: r.rank,
    worldSize: WORLD,
    step: String(FIRST_STEP + i),
    startUnixNano: ns(start),
    endUnixNano: ns(start + duration),
    computeNs: r.rank === NO_KERNELS ? '-1' : ns(compute),
    commNs: ns(comm),
    overlapNs: r.rank === NO_KERNELS ? '0' : ns(0.05),
    lastCollectiveOffsetNs: ns(slow ? 0.95 : 0.7),
    ncclNs: ns(comm + 0.05),
    collectives: 12,
    busBytes: String(12 * 256 * 1024 * 1024),
    source: 'nvtx',
  };
}

const METRICS = [
  ['gpu.process.memory.used', 'METRIC_KIND_GAUGE', 'By'],
  ['process.cpu.utilization', 'METRIC_KIND_GAUGE', '1'],
  ['nccl.collectives', 'METRIC_KIND_COUNTER', '{operation}'],
  ['nccl.collective.gpu_time', 'METRIC_KIND_COUNTER', 's'],
  ['nccl.collective.bus_bytes', 'METRIC_KIND_COUNTER', 'By'],
  ['nccl.collective.bus_bandwidth', 'METRIC_KIND_GAUGE', 'By/s'],
];
const BUS_BW = 150e9;

// One host's batch [start, end): its GPUs and rank processes, their GPU memory and CPU, the
// steps that ended in it and, with `nccl` (the window's index from 1), the ranks' AllReduce
// counters and bus bandwidth.
function batch(host, seq, start, end, steps, nccl = 0) {
  const ranks = RANKS.filter((r) => r.host === host);
  const series = [];
  const idx = Object.fromEntries(METRICS.map((m, i) => [m[0], i]));
  const add = (metric, entity, value, labels = {}) =>
    series.push({ metric: idx[metric], entity, labels: kv(labels), avg: value, min: value, max: value, last: value, count: 1, lastTimeUnixNano: ns(end - 1) });
  for (const r of ranks) {
    add('gpu.process.memory.used', r.entity, 40 * 2 ** 30, { 'gpu.uuid': r.gpu, 'gpu.index': r.local });
    add('process.cpu.utilization', r.entity, 0.05);
    if (nccl) {
      const labels = { comm: COMM, comm_name: 'world', rank: r.rank, nranks: WORLD, collective: 'AllReduce' };
      const gpuTime = 3 * nccl;
      add('nccl.collectives', r.entity, 120 * nccl, labels);
      add('nccl.collective.gpu_time', r.entity, gpuTime, labels);
      add('nccl.collective.bus_bytes', r.entity, gpuTime * BUS_BW, labels);
      add('nccl.collective.bus_bandwidth', r.entity, BUS_BW, labels);
    }
  }
  return {
    version: 1,
    agentId: `${host}-agent`,
    sequence: String(seq),
    startUnixNano: ns(start),
    endUnixNano: ns(end),
    host,
    entities: [
      { kind: 'ENTITY_KIND_HOST', id: host, attributes: kv({ 'host.name': host }) },
      ...[0, 1, 2, 3].map((i) => ({ kind: 'ENTITY_KIND_GPU', id: `GPU-${host}-${i}`, parent: host, attributes: kv({ 'gpu.index': i, 'gpu.uuid': `GPU-${host}-${i}`, 'gpu.model': 'NVIDIA H100 80GB HBM3' }) })),
      ...ranks.map((r) => ({
        kind: 'ENTITY_KIND_PROCESS',
        id: r.entity,
        parent: host,
        attributes: kv({ 'process.pid': r.pid, 'process.executable.name': 'python3', 'job.id': JOB, 'job.rank': r.rank, 'job.local_rank': r.local, 'job.world_size': WORLD, 'job.launcher': 'torchrun' }),
      })),
    ],
    metrics: METRICS.map(([key, kind, unit]) => ({ key, kind, unit, entityKind: 'ENTITY_KIND_PROCESS' })),
    series,
    events: [],
    steps,
  };
}

// Ingest needs the token `up` wrote to its data dir (reads do not).
async function post(base, token, body) {
  const r = await fetch(`${base}/api/v1/ingest/batch`, { method: 'POST', headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  if (!r.ok) throw new Error(`posting ${body.host} window ${body.sequence}: HTTP ${r.status} ${await r.text()}`);
}

runBrowserTest(bt, async () => {
  const base = await bt.startUp(path.join(bt.dataDir, 'up'));
  const token = fs.readFileSync(path.join(bt.dataDir, 'up', 'token'), 'utf8').trim();
  const t0 = Math.floor(Date.now() / 1000) - 120;
  const windows = STEPS / PER_BATCH;
  for (const host of HOSTS) {
    for (let k = 0; k < windows; k++) {
      const start = t0 + k * PER_BATCH * PERIOD_S;
      const end = start + PER_BATCH * PERIOD_S;
      const steps = RANKS.filter((r) => r.host === host).flatMap((r) => Array.from({ length: PER_BATCH }, (_, j) => step(r, k * PER_BATCH + j, t0)));
      await post(base, token, batch(host, k + 1, start, end, steps));
    }
  }
  const jobs = await until('the job in /api/v1/jobs', async () => {
    const r = await fetch(`${base}/api/v1/jobs?from=${t0 - 60}&to=${t0 + 600}`);
    if (!r.ok) throw new Error(`HTTP ${r.status}`);
    const list = (await r.json()).jobs;
    return list.some((j) => j.job === JOB) ? list : null;
  }, 20_000);
  check(jobs.length === 1, `the API lists one job (${jobs.map((j) => j.job).join(', ')})`);

  const browser = await bt.launchBrowser();
  const page = await (await browser.newContext({ viewport: { width: 1440, height: 900 }, colorScheme: 'light' })).newPage();
  const errors = [];
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  page.on('pageerror', (e) => errors.push(String(e)));
  const ready = () => page.waitForFunction(() => document.querySelector('main')?.getAttribute('aria-busy') === 'false');
  const shot = (name) => page.screenshot({ path: path.join(outDir, `jobs-${name}.png`), fullPage: true });
  const overflow = () => page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);

  // The Jobs link in the top bar; the jobs list.
  await page.goto(`${base}/?range=15m`);
  await ready();
  await page.locator('[data-testid=nav-jobs]').click();
  await ready();
  check(new URL(page.url()).pathname === '/jobs' && new URL(page.url()).searchParams.get('range') === '15m', `the top bar's Jobs link opens /jobs with the same window (${page.url()})`);
  const row = page.locator(`[data-testid=jobs-table] tr[data-job="${JOB}"]`);
  await row.waitFor();
  const cell = (col) => row.locator(`td[data-col=${col}]`).textContent();
  check((await cell('ranks')) === '8', `the job has 8 ranks (${await cell('ranks')})`);
  const hosts = await cell('hosts');
  check(/train-a/.test(hosts) && /train-b/.test(hosts), `on train-a and train-b (${hosts})`);
  check((await cell('straggler')) === 'rank 6 · train-b', `its straggler is rank 6 on train-b (${await cell('straggler')})`);
  check(/^\d+(\.\d+)? m?s$/.test(await cell('step')), `its step time p50 is shown (${await cell('step')})`);
  await page.locator('[data-testid=jobs-table] th a.sort', { hasText: 'Job' }).click();
  await ready();
  check(new URL(page.url()).searchParams.get('sort') === 'job', `a column header sorts the list, in the URL (${page.url()})`);
  await shot('list');

  // The job page: the heatmap.
  await page.locator(`[data-testid=jobs-table] tr[data-job="${JOB}"] a`).first().click();
  await ready();
  check(new URL(page.url()).pathname === `/jobs/${JOB}`, `the job links to its page (${page.url()})`);
  await page.locator('[data-testid=heatmap] .hm-row').first().waitFor();
  const rows = await page.locator('[data-testid=heatmap] .hm-row').evaluateAll((rs) => rs.map((r) => [r.getAttribute('data-rank'), r.querySelector('[role=rowheader]').textContent, r.querySelectorAll('.hm-cell').length]));
  check(rows.length === WORLD && rows.every(([rank, label], i) => rank === String(i) && label === `rank ${i} · ${RANKS[i].host}`), `the heatmap has a row per rank labelled "rank N · host" (${rows.map((r) => r[1]).join(', ')})`);
  check(rows.every(([, , n]) => n === STEPS), `and a cell per step (${rows.map((r) => r[2]).join(', ')})`);
  const lastMarks = await page.locator(`[data-testid=heatmap] .hm-row[data-rank="${SLOW}"] .hm-cell.last`).count();
  check(lastMarks >= STEPS / 2, `rank 6's cells are marked as the last to the collective (${lastMarks} of ${STEPS})`);
  check((await page.locator('[data-testid=heatmap] .hm-row:not([data-rank="6"]) .hm-cell.last').count()) === 0, 'no other rank\u2019s cells are');
  check((await page.locator('[data-testid=heatmap-legend]').textContent()).includes('median'), 'the colour scale has a legend');
  await page.locator(`[data-testid=heatmap] .hm-row[data-rank="${SLOW}"] .hm-cell`).nth(3).hover();
  const tip = await page.locator('[data-testid=heatmap-tip]').textContent();
  check(tip.includes(`step ${FIRST_STEP + 3}`) && tip.includes('rank 6 · train-b') && /1\.08 s/.test(tip) && /last collective last/.test(tip), `hovering a cell names its step, rank, host and duration (${tip})`);

  // The straggler banner and its links.
  const banner = page.locator('[data-testid=straggler]');
  check((await banner.getAttribute('data-rank')) === String(SLOW) && (await banner.getAttribute('data-host')) === 'train-b', 'the straggler banner is about rank 6 on train-b');
  const text = await banner.textContent();
  check(/rank 6 on train-b/.test(text) && /GPU 2/.test(text), `it names rank 6, its host and its GPU (${text})`);
  check(/of every step lost/.test(text) && /GPU-hours lost/.test(text) && /behind the median rank per step/.test(text), 'it says the lag per step, the share of every step and the GPU-hours lost');
  const link = async (id) => new URL(await banner.locator(`[data-testid=${id}]`).getAttribute('href'), base);
  check((await link('straggler-host')).pathname === '/host/train-b', 'it links the host page');
  check((await link('straggler-gpu')).pathname === '/host/train-b/gpu/GPU-train-b-2', `it links the GPU page of GPU-train-b-2 (${await link('straggler-gpu')})`);
  check((await link('straggler-process')).pathname === `/host/train-b/process/${encodeURIComponent(RANKS[SLOW].entity)}`, 'it links the process page of pid 7006');
  const profile = await link('straggler-profile');
  check(profile.pathname === '/host/train-b' && profile.searchParams.get('pk') === 'gpu' && profile.searchParams.get('pp') === '7006' && /^\d+-\d+$/.test(profile.searchParams.get('p') ?? ''), `it links pid 7006's GPU profile over the job's window (${profile.search})`);

  // The share bars.
  const width = (rank, part) => page.locator(`[data-testid=share-bars] .share-row[data-rank="${rank}"] [data-part=${part}]`).evaluate((e) => e.getBoundingClientRect().width).catch(() => 0);
  check((await page.locator('[data-testid=share-bars] .share-row').count()) === WORLD, 'a share bar per rank');
  check((await width(SLOW, 'compute')) > (await width(0, 'compute')) && (await width(SLOW, 'comm')) < (await width(0, 'comm')), 'rank 6 computes longer and communicates less than rank 0');
  check((await width(NO_KERNELS, 'unknown')) > 0 && (await width(NO_KERNELS, 'compute')) === 0, 'rank 7 without kernel records shows its compute as unknown');
  const legend = await page.locator('[data-testid=share-legend]').textContent();
  check(['compute', 'overlap', 'communication', 'idle', 'compute unknown'].every((x) => legend.includes(x)), `the bars have a legend (${legend})`);
  check((await page.locator('[data-testid=share-bars] .badge', { hasText: 'slow interconnect' }).count()) === 0, 'no rank is flagged for a slow interconnect');
  check((await page.locator('[data-testid=collectives-empty]').count()) === 1, 'without NCCL metrics there is no collectives table, and a line says why');
  await shot('job');

  // Keyboard: Tab reaches the heatmap (one stop), the arrow keys move between its cells.
  await banner.locator('[data-testid=straggler-profile]').focus();
  for (let i = 0; i < 10; i++) {
    if (await page.evaluate(() => document.activeElement?.classList.contains('hm-cell'))) break;
    await page.keyboard.press('Tab');
  }
  const focused = () => page.evaluate(() => ({ cell: document.activeElement?.classList.contains('hm-cell'), step: document.activeElement?.getAttribute('data-step'), rank: document.activeElement?.getAttribute('data-rank') }));
  const first = await focused();
  check(first.cell === true, `Tab reaches a heatmap cell (${JSON.stringify(first)})`);
  await page.keyboard.press('ArrowLeft');
  await page.keyboard.press('ArrowDown');
  const moved = await focused();
  check(moved.cell && Number(moved.step) === Number(first.step) - 1 && Number(moved.rank) === Number(first.rank) + 1, `← and ↓ move to the previous step of the next rank (${JSON.stringify(first)} → ${JSON.stringify(moved)})`);
  check((await page.locator('[data-testid=heatmap-tip]').isVisible()) && (await page.locator('[data-testid=heatmap-tip]').textContent()).includes(`step ${moved.step}`), 'the focused cell shows its tooltip');
  await page.keyboard.press('Tab');
  check(!(await focused()).cell, 'Tab leaves the heatmap in one press (the grid is one Tab stop)');

  // 800 px.
  await page.setViewportSize({ width: 800, height: 900 });
  await page.reload();
  await ready();
  await page.locator('[data-testid=heatmap] .hm-row').first().waitFor();
  check((await overflow()) <= 0, `at 800 px the job page is no wider than the window (${await overflow()} px over)`);
  await shot('job-800');
  await page.goto(`${base}/jobs?range=15m`);
  await ready();
  check((await overflow()) <= 0, `at 800 px the jobs list is no wider than the window (${await overflow()} px over)`);
  await page.setViewportSize({ width: 1440, height: 900 });

  // The ranks' NCCL metrics: the collectives table, the straggler's row marked.
  const end = t0 + STEPS * PERIOD_S;
  for (const host of HOSTS) {
    for (let k = 1; k <= 3; k++) await post(base, token, batch(host, windows + k, end + (k - 1) * 10, end + k * 10, [], k));
  }
  await page.goto(`${base}/jobs/${JOB}?range=15m`);
  await ready();
  await page.locator('[data-testid=collectives] tbody[data-collective=AllReduce]').waitFor();
  const ops = page.locator(`[data-testid=collectives] tbody[data-collective=AllReduce][data-comm="${COMM}"] tr`);
  check((await ops.count()) === WORLD, `the collectives table has AllReduce on the communicator with a row per rank (${await ops.count()})`);
  check((await page.locator(`[data-testid=collectives] tr.straggler[data-rank="${SLOW}"]`).count()) === 1, 'the straggler\u2019s row is marked');
  const r0 = await page.locator('[data-testid=collectives] tr[data-rank="0"]').evaluate((tr) => Object.fromEntries([...tr.querySelectorAll('td[data-col]')].map((td) => [td.getAttribute('data-col'), td.textContent])));
  check(Number(r0.count.replace(/[^\d.]/g, '')) > 0 && r0.bandwidth === '139.7 GiB/s', `rank 0's count and bus bandwidth (${JSON.stringify(r0)})`);
  await shot('job-collectives');

  // A rank's process and its host page link the job.
  await page.goto(`${base}/host/train-b/process/${encodeURIComponent(RANKS[SLOW].entity)}?range=15m`);
  await ready();
  const procJob = page.locator('[data-testid=process-facts] [data-testid=process-job]');
  check((await procJob.textContent()).startsWith(`${JOB} · rank 6`) && new URL(await procJob.getAttribute('href'), base).pathname === `/jobs/${JOB}`, `the process page links the rank's job (${await procJob.textContent()})`);
  await page.goto(`${base}/host/train-b?range=15m`);
  await ready();
  await page.locator('[data-testid=top-processes] [data-testid=process-job]').first().waitFor();
  check((await page.locator('[data-testid=top-processes] [data-testid=process-job]').count()) === 4, 'the host page\u2019s top processes link their job');

  // An unknown job.
  await page.goto(`${base}/jobs/no-such-job?range=15m`);
  await ready();
  check(await page.locator('[data-testid=job-unknown]').isVisible(), 'an unknown job says so');
  check(errors.length === 0, `no console errors (${errors.join('; ')})`);
});

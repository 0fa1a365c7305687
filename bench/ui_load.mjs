// SPDX-License-Identifier: Apache-2.0
// Web UI load times (docs/benchmarks.md): first load of the fleet view, and the GPU Metrics tab
// of one 8-GPU host over 24 h, in headless Chromium on loopback.
//
// Starts `warpscope server` (temporary data dir, free port), fills it with 24 h of 1-minute
// windows for one 8-GPU H100 host (the series the GPU Metrics tab reads: utilization, SM,
// tensor, memory, power, temperature, PCIe, 18 NVLink links each way and the GPM NVLink totals,
// per-process and per-executable series, clock event reasons; about 500 series per window,
// 1,440 windows), lets the server
// build its rollups, then measures with the browser's Performance API:
//   fleet cold   navigation start -> fleet view drawn, empty cache, new browser context
//   fleet warm   the same with the assets cached (immutable bundles, ETag'd index.html)
//   gpu tab 24h  at 1440x900: navigation start -> the view's first screen drawn, and the app's own
//                measure of the view (fetches + drawing, from the moment the route renders; charts
//                below the first screen load as they come near the viewport); then every chart
//                of the tab drawn (the bench scrolls to each card in turn, as fast as they draw)
// Each figure is the median of RUNS runs (default 5).
//
//   node bench/ui_load.mjs [--warpscope build/release/bin/warpscope] [--runs 5]
//        [--node-modules <dir with playwright-core>] [--chromium /usr/bin/chromium]
//   node bench/ui_load.mjs --serve     loads the day, prints the URL and waits (Ctrl-C) instead of
//                                      measuring: to look at 24 h of data in the UI
//   --timeline                         prints each run's GPU Metrics tab load in order, in ms from
//                                      navigation start: index.html's answer, the route's render,
//                                      each API request sent (>) and answered (<), DOMContentLoaded,
//                                      the first screen drawn
//   --trace FILE                       records a Chromium trace of the last run's GPU Metrics tab load
//                                      (open it in Perfetto or chrome://tracing; summarize with
//                                      bench/trace_summary.mjs); the trace's sampling profiler slows
//                                      that run: its figures are not for comparison
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const arg = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : fallback;
};
const warpscope = path.resolve(arg('--warpscope', path.join(root, 'build/release/bin/warpscope')));
const runs = Number(arg('--runs', '5'));
const chromiumPath = arg('--chromium', '/usr/bin/chromium');
const nodeModulesArg = arg('--node-modules');
const traceFile = arg('--trace');
const candidates = nodeModulesArg
  ? [path.resolve(nodeModulesArg)]
  : [path.join(path.dirname(path.dirname(warpscope)), 'web/npm/node_modules'), path.join(root, 'web/node_modules')];
let chromium;
for (const dir of candidates) {
  try {
    chromium = createRequire(path.join(dir, 'noop.js'))('playwright-core').chromium;
    break;
  } catch {
    // next
  }
}
if (!chromium) {
  console.error(`playwright-core not found in ${candidates.join(', ')}: build the UI (npm ci) first`);
  process.exit(1);
}
if (!fs.existsSync(warpscope)) {
  console.error(`no ${warpscope}: build the warpscope target first (or pass --warpscope)`);
  process.exit(1);
}

const HOST = 'bench-node';
const GPUS = 8;
const LINKS = 18;
const WINDOW_S = 60;
const WINDOWS = 24 * 60;
const REASONS = ['gpu_idle', 'clocks_setting', 'power_cap', 'hw_slowdown', 'sync_boost', 'sw_thermal', 'hw_thermal', 'hw_power_brake', 'display_clocks'];

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
};

function batch(seq, startS) {
  const uuid = (g) => `GPU-bench-${g}`;
  const metrics = [
    ['gpu.utilization', '1', 2], ['gpu.sm.active', '1', 2], ['gpu.sm.occupancy', '1', 2], ['gpu.tensor.active', '1', 2],
    ['gpu.memory.utilization', '1', 2], ['gpu.memory.used', 'By', 2], ['gpu.memory.total', 'By', 2], ['gpu.power.usage', 'W', 2],
    ['gpu.power.limit', 'W', 2], ['gpu.temperature', 'Cel', 2], ['gpu.pcie.transmit.rate', 'By/s', 2], ['gpu.pcie.receive.rate', 'By/s', 2],
    ['gpu.nvlink.transmit.rate', 'By/s', 2], ['gpu.nvlink.receive.rate', 'By/s', 2], ['gpu.clock.event_reason.active', '1', 2],
    ['gpu.prof.nvlink.transmit.rate', 'By/s', 2], ['gpu.prof.nvlink.receive.rate', 'By/s', 2],
    ['gpu.process.sm.utilization', '1', 4], ['gpu.process.memory.used', 'By', 4],
    ['gpu.executable.sm.utilization', '1', 5], ['gpu.executable.memory.used', 'By', 5],
  ];
  const idx = Object.fromEntries(metrics.map((m, i) => [m[0], i]));
  const series = [];
  const add = (metric, entity, v, labels = []) =>
    series.push({ metric: idx[metric], entity, labels, avg: v, min: v * 0.98, max: v * 1.02, last: v, count: 60 });
  const phase = (startS % 3600) / 3600;
  const entities = [{ kind: 1, id: HOST, attributes: [{ key: 'host.name', value: HOST }] }, { kind: 5, id: 'exe/python3', attributes: [{ key: 'process.executable.name', value: 'python3' }] }];
  for (let g = 0; g < GPUS; g++) {
    const u = uuid(g);
    entities.push({ kind: 2, id: u, attributes: [{ key: 'gpu.index', value: String(g) }, { key: 'gpu.model', value: 'NVIDIA H100 80GB HBM3' }, { key: 'gpu.uuid', value: u }] });
    const pid = `pid/${31000 + g}/0`;
    entities.push({ kind: 4, id: pid, attributes: [{ key: 'process.executable.name', value: 'python3' }, { key: 'process.pid', value: String(31000 + g) }] });
    const wave = Math.sin(2 * Math.PI * (phase + g / GPUS));
    add('gpu.utilization', u, 0.95 + 0.03 * wave);
    add('gpu.sm.active', u, 0.88 + 0.02 * wave);
    add('gpu.sm.occupancy', u, 0.52 + 0.03 * wave);
    add('gpu.tensor.active', u, 0.62 + 0.03 * wave);
    add('gpu.memory.utilization', u, 0.86);
    add('gpu.memory.used', u, 70.4 * 2 ** 30);
    add('gpu.memory.total', u, 80 * 2 ** 30);
    add('gpu.power.usage', u, 655 + 25 * wave);
    add('gpu.power.limit', u, 700);
    add('gpu.temperature', u, 63 + 2 * wave + (g === 1 ? 2 : 0));
    add('gpu.pcie.transmit.rate', u, 9e6 + 2e6 * wave);
    add('gpu.pcie.receive.rate', u, 3.5e8 + 5e7 * wave);
    for (let l = 0; l < LINKS; l++) {
      add('gpu.nvlink.transmit.rate', u, 5.5e9 + 1e9 * wave, [{ key: 'link', value: String(l) }]);
      add('gpu.nvlink.receive.rate', u, 5.5e9 - 1e9 * wave, [{ key: 'link', value: String(l) }]);
    }
    // What an H100 agent also sends: NVML GPM's NVLink totals (the UI prefers them to the links).
    add('gpu.prof.nvlink.transmit.rate', u, LINKS * (5.6e9 + 1e9 * wave));
    add('gpu.prof.nvlink.receive.rate', u, LINKS * (5.6e9 - 1e9 * wave));
    for (const r of REASONS) add('gpu.clock.event_reason.active', u, r === 'power_cap' && g === 3 && seq % 97 === 0 ? 1 : 0, [{ key: 'reason', value: r }]);
    const gl = [{ key: 'gpu.index', value: String(g) }, { key: 'gpu.uuid', value: u }];
    add('gpu.process.sm.utilization', pid, 0.93 + 0.03 * wave, [...gl, { key: 'type', value: 'compute' }]);
    add('gpu.process.memory.used', pid, 70 * 2 ** 30, [...gl, { key: 'type', value: 'compute' }]);
    add('gpu.executable.sm.utilization', 'exe/python3', 0.93 + 0.03 * wave, gl);
    add('gpu.executable.memory.used', 'exe/python3', 70 * 2 ** 30, gl);
  }
  return {
    version: 1,
    agent_id: 'ui-bench',
    sequence: String(seq),
    start_unix_nano: String(startS * 1e9),
    end_unix_nano: String((startS + WINDOW_S) * 1e9),
    host: HOST,
    entities,
    metrics: metrics.map(([key, unit, ek]) => ({ key, kind: 1, unit, entity_kind: ek })),
    series,
    events: seq === WINDOWS - 30 ? [{ time_unix_nano: String((startS + 5) * 1e9), entity: uuid(5), kind: 'xid', code: 79, message: 'GPU has fallen off the bus' }] : [],
  };
}

// The page says (on its console) when the app has measured its view; the bench waits for that
// before it reads the page. Polling the page instead (waitForFunction) would first evaluate
// Playwright's injected script on the page's main thread (25-60 ms at these loads) while the view
// is still loading, and the view's measure would include it.
const VIEW_MEASURED = 'warpscope-bench:view-measured';

function sayViewMeasured(text) {
  new PerformanceObserver((list) => {
    if (list.getEntries().some((e) => e.name.startsWith('warpscope:view:'))) console.debug(text);
  }).observe({ type: 'measure' });
}

async function main() {
  const data = fs.mkdtempSync(path.join(os.tmpdir(), 'warpscope-ui-bench-'));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const server = spawn(warpscope, ['server', `--listen-address=127.0.0.1:${port}`, `--data-dir=${data}/db`, '--compact-interval=5s'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  server.stderr.on('data', (d) => (log += d));
  const stop = () => {
    if (server.exitCode === null) server.kill('SIGTERM');
    fs.rmSync(data, { recursive: true, force: true });
  };
  try {
    for (let i = 0; ; i++) {
      if ((await fetch(`${base}/readyz`).catch(() => null))?.ok) break;
      if (i > 200 || server.exitCode !== null) throw new Error(`server did not start:\n${log}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    const end = Math.floor(Date.now() / 1000 / WINDOW_S) * WINDOW_S;
    const t0 = Date.now();
    const inflight = new Set();
    let seriesWindows = 0;
    for (let i = 0; i < WINDOWS; i++) {
      const body = JSON.stringify(batch(i + 1, end - (WINDOWS - i) * WINDOW_S));
      const p = fetch(`${base}/api/v1/ingest/batch`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body }).then(async (r) => {
        if (!r.ok) throw new Error(`ingest: HTTP ${r.status} ${await r.text()}`);
      });
      inflight.add(p);
      p.finally(() => inflight.delete(p));
      if (inflight.size >= 4) await Promise.race(inflight);
      if (i === 0) seriesWindows = JSON.parse(body).series.length;
    }
    await Promise.all(inflight);
    console.log(`loaded 24 h: ${WINDOWS} windows x ${seriesWindows} series in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    // Let the server roll the day up into 1-minute and 1-hour buckets (it compacts every 5 s here).
    const q = `${base}/api/v1/query_range?metric=gpu.utilization&start=now-24h&end=now`;
    for (let i = 0; i < 240; i++) {
      const r = await (await fetch(q)).json();
      if (r.resolutions?.includes('1m') && !r.resolutions.includes('raw')) break;
      await new Promise((res) => setTimeout(res, 500));
    }
    const res = await (await fetch(q)).json();
    console.log(`24 h range query reads: ${res.resolutions.join(', ')}; ${res.series.length} series x ${res.series[0]?.points.length} points`);

    if (args.includes('--serve')) {
      console.log(`serving ${base}/host/${HOST}?tab=gpu&range=24h  (Ctrl-C stops)`);
      await new Promise((resolve) => process.once('SIGINT', resolve));
      return;
    }
    const browser = await chromium.launch({
      executablePath: chromiumPath,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    // The page's figures once its view is drawn: `total` from navigation start, `view` the app's
    // measure (from the route's render to its first screen drawn), the API requests it waited for.
    const measure = async (page, url, selectorCount) => {
      const measured = page.waitForEvent('console', { predicate: (m) => m.text() === VIEW_MEASURED, timeout: 60_000 });
      await page.goto(url);
      await measured;
      await page.waitForFunction(
        ([n]) => document.querySelector('main')?.getAttribute('aria-busy') === 'false' && document.querySelectorAll('.chart canvas').length >= n,
        [selectorCount],
      );
      return page.evaluate(() => {
        const nav = performance.getEntriesByType('navigation')[0];
        const view = performance.getEntriesByType('measure').filter((m) => m.name.startsWith('warpscope:view:')).pop();
        const viewEnd = view.startTime + view.duration;
        // The requests the view waited for (not those of charts loaded after its first screen).
        const api = performance.getEntriesByType('resource').filter((r) => r.name.includes('/api/') && r.responseEnd <= viewEnd);
        const apiSpan = api.length ? Math.max(...api.map((r) => r.responseEnd)) - Math.min(...api.map((r) => r.startTime)) : 0;
        const lastApi = api.length ? Math.max(...api.map((r) => r.responseEnd)) : view.startTime;
        const slowest = [...api]
          .sort((a, b) => b.duration - a.duration)
          .slice(0, 4)
          .map((r) => {
            const u = new URL(r.name);
            return `${u.pathname.replace('/api/v1/', '')}${u.searchParams.get('metric') ? ' ' + u.searchParams.get('metric') : ''} ${r.duration.toFixed(0)} ms`;
          });
        const short = (r) => {
          const u = new URL(r.name);
          return `${u.pathname.replace('/api/v1/', '')}${u.searchParams.get('kind') ? ' ' + u.searchParams.get('kind') : ''}`;
        };
        const render = performance.getEntriesByName('warpscope:render').pop();
        const timeline = [
          ['response start (index.html)', nav.responseStart],
          ['DOMContentLoaded', nav.domContentLoadedEventStart],
          ['render', render?.startTime ?? view.startTime],
          ...api.flatMap((r) => [[`> ${short(r)}`, r.startTime], [`< ${short(r)} (${r.duration.toFixed(0)} ms)`, r.responseEnd]]),
          ['view drawn', viewEnd],
        ]
          .sort((a, b) => a[1] - b[1])
          .map(([what, t]) => `${(t - nav.startTime).toFixed(0).padStart(5)}  ${what}`);
        return {
          timeline,
          total: viewEnd - nav.startTime,
          view: view.duration,
          api: apiSpan,
          draw: viewEnd - lastApi,
          slowest,
          requests: api.length,
          // What the view drew (the app says; later loads may have drawn more by now).
          charts: view.detail?.charts ?? [...document.querySelectorAll('.chart')].filter((c) => c.querySelector('canvas')).length,
          transfer: performance.getEntriesByType('resource').reduce((a, r) => a + r.transferSize, 0) + nav.transferSize,
        };
      });
    };
    // Every chart of the view: scrolls to each card not loaded yet (charts below the first screen
    // load as they come near the viewport), waits for it, and reads the app's measure of the whole
    // view (render start to the last chart drawn), else (a build that draws every chart with its
    // first screen) the view's own measure.
    const measureAll = (page) =>
      page.evaluate(async () => {
        const frame = () => new Promise((r) => requestAnimationFrame(() => r()));
        for (const el of document.querySelectorAll('[data-load]')) {
          if (el.getAttribute('data-load') === 'done') continue;
          el.scrollIntoView({ block: 'center' });
          while (el.getAttribute('data-load') !== 'done') await frame();
        }
        window.scrollTo(0, 0);
        const nav = performance.getEntriesByType('navigation')[0];
        const measures = performance.getEntriesByType('measure');
        const all = measures.filter((m) => m.name.startsWith('warpscope:view-all:')).pop() ?? measures.filter((m) => m.name.startsWith('warpscope:view:')).pop();
        return { total: all.startTime + all.duration - nav.startTime, view: all.duration, charts: [...document.querySelectorAll('.chart')].filter((c) => c.querySelector('canvas')).length };
      });
    const results = { fleetCold: [], fleetWarm: [], gpuCold: [], gpuView: [], gpuApi: [], gpuDraw: [], gpuAll: [], gpuAllLoad: [] };
    let slowest = [];
    let gpuRequests = 0;
    let firstCharts = 0;
    let allCharts = 0;
    let coldBytes = 0;
    for (let i = 0; i < runs; i++) {
      const ctx = await browser.newContext({ viewport: { width: 1440, height: 900 } });
      await ctx.addInitScript(sayViewMeasured, VIEW_MEASURED);
      const page = await ctx.newPage();
      const cold = await measure(page, `${base}/`, 1);
      results.fleetCold.push(cold.total);
      coldBytes = cold.transfer;
      const warm = await measure(page, `${base}/?range=6h`, 1);
      results.fleetWarm.push(warm.total);
      const tracing = traceFile && i === runs - 1;
      if (tracing) {
        await browser.startTracing(page, {
          path: path.resolve(traceFile),
          categories: ['devtools.timeline', 'disabled-by-default-devtools.timeline', 'v8.execute', 'blink.user_timing', 'loading', 'toplevel', 'disabled-by-default-v8.cpu_profiler'],
        });
      }
      const gpu = await measure(page, `${base}/host/${HOST}?tab=gpu&range=24h`, 1);
      const all = await measureAll(page);
      if (tracing) await browser.stopTracing();
      if (args.includes('--timeline')) console.log(`run ${i + 1}, GPU Metrics tab (ms from navigation start):\n${gpu.timeline.join('\n')}`);
      results.gpuAll.push(all.view);
      results.gpuAllLoad.push(all.total);
      firstCharts = gpu.charts;
      allCharts = all.charts;
      results.gpuCold.push(gpu.total);
      results.gpuView.push(gpu.view);
      results.gpuApi.push(gpu.api);
      results.gpuDraw.push(gpu.draw);
      slowest = gpu.slowest;
      gpuRequests = gpu.requests;
      await ctx.close();
    }
    await browser.close();
    const ms = (x) => `${x.toFixed(0)} ms`;
    console.log(`machine: ${os.cpus().length} CPUs, load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
    console.log(`fleet view, first load (cold cache, ${(coldBytes / 1024).toFixed(0)} KiB transferred): median ${ms(median(results.fleetCold))}  [${results.fleetCold.map(ms).join(', ')}]`);
    console.log(`fleet view, warm cache:                          median ${ms(median(results.fleetWarm))}`);
    console.log(`GPU Metrics tab, 8 GPUs x 24 h, 1440x900, first screen (${firstCharts} of ${allCharts} charts drawn):`);
    console.log(`  page load:                                     median ${ms(median(results.gpuCold))}`);
    console.log(`  view render:                                   median ${ms(median(results.gpuView))} (fetches + drawing; ${gpuRequests} API requests spanning ${ms(median(results.gpuApi))})  [${results.gpuView.map(ms).join(', ')}]`);
    console.log(`  drawing after the last answer:                 median ${ms(median(results.gpuDraw))}`);
    console.log(`GPU Metrics tab, every chart drawn (scrolled to each in turn):`);
    console.log(`  from the view's render:                        median ${ms(median(results.gpuAll))}  [${results.gpuAll.map(ms).join(', ')}]`);
    console.log(`  page load:                                     median ${ms(median(results.gpuAllLoad))}`);
    console.log(`slowest API requests of the last run: ${slowest.join('; ')}`);
    console.log(`RESULT fleet_cold_ms=${median(results.fleetCold).toFixed(0)} fleet_warm_ms=${median(results.fleetWarm).toFixed(0)} gpu_tab_24h_load_ms=${median(results.gpuCold).toFixed(0)} gpu_tab_24h_view_ms=${median(results.gpuView).toFixed(0)} gpu_tab_24h_draw_ms=${median(results.gpuDraw).toFixed(0)} gpu_tab_24h_all_ms=${median(results.gpuAll).toFixed(0)}`);
  } finally {
    stop();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});

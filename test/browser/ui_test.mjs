// SPDX-License-Identifier: Apache-2.0
// Browser test of the web UI against a real `warpscope up --simulate healthy-8xh100`:
// every view loads without console errors, the charts show the scenario's values, and the
// drill-down fleet -> top entities -> host -> GPU Metrics -> click a point -> flamegraph works
// (with a synthetic pprof posted to the server), as does the "no profile" message. A server fed
// by an agent on a scenario whose GPU process ends early: the ended process has no current value
// in the per-process stacks and leaves them once the window no longer holds it. Then a
// server started with --auth-read (fed by an agent on the same scenario): the UI asks for the
// token, refuses a wrong one with the server's message, and with the right one shows the fleet
// and downloads a profile; sign out forgets the token. Insights (insights.mjs): findings the
// server's engine raises on posted windows, on the Insights page, the fleet's badges and its
// cluster's finding, the host page's bands and the finding pages. Screenshots of each view go to --out.
//
// CPU profiles: a CPU and a GPU profile of one process, built by the agent's own builders
// (write_profile_fixtures), posted to the server: a click on the host CPU chart opens the CPU
// flamegraph, frames coloured by kind with a legend, the thread filter narrows it, and the
// process's merged CPU + GPU view is drawn by CPU time, GPU time and both side by side.
//
//   node ui_test.mjs --warpscope <build>/bin/warpscope --out <build>/test-output/browser \
//        --profile-fixtures <build>/bin/write_profile_fixtures \
//        [--node-modules <dir with playwright-core>] [--chromium /usr/bin/chromium]
// Exit codes: 0 pass, 1 fail, 77 skipped (no Chromium or no playwright-core).
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadAllCharts } from './harness.mjs';
import { insightsScenario, startInsightsServers } from './insights.mjs';
import { TRAINING_STACKS, encodeCpuProfile } from './pprof.mjs';

const SKIP = 77;
const here = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const arg = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : fallback;
};
const warpscope = arg('--warpscope');
const fixtureWriter = arg('--profile-fixtures');
const outDir = path.resolve(arg('--out', path.join(os.tmpdir(), 'warpscope-browser')));
const chromiumPath = arg('--chromium', process.env.WARPSCOPE_CHROMIUM ?? '/usr/bin/chromium');
const nodeModules = path.resolve(arg('--node-modules', path.join(here, '..', '..', 'web', 'node_modules')));

if (!warpscope || !fs.existsSync(warpscope)) {
  console.error(`--warpscope must name the built warpscope binary (got ${warpscope})`);
  process.exit(1);
}
if (!fixtureWriter || !fs.existsSync(fixtureWriter)) {
  console.error(`--profile-fixtures must name the built write_profile_fixtures (got ${fixtureWriter})`);
  process.exit(1);
}
// A missing peer skips the test, except in CI (CI=true), where it fails: a CI run never passes
// a test that checked nothing.
function missingPeer(message) {
  if (['true', '1'].includes(process.env.CI)) {
    console.error(`FAIL: ${message} (CI=true: a missing peer fails)`);
    process.exit(1);
  }
  console.log(`SKIP: ${message}`);
  process.exit(SKIP);
}
if (!fs.existsSync(chromiumPath)) {
  missingPeer(`no Chromium at ${chromiumPath} (run scripts/setup.sh --test, or pass --chromium)`);
}
let chromium;
try {
  chromium = createRequire(path.join(nodeModules, 'noop.js'))('playwright-core').chromium;
} catch (e) {
  missingPeer(`playwright-core not found under ${nodeModules} (run npm ci in web/): ${e.message}`);
}

// The whole test is bounded: a hung browser or server fails it instead of blocking CI.
const deadline = setTimeout(() => {
  console.error('FAIL: the browser test took more than 140 s');
  cleanup();
  process.exit(1);
}, 140_000);

fs.mkdirSync(outDir, { recursive: true });
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'warpscope-ui-test-'));
let server = null;
let browser = null;
// The servers and agents of startPushed (the --auth-read part, the ending process part).
const pushedChildren = [];
function cleanup() {
  for (const c of [server, ...pushedChildren]) {
    if (c && c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  }
  try {
    fs.rmSync(dataDir, { recursive: true, force: true });
  } catch (e) {
    console.error(`could not remove ${dataDir}: ${e.message}`);
  }
}

// SIGTERM, then waits for the exit (SIGKILL after 10 s) so that nothing writes to the data dir
// while it is removed.
function stopChild(child) {
  if (!child || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const force = setTimeout(() => child.kill('SIGKILL'), 10_000);
    child.once('exit', () => {
      clearTimeout(force);
      resolve();
    });
    child.kill('SIGTERM');
  });
}
const stopServer = () => stopChild(server);
const stopAll = () => Promise.all([stopServer(), ...pushedChildren.map(stopChild)]);

// `warpscope server` in dataDir/<name> and `warpscope agent --simulate` (as `hostname`) pushing to
// it every second; with `auth`, the server requires a token file's token for reads too
// (--auth-read, which `warpscope up` has not). Resolves to {base, token} once the server is up.
async function startPushed(name, scenario, hostname, auth) {
  const dir = path.join(dataDir, name);
  fs.mkdirSync(dir, { recursive: true });
  const token = `ui-test-${Math.random().toString(16).slice(2)}${Date.now().toString(16)}`;
  const tokenFile = path.join(dir, 'token');
  if (auth) fs.writeFileSync(tokenFile, token + '\n', { mode: 0o600 });
  const [port, agentPort] = [await freePort(), await freePort()];
  const base = `http://127.0.0.1:${port}`;
  const spawnLogged = (what, argv) => {
    const child = spawn(warpscope, argv, { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d) => (err = (err + d).slice(-4000)));
    child.on('exit', (code) => {
      if (code) console.error(`warpscope ${what} (${name}) exited with ${code}:\n${err}`);
    });
    pushedChildren.push(child);
    return child;
  };
  const authFlags = auth ? ['--auth-token-file', tokenFile] : [];
  spawnLogged('server', ['server', '--data-dir', path.join(dir, 'data'), '--listen-address', `127.0.0.1:${port}`, ...authFlags, ...(auth ? ['--auth-read'] : [])]);
  await until(`the ${name} server`, async () => (await fetch(`${base}/healthz`)).ok, 15_000);
  spawnLogged('agent', [
    'agent', '--simulate', scenario, '--hostname', hostname, '--collect-metrics-interval', '250ms', '--export-metrics-interval', '1s',
    '--listen-address', `127.0.0.1:${agentPort}`, '--server', base, ...authFlags, '--buffer-dir', path.join(dir, 'spool'),
  ]);
  return { base, token };
}

const startAuthServer = (scenario = 'healthy-8xh100') => startPushed('auth-read', scenario, 'auth-node', true);

// One GPU with a trainer that keeps running and an evaluator that ends 30 s into the run: the UI
// must not show the evaluator as if it still ran once it has ended.
const ENDING_SCENARIO = `name: ending-process
seed: 3
driver: {version: "550.127.08", nvml_version: "12.550.127.08", cuda_version: 12040}
devices:
  - name: "NVIDIA H100 80GB HBM3"
    architecture: hopper
    memory_total: 80GiB
    signals: {gpu_util: 90}
    processes:
      - {pid: 41001, name: trainer, memory: 30GiB, sm_util: 60}
      - {pid: 41002, name: evaluator, memory: 20GiB, sm_util: 30, stop: 30s}
`;
function startEndingServer() {
  const file = path.join(dataDir, 'ending-process.yaml');
  fs.writeFileSync(file, ENDING_SCENARIO);
  return startPushed('ending', file, 'ending-node', false);
}

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

async function startServer(scenario = 'healthy-8xh100') {
  const agentPort = await freePort();
  const dir = path.join(dataDir, scenario);
  // The CPU profiler is off: the checks below read exact shares of the profiles posted here.
  server = spawn(warpscope, ['up', '--simulate', scenario, '--workloads', 'none', '--no-cpu-profiler', '--data-dir', dir, '--port', '0', '--agent-port', String(agentPort)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  server.stderr.on('data', (d) => (err += d));
  return new Promise((resolve, reject) => {
    server.stdout.on('data', (d) => {
      out += d;
      const m = /web UI\s+(http:\/\/127\.0\.0\.1:\d+)\//.exec(out);
      if (m) resolve(m[1]);
    });
    server.on('exit', (code) => reject(new Error(`warpscope up exited with ${code}:\n${out}\n${err}`)));
  });
}

async function api(base, p, token) {
  const r = await fetch(base + p, token ? { headers: { Authorization: `Bearer ${token}` } } : {});
  if (!r.ok) throw new Error(`${p}: HTTP ${r.status} ${await r.text()}`);
  return r.json();
}

// Polls `probe` until it returns a truthy value (the agent exports every 10 s).
async function until(what, probe, timeoutMs = 45_000) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe().catch(() => null);
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

function check(cond, message) {
  if (!cond) throw new Error(message);
  console.log(`ok - ${message}`);
}

// Numbers in a text like "98.2 %" or "5.24 kW".
function numbers(text) {
  return [...text.matchAll(/-?\d+(?:\.\d+)?/g)].map((m) => Number(m[0]));
}

let authServer = null;
let endingServer = null;

// A tab in a browser context of its own, and the console errors and page errors it collects.
async function newPage() {
  const context = await browser.newContext({ viewport: { width: 1440, height: 1000 }, colorScheme: 'light' });
  const page = await context.newPage();
  const errors = [];
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  page.on('pageerror', (e) => errors.push(String(e)));
  return { page, errors };
}

async function main() {
  // The --auth-read server starts now, so its agent has data by the time its part runs.
  authServer = startAuthServer();
  authServer.catch(() => undefined);
  endingServer = startEndingServer();
  endingServer.catch(() => undefined);
  // Insights (insights.mjs): windows posted to a server with insights off, then served with them on.
  const insightsT = {
    warpscope, dataDir, freePort, until, stopChild, newPage, check,
    children: pushedChildren,
    ready: (p) => p.waitForFunction(() => document.querySelector('main')?.getAttribute('aria-busy') === 'false'),
    shot: (p, name, fullPage = true) => p.screenshot({ path: path.join(outDir, `${name}.png`), fullPage }),
  };
  const insightsOff = startInsightsServers(insightsT);
  insightsOff.catch(() => undefined);
  browser = await chromium.launch({
    executablePath: chromiumPath,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  // Opened while the evaluator runs, checked after it has ended (part 12).
  const liveEnding = openLiveEnding(endingServer);
  liveEnding.catch(() => undefined);
  const base = await startServer();
  console.log(`server at ${base}`);
  const host = await until('the host entity', async () => (await api(base, '/api/v1/entities?kind=host')).entities[0]?.id);
  await until('two windows of GPU data', async () => {
    const r = await api(base, '/api/v1/query_range?metric=gpu.utilization&start=now-5m');
    return r.series.length === 8 && r.series.every((s) => s.points.length >= 2);
  });
  await until('GPU process data', async () => (await api(base, '/api/v1/breakdown?metric=gpu.process.sm.utilization&start=now-5m')).groups.length > 0);

  const token = fs.readFileSync(path.join(dataDir, 'healthy-8xh100', 'token'), 'utf8').trim();
  const now = Date.now() / 1000;
  const pprof = encodeCpuProfile(TRAINING_STACKS);
  const posted = await fetch(`${base}/api/v1/ingest/profile?host=${encodeURIComponent(host)}&kind=cpu&entity=pid/31000/0&pid=31000&executable=python3&start=${Math.floor(now - 600)}&end=${Math.ceil(now + 120)}`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/octet-stream' },
    body: pprof,
  });
  check(posted.ok, `synthetic pprof stored (${posted.status})`);

  const { page, errors } = await newPage();
  // Full pages, from the top; with the profile panel (fixed at the bottom) the viewport only.
  const shot = async (name, fullPage = true) => {
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: path.join(outDir, `${name}.png`), fullPage });
    console.log(`screenshot ${path.join(outDir, name + '.png')}`);
  };
  const ready = () => page.waitForFunction(() => document.querySelector('main')?.getAttribute('aria-busy') === 'false');

  // 1. Fleet overview.
  await page.goto(`${base}/?range=15m`);
  await ready();
  const utilTile = await page.locator('[data-testid=tile-gpu-utilization] .tile-value').textContent();
  const util = numbers(utilTile)[0];
  check(util > 90 && util <= 100, `fleet GPU utilization tile shows the scenario's ~98 % (${utilTile})`);
  const powerTile = await page.locator('[data-testid=tile-gpu-power] .tile-value').textContent();
  const kw = numbers(powerTile)[0];
  check(/kW/.test(powerTile) && kw > 4.6 && kw < 5.8, `fleet power tile shows 8 x ~655 W (${powerTile})`);
  check((await page.locator('[data-testid=hosts-table] tbody tr').count()) === 1, 'fleet lists the host');
  await page.waitForSelector('.chart canvas');
  await shot('01-fleet');

  // 2. Top entities: GPUs by utilization, from the tile.
  await page.click('[data-testid=tile-gpu-utilization]');
  await page.waitForURL(/\/top\?kind=gpu&sort=gpu\.utilization/);
  await ready();
  const rows = page.locator('[data-testid=top-table] tbody tr');
  check((await rows.count()) === 8, 'top entities lists the 8 GPUs');
  const firstUtil = numbers(await rows.first().locator('td.num').first().textContent())[0];
  check(firstUtil > 90 && firstUtil <= 100, `top GPU utilization ~98 % (${firstUtil})`);
  check((await page.locator('[data-testid=top-table] tbody svg.spark').count()) === 8, 'every GPU row has a sparkline');
  // Sorting by another column changes the URL.
  await page.click('[data-testid=top-table] th a:has-text("Power")');
  await page.waitForURL(/sort=gpu\.power\.usage/);
  await ready();
  await shot('02-top-entities');

  // Containers: the simulated processes run outside containers, which the tab says.
  await page.click('nav.subtabs a:has-text("Containers")');
  await page.waitForURL(/kind=container/);
  await ready();
  check(/No GPU process ran in a container/.test(await page.locator('[data-testid=top-table]').textContent()), 'the containers tab says no GPU process runs in a container');
  await page.goBack();
  await page.waitForURL(/sort=gpu\.power\.usage/);
  await ready();

  // 3. Host page, GPU Metrics tab, from the first GPU's host (its name opens its GPU page).
  await rows.first().locator('a[data-testid=host-link]').click();
  await page.waitForURL(/\/host\/.+tab=gpu/);
  await ready();
  const widgets = ['util', 'consumer', 'sm', 'occupancy', 'tensor', 'memutil', 'memconsumer', 'power', 'temp', 'pcietx', 'pcierx', 'nvlinktx', 'nvlinkrx'];
  // The charts below the first screen load as they come near the viewport.
  await loadAllCharts(page);
  for (const id of widgets) {
    await page.locator(`[data-testid=widget-${id}] canvas`).first().waitFor();
  }
  const charted = [];
  for (const id of widgets) {
    if ((await page.locator(`[data-testid=widget-${id}] canvas`).count()) > 0) charted.push(id);
  }
  check(charted.length === 13 && (await page.locator('[data-testid^=widget-]').count()) >= 13,
    `GPU Metrics tab shows all 13 widgets with charts (${charted.join(', ')})`);
  const legend = await page.locator('[data-testid=widget-power] .u-legend .u-series').allTextContents();
  check(legend.filter((t) => /GPU \d/.test(t)).length === 8, 'the power chart has one line per GPU');
  // Hover the right end of the power chart: every chart's legend shows the values at the
  // cursor (the crosshair is shared).
  const over = page.locator('[data-testid=widget-power] .u-over');
  const box = await over.boundingBox();
  await over.hover({ position: { x: box.width - 3, y: box.height / 2 } });
  await page.waitForFunction(() => document.querySelector('[data-testid=widget-temp] .u-legend .u-value')?.textContent !== '--');
  const legendValues = async (id) =>
    (await page.locator(`[data-testid=widget-${id}] .u-legend .u-series:not(:first-child) .u-value`).allTextContents())
      .map((t) => numbers(t)[0])
      .filter((v) => Number.isFinite(v));
  const powerValues = await legendValues('power');
  check(powerValues.length === 8 && powerValues.every((v) => v > 590 && v < 720), `power legend reads 8 values around 655 W (${powerValues.join(', ')})`);
  const temps = await legendValues('temp');
  check(temps.length === 8 && temps.every((v) => v > 55 && v < 72), `temperature legend (shared crosshair) reads 8 values around 63 °C (${temps.join(', ')})`);
  const utils = await legendValues('util');
  check(utils.length === 8 && utils.every((v) => v > 90 && v <= 100), `utilization legend reads 8 values around 98 % (${utils.join(', ')})`);
  check((await page.locator('[data-testid=unavailable]').count()) === 0, 'every metric is available on H100 (nothing marked unavailable)');
  await shot('03-host-gpu-metrics');

  // 4. Expand GPU utilization: per-process breakdown stacked by executable.
  await page.click('[data-testid=expand-util]');
  await page.waitForURL(/expand=util/);
  await ready();
  await page.locator('[data-testid=widget-util-breakdown] canvas').first().waitFor();
  await loadAllCharts(page);
  const breakdownLegend = await page.locator('[data-testid=widget-util-breakdown] .u-legend .u-series').allTextContents();
  check(breakdownLegend.some((t) => t.includes('python3')), 'the breakdown groups the GPU processes by executable (python3)');
  await shot('04-gpu-breakdown');

  // 5. Click a data point: a GPU line opens that GPU's GPU profile; the window has only the
  // posted CPU profile, so the panel offers it, and renders it as a flamegraph.
  const utilOver = page.locator('[data-testid=widget-util] .u-over').first();
  const ub = await utilOver.boundingBox();
  await utilOver.click({ position: { x: ub.width - 4, y: ub.height / 3 } });
  await page.waitForURL(/[?&]p=\d+-\d+.*pk=gpu/);
  await page.locator('[data-testid=other-kinds]').click();
  await page.waitForURL(/pk=cpu/);
  await page.locator('[data-testid=flamegraph] canvas').waitFor();
  const fnTable = await page.locator('[data-testid=top-functions]').textContent();
  check(fnTable.includes('matmul') && fnTable.includes('decode_jpeg'), 'the top-functions table lists the profile\'s functions');
  await page.fill('[data-testid=flame-search]', 'matmul');
  await page.waitForURL(/pq=matmul/);
  await page.locator('[data-testid=flamegraph] canvas').waitFor();
  await page.waitForFunction(() => /of the window matches/.test(document.querySelector('.toolbar .muted')?.textContent ?? ''));
  const matchText = await page.locator('.toolbar .muted').textContent();
  check(/^70(\.0)? %/.test(matchText.trim()), `searching "matmul" matches 210 of 300 samples (${matchText})`);
  const pprofBytes = await downloadedBytes(page);
  check(pprofBytes > 20, `the pprof button downloads the merged profile (${pprofBytes} bytes)`);
  await shot('05-profile-flamegraph', false);

  // 6. The back button closes the panel (the URL holds the whole view).
  await page.goBack();
  await page.waitForFunction(() => !document.querySelector('[data-testid=profile-panel]'));
  check(!/[?&]p=/.test(page.url()), `back returns to the view without the profile panel (${page.url()})`);

  // 7. A window without profiles says what to enable.
  const old = Math.floor(Date.now() / 1000) - 3 * 3600;
  await page.goto(`${base}/host/${encodeURIComponent(host)}?tab=gpu&range=15m&p=${old}-${old + 60}`);
  await page.locator('[data-testid=no-profile]').waitFor();
  const noProfile = await page.locator('[data-testid=no-profile]').textContent();
  check(/No profile for this window/.test(noProfile) && /CUDA_INJECTION64_PATH/.test(noProfile), 'an empty window says there is no profile and what to enable');
  await shot('06-no-profile', false);

  // 8. Host Metrics tab (the default).
  await page.goto(`${base}/host/${encodeURIComponent(host)}?range=15m`);
  await ready();
  for (const id of ['cpu', 'memory', 'load', 'disk', 'network']) await page.locator(`[data-testid=widget-${id}]`).waitFor();
  check((await page.locator('[role=tab][aria-selected=true]').textContent()) === 'Host Metrics', 'the host page opens on Host Metrics');
  await page.locator('[data-testid=top-processes] tbody tr').first().waitFor();
  await shot('07-host-metrics');

  // 8b. CPU profiles (see the header): click the host CPU chart, filter a thread, merge CPU + GPU.
  await cpuProfiles(page, base, host, token, shot, ready);
  await page.goto(`${base}/host/${encodeURIComponent(host)}?range=15m`);
  await ready();
  await page.locator('[data-testid=widget-cpu] canvas').first().waitFor();

  // 9. Keyboard: "g" switches to the GPU tab, "d" to the dark theme.
  await page.keyboard.press('g');
  await page.waitForURL(/tab=gpu/);
  await ready();
  await page.keyboard.press('d');
  await page.waitForFunction(() => document.documentElement.dataset.theme === 'dark');
  await ready();
  await page.locator('[data-testid=widget-util] canvas').first().waitFor();
  await loadAllCharts(page);
  await shot('08-host-gpu-dark');
  await page.keyboard.press('f');
  await page.waitForURL((u) => new URL(u).pathname === '/');
  await ready();
  await shot('09-fleet-dark');

  // 10. GPUs without GPM (A100, old driver): those metrics are unavailable, never zero.
  await stopServer();
  const oldBase = await startServer('old-driver');
  await until('A100 GPU data', async () => {
    const r = await api(oldBase, '/api/v1/query_range?metric=gpu.utilization&start=now-5m');
    return r.series.length > 0 && r.series.every((x) => x.points.length >= 1);
  });
  await page.goto(`${oldBase}/host/${encodeURIComponent(host)}?tab=gpu&range=15m`);
  await ready();
  await loadAllCharts(page);
  for (const id of ['sm', 'occupancy', 'tensor']) {
    const text = await page.locator(`[data-testid=widget-${id}]`).textContent();
    check(/Unavailable/.test(text) && (await page.locator(`[data-testid=widget-${id}] canvas`).count()) === 0, `${id} is shown as unavailable on A100s (no chart, no zero)`);
  }
  await page.locator('[data-testid=widget-util] canvas').first().waitFor();
  await shot('10-unavailable-gpm-a100');

  // Drag across a chart: the view zooms to that window (in the URL); back returns.
  const zoomOver = page.locator('[data-testid=widget-power] .u-over');
  await zoomOver.scrollIntoViewIfNeeded();
  // A fresh server's chart starts at its data (data-x-min), not 15 min back: a quarter of that.
  const shown = Date.now() / 1000 - Number(await page.locator('[data-testid=widget-power] .chart').getAttribute('data-x-min'));
  const zb = await zoomOver.boundingBox();
  await page.mouse.move(zb.x + zb.width * 0.5, zb.y + zb.height / 2);
  await page.mouse.down();
  await page.mouse.move(zb.x + zb.width * 0.75, zb.y + zb.height / 2, { steps: 5 });
  await page.mouse.up();
  await page.waitForURL(/from=\d+&to=\d+/);
  await ready();
  const zoomed = new URL(page.url());
  const span = Number(zoomed.searchParams.get('to')) - Number(zoomed.searchParams.get('from'));
  check(span > shown * 0.15 && span < shown * 0.35, `dragging over a quarter of the chart (${Math.round(shown)} s shown) zooms to a quarter of it (${span} s)`);
  await page.goBack();
  await page.waitForURL(/range=15m/);
  await ready();

  await endingScenario(page, endingServer, liveEnding);
  const off = await insightsOff;
  await insightsScenario(insightsT, off);

  check(errors.length === 0, `no console errors${errors.length ? ':\n  ' + errors.join('\n  ') : ''}`);
  await stopServer();
  await authScenario(authServer);
}

// Part 8b: the fixture profiles of write_profile_fixtures (a CPU window with threads "python3"
// and "DataLoader", a GPU window of the same process) posted under the pid of `warpscope up`.
async function cpuProfiles(page, base, host, token, shot, ready) {
  const now = Date.now() / 1000;
  const [start, end] = [Math.floor(now - 600), Math.ceil(now + 120)];
  const dir = fs.mkdtempSync(path.join(dataDir, 'fixtures-'));
  await new Promise((resolve, reject) => {
    const child = spawn(fixtureWriter, [dir, String(start), String(end)], { stdio: ['ignore', 'ignore', 'inherit'] });
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`write_profile_fixtures exited with ${code}`))));
  });
  const pid = server.pid;
  for (const kind of ['cpu', 'gpu']) {
    const r = await fetch(`${base}/api/v1/ingest/profile?host=${encodeURIComponent(host)}&kind=${kind}&pid=${pid}&executable=/usr/bin/python3&start=${start}&end=${end}`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/octet-stream' },
      body: fs.readFileSync(path.join(dir, `${kind}.pb.gz`)),
    });
    check(r.ok, `the agent builders' ${kind} profile is stored (${r.status})`);
  }
  const tableText = () => page.locator('[data-testid=top-functions]').textContent();
  const legend = async () => (await page.locator('[data-testid=flame-legend] li').allTextContents()).map((t) => t.trim());

  // A click on the host CPU chart: the CPU flamegraph of that bucket, frames coloured by kind.
  const cpuOver = page.locator('[data-testid=widget-cpu] .u-over').first();
  await cpuOver.scrollIntoViewIfNeeded();
  const cb = await cpuOver.boundingBox();
  await cpuOver.click({ position: { x: cb.width - 4, y: cb.height / 2 } });
  await page.waitForURL(/[?&]p=\d+-\d+.*pk=cpu/);
  await page.locator('[data-testid=flamegraph] canvas').waitFor();
  const kinds = await legend();
  check(['process', 'Python', 'native', 'OS kernel'].every((k) => kinds.includes(k)), `the CPU chart opens the CPU flamegraph, its legend names the frame kinds (${kinds.join(', ')})`);
  const table = await tableText();
  check(table.includes('train_step') && table.includes('next_batch') && /all cores/.test(table), 'the top functions of the CPU profile list the Python frames with their share of all cores');
  // The tooltip names the kind and gives the share of all cores (or says why it is unknown).
  const canvas = page.locator('[data-testid=flamegraph] canvas');
  const fb = await canvas.boundingBox();
  await page.mouse.move(fb.x + 3, fb.y + 30);
  const tip = await page.locator('.flame-tip').textContent();
  check(/kind: /.test(tip) && /(of all \d+ cores of the host|share of all cores unknown)/.test(tip), `the tooltip names the frame's kind and its share of all cores (${tip})`);

  // The thread filter: only the DataLoader thread.
  const threadValue = await page.locator('[data-testid=profile-thread] option', { hasText: 'DataLoader' }).getAttribute('value');
  await page.selectOption('[data-testid=profile-thread]', threadValue);
  await page.waitForURL(new RegExp(`pt=${threadValue}`));
  await page.locator('[data-testid=flamegraph] canvas').waitFor();
  await page.waitForFunction(() => /thread/.test(document.querySelector('[data-testid=profile-summary]')?.textContent ?? ''));
  const threadTable = await tableText();
  check(threadTable.includes('next_batch') && !threadTable.includes('train_step'), 'the thread filter keeps the DataLoader thread\'s frames only');
  await shot('05b-cpu-thread', false);

  // The process: it has CPU and GPU profiles, so the panel offers the merged view.
  await page.selectOption('[data-testid=profile-process]', `pid:${pid}`);
  await page.waitForURL(new RegExp(`pp=${pid}`));
  await page.locator('[data-testid=profile-merged]').click();
  await page.waitForURL(/pm=1/);
  await page.locator('[data-testid=flamegraph] canvas').waitFor();
  const mergedKinds = await legend();
  check(['Python', 'CUDA launch', 'CUDA kernel', 'SASS', 'stall reason'].every((k) => mergedKinds.includes(k)), `the merged view holds CPU and GPU frames (${mergedKinds.join(', ')})`);
  const cpuWeighted = await tableText();
  check(cpuWeighted.includes('train_step') && !cpuWeighted.includes('gemm'), 'the merged view weighted by CPU time lists the CPU frames, not the kernels without CPU time');
  await page.selectOption('[data-testid=profile-weight]', 'gpu');
  await page.waitForURL(/pw=gpu/);
  await page.locator('[data-testid=flamegraph] canvas').waitFor();
  await page.waitForFunction(() => /gemm/.test(document.querySelector('[data-testid=top-functions]')?.textContent ?? ''));
  check(/GPU time/.test(await page.locator('[data-testid=profile-summary]').textContent()), 'weighted by GPU time, the merged view lists the kernel');
  await page.selectOption('[data-testid=profile-weight]', 'both');
  await page.waitForURL(/pw=both/);
  await page.locator('[data-testid=flamegraph-gpu] canvas').waitFor();
  check((await page.locator('[data-testid=flamegraph] canvas').count()) === 1, 'both weights: two flamegraphs of the merged tree side by side');
  // The URL holds the panel's state: a reload shows the same view.
  await page.reload();
  await page.locator('[data-testid=flamegraph-gpu] canvas').waitFor();
  check((await page.locator('[data-testid=profile-weight]').inputValue()) === 'both', 'after a reload the merged view and its weight come back from the URL');
  await shot('05c-merged-cpu-gpu', false);
  // The dark theme: the panel is drawn again with the dark kind colours.
  const themeButton = page.locator('button[aria-label="Switch theme"]');
  await themeButton.click();
  await page.waitForFunction(() => document.documentElement.dataset.theme === 'dark');
  await page.locator('[data-testid=flamegraph-gpu] canvas').waitFor();
  check((await legend()).includes('CUDA kernel'), 'the dark theme draws the merged view with its legend');
  await shot('05d-merged-cpu-gpu-dark', false);
  await page.locator('button[aria-label="Switch theme"]').click();
  await page.waitForFunction(() => document.documentElement.dataset.theme !== 'dark');
  await ready();
}

const ENDING_HOST = 'ending-node';
const waitReady = (page) => page.waitForFunction(() => document.querySelector('main')?.getAttribute('aria-busy') === 'false');
// The legend rows of a widget's chart but the time: [{label, value}].
const legendRows = (page, id) =>
  page.locator(`[data-testid=widget-${id}] .u-legend .u-series:not(:first-child)`).evaluateAll((rows) =>
    rows.map((r) => ({ label: r.querySelector('.u-label')?.textContent ?? '', value: r.querySelector('.u-value')?.textContent ?? '' })),
  );
const evaluatorValue = async (page, id) => (await legendRows(page, id)).find((r) => r.label === 'evaluator')?.value;

// 12a. The ending host's GPU page in live mode, in a tab of its own, opened while the evaluator
// runs: the per-process stack shows it as current. Resolves to {page, errors}.
async function openLiveEnding(started) {
  const { base } = await started;
  await until('the evaluator on the GPU', async () => (await api(base, `/api/v1/breakdown?metric=gpu.process.sm.utilization&host=${ENDING_HOST}&start=now-5m`)).groups.some((g) => g.key === 'evaluator'), 20_000);
  const { page, errors } = await newPage();
  await page.goto(`${base}/host/${ENDING_HOST}?tab=gpu&expand=util&range=15m&live=1`);
  await waitReady(page);
  await page.locator('[data-testid=widget-util-breakdown] canvas').first().waitFor();
  const value = await evaluatorValue(page, 'util-breakdown');
  check(value !== undefined && numbers(value)[0] > 0, `while it runs, the evaluator has a current value in the live per-process stack (${value})`);
  return { page, errors };
}

// 12. A GPU process that ended (the evaluator of ENDING_SCENARIO, 30 s into the run) next to one
// that runs on: the server counts it among the processes that ran; the per-process stacks show no
// current value for it (no value carried on after its last point), also in the live tab opened
// while it ran, while the trainer has one; and a window after its end no longer lists it.
async function endingScenario(page, started, liveEnding) {
  const { base } = await started;
  const breakdown = (metric, start) => api(base, `/api/v1/breakdown?metric=${metric}&host=${ENDING_HOST}&start=${start}`);
  const lastTime = (r, key) => Math.max(...(r.groups.find((g) => g.key === key)?.points ?? []).map((p) => p[0]));
  // Until the evaluator's last 10 s step is two steps behind the trainer's.
  const settled = await until('the evaluator to have ended', async () => {
    const r = await breakdown('gpu.process.sm.utilization', 'now-15m');
    const [trainer, evaluator] = [lastTime(r, 'trainer'), lastTime(r, 'evaluator')];
    return Number.isFinite(evaluator) && trainer - evaluator > r.step ? { r, trainer, evaluator } : null;
  });
  // The stack of one GPU's processes never exceeds the GPU.
  const sums = new Map();
  for (const g of settled.r.groups) for (const [t, v] of g.points) sums.set(t, (sums.get(t) ?? 0) + (v ?? 0));
  check([...sums.values()].every((v) => v <= 1 + 1e-9), `the per-process stack of the GPU stays at or below 100 % (max ${Math.max(...sums.values()).toFixed(3)})`);
  const fleet = await api(base, '/api/v1/fleet?start=now-15m');
  check(fleet.totals.gpu_processes === 2, `the fleet counts both processes that ran in the window, the ended one included (${fleet.totals.gpu_processes})`);

  // The live tab refreshes every 10 s (the same lines: the chart is updated, not rebuilt).
  const live = await liveEnding;
  const gone = await until('the live legend to drop the evaluator\'s value', async () => ((await evaluatorValue(live.page, 'util-breakdown')) === '–' ? true : null), 30_000).catch(() => false);
  check(gone, `in live mode the ended evaluator has no current value any more (${await evaluatorValue(live.page, 'util-breakdown')})`);
  check(live.errors.length === 0, `no console errors in the live tab${live.errors.length ? ':\n  ' + live.errors.join('\n  ') : ''}`);
  await live.page.context().close();

  await page.goto(`${base}/?range=15m`);
  await waitReady(page);
  const tile = page.locator('a.tile:has-text("GPU processes")');
  const [count, sub] = [await tile.locator('.tile-value').textContent(), await tile.locator('.tile-sub').textContent()];
  check(count === '2' && sub === 'that ran in the window', `the fleet tile counts the GPU processes that ran in the window, the ended one included (${count}, ${sub})`);

  await page.goto(`${base}/host/${ENDING_HOST}?tab=gpu&expand=util&range=15m`);
  await waitReady(page);
  await page.locator('[data-testid=widget-util-breakdown] canvas').first().waitFor();
  await page.mouse.move(0, 0); // no cursor on any chart: the legends show the current values
  for (const id of ['util-breakdown', 'consumer']) {
    const rows = await legendRows(page, id);
    const evaluator = rows.find((r) => r.label === 'evaluator');
    const trainer = rows.find((r) => r.label === 'trainer');
    check(evaluator !== undefined && trainer !== undefined, `the ${id} legend lists the evaluator, which ran in the window, and the trainer (${JSON.stringify(rows)})`);
    check(evaluator.value === '–', `the ended evaluator has no current value in the ${id} legend (${evaluator.value})`);
    check(numbers(trainer.value)[0] > 0, `the running trainer shows its current value in the ${id} legend (${trainer.value})`);
  }
  await page.screenshot({ path: path.join(outDir, '14-ended-process.png'), fullPage: true });

  // A window that starts after the evaluator's end: it has left the legend.
  const from = Math.ceil(settled.evaluator) + 2 * settled.r.step;
  await page.goto(`${base}/host/${ENDING_HOST}?tab=gpu&expand=util&from=${from}&to=${Math.floor(Date.now() / 1000)}`);
  await waitReady(page);
  await page.locator('[data-testid=widget-util-breakdown] canvas').first().waitFor();
  const after = (await legendRows(page, 'util-breakdown')).map((r) => r.label);
  check(after.includes('trainer') && !after.includes('evaluator'), `after its end the evaluator has left the legend (${after.join(', ')})`);
}

// Clicks the profile panel's pprof button; resolves to the size of the downloaded file.
async function downloadedBytes(page) {
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('[data-testid=pprof-download]')]);
  const file = await download.path();
  return file ? fs.statSync(file).size : 0;
}

// 11. A server started with --auth-read: sign in, wrong token, right token, sign out.
async function authScenario(started) {
  const { base, token } = await started;
  console.log(`--auth-read server at ${base}`);
  check((await fetch(`${base}/api/v1/fleet`)).status === 401, 'the --auth-read server answers 401 without a token');
  await until('GPU data on the --auth-read server', async () => {
    const r = await api(base, '/api/v1/query_range?metric=gpu.utilization&start=now-5m', token);
    return r.series.length === 8 && r.series.every((x) => x.points.length >= 2);
  });
  const now = Date.now() / 1000;
  const posted = await fetch(`${base}/api/v1/ingest/profile?host=auth-node&kind=cpu&entity=pid/31000/0&pid=31000&executable=python3&start=${Math.floor(now - 600)}&end=${Math.ceil(now + 120)}`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/octet-stream' },
    body: encodeCpuProfile(TRAINING_STACKS),
  });
  check(posted.ok, `synthetic pprof stored on the --auth-read server (${posted.status})`);

  const context = await browser.newContext({ viewport: { width: 1440, height: 900 }, colorScheme: 'light' });
  const page = await context.newPage();
  // The only console errors allowed: Chromium's line for each 401 answer of the API (before
  // sign-in and for the wrong token).
  const errors = [];
  let expected401 = 0;
  page.on('console', (m) => {
    if (m.type() !== 'error') return;
    if (m.text() === 'Failed to load resource: the server responded with a status of 401 (Unauthorized)' && m.location().url.startsWith(`${base}/api/v1/`)) {
      ++expected401;
      return;
    }
    errors.push(m.text());
  });
  page.on('pageerror', (e) => errors.push(String(e)));
  const requests = [];
  page.on('request', (r) => requests.push(r));
  const shot = async (name) => {
    await page.screenshot({ path: path.join(outDir, `${name}.png`) });
    console.log(`screenshot ${path.join(outDir, name + '.png')}`);
  };

  await page.goto(`${base}/?range=15m`);
  await page.locator('[data-testid=signin]').waitFor();
  check(expected401 > 0 && errors.length === 0, `without a token the sign-in panel appears (${expected401} expected 401 console lines, no other error)`);
  check((await page.getByLabel('Access token').count()) === 1, 'the token field is labelled "Access token"');
  check(await page.evaluate(() => document.activeElement?.id === 'signin-token'), 'the token field has the keyboard focus');
  check(/--auth-token-file/.test(await page.locator('[data-testid=signin]').textContent()), 'the panel says where the token is (--auth-token-file)');
  await shot('11-signin');

  // A wrong token: the server's answer, and the panel asks again.
  await page.keyboard.type('not-the-token');
  await page.keyboard.press('Enter');
  await page.locator('[data-testid=signin-error]').waitFor({ state: 'visible' });
  const wrong = await page.locator('[data-testid=signin-error]').textContent();
  check(/invalid bearer token/.test(wrong), `a wrong token shows the server's error (${wrong})`);
  check((await page.locator('[data-testid=signin-token]').getAttribute('aria-invalid')) === 'true', 'the token field is marked invalid');
  await shot('12-signin-wrong-token');

  // The right token: the fleet view loads with the scenario's values.
  await page.fill('[data-testid=signin-token]', token);
  await page.keyboard.press('Enter');
  await page.locator('[data-testid=tile-gpu-utilization]').waitFor();
  await page.waitForFunction(() => document.querySelector('main')?.getAttribute('aria-busy') === 'false');
  const before = expected401;
  const utilTile = await page.locator('[data-testid=tile-gpu-utilization] .tile-value').textContent();
  check(numbers(utilTile)[0] > 90, `after sign-in the fleet shows the scenario's GPU utilization (${utilTile})`);
  const powerTile = await page.locator('[data-testid=tile-gpu-power] .tile-value').textContent();
  check(/kW/.test(powerTile) && numbers(powerTile)[0] > 4.6 && numbers(powerTile)[0] < 5.8, `and its power (${powerTile})`);
  const stored = await page.evaluate(() => [sessionStorage.getItem('warpscope.token'), localStorage.getItem('warpscope.token')]);
  check(stored[0] === token && stored[1] === null, 'the token is kept in sessionStorage (not remembered on the browser)');

  // The profile download sends the token too (fetch + blob URL).
  const t = Math.floor(Date.now() / 1000);
  await page.goto(`${base}/host/auth-node?range=15m&p=${t - 300}-${t}`);
  await page.locator('[data-testid=flamegraph] canvas').waitFor();
  const bytes = await downloadedBytes(page);
  check(bytes > 20, `with the token the pprof button downloads the profile (${bytes} bytes)`);
  check(expected401 === before, 'no request was refused after sign-in');
  const leaked = requests.filter((r) => r.url().includes(token));
  check(leaked.length === 0 && !page.url().includes(token), 'the token never appears in a URL');
  const apiRequests = requests.filter((r) => r.url().startsWith(`${base}/api/`));
  const auths = await Promise.all(apiRequests.slice(-5).map(async (r) => (await r.allHeaders()).authorization));
  check(auths.length === 5 && auths.every((a) => a === `Bearer ${token}`), 'API requests (the pprof download among them) carry Authorization: Bearer <token>');

  // Sign out: the token is forgotten and the panel asks for it again (dark theme here).
  await page.click('[data-testid=sign-out]');
  await page.locator('[data-testid=signin]').waitFor();
  check((await page.evaluate(() => sessionStorage.getItem('warpscope.token'))) === null, 'sign out forgets the token');
  await page.click('button[aria-label="Switch theme"]');
  await page.waitForFunction(() => document.documentElement.dataset.theme === 'dark');
  await page.locator('[data-testid=signin]').waitFor();
  await shot('13-signin-dark');

  // "Remember on this browser": a new tab of the same browser needs no sign-in.
  await page.fill('[data-testid=signin-token]', token);
  await page.check('[data-testid=signin-remember]');
  await page.click('.signin button[type=submit]');
  await page.locator('[data-testid=sign-out]').waitFor();
  check((await page.evaluate(() => localStorage.getItem('warpscope.token'))) === token, '"Remember on this browser" keeps the token in localStorage');
  const second = await context.newPage();
  second.on('pageerror', (e) => errors.push(String(e)));
  await second.goto(`${base}/?range=15m`);
  await second.locator('[data-testid=tile-gpu-utilization]').waitFor();
  check((await second.locator('[data-testid=signin]').count()) === 0, 'a remembered token signs in a new tab');
  await context.close();
  check(errors.length === 0, `no console errors besides the expected 401s${errors.length ? ':\n  ' + errors.join('\n  ') : ''}`);
}

main()
  .then(async () => {
    await browser?.close();
    await stopAll();
    cleanup();
    clearTimeout(deadline);
    console.log('PASS');
    process.exit(0);
  })
  .catch(async (e) => {
    console.error(`FAIL: ${e.stack ?? e}`);
    await browser?.close().catch(() => undefined);
    await stopAll();
    cleanup();
    process.exit(1);
  });

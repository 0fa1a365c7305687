// SPDX-License-Identifier: Apache-2.0
// What the browser tests share: their peers (Debian's Chromium, playwright-core from the UI's
// npm ci; missing, they skip with exit 77, or fail under CI=true), a temp data dir, an overall
// deadline, `warpscope up --simulate <scenario>` on port 0 (by default healthy-8xh100 without the
// demo workloads: most tests post their own profiles), and polling and checks.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export function missingPeer(message) {
  if (['true', '1'].includes(process.env.CI)) {
    console.error(`FAIL: ${message} (CI=true: a missing peer fails)`);
    process.exit(1);
  }
  console.log(`SKIP: ${message}`);
  process.exit(77);
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

// The command line every browser test takes: --warpscope (and the binaries named in `binaries`,
// e.g. ['--profile-fixtures']) must name built files; --out, --chromium and --node-modules have
// defaults. Exits 1 with the flag to fix otherwise.
export function browserTestArgs(binaries = []) {
  const args = process.argv.slice(2);
  const arg = (name, fallback) => {
    const i = args.indexOf(name);
    return i >= 0 && i + 1 < args.length ? args[i + 1] : fallback;
  };
  for (const flag of ['--warpscope', ...binaries]) {
    const file = arg(flag);
    if (!file || !fs.existsSync(file)) {
      console.error(`${flag} must name the built binary (got ${file})`);
      process.exit(1);
    }
  }
  const here = path.dirname(fileURLToPath(import.meta.url));
  return {
    arg,
    warpscope: arg('--warpscope'),
    outDir: path.resolve(arg('--out', path.join(os.tmpdir(), 'warpscope-browser'))),
    chromiumPath: arg('--chromium', process.env.WARPSCOPE_CHROMIUM ?? '/usr/bin/chromium'),
    nodeModules: path.resolve(arg('--node-modules', path.join(here, '..', '..', 'web', 'node_modules'))),
  };
}

// The test's context: `chromium` (playwright's), `dataDir`, `server` (the `up` process once
// started), `startUp(dir, options)` (resolves to the UI's base URL; `stdout` then holds what up
// printed), `cleanup()` and the `deadline` timer (clear it when done). `name` names the temp dir,
// `what` the test in the deadline's message. startUp's options: `scenario`, `workloads` (up's
// --workloads), `cpuProfiler` and `env` (added to the environment).
export function setUpBrowserTest({ name, what, timeoutMs, warpscope, outDir, chromiumPath, nodeModules }) {
  if (!fs.existsSync(chromiumPath)) missingPeer(`no Chromium at ${chromiumPath} (run scripts/setup.sh --test, or pass --chromium)`);
  const t = { chromium: null, server: null };
  try {
    t.chromium = createRequire(path.join(nodeModules, 'noop.js'))('playwright-core').chromium;
  } catch (e) {
    missingPeer(`playwright-core not found under ${nodeModules} (run npm ci in web/): ${e.message}`);
  }
  fs.mkdirSync(outDir, { recursive: true });
  t.dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `warpscope-${name}-test-`));
  t.cleanup = () => {
    if (t.server && t.server.exitCode === null && t.server.signalCode === null) t.server.kill('SIGKILL');
    fs.rmSync(t.dataDir, { recursive: true, force: true });
  };
  t.deadline = setTimeout(() => {
    console.error(`FAIL: ${what} took more than ${timeoutMs / 1000} s`);
    t.cleanup();
    process.exit(1);
  }, timeoutMs);
  t.startUp = async (dir, { scenario = 'healthy-8xh100', workloads = 'none', cpuProfiler = false, env = {} } = {}) => {
    const agentPort = await freePort();
    const flags = ['up', '--simulate', scenario, '--workloads', workloads, ...(cpuProfiler ? [] : ['--no-cpu-profiler'])];
    t.server = spawn(warpscope, [...flags, '--data-dir', dir, '--port', '0', '--agent-port', String(agentPort)], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
    let out = '';
    let err = '';
    t.stdout = '';
    t.server.stderr.on('data', (d) => (err = (err + d).slice(-8000)));
    return new Promise((resolve, reject) => {
      t.server.stdout.on('data', (d) => {
        out += d;
        t.stdout = out;
        const m = /web UI\s+(http:\/\/127\.0\.0\.1:\d+)\//.exec(out);
        if (m) resolve(m[1]);
      });
      t.server.on('exit', (code) => reject(new Error(`warpscope up exited with ${code}:\n${out}\n${err}`)));
    });
  };
  // Headless Chromium, kept in t.browser for runBrowserTest to close.
  t.launchBrowser = async () => {
    t.browser = await t.chromium.launch({
      executablePath: chromiumPath,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    return t.browser;
  };
  return t;
}

// Runs the test's `main` and exits: 0 (PASS) once it resolves, after the browser is closed and
// `up` stopped (SIGTERM, then SIGKILL after 10 s, so that nothing writes to the removed data
// dir); 1 (FAIL with the error) when it throws.
export function runBrowserTest(t, main) {
  main()
    .then(async () => {
      clearTimeout(t.deadline);
      await t.browser?.close();
      await new Promise((resolve) => {
        const s = t.server;
        if (!s || s.exitCode !== null || s.signalCode !== null) return resolve();
        const force = setTimeout(() => s.kill('SIGKILL'), 10_000);
        s.once('exit', () => {
          clearTimeout(force);
          resolve();
        });
        s.kill('SIGTERM');
      });
      t.cleanup();
      console.log('PASS');
      process.exit(0);
    })
    .catch(async (e) => {
      console.error(`FAIL: ${e.stack ?? e}`);
      clearTimeout(t.deadline);
      await t.browser?.close().catch(() => undefined);
      t.cleanup();
      process.exit(1);
    });
}

export async function api(base, p) {
  const r = await fetch(base + p);
  if (!r.ok) throw new Error(`${p}: HTTP ${r.status} ${await r.text()}`);
  return r.json();
}

// Polls `probe` every 250 ms until it gives a truthy value (returned) or `timeoutMs` passes.
export async function until(what, probe, timeoutMs = 45_000) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe().catch(() => null);
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

export function check(cond, message) {
  if (!cond) throw new Error(message);
  console.log(`ok - ${message}`);
}

// The host page's GPU Metrics tab loads its charts as they come near the viewport
// (web/src/lazy_loads.ts). loadChart scrolls to one card (data-testid=widget-ID) and waits until
// it has loaded (its chart drawn or its "unavailable" note shown); loadAllCharts does so for
// every card not loaded yet, in page order, then scrolls back to the top (before a full-page
// screenshot or checks of every chart).
export async function loadChart(page, id) {
  const card = page.locator(`[data-testid=widget-${id}]`);
  await card.scrollIntoViewIfNeeded();
  await page.waitForFunction((sel) => document.querySelector(sel)?.getAttribute('data-load') !== 'idle' && document.querySelector(sel)?.getAttribute('data-load') !== 'loading', `[data-testid=widget-${id}]`);
}

export async function loadAllCharts(page) {
  await page.evaluate(async () => {
    const frame = () => new Promise((r) => requestAnimationFrame(() => r()));
    for (const el of document.querySelectorAll('[data-load]')) {
      if (el.getAttribute('data-load') === 'done') continue;
      el.scrollIntoView({ block: 'center' });
      while (el.getAttribute('data-load') !== 'done') await frame();
    }
    window.scrollTo(0, 0);
  });
}

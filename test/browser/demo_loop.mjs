// SPDX-License-Identifier: Apache-2.0
// Browser test of the demo's whole loop, as a new user meets it: `warpscope up --simulate
// dataloader-bound --workloads 3` runs the scenario's data-loader workload on GPU 3 through the
// real pipeline (the injected CUDA library over the fake libcupti, the CPU profiler). On the
// host's GPU tab the user picks GPU 3's line of the utilization chart (with the keyboard
// crosshair: the eight lines run within a few percent of each other, so a mouse position could
// land on a neighbour) and opens it: the profile panel shows the kernels of GPU 3's process with
// their Python launch sites, and by PC samples their SASS instructions and stall reasons; the
// profile kind menu then shows the CPU flamegraph of the same process, its image decoding
// included. Screenshots go to --out.
//
//   node demo_loop.mjs --warpscope <build>/bin/warpscope --out <build>/test-output/browser \
//        [--node-modules <dir with playwright-core>] [--chromium /usr/bin/chromium]
// Exit codes: 0 pass, 1 fail, 77 skipped (no Chromium or no playwright-core; CI=true fails).
import path from 'node:path';
import { api, browserTestArgs, check, runBrowserTest, setUpBrowserTest, until } from './harness.mjs';

const { warpscope, outDir, chromiumPath, nodeModules } = browserTestArgs([]);
const bt = setUpBrowserTest({ name: 'demo', what: 'the demo loop test', timeoutMs: 200_000, warpscope, outDir, chromiumPath, nodeModules });
const { dataDir } = bt;
let browser = null;

// The merged tree's node names, depth first.
function names(node, out = []) {
  out.push(node.name);
  for (const c of node.children ?? []) names(c, out);
  return out;
}

async function main() {
  browser = await bt.launchBrowser();
  // The agent's socket and the workload's files stay in the test's own dir.
  const base = await bt.startUp(dataDir, {
    scenario: 'dataloader-bound',
    workloads: '3',
    cpuProfiler: true,
    env: { WARPSCOPE_AGENT_SOCKET: path.join(dataDir, 'agent.sock'), TMPDIR: dataDir },
  });
  const pid = Number(await until('up to name the workload', async () => /GPU 3 pid (\d+) \(dataloader\)/.exec(bt.stdout)?.[1], 30_000));
  check(pid > 0, `up runs the data-loader workload on GPU 3 (pid ${pid})`);
  const host = await until('the host entity', async () => (await api(base, '/api/v1/entities?kind=host')).entities[0]?.id);
  const merged = (kind) => api(base, `/api/v1/profiles/merged?host=${encodeURIComponent(host)}&kind=${kind}&pid=${pid}&start=now-15m`);
  // Profiles are sent when their window closes: the first of each kind within a minute or so.
  const gpuTree = await until('the workload\'s GPU profile', async () => {
    const r = await merged('gpu');
    return r.profiles > 0 && names(r.root).some((n) => /gemm/.test(n)) ? r : null;
  }, 120_000);
  check(names(gpuTree.root).some((n) => /train\.py/.test(n) || n === 'train_step'), 'the stored GPU profile has the workload\'s Python launch sites');
  await until('the workload\'s CPU profile', async () => (await merged('cpu')).profiles > 0, 60_000);
  // PC samples of its GEMMs (up samples PCs with --simulate): the third sample type.
  await until('PC samples in the workload\'s GPU profile', async () => ((await merged('gpu')).root.total[2] ?? 0) > 0, 60_000);

  const context = await browser.newContext({ viewport: { width: 1440, height: 900 }, colorScheme: 'light' });
  const page = await context.newPage();
  const errors = [];
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  page.on('pageerror', (e) => errors.push(String(e)));
  const ready = () => page.waitForFunction(() => document.querySelector('main')?.getAttribute('aria-busy') === 'false');
  const shot = async (name) => {
    await page.screenshot({ path: path.join(outDir, `${name}.png`) });
    console.log(`screenshot ${path.join(outDir, name + '.png')}`);
  };
  const table = () => page.locator('[data-testid=top-functions]').textContent();

  // GPU 3's line of the utilization chart, at the latest time, with the keyboard crosshair.
  await page.goto(`${base}/host/${encodeURIComponent(host)}?tab=gpu&range=15m`);
  await ready();
  const widget = page.locator('[data-testid=widget-util]');
  const over = widget.locator('.u-over').first();
  await over.waitFor();
  await over.focus();
  await page.keyboard.press('End');
  for (let i = 0; i < 8 && (await widget.locator('[data-cursor-line]').first().getAttribute('data-cursor-line')) !== 'GPU 3'; i++) {
    await page.keyboard.press('ArrowUp');
  }
  const line = await widget.locator('[data-cursor-line]').first().getAttribute('data-cursor-line');
  check(line === 'GPU 3', `the arrow keys reach GPU 3's line of the utilization chart (${line})`);
  await page.keyboard.press('Enter');
  await page.waitForURL(/pk=gpu/);
  await page.locator('[data-testid=flamegraph] canvas').waitFor();
  const opened = new URL(page.url()).searchParams;
  check(opened.get('pp') === String(pid) && opened.get('pl') === 'device:3', `opening GPU 3's line opens its process, pid ${pid}, on device 3 (${page.url()})`);
  await page.waitForFunction(() => /gemm/.test(document.querySelector('[data-testid=top-functions]')?.textContent ?? ''));
  let t = await table();
  check(/gemm/.test(t) && /train\.py:\d+/.test(t), `the profile shows GPU 3's kernels and their Python launch sites (${t.slice(0, 300)})`);
  await shot('demo-01-gpu3-kernels');

  const gpuView = new URL(page.url());

  // The same process's CPU flamegraph, from the profile kind menu.
  await page.locator('select[aria-label="Profile kind"]').selectOption('cpu');
  await page.waitForURL(/pk=cpu/);
  await page.locator('[data-testid=flamegraph] canvas').waitFor();
  check(new URL(page.url()).searchParams.get('pp') === String(pid), `the CPU profile keeps the process (${page.url()})`);
  await page.waitForFunction(() => /decode|Decode/.test(document.querySelector('[data-testid=top-functions]')?.textContent ?? ''), null, { timeout: 30_000 });
  t = await table();
  check(/decode|Decode/.test(t), `the CPU flamegraph of the same process shows its image decoding (${t.slice(0, 300)})`);
  await shot('demo-02-cpu-same-process');

  // The same kernels by PC samples: SASS instructions and the warps' stall reasons under them.
  await page.goto(gpuView.href);
  await page.locator('[data-testid=flamegraph] canvas').waitFor();
  await page.locator('select[aria-label="Sample type"]').selectOption({ label: 'pc_samples (count)' });
  await page.waitForURL(/pv=2/);
  await page.waitForFunction(() => /\[stall\] /.test(document.querySelector('[data-testid=top-functions]')?.textContent ?? ''));
  t = await table();
  check(/\[stall\] long_scoreboard/.test(t), `by PC samples the stall reasons lead the top functions (${t.slice(0, 300)})`);
  // Every PC sample is under a SASS instruction of a GEMM: searching for them matches it all.
  await page.locator('[data-testid=flame-search]').fill('^\\[sass\\] 0x[0-9a-f]{4}');
  await page.waitForFunction(() => /100 % of the window matches/.test(document.querySelector('[data-testid=profile-panel]')?.textContent ?? ''));
  check(true, 'every PC sample is under a SASS instruction offset ([sass] 0x....)');
  await shot('demo-03-gpu3-stalls');

  check(errors.length === 0, `no console errors (${errors.join(' | ')})`);
}

runBrowserTest(bt, main);

// SPDX-License-Identifier: Apache-2.0
// Browser test of the click-a-point drill-down against a real `warpscope up --simulate
// healthy-8xh100`: the GPU profile of write_profile_fixtures (built by the agent's CUDA
// profiler builder, with device, stream and NVTX labels) is posted for the last minutes and
// once three hours earlier. A click on GPU 0's line of the GPU utilization chart opens that
// GPU's kernels (label=device:0 in the request and in the totals); the label chips narrow it to
// a stream and an NVTX range; a sample type without samples is not offered; the tooltip and the
// top-functions table name file:line; the charts mark the windows with profiles; a window
// without a profile links to the nearest one. Screenshots go to --out.
//
//   node profile_drill.mjs --warpscope <build>/bin/warpscope --out <build>/test-output/browser \
//        --profile-fixtures <build>/bin/write_profile_fixtures \
//        [--node-modules <dir with playwright-core>] [--chromium /usr/bin/chromium]
// Exit codes: 0 pass, 1 fail, 77 skipped (no Chromium or no playwright-core; CI=true fails).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { api, browserTestArgs, check, runBrowserTest, setUpBrowserTest, until } from './harness.mjs';

const { arg, warpscope, outDir, chromiumPath, nodeModules } = browserTestArgs(['--profile-fixtures']);
const fixtureWriter = arg('--profile-fixtures');
const bt = setUpBrowserTest({ name: 'drill', what: 'the profile drill-down test', timeoutMs: 110_000, warpscope, outDir, chromiumPath, nodeModules });
const { dataDir } = bt;
let browser = null;
const startServer = () => bt.startUp(dataDir);

// The fixture's GPU profile for [start, end), posted under `pid`.
async function postGpuProfile(base, host, token, pid, start, end) {
  const dir = fs.mkdtempSync(path.join(dataDir, 'fixtures-'));
  await new Promise((resolve, reject) => {
    const child = spawn(fixtureWriter, [dir, String(start), String(end)], { stdio: ['ignore', 'ignore', 'inherit'] });
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`write_profile_fixtures exited with ${code}`))));
  });
  const r = await fetch(`${base}/api/v1/ingest/profile?host=${encodeURIComponent(host)}&kind=gpu&pid=${pid}&executable=/usr/bin/python3&start=${start}&end=${end}`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/octet-stream' },
    body: fs.readFileSync(path.join(dir, 'gpu.pb.gz')),
  });
  check(r.ok, `the fixture GPU profile of ${new Date(start * 1000).toISOString()} is stored (${r.status})`);
}

async function main() {
  browser = await bt.launchBrowser();
  const base = await startServer();
  const host = await until('the host entity', async () => (await api(base, '/api/v1/entities?kind=host')).entities[0]?.id);
  await until('two windows of GPU data', async () => {
    const r = await api(base, '/api/v1/query_range?metric=gpu.utilization&start=now-5m');
    return r.series.length === 8 && r.series.every((s) => s.points.length >= 2);
  });
  const token = fs.readFileSync(path.join(dataDir, 'token'), 'utf8').trim();
  const now = Math.floor(Date.now() / 1000);
  const pid = bt.server.pid;
  await postGpuProfile(base, host, token, pid, now - 600, now + 120);
  await postGpuProfile(base, host, token, pid, now - 3 * 3600, now - 3 * 3600 + 60);

  const context = await browser.newContext({ viewport: { width: 1440, height: 1000 }, colorScheme: 'light' });
  const page = await context.newPage();
  const errors = [];
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  page.on('pageerror', (e) => errors.push(String(e)));
  const merged = [];
  page.on('request', (r) => r.url().includes('/api/v1/profiles/merged') && merged.push(new URL(r.url())));
  const ready = () => page.waitForFunction(() => document.querySelector('main')?.getAttribute('aria-busy') === 'false');
  const shot = async (name) => {
    await page.screenshot({ path: path.join(outDir, `${name}.png`) });
    console.log(`screenshot ${path.join(outDir, name + '.png')}`);
  };
  const table = () => page.locator('[data-testid=top-functions]').textContent();
  const summary = () => page.locator('[data-testid=profile-summary]').textContent();
  const settle = async (re) => {
    await page.waitForURL(re);
    await page.locator('[data-testid=flamegraph] canvas').waitFor();
  };

  // The GPU tab: the windows with profiles are marked under the charts.
  await page.goto(`${base}/host/${encodeURIComponent(host)}?tab=gpu&range=15m`);
  await ready();
  const marks = page.locator('[data-testid=widget-util] [data-profile-marks]');
  await marks.waitFor();
  await page.waitForFunction(() => Number(document.querySelector('[data-testid=widget-util] [data-profile-marks]')?.getAttribute('data-profile-marks')) > 0);
  check(Number(await marks.getAttribute('data-profile-marks')) >= 1, 'the GPU utilization chart marks the window that has a profile');
  await page.screenshot({ path: path.join(outDir, 'drill-01-profile-marks.png'), clip: await page.locator('[data-testid=widget-util]').boundingBox() });

  // Click GPU 0's line near the right edge: its value from the legend under the pointer, on
  // the chart's 0–100 % scale (a tie goes to the first line, GPU 0).
  const over = page.locator('[data-testid=widget-util] .u-over').first();
  const box = await over.boundingBox();
  const x = box.width - 30;
  await page.mouse.move(box.x + x, box.y + box.height / 2);
  const legend = await page.locator('[data-testid=widget-util] .u-legend .u-series').evaluateAll((rows) =>
    rows.map((r) => ({ label: r.querySelector('.u-label')?.textContent ?? '', value: r.querySelector('.u-value')?.textContent ?? '' })),
  );
  const gpu0 = Number(/[\d.]+/.exec(legend.find((r) => r.label === 'GPU 0')?.value ?? '')?.[0]);
  check(Number.isFinite(gpu0), `the legend gives GPU 0's utilization under the pointer (${gpu0} %)`);
  await over.click({ position: { x, y: box.height * (1 - gpu0 / 100) } });
  await settle(/pk=gpu/);
  const clicked = Number(/[?&]pl=device%3A(\d+)/.exec(page.url())?.[1]);
  check(Number.isFinite(clicked), `a click on a GPU line opens the GPU profile filtered to its device (${page.url()})`);
  const last = merged[merged.length - 1];
  check(last.searchParams.getAll('label').includes(`device:${clicked}`), `the merged-profile request filters by label=device:${clicked}`);
  await page.waitForFunction((d) => (document.querySelector('[data-testid=profile-summary]')?.textContent ?? '').includes(`device:${d}`), clicked);
  check((await summary()).includes(`only device:${clicked}`), 'the totals say they are of that device only');
  if (clicked !== 0) {
    // Another GPU's line was nearer: move the filter to device 0 with the chips.
    await page.locator(`button.chip[data-filter="device:0"]`).click();
    await page.waitForURL(/pl=device%3A0/);
    await page.locator(`button.chip[data-filter="device:${clicked}"]`).click();
    await settle((u) => !u.href.includes(`device%3A${clicked}`));
  }
  await page.waitForFunction(() => /gemm/.test(document.querySelector('[data-testid=top-functions]')?.textContent ?? ''));
  let t = await table();
  check(t.includes('gemm') && t.includes('elementwise_add_kernel') && !t.includes('flash_attn'), 'device 0 shows its own kernels only (gemm, elementwise_add; not device 1\'s flash_attn)');
  const deviceChips = await page.locator('.chip-row[data-key=device] button.chip').count();
  check(deviceChips === 2, `the device menu still offers both devices (${deviceChips})`);
  const procOptions = await page.locator('[data-testid=profile-process] optgroup').evaluateAll((gs) => gs.map((g) => `${g.label}: ${[...g.querySelectorAll('option')].map((o) => o.textContent).join(', ')}`));
  check(procOptions.some((o) => o.includes('python3') && o.includes(`pid ${pid}`)), `the process selector lists the process under its executable (${procOptions.join('; ')})`);
  await shot('drill-02-gpu0');

  // A stream: stream 8 is the elementwise kernel only; it has no PC samples, so pc_samples is
  // not offered as a sample type.
  await page.locator('button.chip[data-filter="stream:8"]').click();
  await settle(/pl=stream%3A8/);
  await page.waitForFunction(() => (document.querySelector('[data-testid=profile-summary]')?.textContent ?? '').includes('stream:8'));
  t = await table();
  check(t.includes('elementwise_add_kernel') && !t.includes('gemm'), 'the stream chip keeps stream 8\'s kernel only');
  const types = await page.locator('select[aria-label="Sample type"] option').allTextContents();
  check(!types.some((o) => o.startsWith('pc_samples')), `a sample type without samples is not offered (${types.join(', ')})`);
  await page.locator('button.chip[data-filter="stream:8"]').click();
  await settle((u) => !u.href.includes('stream%3A8'));

  // An NVTX range: "forward" holds the gemm launch.
  await page.locator('button.chip[data-filter="nvtx:forward"]').click();
  await settle(/pl=nvtx%3Aforward/);
  await page.waitForFunction(() => (document.querySelector('[data-testid=profile-summary]')?.textContent ?? '').includes('nvtx:forward'));
  t = await table();
  check(t.includes('gemm') && !t.includes('elementwise_add_kernel'), 'the NVTX chip keeps the kernels launched in "forward"');
  check(/train\.py:6/.test(t), `the top-functions table names the Python frame's file:line`);
  // The tooltip of the Python frame (depth 2: root, process, train_step).
  const canvas = page.locator('[data-testid=flamegraph] canvas');
  const fb = await canvas.boundingBox();
  await page.mouse.move(fb.x + 4, fb.y + 2 * 20 + 10);
  const tip = await page.locator('.flame-tip').textContent();
  check(/train_step/.test(tip) && /train\.py:6/.test(tip), `the flamegraph tooltip names file:line (${tip})`);
  await shot('drill-03-nvtx-tooltip');
  // The URL keeps the filters: a reload shows the same view.
  await page.reload();
  await page.locator('[data-testid=flamegraph] canvas').waitFor();
  check((await page.locator('button.chip[data-filter="nvtx:forward"]').getAttribute('aria-pressed')) === 'true', 'after a reload the label filters come back from the URL');

  // A window without a profile two hours ago: the panel links to the nearest one (3 h ago).
  const empty = now - 2 * 3600;
  await page.goto(`${base}/host/${encodeURIComponent(host)}?tab=gpu&range=15m&p=${empty - 60}-${empty}&pk=gpu`);
  await page.locator('[data-testid=no-profile]').waitFor();
  const link = page.locator('[data-testid=nearest-profile]');
  await link.waitFor();
  const linkText = await link.textContent();
  check(/nearest profile: .*earlier/.test(linkText) && !(await page.locator('[data-testid=no-profile]').textContent()).includes('<prefix>'), `the no-profile panel names the nearest profile (${linkText}), no placeholder`);
  await shot('drill-04-nearest');
  await link.click();
  await settle(new RegExp(`p=${now - 3 * 3600}-`));
  check((await summary()).includes('1 profile'), 'the nearest-profile link opens that profile');

  check(errors.length === 0, `no console errors (${errors.join(' | ')})`);
}

runBrowserTest(bt, main);

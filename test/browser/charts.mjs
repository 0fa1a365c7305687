// SPDX-License-Identifier: Apache-2.0
// Browser test of the charts against a fresh `warpscope up --simulate healthy-8xh100`: round
// y ticks in every unit, a legend with min / max / avg / last that sorts by a column, hovering
// highlights one line, the power limit, memory total and temperature thresholds (host page and
// GPU page) drawn as limit lines, the default range starting at the data of a fresh server, the
// live legend's numbers moving, the keyboard moving the crosshair (and Enter opening the profile
// panel). Screenshots go to --out.
//
//   node charts.mjs --warpscope <build>/bin/warpscope --out <build>/test-output/browser \
//        [--node-modules <dir with playwright-core>] [--chromium /usr/bin/chromium]
// Exit codes: 0 pass, 1 fail, 77 skipped (no Chromium or no playwright-core; a failure in CI).
import path from 'node:path';
import { api, browserTestArgs, check, loadAllCharts, loadChart, runBrowserTest, setUpBrowserTest, until } from './harness.mjs';

const { warpscope, outDir, chromiumPath, nodeModules } = browserTestArgs();
const bt = setUpBrowserTest({ name: 'charts', what: 'the charts test', timeoutMs: 120_000, warpscope, outDir, chromiumPath, nodeModules });
const { dataDir } = bt;
let browser = null;
const startServer = () => bt.startUp(dataDir);

const numbers = (text) => [...text.matchAll(/-?\d+(?:\.\d+)?/g)].map((m) => Number(m[0]));

// A tick label is round when its number is 1, 2 or 5 times a power of ten times an integer
// multiple of the step: the steps between consecutive labels are equal and 1-2-5.
function roundTicks(labels) {
  const vals = labels.map((l) => numbers(l)[0]);
  if (vals.length < 2 || vals.some((v) => v === undefined)) return false;
  const steps = vals.slice(1).map((v, i) => v - vals[i]).filter((d) => d > 0);
  if (steps.length === 0) return false;
  const step = steps[0];
  const mant = step / Math.pow(10, Math.floor(Math.log10(step) + 1e-9));
  return [1, 2, 5].some((m) => Math.abs(mant - m) < 1e-6) && vals.every((v) => Math.abs(v / step - Math.round(v / step)) < 1e-6);
}

async function main() {
  browser = await bt.launchBrowser();
  const base = await startServer();
  const host = await until('the host entity', async () => (await api(base, '/api/v1/entities?kind=host')).entities[0]?.id);
  await until('two windows of GPU data', async () => {
    const r = await api(base, '/api/v1/query_range?metric=gpu.power.usage&start=now-5m');
    return r.series.length === 8 && r.series.every((s) => s.points.length >= 2);
  });
  const context = await browser.newContext({ viewport: { width: 1440, height: 1000 }, colorScheme: 'light' });
  const page = await context.newPage();
  const errors = [];
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  page.on('pageerror', (e) => errors.push(String(e)));
  const ready = () => page.waitForFunction(() => document.querySelector('main')?.getAttribute('aria-busy') === 'false');
  const shot = (name) => page.screenshot({ path: path.join(outDir, `${name}.png`), fullPage: true });

  // The default range (1 h) of a server up for under a minute: the charts start at the data.
  const opened = Date.now() / 1000;
  // The first screen's charts are asked for before the GPU list is in: their batch goes out
  // before the GPU list's answer comes back, and it is the only batch the first screen needs.
  await page.goto(`${base}/host/${encodeURIComponent(host)}?tab=gpu&live=1`);
  await ready();
  const early = await page.evaluate(() => {
    const view = performance.getEntriesByName('warpscope:view:host:gpu')[0];
    const res = performance.getEntriesByType('resource');
    const gpus = res.find((r) => r.name.includes('/api/v1/entities') && r.name.includes('kind=gpu'));
    const batches = res.filter((r) => r.name.includes('/api/v1/query_batch') && r.startTime < view.startTime + view.duration);
    return { batches: batches.length, before: batches.length > 0 && gpus !== undefined && batches[0].startTime < gpus.responseEnd };
  });
  check(early.batches === 1 && early.before,
    `the first screen's charts come in one batch, sent before the GPU list arrives (${early.batches} batches; sent before: ${early.before})`);

  // The charts load as they come near the viewport: the first screen's are drawn when the view
  // is ready; a card more than a screen below is not loaded (no request, no chart) until it is
  // scrolled to, then it is drawn.
  await page.locator('[data-testid=widget-util] .chart canvas').waitFor();
  check((await page.locator('[data-testid=widget-util]').getAttribute('data-load')) === 'done', 'the first screen\'s chart (GPU utilization) is drawn when the view is ready');
  const lastTop = await page.locator('[data-testid=widget-nvlinkrx]').evaluate((el) => el.getBoundingClientRect().top / window.innerHeight);
  check(lastTop > 2.2, `the NVLink RX card lies more than two screens down (${lastTop.toFixed(1)} screens)`);
  check(
    (await page.locator('[data-testid=widget-nvlinkrx]').getAttribute('data-load')) === 'idle' && (await page.locator('[data-testid=widget-nvlinkrx] canvas').count()) === 0,
    'a card two screens below the first is not loaded before it is scrolled to',
  );
  await loadChart(page, 'nvlinkrx');
  await page.locator('[data-testid=widget-nvlinkrx] .chart canvas').waitFor();
  check((await page.locator('[data-testid=widget-nvlinkrx] [data-testid=legend] tr[data-label]').count()) === 8, 'scrolled to, the NVLink RX card draws its chart (8 GPUs in its legend)');
  await page.evaluate(() => window.scrollTo(0, 0));
  await loadAllCharts(page);
  const power = page.locator('[data-testid=widget-power] .chart');
  await power.locator('canvas').waitFor();
  const xMin = Number(await power.getAttribute('data-x-min'));
  check(xMin > opened - 600, `a fresh server's 1 h chart starts at its data (${Math.round(opened - xMin)} s of the hour shown)`);

  // Round ticks in each unit.
  for (const id of ['power', 'temp', 'util', 'memconsumer', 'pcietx', 'nvlinktx']) {
    const chart = page.locator(`[data-testid=widget-${id}] .chart`);
    await chart.locator('canvas').waitFor();
    const ticks = ((await chart.getAttribute('data-y-ticks')) ?? '').split('|');
    check(roundTicks(ticks), `the ${id} chart's y ticks are round (${ticks.join(', ')})`);
  }

  // Limit lines: the power limit and the GPUs' memory total.
  check(Number(await power.getAttribute('data-limits')) >= 1, 'the power chart draws the power limit');
  check(Number(await page.locator('[data-testid=widget-memconsumer] .chart').getAttribute('data-limits')) >= 1, 'the memory consumer chart draws the memory total');
  // The temperature chart: the slowdown temperature every GPU reports (the simulator's H100: 89 °C).
  const temp = page.locator('[data-testid=widget-temp] .chart');
  const tempLimits = ((await temp.getAttribute('data-limit-labels')) ?? '').split('|');
  check(Number(await temp.getAttribute('data-limits')) === 1 && tempLimits[0] === 'slowdown 89 °C', `the temperature chart draws the GPUs' slowdown temperature (${tempLimits.join(', ')})`);

  // The legend: min / max / avg / last per line; sorting by max orders the rows.
  const legend = page.locator('[data-testid=widget-power] [data-testid=legend]');
  const stats = async (stat) => (await legend.locator(`td[data-stat=${stat}]`).allTextContents()).map((t) => numbers(t)[0]);
  for (const stat of ['min', 'max', 'avg', 'last']) {
    const v = await stats(stat);
    check(v.length === 8 && v.every((x) => x > 500 && x < 800), `the power legend shows each GPU's ${stat} (${v.join(', ')})`);
  }
  await legend.locator('button[data-sort=max]').click();
  const maxDesc = await stats('max');
  check(maxDesc.every((v, i) => i === 0 || maxDesc[i - 1] >= v), `sorting by max orders the legend (${maxDesc.join(', ')})`);
  await legend.locator('button[data-sort=max]').click();
  const maxAsc = await stats('max');
  check(maxAsc.every((v, i) => i === 0 || maxAsc[i - 1] <= v), `a second click reverses it (${maxAsc.join(', ')})`);

  // Hovering a legend row highlights its line (the others dimmed).
  const row = legend.locator('tr[data-label="GPU 3"]');
  await row.hover();
  check((await power.getAttribute('data-focused')) === 'GPU 3', 'hovering the legend row of GPU 3 focuses its line');
  check((await legend.locator('tr.dimmed').count()) === 7, 'the other seven rows are dimmed');
  await shot('charts-01-hover');
  await page.mouse.move(0, 0);

  // Live mode: the legend's numbers follow the data (the page refreshes every 10 s).
  const before = (await legend.locator('td[data-stat=avg]').allTextContents()).join('|') + (await legend.locator('td[data-stat=last]').allTextContents()).join('|');
  await until('the live legend to change', async () => {
    const now = (await legend.locator('td[data-stat=avg]').allTextContents()).join('|') + (await legend.locator('td[data-stat=last]').allTextContents()).join('|');
    return now !== before;
  }, 40_000);
  check(true, 'live mode updates the legend values');

  // Keyboard: the plot takes focus, the arrows move the crosshair, Enter opens the profile panel.
  const over = page.locator('[data-testid=widget-power] .u-over');
  await over.focus();
  await page.keyboard.press('ArrowLeft');
  const t1 = Number(await power.getAttribute('data-cursor-time'));
  await page.keyboard.press('ArrowLeft');
  const t2 = Number(await power.getAttribute('data-cursor-time'));
  check(t1 > 0 && t2 < t1, `ArrowLeft moves the crosshair back (${t1} -> ${t2})`);
  const valueHead = await legend.locator('th.u-value').textContent();
  check(/\d\d:\d\d:\d\d/.test(valueHead), `the legend names the crosshair's time with seconds (${valueHead})`);
  await shot('charts-02-keyboard');
  await page.keyboard.press('Enter');
  await page.waitForURL(/[?&]p=\d+-\d+/);
  check(true, 'Enter at the crosshair opens the profile panel of that point');

  // The GPU page: its temperatures against the GPU's four thresholds, each named with its value.
  const gpus = (await api(base, `/api/v1/entities?kind=gpu&host=${encodeURIComponent(host)}`)).entities;
  const gpu0 = gpus.find((e) => e.attributes['gpu.index'] === '0');
  await page.goto(`${base}/host/${encodeURIComponent(host)}/gpu/${encodeURIComponent(gpu0.id)}`);
  await ready();
  const gpuTemp = page.locator('[data-testid=widget-g-temp] .chart');
  await gpuTemp.locator('canvas').waitFor();
  const gpuLimits = ((await gpuTemp.getAttribute('data-limit-labels')) ?? '').split('|');
  for (const want of ['GPU max operating 87 °C', 'slowdown 89 °C', 'shutdown 92 °C', 'memory max 95 °C']) {
    check(gpuLimits.includes(want), `the GPU page's temperature chart draws "${want}" (${gpuLimits.join(', ')})`);
  }
  const gpuTempLegend = await page.locator('[data-testid=widget-g-temp] tr[data-label]').evaluateAll((rows) => rows.map((r) => r.dataset.label));
  check(!gpuTempLegend.some((l) => /slowdown|shutdown|max/.test(l)), `the thresholds are limit lines, not legend lines (${gpuTempLegend.join(', ')})`);
  await shot('charts-03-gpu-temperatures');

  // The Host Metrics tab: memory total as a limit line, not a line.
  await page.goto(`${base}/host/${encodeURIComponent(host)}?tab=host`);
  await ready();
  const mem = page.locator('[data-testid=widget-memory] .chart');
  if ((await mem.count()) > 0) {
    await mem.locator('canvas').waitFor();
    const labels = await page.locator('[data-testid=widget-memory] tr[data-label]').evaluateAll((rows) => rows.map((r) => r.dataset.label));
    check(!labels.includes('memory total') && Number(await mem.getAttribute('data-limits')) === 1, `host memory draws its total as a limit line (${labels.join(', ')})`);
    const ticks = ((await mem.getAttribute('data-y-ticks')) ?? '').split('|');
    check(roundTicks(ticks) && ticks.every((t) => /iB$/.test(t)), `host memory ticks are round, in binary units (${ticks.join(', ')})`);
  }
  await shot('charts-04-host');
  check(errors.length === 0, `no console errors (${errors.join('; ')})`);
}

runBrowserTest(bt, main);

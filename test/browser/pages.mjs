// SPDX-License-Identifier: Apache-2.0
// Browser test of the process and GPU pages and of wrong input, keyboard and narrow screens,
// against a real `warpscope up --simulate healthy-8xh100` (a CPU profile of one trainer and an
// XID event of GPU 3 posted to it):
//   - a process row of the host page opens the process page: pid, command line, user, its GPU
//     with a link, its GPU utilization and memory, CPU and RSS charts, the CUDA runtime charts'
//     "no CUDA profiler" note, its profiles with a link into the host page's profile panel;
//   - the CPU-by-process chart's "others" line opens the CPU profiles of every process but the
//     7 drawn on their own (ten worker processes' CPU and two of their profiles posted);
//   - Top entities link processes and GPUs to their pages; the host page links its GPUs;
//   - the GPU page: identity (UUID, bus id, serial, driver, CUDA, compute capability, MIG mode),
//     clocks, throttle reasons, power, temperatures, DRAM, pipes, NVLink per link, ECC and
//     remapped rows charted, the XID history with the XID's meaning; the XID's finding links
//     the GPU to its page from the Insights and finding pages;
//   - an unknown path, host, process or GPU says so; unreadable URL parameters are listed; an
//     inverted custom range is refused; /api/v1/top takes sparkline=0;
//   - arrow keys on the host tabs keep focus on the selected tab; focus moves into the profile
//     panel and back to the button that opened it;
//   - at 800 px nothing is wider than the window and the top-functions numbers do not wrap.
// Screenshots at 1440x900 and 800x900 go to --out.
//
//   node pages.mjs --warpscope <build>/bin/warpscope --out <build>/test-output/browser \
//        [--node-modules <dir with playwright-core>] [--chromium /usr/bin/chromium]
// Exit codes: 0 pass, 1 fail, 77 skipped (no Chromium or no playwright-core; fails with CI=true).
import fs from 'node:fs';
import path from 'node:path';
import { api, browserTestArgs, check, runBrowserTest, setUpBrowserTest, until } from './harness.mjs';
import { TRAINING_STACKS, encodeCpuProfile } from './pprof.mjs';

const { warpscope, outDir, chromiumPath, nodeModules } = browserTestArgs();
const bt = setUpBrowserTest({ name: 'pages', what: 'the pages browser test', timeoutMs: 120_000, warpscope, outDir, chromiumPath, nodeModules });
const { dataDir } = bt;
let browser = null;
const startServer = () => bt.startUp(path.join(dataDir, 'up'));

const kv = (o) => Object.entries(o).map(([key, value]) => ({ key, value: String(value) }));
const ns = (s) => String(Math.round(s * 1e9));

// The CPU-by-process chart's "others" line: ten worker processes' CPU (the busiest far above
// everything, the rest far below) and CPU profiles of the busiest and the idlest, posted as an
// agent would. The chart draws the top 7 and "others"; opening "others" (keyboard crosshair,
// Enter) excludes the 7 drawn processes: the idlest worker's frames show, the busiest's do not.
async function checkOthersLine(page, ready, base, host, auth, now) {
  const workers = Array.from({ length: 10 }, (_, i) => ({ pid: 50000 + i, id: `pid/${50000 + i}/0`, cpu: i === 0 ? 8 : 0.002 * (10 - i) }));
  const batch = {
    version: 1, agentId: 'pages-workers', sequence: '1', startUnixNano: ns(now - 30), endUnixNano: ns(now - 20), host,
    entities: workers.map((w) => ({ kind: 'ENTITY_KIND_PROCESS', id: w.id, parent: host, attributes: kv({ 'process.pid': w.pid, 'process.executable.name': 'worker' }) })),
    metrics: [{ key: 'process.cpu.utilization', kind: 'METRIC_KIND_GAUGE', unit: '1', entityKind: 'ENTITY_KIND_PROCESS' }],
    series: workers.map((w) => ({ metric: 0, entity: w.id, avg: w.cpu, min: w.cpu, max: w.cpu, last: w.cpu, count: 1, lastTimeUnixNano: ns(now - 21) })),
    events: [],
  };
  const r = await fetch(`${base}/api/v1/ingest/batch`, { method: 'POST', headers: { ...auth, 'Content-Type': 'application/json' }, body: JSON.stringify(batch) });
  check(r.ok, `ten worker processes' CPU stored (${r.status} ${r.ok ? '' : await r.text()})`);
  for (const [w, fn] of [[workers[0], 'busiest_work'], [workers[9], 'idlest_work']]) {
    const posted = await fetch(`${base}/api/v1/ingest/profile?host=${encodeURIComponent(host)}&kind=cpu&entity=${encodeURIComponent(w.id)}&pid=${w.pid}&executable=worker&start=${Math.floor(now - 120)}&end=${Math.ceil(now + 60)}`, {
      method: 'POST',
      headers: { ...auth, 'Content-Type': 'application/octet-stream' },
      body: encodeCpuProfile([{ frames: ['worker', 'main', fn], count: 50 }]),
    });
    check(posted.ok, `CPU profile of worker ${w.pid} stored (${posted.status})`);
  }
  const merged = [];
  const onRequest = (q) => q.url().includes('/api/v1/profiles/merged') && merged.push(new URL(q.url()));
  page.on('request', onRequest);
  await page.goto(`${base}/host/${encodeURIComponent(host)}?range=15m`);
  await ready();
  const widget = page.locator('[data-testid=widget-cpu-processes]');
  await page.waitForFunction(() => /others \(\d+\)/.test(document.querySelector('[data-testid=widget-cpu-processes] .u-legend')?.textContent ?? ''));
  const over = widget.locator('.u-over').first();
  await over.focus();
  await page.keyboard.press('End');
  const line = () => widget.locator('[data-cursor-line]').first().getAttribute('data-cursor-line');
  for (let i = 0; i < 10 && !(await line())?.startsWith('others'); i++) await page.keyboard.press('ArrowDown');
  check((await line())?.startsWith('others'), `the arrow keys reach the "others" line (${await line()})`);
  await page.keyboard.press('Enter');
  await page.waitForURL(/pxp=/);
  await page.locator('[data-testid=flamegraph] canvas').waitFor();
  const left = (new URL(page.url()).searchParams.get('pxp') ?? '').split(',');
  check(left.length === 7 && left.includes('50000') && !left.includes('50009'), `"others" leaves out the 7 processes drawn on their own, the busiest worker among them (pxp=${left})`);
  const request = merged[merged.length - 1];
  check(request.searchParams.getAll('exclude_pid').includes('50000') && !request.searchParams.has('pid'), `the merged profile is asked without them (${request.search})`);
  const option = await page.locator('[data-testid=profile-process] option:checked').textContent();
  check(option === 'others: all but 7 processes', `the process menu says what is shown (${option})`);
  await page.waitForFunction(() => /idlest_work/.test(document.querySelector('[data-testid=top-functions]')?.textContent ?? ''));
  check(!(await page.locator('[data-testid=top-functions]').textContent()).includes('busiest_work'), 'the idlest worker\'s frames show, not the busiest\'s');
  await page.screenshot({ path: path.join(outDir, 'pages-others.png') });
  page.off('request', onRequest);
}

async function main() {
  browser = await bt.launchBrowser();
  const base = await startServer();
  console.log(`server at ${base}`);
  const host = await until('the host entity', async () => (await api(base, '/api/v1/entities?kind=host')).entities[0]?.id);
  await until('GPU process data', async () => (await api(base, '/api/v1/breakdown?metric=gpu.process.sm.utilization&start=now-5m')).groups.length > 0);
  await until('process CPU data', async () => (await api(base, '/api/v1/query_range?metric=process.cpu.utilization&start=now-5m')).series.some((s) => s.points.length >= 1));
  const gpus = (await api(base, `/api/v1/entities?host=${host}&kind=gpu`)).entities.sort((a, b) => Number(a.attributes['gpu.index']) - Number(b.attributes['gpu.index']));
  const gpu3 = gpus.find((g) => g.attributes['gpu.index'] === '3');
  const trainer = (await api(base, `/api/v1/entities?host=${host}&kind=process&q=pid/31000/`)).entities[0];
  check(gpu3 && trainer, `the scenario's GPU 3 (${gpu3?.id}) and trainer ${trainer?.id} are known`);

  // A CPU profile of the trainer and an XID 79 on GPU 3, posted as an agent would.
  const token = fs.readFileSync(path.join(dataDir, 'up', 'token'), 'utf8').trim();
  const auth = { Authorization: `Bearer ${token}` };
  const now = Date.now() / 1000;
  const posted = await fetch(`${base}/api/v1/ingest/profile?host=${encodeURIComponent(host)}&kind=cpu&entity=${encodeURIComponent(trainer.id)}&pid=31000&executable=python3&start=${Math.floor(now - 120)}&end=${Math.ceil(now + 60)}`, {
    method: 'POST',
    headers: { ...auth, 'Content-Type': 'application/octet-stream' },
    body: encodeCpuProfile(TRAINING_STACKS),
  });
  check(posted.ok, `CPU profile of the trainer stored (${posted.status})`);
  const xid = {
    version: 1, agentId: 'pages-xid', sequence: '1', startUnixNano: ns(now - 70), endUnixNano: ns(now - 50), host,
    entities: [{ kind: 'ENTITY_KIND_GPU', id: gpu3.id, attributes: kv(gpu3.attributes) }],
    metrics: [], series: [],
    events: [{ timeUnixNano: ns(now - 60), entity: gpu3.id, kind: 'xid', code: 79, message: 'GPU has fallen off the bus' }],
  };
  const xidPosted = await fetch(`${base}/api/v1/ingest/batch`, { method: 'POST', headers: { ...auth, 'Content-Type': 'application/json' }, body: JSON.stringify(xid) });
  check(xidPosted.ok, `XID 79 event of GPU 3 stored (${xidPosted.status} ${xidPosted.ok ? '' : await xidPosted.text()})`);

  // sparkline=0 is "no sparkline", as docs/api.md says.
  const top0 = await fetch(`${base}/api/v1/top?metric=gpu.utilization&sparkline=0`);
  const top0Body = await top0.json();
  check(top0.ok && top0Body.entries.every((e) => !('sparkline' in e)), `/api/v1/top takes sparkline=0 (${top0.status})`);

  const context = await browser.newContext({ viewport: { width: 1440, height: 900 }, colorScheme: 'light' });
  const page = await context.newPage();
  const errors = [];
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  page.on('pageerror', (e) => errors.push(String(e)));
  const ready = () => page.waitForFunction(() => document.querySelector('main')?.getAttribute('aria-busy') === 'false');
  const shot = async (name, fullPage = true) => {
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: path.join(outDir, `${name}.png`), fullPage });
    console.log(`screenshot ${path.join(outDir, name + '.png')}`);
  };
  const url = () => new URL(page.url());

  // 1. From the host page's process list to the process page.
  await page.goto(`${base}/host/${encodeURIComponent(host)}?range=15m`);
  await ready();
  await page.locator('[data-testid=top-processes] a', { hasText: 'python3' }).first().waitFor();
  await page.locator('[data-testid=top-processes] a', { hasText: 'python3' }).first().click();
  await ready();
  check(/^\/host\/[^/]+\/process\/pid%2F\d+%2F\d+$/.test(url().pathname), `a process row opens the process page (${url().pathname})`);
  await page.goto(`${base}/host/${encodeURIComponent(host)}/process/${encodeURIComponent(trainer.id)}?range=15m`);
  await ready();
  const facts = await page.locator('[data-testid=process-facts]').textContent();
  check(facts.includes('31000') && facts.includes('train.py') && facts.includes('mlops'), `the process page shows pid, command line and user (${facts.slice(0, 120)}…)`);
  check(/Started.*\d\d:\d\d:\d\d.*\((\d+ (s|min|h)|\d+ d) ago\)/.test(facts) && trainer.attributes['process.creation.time'], `the process page gives the start as a clock time and an age (${/Started[^)]*\)/.exec(facts)?.[0]})`);
  await page.locator('[data-testid=process-gpus] a').first().waitFor();
  const gpuLinks = await page.locator('[data-testid=process-gpus] a').allTextContents();
  check(gpuLinks.length === 1 && /^GPU \d$/.test(gpuLinks[0]), `the process page lists the GPU it uses (${gpuLinks})`);
  for (const id of ['p-gpu-util', 'p-gpu-mem', 'p-cpu', 'p-rss']) {
    await page.locator(`[data-testid=widget-${id}] canvas`).first().waitFor();
  }
  check(true, 'GPU utilization, GPU memory, CPU and RSS of the process are charted');
  const cuda = await page.locator('[data-testid=widget-p-launches] [data-testid=unavailable]').textContent();
  check(/CUDA profiler/.test(cuda), `without the CUDA profiler, its runtime charts say why (${cuda})`);
  const profileLink = page.locator('[data-testid=process-profiles] a', { hasText: 'cpu profile' }).first();
  await profileLink.waitFor();
  await shot('pages-process-1440');
  await profileLink.click();
  await ready();
  await page.locator('[data-testid=flamegraph] canvas').first().waitFor();
  check(url().pathname === `/host/${encodeURIComponent(host)}` && url().searchParams.get('pk') === 'cpu', `its profile opens the host page's profile panel (${url().search})`);
  check(await page.evaluate(() => document.querySelector('[data-testid=profile-panel]')?.contains(document.activeElement) ?? false), 'focus moves into the profile panel');

  // 2. The "others" line of CPU by process.
  await checkOthersLine(page, ready, base, host, auth, now);

  // 3. Links to the pages from Top entities and the host page.
  await page.goto(`${base}/top?kind=process&range=15m`);
  await ready();
  const procHref = await page.locator('table a', { hasText: 'pid' }).first().getAttribute('href');
  check(/\/process\/pid%2F/.test(procHref), `Top entities links a process to its page (${procHref})`);
  await page.goto(`${base}/top?kind=gpu&range=15m`);
  await ready();
  const gpuHref = await page.locator('table tbody a').first().getAttribute('href');
  check(/\/gpu\/GPU-/.test(gpuHref), `Top entities links a GPU to its page (${gpuHref})`);
  await page.goto(`${base}/host/${encodeURIComponent(host)}?tab=gpu&range=15m`);
  await ready();
  check((await page.locator('[data-testid=gpu-links] a').count()) === 8, 'the host page links its 8 GPUs');
  await page.locator('[data-testid=gpu-links] a', { hasText: 'GPU 3' }).click();
  await ready();
  check(url().pathname === `/host/${encodeURIComponent(host)}/gpu/${encodeURIComponent(gpu3.id)}`, `a GPU link opens the GPU page (${url().pathname})`);

  // 4. The GPU page.
  const gfacts = await page.locator('[data-testid=gpu-facts]').textContent();
  for (const want of [gpu3.id, gpu3.attributes['gpu.pci_bus_id'], gpu3.attributes['gpu.serial'], '550.127.08', '12.4', '9.0']) {
    check(gfacts.includes(want), `the GPU page shows ${want}`);
  }
  await page.waitForFunction(() => document.querySelector('[data-testid=gpu-mig]')?.textContent !== '…');
  check(/enabled|disabled|not reported/.test(await page.locator('[data-testid=gpu-mig]').textContent()), 'the GPU page shows the MIG mode');
  for (const id of ['g-clocks', 'g-throttle', 'g-power', 'g-temp', 'g-dram', 'g-pipes', 'g-nvlink-tx', 'g-ecc', 'g-remap']) {
    await page.locator(`[data-testid=widget-${id}] canvas`).first().waitFor({ timeout: 10_000 });
  }
  check(true, 'clocks, throttle reasons, power, temperatures, DRAM, pipes, NVLink, ECC and remapped rows are charted');
  const tempLegend = await page.locator('[data-testid=widget-g-temp]').textContent();
  check(/memory \(HBM\)/.test(tempLegend), 'the temperature chart has the memory temperature');
  const links = await page.locator('[data-testid=widget-g-nvlink-tx]').textContent();
  check(/link 0/.test(links) && /link 1/.test(links), 'NVLink is charted per link');
  const xids = await page.locator('[data-testid=gpu-xids]').textContent();
  check(/79/.test(xids) && /fallen off the bus/.test(xids), `the XID history names XID 79's meaning (${xids.slice(0, 100)})`);
  check((await page.locator('[data-testid=gpu-processes] a').count()) >= 1, 'the GPU page links the processes on it');
  await shot('pages-gpu-1440');
  // The XID's finding (hardware_errors), from the Insights page's entity link back to this page.
  await until('the XID finding', async () => (await api(base, `/api/v1/insights?entity=${encodeURIComponent(gpu3.id)}`)).insights.length > 0);
  await page.goto(`${base}/insights`);
  await ready();
  const entityLinks = await page.locator('td a.muted').evaluateAll((as) => as.map((a) => new URL(a.href).pathname));
  check(entityLinks.includes(`/host/${encodeURIComponent(host)}/gpu/${encodeURIComponent(gpu3.id)}`), `the Insights page links the finding's GPU to its page (${entityLinks})`);
  await page.locator('td.finding-cell a').first().click();
  await ready();
  check(/\/gpu\//.test(await page.locator('[data-testid=finding-entity]').getAttribute('href')), 'the finding page links its GPU to the GPU page');

  // 5. Wrong paths and parameters.
  await page.goto(`${base}/nope`);
  await ready();
  check(await page.locator('[data-testid=not-found]').isVisible(), 'an unknown path shows "Page not found"');
  await shot('pages-not-found');
  await page.goto(`${base}/host/no-such-host`);
  await ready();
  check((await page.locator('[data-testid=unknown-entity]').textContent()).includes('Unknown host'), 'an unknown host says so');
  check((await page.locator('.widget').count()) === 0, 'an unknown host shows no empty widgets');
  await page.goto(`${base}/host/${encodeURIComponent(host)}/process/${encodeURIComponent('pid/1/2')}`);
  await ready();
  check((await page.locator('[data-testid=unknown-entity]').textContent()).includes('Process not found'), 'an unknown process says so');
  await page.goto(`${base}/host/${encodeURIComponent(host)}/gpu/GPU-nope`);
  await ready();
  check((await page.locator('[data-testid=unknown-entity]').textContent()).includes('GPU not found'), 'an unknown GPU says so');
  await page.goto(`${base}/top?kind=bogus&range=2h&from=200&to=100`);
  await ready();
  const problems = await page.locator('[data-testid=url-problems]').textContent();
  check(/kind=bogus/.test(problems) && /range=2h/.test(problems) && /inverted/.test(problems), `unreadable URL parameters are listed (${problems})`);
  await shot('pages-url-problems');
  await page.goto(`${base}/?range=15m`);
  await ready();
  await page.locator('details.customrange summary').click();
  await page.locator('input[aria-label=From]').fill('2026-01-02T10:00');
  await page.locator('input[aria-label=To]').fill('2026-01-02T09:00');
  const before = page.url();
  await page.locator('form.custom button[type=submit]').click();
  const refusal = await page.locator('[data-testid=range-error]').textContent();
  check(page.url() === before && /after its start/.test(refusal), `an inverted custom range is refused (${refusal})`);

  // 6. Keyboard: arrow keys on the tabs, focus into the profile panel and back.
  await page.goto(`${base}/host/${encodeURIComponent(host)}?range=15m`);
  await ready();
  await page.locator('#tab-host').focus();
  await page.keyboard.press('ArrowRight');
  await page.waitForFunction(() => new URL(location.href).searchParams.get('tab') === 'gpu' && document.activeElement?.id === 'tab-gpu');
  check(true, 'ArrowRight on the tabs selects GPU Metrics and keeps focus on its tab');
  await ready();
  const profileBtn = page.locator('[data-testid=widget-power] button', { hasText: 'Profile' });
  await profileBtn.focus();
  await page.keyboard.press('Enter');
  await page.locator('[data-testid=profile-panel]').waitFor();
  await page.waitForFunction(() => document.querySelector('[data-testid=profile-panel]')?.contains(document.activeElement));
  check(true, 'Enter on a Profile button moves focus into the panel');
  await page.keyboard.press('Escape');
  await page.waitForFunction(() => !document.querySelector('[data-testid=profile-panel]') && document.activeElement?.textContent === 'Profile' && document.activeElement.closest('[data-testid=widget-power]'));
  check(true, 'Escape closes the panel and focus returns to the button that opened it');

  // 7. 800 px.
  await page.setViewportSize({ width: 800, height: 900 });
  const fits = () => page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth + 1);
  for (const [name, p, drawn] of [
    ['pages-host-800', `/host/${encodeURIComponent(host)}?range=15m`, '.chart canvas'],
    ['pages-top-800', '/top?kind=process&range=15m', 'table tbody tr'],
    ['pages-process-800', `/host/${encodeURIComponent(host)}/process/${encodeURIComponent(trainer.id)}?range=15m`, '.chart canvas'],
    ['pages-gpu-800', `/host/${encodeURIComponent(host)}/gpu/${encodeURIComponent(gpu3.id)}?range=15m`, '.chart canvas'],
  ]) {
    await page.goto(base + p);
    await ready();
    await page.locator(drawn).first().waitFor();
    check(await fits(), `${p} fits 800 px without a horizontal scroll of the page`);
    await shot(name);
  }
  await page.goto(`${base}/host/${encodeURIComponent(host)}?range=15m&p=${Math.floor(now - 120)}-${Math.ceil(now + 60)}&pk=cpu&pe=${encodeURIComponent(trainer.id)}&pp=31000`);
  await ready();
  await page.locator('[data-testid=top-functions] td.num').first().waitFor();
  // Each number on one line: its text has one line box.
  const wraps = await page.evaluate(() =>
    [...document.querySelectorAll('[data-testid=top-functions] td.num')].some((td) => {
      const r = document.createRange();
      r.selectNodeContents(td);
      return getComputedStyle(td).whiteSpace !== 'nowrap' || r.getClientRects().length > 1;
    }),
  );
  check(!wraps, 'the top functions\' numbers do not wrap at 800 px');
  check(await fits(), 'the profile panel fits 800 px');
  await shot('pages-profile-800', false);

  check(errors.length === 0, `no console errors (${errors.join(' | ')})`);
}

runBrowserTest(bt, main);

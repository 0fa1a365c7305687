// SPDX-License-Identifier: Apache-2.0
// The insights part of the browser test. Findings come from the server's own engine: six minutes
// of 10 s windows of host "ins-node", ending now, are posted through the native JSON ingest to a
// server with insights off (its UI says so first), then the same data dir is served with --insights-interval=1s,
// whose first evaluation reads the whole 15 minutes:
//   GPU 0 at 30 % while its process (python3, pid 4242) uses one core of 16  -> input_bound
//   GPU 1 whose temperature climbs 25 °C/min over the last minute           -> cooling_failure
//   GPU 2 with an XID 79 half a minute ago                                   -> hardware_errors
// and 45 one-minute windows of two hosts of cluster "ins-fleet" (4 GPUs each, no process) whose
// utilization falls steadily from 75 % to 55 %                              -> fleet_regression
// (the long view's 1-minute buckets need no finer windows; the config file's fleet-hold = 0s
// lets the finding fire at once instead of 5 minutes later).
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { loadAllCharts } from './harness.mjs';

export const INSIGHTS_HOST = 'ins-node';
const GPUS = ['GPU-ins-0', 'GPU-ins-1', 'GPU-ins-2'];
const PROCESS = 'pid/4242/0';
const WINDOW_S = 10;
const WINDOWS = 36;
export const FLEET_HOSTS = ['ins-fleet-a', 'ins-fleet-b'];
const FLEET_CLUSTER = 'ins-fleet';
const FLEET_GPUS = 4;
const FLEET_WINDOWS = 45;

const kv = (o) => Object.entries(o).map(([key, value]) => ({ key, value: String(value) }));
const ns = (s) => String(Math.round(s * 1e9));

// The JSON mapping of warpscope.v1.Batch for the window ending at `end` (Unix s).
function batch(seq, end, now) {
  const metrics = [
    ['gpu.utilization', '1', 'ENTITY_KIND_GPU'],
    ['gpu.power.usage', 'W', 'ENTITY_KIND_GPU'],
    ['gpu.temperature', 'Cel', 'ENTITY_KIND_GPU'],
    ['gpu.memory.used', 'By', 'ENTITY_KIND_GPU'],
    ['gpu.memory.total', 'By', 'ENTITY_KIND_GPU'],
    ['gpu.process.memory.used', 'By', 'ENTITY_KIND_PROCESS'],
    ['process.cpu.utilization', '1', 'ENTITY_KIND_PROCESS'],
    ['host.cpu.logical_count', '{cpu}', 'ENTITY_KIND_HOST'],
    ['host.cpu.utilization', '1', 'ENTITY_KIND_HOST'],
  ];
  const idx = Object.fromEntries(metrics.map((m, i) => [m[0], i]));
  const series = [];
  const add = (metric, entity, value, labels = {}) =>
    series.push({ metric: idx[metric], entity, labels: kv(labels), avg: value, min: value, max: value, last: value, count: 10, lastTimeUnixNano: ns(end) });
  const climb = Math.max(0, end - (now - 60));
  GPUS.forEach((g, i) => {
    add('gpu.utilization', g, i === 0 ? 0.3 : 0.9);
    add('gpu.power.usage', g, i === 0 ? 250 : 600);
    add('gpu.temperature', g, i === 1 ? 55 + (25 * climb) / 60 : 55);
    add('gpu.memory.used', g, 40e9);
    add('gpu.memory.total', g, 80e9);
  });
  add('gpu.process.memory.used', PROCESS, 8e9, { 'gpu.uuid': GPUS[0] });
  add('process.cpu.utilization', PROCESS, 1 / 16);
  add('host.cpu.logical_count', INSIGHTS_HOST, 16);
  add('host.cpu.utilization', INSIGHTS_HOST, 0.9, { mode: 'idle' });
  const xid = now - 30;
  return {
    version: 1,
    agentId: 'ins-agent',
    sequence: String(seq),
    startUnixNano: ns(end - WINDOW_S),
    endUnixNano: ns(end),
    host: INSIGHTS_HOST,
    entities: [
      { kind: 'ENTITY_KIND_HOST', id: INSIGHTS_HOST, attributes: kv({ 'host.name': INSIGHTS_HOST }) },
      ...GPUS.map((g, i) => ({ kind: 'ENTITY_KIND_GPU', id: g, parent: INSIGHTS_HOST, attributes: kv({ 'gpu.index': i, 'gpu.uuid': g, 'gpu.model': 'NVIDIA H100 80GB HBM3' }) })),
      { kind: 'ENTITY_KIND_PROCESS', id: PROCESS, parent: INSIGHTS_HOST, attributes: kv({ 'process.pid': 4242, 'process.executable.name': 'python3' }) },
    ],
    metrics: metrics.map(([key, unit, entityKind]) => ({ key, kind: 'METRIC_KIND_GAUGE', unit, entityKind })),
    series,
    events: xid > end - WINDOW_S && xid <= end ? [{ timeUnixNano: ns(xid), entity: GPUS[2], kind: 'xid', code: 79, message: 'GPU has fallen off the bus' }] : [],
  };
}

// The one-minute window ending at `end` of fleet host `host`, whose utilization falls linearly
// from 75 % (window 0) to 55 % (the last); power and memory stay, as on a job that slows down.
function fleetBatch(host, seq, end) {
  const metrics = [
    ['gpu.utilization', '1'],
    ['gpu.power.usage', 'W'],
    ['gpu.temperature', 'Cel'],
    ['gpu.memory.used', 'By'],
    ['gpu.memory.total', 'By'],
  ];
  const gpus = Array.from({ length: FLEET_GPUS }, (_, i) => `GPU-${host}-${i}`);
  const util = 0.75 - (0.2 * (seq - 1)) / (FLEET_WINDOWS - 1);
  const values = [util, 600, 60, 60e9, 80e9];
  return {
    version: 1,
    agentId: `${host}-agent`,
    sequence: String(seq),
    startUnixNano: ns(end - 60),
    endUnixNano: ns(end),
    host,
    tags: kv({ cluster: FLEET_CLUSTER }),
    entities: [
      { kind: 'ENTITY_KIND_HOST', id: host, attributes: kv({ 'host.name': host }) },
      ...gpus.map((g, i) => ({ kind: 'ENTITY_KIND_GPU', id: g, parent: host, attributes: kv({ 'gpu.index': i, 'gpu.uuid': g, 'gpu.model': 'NVIDIA H100 80GB HBM3' }) })),
    ],
    metrics: metrics.map(([key, unit]) => ({ key, kind: 'METRIC_KIND_GAUGE', unit, entityKind: 'ENTITY_KIND_GPU' })),
    series: gpus.flatMap((g) => values.map((v, m) => ({ metric: m, entity: g, avg: v, min: v, max: v, last: v, count: 6, lastTimeUnixNano: ns(end) }))),
    events: [],
  };
}

async function post(base, body, what) {
  const r = await fetch(`${base}/api/v1/ingest/batch`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  if (!r.ok) throw new Error(`posting ${what}: HTTP ${r.status} ${await r.text()}`);
}

// `warpscope [config] server` on dataDir/insights with `extra` flags; resolves to its base URL
// once up.
async function serve(t, extra, config = []) {
  const port = await t.freePort();
  const base = `http://127.0.0.1:${port}`;
  const child = spawn(t.warpscope, [...config, 'server', '--data-dir', path.join(t.dataDir, 'insights'), '--listen-address', `127.0.0.1:${port}`, ...extra], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr.on('data', (d) => (err = (err + d).slice(-4000)));
  child.on('exit', (code) => {
    if (code) console.error(`warpscope server (insights) exited with ${code}:\n${err}`);
  });
  t.children.push(child);
  await t.until('the insights server', async () => (await fetch(`${base}/healthz`)).ok, 15_000);
  return { base, child };
}

// A server with insights off (started early: the windows are posted to it just before it is
// restarted with insights on, so that they end now).
export function startInsightsServers(t) {
  return serve(t, ['--insights-interval', '0s']);
}

// Posts the windows ending now to the server with insights off, then serves its data dir with
// insights on; resolves once the engine lists the four findings, the fleet's firing.
async function restartWithInsights(t, off) {
  const now = Date.now() / 1000;
  const started = Date.now();
  for (let i = 0; i < WINDOWS; i++) {
    await post(off.base, batch(i + 1, now - (WINDOWS - 1 - i) * WINDOW_S, now), `window ${i + 1}`);
  }
  // The fleet hosts' windows, the two hosts side by side.
  await Promise.all(
    FLEET_HOSTS.map(async (host) => {
      for (let i = 0; i < FLEET_WINDOWS; i++) {
        await post(off.base, fleetBatch(host, i + 1, now - (FLEET_WINDOWS - 1 - i) * 60), `${host} window ${i + 1}`);
      }
    }),
  );
  console.log(`posted the insights windows in ${Date.now() - started} ms`);
  await t.stopChild(off.child);
  const config = path.join(t.dataDir, 'insights.toml');
  writeFileSync(config, '[server.insights]\nfleet-hold = "0s"\n');
  const on = await serve(t, ['--insights-interval', '1s'], ['--config', config]);
  // A slow machine's restart eats into the windows' last minute: the bound is generous, and a
  // timeout says what the engine had listed.
  let listed = 'nothing';
  await t.until(
    'the engine to list the four findings',
    async () => {
      const r = await (await fetch(`${on.base}/api/v1/insights`)).json();
      listed = r.insights.map((f) => `${f.rule} (${f.state})`).join(', ') || 'no findings';
      const rules = new Set(r.insights.map((f) => f.rule));
      const fleet = r.insights.find((f) => f.rule === 'fleet_regression');
      return ['input_bound', 'cooling_failure', 'hardware_errors'].every((x) => rules.has(x)) && fleet?.state === 'firing';
    },
    45_000,
  ).catch((e) => {
    throw new Error(`${e.message} ${(Date.now() - started) / 1000} s after the windows ended; the engine listed: ${listed}`);
  });
  return on;
}

// The UI: "insights are off", the Insights page and its filters, a badge on the fleet page, the
// host page's strip and bands, the finding page with its evidence chart and profile button.
export async function insightsScenario(t, off) {
  const { page, errors } = await t.newPage();
  const { check, ready, shot } = t;
  await page.goto(`${off.base}/insights`);
  await ready(page);
  const offText = await page.locator('[data-testid=insights-off]').textContent();
  check(/insights are off/.test(offText) && /--insights-interval/.test(offText), `with insights off the page says what the server says (${offText})`);
  errors.length = 0; // the browser logs the 404 that says so

  const on = await restartWithInsights(t, off);
  const base = on.base;
  await page.goto(`${base}/insights?range=15m`);
  await ready(page);
  const rows = page.locator('[data-testid=findings-table] tbody tr');
  const rules = await rows.evaluateAll((trs) => trs.map((tr) => tr.dataset.rule));
  check(rules.includes('input_bound') && rules.includes('cooling_failure') && rules.includes('hardware_errors'), `the Insights page lists the engine's findings (${rules.join(', ')})`);
  check(rules.indexOf('input_bound') > rules.indexOf('cooling_failure') && rules.indexOf('input_bound') > rules.indexOf('hardware_errors'), 'pages are listed before tickets');
  const totals = await page.locator('[data-testid=insight-totals]').textContent();
  check(/Firing\s*[1-9]/.test(totals) && /GPU-hours lost/.test(totals), `the totals count the firing findings (${totals})`);
  const cooling = await page.locator('[data-testid=findings-table] tbody tr[data-rule=cooling_failure]').textContent();
  check(/GPU 1/.test(cooling) && /ins-node/.test(cooling), `the cooling finding names its host and GPU (${cooling.slice(0, 200)})`);
  // The cluster's finding has no one host: its row names the fleet and the cluster.
  const fleetRow = page.locator('[data-testid=findings-table] tbody tr[data-rule=fleet_regression]');
  const fleetCell = fleetRow.locator('td').nth(2);
  const fleetCellText = await fleetCell.textContent();
  check(/^fleet/.test(fleetCellText) && /cluster ins-fleet · 2 hosts, 8 GPUs/.test(fleetCellText), `the fleet regression's row names the fleet and its cluster (${fleetCellText})`);
  check((await fleetCell.locator('a').getAttribute('href')).split('?')[0] === '/', 'its "fleet" links the fleet view');
  await shot(page, '20-insights');
  // Filters: the rule, then the severity; both in the URL.
  await page.selectOption('[data-testid=filter-rule]', 'cooling_failure');
  await page.waitForURL(/rule=cooling_failure/);
  await ready(page);
  const filtered = await rows.evaluateAll((trs) => trs.map((tr) => tr.dataset.rule));
  check(filtered.length >= 1 && filtered.every((r) => r === 'cooling_failure'), `the rule filter keeps its findings only (${filtered.join(', ')})`);
  await page.goto(`${base}/insights?severity=info`);
  await ready(page);
  check((await page.locator('[data-testid=insights-empty]').textContent()).includes('No finding matches'), 'a filter that matches nothing says so');
  await page.goto(`${base}/insights?severity=ticket`);
  await ready(page);
  const tickets = await rows.evaluateAll((trs) => trs.map((tr) => tr.dataset.rule));
  check(tickets.length === 2 && tickets.includes('input_bound') && tickets.includes('fleet_regression'), `the severity filter from the URL keeps the tickets (${tickets.join(', ')})`);

  // The fleet page: the host's badge links to its findings.
  await page.goto(`${base}/?range=15m`);
  await ready(page);
  const badge = page.locator('[data-testid=host-badges]');
  const badgeText = await badge.textContent();
  check(/2 page/.test(badgeText), `the fleet's host row shows its firing findings by severity (${badgeText})`);
  await badge.click();
  await page.waitForURL(/\/insights\?.*host=ins-node/);
  await ready(page);
  check((await rows.count()) >= 2, 'the badge opens the Insights page filtered to the host');

  // The cluster's finding: on the fleet page above the hosts, then its own page.
  await page.goto(`${base}/?range=15m`);
  await ready(page);
  const fleetLinks = page.locator('[data-testid=fleet-findings] [data-testid=fleet-finding]');
  const fleetCard = await page.locator('[data-testid=fleet-findings]').textContent();
  check((await fleetLinks.count()) === 1 && /Fleet regression/.test(fleetCard) && /Cluster ins-fleet \(2 hosts, 8 GPUs\)/.test(fleetCard), `the fleet page lists the cluster's firing finding (${fleetCard.slice(0, 200)})`);
  check((await page.locator('[data-testid=host-badges]').count()) === 1, 'the finding of no one host adds no host badge');
  await shot(page, '24-fleet-findings');
  await fleetLinks.click();
  await page.waitForURL(/\/insights\/[^/?]+/);
  await ready(page);
  const fleetTitle = await page.locator('[data-testid=finding-title]').textContent();
  check(/Fleet regression/.test(fleetTitle), `the fleet finding's page opens (${fleetTitle})`);
  check((await page.locator('[data-testid=open-host]').count()) === 0 && (await page.locator('[data-testid=open-fleet]').count()) === 1, 'it offers the fleet view, not a host view');
  const hostLinks = await page.locator('dl.facts dt:text-is("Hosts") + dd a').evaluateAll((as) => as.map((a) => [a.textContent, new URL(a.href).pathname]));
  check(JSON.stringify(hostLinks.map(([name]) => name)) === JSON.stringify(FLEET_HOSTS) && hostLinks.every(([name, href]) => href === `/host/${name}`), `its Hosts row links each host (${JSON.stringify(hostLinks)})`);
  const fleetEvidence = await page.locator('[data-testid=evidence-table]').textContent();
  check(/declined_gpus\s*8/.test(fleetEvidence), `its evidence table counts the declined GPUs (${fleetEvidence.slice(0, 200)})`);
  check((await page.locator('[data-testid=evidence-charts] canvas').count()) >= 2, 'its median utilization and power are drawn as charts');
  const [scrollWidth, clientWidth] = await page.evaluate(() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]);
  check(scrollWidth <= clientWidth, `its long figures (the hosts' JSON) wrap inside the page (${scrollWidth} <= ${clientWidth} px)`);
  await shot(page, '25-fleet-finding');
  await page.click('[data-testid=open-fleet]');
  await page.waitForURL((u) => u.pathname === '/' && u.searchParams.has('from') && u.searchParams.has('to'));
  await ready(page);
  check((await page.locator('[data-testid=fleet-tiles]').count()) === 1, 'its button opens the fleet view at the finding\'s time');

  // The host page: the strip and the bands.
  await page.goto(`${base}/host/${INSIGHTS_HOST}?tab=gpu&range=15m`);
  await ready(page);
  const strip = await page.locator('[data-testid=host-findings]').textContent();
  check(/open finding/.test(strip) && /Cooling|cooling/.test(strip), `the host page lists its open findings above the charts (${strip.slice(0, 200)})`);
  await loadAllCharts(page);
  const temp = page.locator('[data-testid=widget-temp] .chart');
  await page.waitForFunction(() => Number(document.querySelector('[data-testid=widget-temp] .chart')?.getAttribute('data-bands') ?? 0) > 0);
  const bands = Number(await temp.getAttribute('data-bands'));
  check(bands >= 3, `the temperature chart draws the findings as bands (${bands})`);
  // Hover the right end of the chart: the tooltip names the findings there.
  const over = page.locator('[data-testid=widget-temp] .u-over');
  await over.scrollIntoViewIfNeeded();
  const box = await over.boundingBox();
  await over.hover({ position: { x: box.width - 2, y: box.height / 2 } });
  const hover = await page.waitForFunction(() => document.querySelector("[data-testid=widget-temp] .u-over")?.getAttribute("data-finding"), null, { timeout: 5000 });
  const hoverText = await hover.jsonValue();
  check(/on GPU/.test(hoverText), `hovering a band names its finding (${hoverText})`);
  await shot(page, '21-host-findings');

  // The finding page of input_bound, from the strip: evidence table and chart, the profile button.
  await page.click('[data-testid=host-finding][data-rule=input_bound]');
  await page.waitForURL(/\/insights\/[^/?]+/);
  await ready(page);
  const title = await page.locator('[data-testid=finding-title]').textContent();
  check(/input|CPU/i.test(title), `the finding page shows the input_bound finding (${title})`);
  const evidence = await page.locator('[data-testid=evidence-table]').textContent();
  check(/process_cpu_cores\s*1/.test(evidence), `the evidence table lists the figures (${evidence.slice(0, 200)})`);
  check((await page.locator('[data-testid=evidence-charts] canvas').count()) >= 2, 'the evidence series are drawn as charts');
  await shot(page, '22-finding');
  // Dark theme, keyboard: the profile button is reachable and opens the CPU profile panel.
  await page.keyboard.press('d');
  await page.waitForFunction(() => document.documentElement.dataset.theme === 'dark');
  await ready(page);
  await page.locator('[data-testid=open-profile]').focus();
  await page.keyboard.press('Enter');
  await page.waitForURL(/\/host\/ins-node\?.*pk=cpu/);
  await page.locator('[data-testid=profile-panel]').waitFor();
  const url = new URL(page.url());
  check(url.searchParams.get('pe') === PROCESS && /^\d+-\d+$/.test(url.searchParams.get('p') ?? ''), `the profile button opens the process's CPU profile panel for the window (${url.search})`);
  await shot(page, '23-finding-profile', false);
  check(errors.length === 0, `no console errors on the insights pages${errors.length ? ':\n  ' + errors.join('\n  ') : ''}`);
  await page.context().close();
}

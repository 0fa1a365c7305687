// SPDX-License-Identifier: Apache-2.0
// Browser test of the Inference views against a real `warpscope up --simulate healthy-8xh100`
// (port 0; its simulated host serves no model) fed through the native JSON ingest with ten
// 30 s windows of two serving hosts, as the inference source writes them:
//   inf-a: vLLM (pid 5151) serving MODEL on GPU-inf-a-1 and GPU-inf-a-2 (of three GPUs), 12
//          requests/s, TTFT p50/p95/p99 80/250/400 ms, batch efficiency 25 % of
//          max_num_batched_tokens 8192;
//   inf-b: SGLang (pid 6161) serving MODEL on GPU-inf-b-0, 8 requests/s, TTFT p95 500 ms,
//          batch efficiency 75 % (sequences).
// Checks: the Inference tab is on inf-a's host page and not on the simulated host's; the tab's
// serving table, latency chart (p50/p95/p99 lines), batch-size limit line and GPU charts (the
// two GPUs of inference.gpu.uuids, not the third); the models list's numbers summed over the
// hosts; the model page's processes on both hosts; the process link opens the process page and
// the GPU profile link the host page's profile panel for the same window; a host and a model
// without inference say why. Then request traces of MODEL posted as OTLP/JSON to /v1/traces
// (TRACES below): the model page's latency breakdown by phase, TTFT by cache reuse, the slowest
// requests in order, a clicked request's waterfall bars and its GPU profile link; before them,
// the hidden slot and the line on how to send traces; a model with traces and no serving metrics.
// Screenshots go to --out.
//
//   node inference.mjs --warpscope <build>/bin/warpscope --out <build>/test-output/browser \
//        [--node-modules <dir with playwright-core>] [--chromium /usr/bin/chromium]
// Exit codes: 0 pass, 1 fail, 77 skipped (no Chromium or no playwright-core; fails with CI=true).
import fs from 'node:fs';
import path from 'node:path';
import { api, browserTestArgs, check, runBrowserTest, setUpBrowserTest, until } from './harness.mjs';

const { warpscope, outDir, chromiumPath, nodeModules } = browserTestArgs();
const bt = setUpBrowserTest({ name: 'inference', what: 'the inference browser test', timeoutMs: 120_000, warpscope, outDir, chromiumPath, nodeModules });

const MODEL = 'meta-llama/Llama-3.1-8B-Instruct';
const WINDOW_S = 30;
const WINDOWS = 10;
const kv = (o) => Object.entries(o).map(([key, value]) => ({ key, value: String(value) }));
const ns = (s) => String(Math.round(s * 1e9));

// The keys, units and kinds of inference_metrics.h, and the GPU metrics drawn beside them.
const METRICS = [
  ['inference.time_to_first_token', 's'],
  ['inference.inter_token_latency', 's'],
  ['inference.request_latency', 's'],
  ['inference.queue_time', 's'],
  ['inference.requests.running', '{request}'],
  ['inference.requests.waiting', '{request}'],
  ['inference.request.rate', '{request}/s'],
  ['inference.token.rate', '{token}/s'],
  ['inference.kv_cache.usage', '1'],
  ['inference.prefix_cache.hit_ratio', '1'],
  ['inference.batch.size', '1'],
  ['inference.batch.limit', '1'],
  ['inference.batch.efficiency', '1'],
  ['gpu.utilization', '1', 'ENTITY_KIND_GPU'],
  ['gpu.power.usage', 'W', 'ENTITY_KIND_GPU'],
];

const HOSTS = [
  { host: 'inf-a', pid: 5151, engine: 'vllm', gpus: ['GPU-inf-a-0', 'GPU-inf-a-1', 'GPU-inf-a-2'], used: ['GPU-inf-a-1', 'GPU-inf-a-2'], rate: 12, ttft: [0.08, 0.25, 0.4], eff: 0.25, basis: 'tokens', limit: 8192 },
  { host: 'inf-b', pid: 6161, engine: 'sglang', gpus: ['GPU-inf-b-0'], used: ['GPU-inf-b-0'], rate: 8, ttft: [0.2, 0.5, 0.7], eff: 0.75, basis: 'sequences', limit: 256 },
];

// One window of a serving host, ending at `end`, as the agent's batch (warpscope.v1.Batch JSON).
function batch(h, seq, end) {
  const proc = `pid/${h.pid}/0`;
  const series = [];
  const idx = Object.fromEntries(METRICS.map((m, i) => [m[0], i]));
  const add = (metric, entity, value, labels = {}) =>
    series.push({ metric: idx[metric], entity, labels: kv(labels), avg: value, min: value, max: value, last: value, count: 3, lastTimeUnixNano: ns(end) });
  const model = { model: MODEL };
  const quantiles = ['0.5', '0.95', '0.99'];
  quantiles.forEach((q, i) => {
    add('inference.time_to_first_token', proc, h.ttft[i], { ...model, quantile: q });
    add('inference.inter_token_latency', proc, 0.02 * (i + 1), { ...model, quantile: q });
    add('inference.request_latency', proc, 2 * (i + 1), { ...model, quantile: q });
    add('inference.queue_time', proc, 0.01 * (i + 1), { ...model, quantile: q });
  });
  add('inference.requests.running', proc, 6, model);
  add('inference.requests.waiting', proc, 1, model);
  add('inference.request.rate', proc, h.rate, model);
  add('inference.token.rate', proc, 3000, { ...model, token_type: 'input' });
  add('inference.token.rate', proc, 900, { ...model, token_type: 'output' });
  add('inference.kv_cache.usage', proc, 0.4, model);
  add('inference.prefix_cache.hit_ratio', proc, 0.3, model);
  add('inference.batch.size', proc, h.eff * h.limit, { ...model, basis: h.basis });
  add('inference.batch.limit', proc, h.limit, { ...model, basis: h.basis });
  add('inference.batch.efficiency', proc, h.eff, { ...model, basis: h.basis });
  h.gpus.forEach((g, i) => {
    const used = h.used.includes(g);
    add('gpu.utilization', g, used ? 0.6 + 0.1 * i : 0.05);
    add('gpu.power.usage', g, used ? 500 : 90);
  });
  return {
    version: 1,
    agentId: `${h.host}-agent`,
    sequence: String(seq),
    startUnixNano: ns(end - WINDOW_S),
    endUnixNano: ns(end),
    host: h.host,
    entities: [
      { kind: 'ENTITY_KIND_HOST', id: h.host, attributes: kv({ 'host.name': h.host }) },
      ...h.gpus.map((g, i) => ({ kind: 'ENTITY_KIND_GPU', id: g, parent: h.host, attributes: kv({ 'gpu.index': i, 'gpu.uuid': g, 'gpu.model': 'NVIDIA H100 80GB HBM3' }) })),
      {
        kind: 'ENTITY_KIND_PROCESS',
        id: proc,
        parent: h.host,
        attributes: kv({ 'process.pid': h.pid, 'process.executable.name': 'python3', 'inference.engine': h.engine, 'inference.gpu.uuids': h.used.join(','), 'inference.endpoint': 'http://127.0.0.1:8000/metrics' }),
      },
    ],
    metrics: METRICS.map(([key, unit, entityKind]) => ({ key, kind: 'METRIC_KIND_GAUGE', unit, entityKind: entityKind ?? 'ENTITY_KIND_PROCESS' })),
    series,
    events: [],
  };
}

// Ingest needs the token `up` wrote to its data dir (reads do not).
async function post(base, token, body) {
  const r = await fetch(`${base}/api/v1/ingest/batch`, { method: 'POST', headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  if (!r.ok) throw new Error(`posting ${body.host} window ${body.sequence}: HTTP ${r.status} ${await r.text()}`);
}

// Request traces of MODEL, as vLLM V1 sends them (one `llm_request` span per request with its
// gen_ai.latency.* attributes, in seconds) from inf-a's pid 5151, and as an engine that traces
// each phase sends them (a request span with one child span per phase) from inf-b's pid 6161.
// The vLLM requests' phases are derived backwards from the end: decode, prefill, queue, then
// preprocess from the arrival. Decode over the five requests: 0.3, 0.4, 0.5, 1.0, 2.0 s (p50
// 500 ms, p95 1.8 s, p99 1.96 s, mean 840 ms); TTFT with cache reuse 120 and 150 ms (p50 135 ms),
// without 300 and 550 ms (p50 425 ms), and the engine's not reported. Slowest first: vllm-2
// (2.6 s), vllm-1 (1.3 s), the engine's (1 s), vllm-0 (0.7 s), vllm-3 (0.45 s).
const VLLM = [
  { queue: 0.01, prefill: 0.1, decode: 0.5, e2e: 0.7, ttft: 0.12, cached: 256 },
  { queue: 0.05, prefill: 0.2, decode: 1.0, e2e: 1.3, ttft: 0.3, cached: 0 },
  { queue: 0.2, prefill: 0.3, decode: 2.0, e2e: 2.6, ttft: 0.55, cached: 0 },
  { queue: 0.02, prefill: 0.1, decode: 0.3, e2e: 0.45, ttft: 0.15, cached: 128 },
];
const ENGINE_PHASES = [['receive', 0.01], ['tokenize', 0.04], ['queue', 0.05], ['prefill', 0.2], ['decode', 0.4], ['detokenize', 0.1], ['respond', 0.2]];
const traceId = (i) => `7a3e${String(i).padStart(28, '0')}`;
const spanId = (i, j = 0) => `5b${String(i).padStart(6, '0')}${String(j).padStart(8, '0')}`;
const attr = (key, v) => ({ key, value: typeof v === 'string' ? { stringValue: v } : Number.isInteger(v) ? { intValue: String(v) } : { doubleValue: v } });
const resource = (host, pid, service) => ({ attributes: [attr('host.name', host), attr('process.pid', pid), attr('service.name', service)] });

function traces(t0) {
  const vllm = VLLM.map((r, i) => ({
    traceId: traceId(i),
    spanId: spanId(i),
    name: 'llm_request',
    kind: 2,
    startTimeUnixNano: ns(t0 + 10 * i),
    endTimeUnixNano: ns(t0 + 10 * i + r.e2e),
    attributes: [
      attr('gen_ai.response.model', MODEL),
      attr('gen_ai.request.id', `vllm-${i}`),
      attr('gen_ai.usage.prompt_tokens', 512),
      attr('gen_ai.usage.completion_tokens', 100 * (i + 1)),
      attr('gen_ai.usage.cache_read.input_tokens', r.cached),
      attr('gen_ai.latency.time_in_queue', r.queue),
      attr('gen_ai.latency.time_in_model_prefill', r.prefill),
      attr('gen_ai.latency.time_in_model_decode', r.decode),
      attr('gen_ai.latency.e2e', r.e2e),
      attr('gen_ai.latency.time_to_first_token', r.ttft),
    ],
    status: {},
  }));
  const start = t0 + 45;
  const engine = [{ traceId: traceId(9), spanId: spanId(9), name: 'generate', kind: 2, startTimeUnixNano: ns(start), endTimeUnixNano: ns(start + 1), attributes: [attr('gen_ai.request.model', MODEL), attr('gen_ai.request.id', 'engine-0')], status: {} }];
  let at = start;
  ENGINE_PHASES.forEach(([phase, d], j) => {
    engine.push({ traceId: traceId(9), spanId: spanId(9, j + 1), parentSpanId: spanId(9), name: `engine.${phase}`, kind: 1, startTimeUnixNano: ns(at), endTimeUnixNano: ns(at + d), attributes: [attr('engine.step', j)], status: {} });
    at += d;
  });
  return {
    resourceSpans: [
      { resource: resource('inf-a', 5151, 'vllm'), scopeSpans: [{ scope: { name: 'vllm.llm_engine' }, spans: vllm }] },
      { resource: resource('inf-b', 6161, 'engine'), scopeSpans: [{ scope: { name: 'engine' }, spans: engine }] },
    ],
  };
}

async function postTraces(base, token, body) {
  const r = await fetch(`${base}/v1/traces`, { method: 'POST', headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  const text = await r.text();
  if (!r.ok || /rejected/i.test(text)) throw new Error(`posting request traces: HTTP ${r.status} ${text}`);
}

const cells = (row) => row.locator('td[data-col]').evaluateAll((tds) => Object.fromEntries(tds.map((td) => [td.getAttribute('data-col'), td.textContent])));

const legendLabels = (page, id) => page.locator(`[data-testid=widget-${id}] [data-testid=legend] tr[data-label]`).evaluateAll((rows) => rows.map((r) => r.getAttribute('data-label')));

runBrowserTest(bt, async () => {
  const base = await bt.startUp(path.join(bt.dataDir, 'up'));
  const token = fs.readFileSync(path.join(bt.dataDir, 'up', 'token'), 'utf8').trim();
  const now = Math.floor(Date.now() / 1000);
  for (const h of HOSTS) for (let i = 0; i < WINDOWS; i++) await post(base, token, batch(h, i + 1, now - (WINDOWS - 1 - i) * WINDOW_S));
  const simulated = await until('the simulated host', async () => (await api(base, '/api/v1/entities?kind=host&limit=10')).entities.map((e) => e.host).find((x) => !x.startsWith('inf-')));

  const browser = await bt.launchBrowser();
  const page = await (await browser.newContext({ viewport: { width: 1440, height: 900 } })).newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  const ready = () => page.waitForFunction(() => document.querySelector('main')?.getAttribute('aria-busy') === 'false');
  const shot = (name) => page.screenshot({ path: path.join(outDir, `inference-${name}.png`), fullPage: true });

  // The simulated host serves no model: no Inference tab; asked for anyway, the tab says why.
  await page.goto(`${base}/host/${encodeURIComponent(simulated)}?range=15m`);
  await ready();
  check((await page.locator('#tab-inference').count()) === 0, `no Inference tab on ${simulated}, which serves no model`);
  await page.goto(`${base}/host/${encodeURIComponent(simulated)}?range=15m&tab=inference`);
  await ready();
  const empty = await page.locator('[data-testid=inference-empty]').textContent();
  check(/No inference server found/.test(empty) && /vLLM, SGLang, TensorRT-LLM and TGI/.test(empty), 'tab=inference on a host without a server says why');

  // inf-a's Inference tab.
  await page.goto(`${base}/host/inf-a?range=15m`);
  await ready();
  check((await page.locator('#tab-inference').count()) === 1, 'the Inference tab is on inf-a, which serves a model');
  await page.locator('#tab-inference').click();
  await ready();
  check(new URL(page.url()).searchParams.get('tab') === 'inference', 'the tab is in the URL (tab=inference)');
  await page.waitForSelector('[data-testid=widget-inf-ttft] [data-testid=legend]');
  const row = page.locator('[data-testid=serving-table] tbody tr');
  check((await row.count()) === 1, 'one serving process on inf-a');
  check(/vLLM/.test(await row.textContent()), 'its engine is vLLM');
  const requests = await row.locator('td[data-col=requests]').textContent();
  check(/^12\b/.test(requests), `its request rate is 12/s (${requests})`);
  const ttft = await row.locator('td[data-col=ttft]').textContent();
  check(ttft === '250 ms', `its TTFT p95 is 250 ms (${ttft})`);
  const eff = await row.locator('td[data-col=efficiency]').textContent();
  check(/^25 %/.test(eff) && /max_num_batched_tokens 8192/.test(eff), `its batch efficiency names its limit and basis (${eff})`);
  const q = await legendLabels(page, 'inf-ttft');
  check(['p50', 'p95', 'p99'].every((l) => q.includes(l)) && q.length === 3, `TTFT draws p50, p95 and p99 (${q.join(', ')})`);
  const tokens = await legendLabels(page, 'inf-tokens');
  check(tokens.includes('input') && tokens.includes('output'), `tokens/s by input and output (${tokens.join(', ')})`);
  const batchLimits = await page.locator('[data-testid=widget-inf-batch] .chart').getAttribute('data-limit-labels');
  check(batchLimits === 'max_num_batched_tokens 8192', `the batch size chart draws the limit (${batchLimits})`);
  await page.waitForSelector('[data-testid=widget-inf-gpu-util] [data-testid=legend]');
  const gpus = await legendLabels(page, 'inf-gpu-util');
  check(gpus.join(',') === 'GPU 1,GPU 2', `GPU utilization beside it is of the GPUs in inference.gpu.uuids (${gpus.join(', ')})`);
  check((await legendLabels(page, 'inf-gpu-power')).join(',') === 'GPU 1,GPU 2', 'and so is GPU power');
  await shot('host-tab');

  // The process link keeps the window and opens the process page.
  const windowOf = (u) => new URL(u).searchParams.get('range');
  await row.locator('[data-testid=serving-process]').click();
  await ready();
  check(new URL(page.url()).pathname === '/host/inf-a/process/pid%2F5151%2F0' && windowOf(page.url()) === '15m', `the serving process links to its process page for the same window (${page.url()})`);
  await page.goBack();
  await ready();
  await page.locator('[data-testid=serving-table] [data-testid=serving-profile]').click();
  await ready();
  const u = new URL(page.url());
  check(u.searchParams.get('pk') === 'gpu' && u.searchParams.get('pp') === '5151' && /^\d+-\d+$/.test(u.searchParams.get('p') ?? ''), `GPU profile opens the profile panel of pid 5151 over the window (${u.search})`);

  // The models across hosts.
  await page.goto(`${base}/inference?range=15m`);
  await ready();
  const m = page.locator(`[data-testid=model-table] tr[data-model="${MODEL}"]`);
  check((await m.count()) === 1, 'the models list has the model');
  const text = await m.textContent();
  check(/inf-a/.test(text) && /inf-b/.test(text) && /SGLang/.test(text) && /vLLM/.test(text), `the model is served on both hosts by both engines (${text})`);
  const sum = await m.locator('td[data-col=requests]').textContent();
  check(/^20\b/.test(sum), `its request rate sums the hosts' (${sum})`);
  const worst = await m.locator('td[data-col=ttft]').textContent();
  check(worst === '500 ms', `its TTFT p95 is the slowest process's (${worst})`);
  const meanEff = await m.locator('td[data-col=efficiency]').textContent();
  check(/^50 %/.test(meanEff), `its batch efficiency is the processes' mean (${meanEff})`);
  await shot('models');

  // One model across hosts.
  await m.locator('a').first().click();
  await ready();
  check(new URL(page.url()).pathname === `/inference/${encodeURIComponent(MODEL)}`, `the model links to its page (${page.url()})`);
  await page.waitForSelector('[data-testid=widget-inf-gpu-util] [data-testid=legend]');
  check((await page.locator('[data-testid=serving-table] tbody tr').count()) === 2, 'the model page lists both serving processes');
  const lines = await legendLabels(page, 'inf-requests');
  check(lines.join(',') === 'inf-a · pid 5151,inf-b · pid 6161', `its request chart has a line per process (${lines.join(', ')})`);
  const modelGpus = await legendLabels(page, 'inf-gpu-util');
  check(modelGpus.join(',') === 'inf-a · GPU 1,inf-a · GPU 2,inf-b · GPU 0', `its GPU charts are the processes' GPUs (${modelGpus.join(', ')})`);
  check((await page.locator('[data-testid=model-traces]').isVisible()) === false, 'without request traces the slot stays hidden');
  const help = await page.locator('[data-testid=traces-help]').textContent();
  check(/--otlp-traces-endpoint \S+\/v1\/traces/.test(help) && /OTEL_RESOURCE_ATTRIBUTES=host\.name=/.test(help) && /process\.pid=/.test(help), `and one muted line says how to send them (${help})`);
  await shot('model');

  // Request traces of the model: the breakdown by phase, TTFT by cache reuse, the lists.
  const t0 = now - 240;
  await postTraces(base, token, traces(t0));
  await page.reload();
  await ready();
  await page.waitForSelector('[data-testid=model-traces] [data-testid=phase-table]');
  check((await page.locator('[data-testid=traces-help]').isVisible()) === false, 'with request traces the line on how to send them goes');
  check(/^5 requests in this window/.test(await page.locator('[data-testid=traces-summary]').textContent()), 'the breakdown counts the five requests');
  const phaseRows = await page.locator('[data-testid=phase-table] tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-phase')));
  check(phaseRows.join(',') === 'preprocess,receive,tokenize,queue,prefill,decode,detokenize,respond', `the phases in request order (${phaseRows.join(', ')})`);
  const decode = await cells(page.locator('[data-testid=phase-table] tr[data-phase=decode]'));
  check(decode.count === '5' && decode.p50 === '500 ms' && decode.p95 === '1.8 s' && decode.p99 === '1.96 s' && decode.mean === '840 ms', `decode over both engines' requests: count 5, p50 500 ms, p95 1.8 s, p99 1.96 s, mean 840 ms (${JSON.stringify(decode)})`);
  const receive = await cells(page.locator('[data-testid=phase-table] tr[data-phase=receive]'));
  check(receive.count === '1' && receive.p50 === '10 ms', `receive only from the engine's child span (${JSON.stringify(receive)})`);
  const e2e = await cells(page.locator('[data-testid=phase-table] tr[data-phase=e2e]'));
  check(e2e.count === '5' && e2e.max === '2.6 s' && e2e.p50 === '1 s', `end to end: p50 1 s, max 2.6 s (${JSON.stringify(e2e)})`);
  const segments = await page.locator('[data-testid=phase-bar] > span').evaluateAll((s) => s.map((x) => x.getAttribute('data-phase')));
  check(segments.includes('decode') && segments.includes('respond') && segments.indexOf('queue') < segments.indexOf('decode'), `the stacked bar has the phases in order (${segments.join(', ')})`);
  const hit = await cells(page.locator('[data-testid=ttft-cache] tr[data-reuse=hit]'));
  const miss = await cells(page.locator('[data-testid=ttft-cache] tr[data-reuse=miss]'));
  const unknown = await cells(page.locator('[data-testid=ttft-cache] tr[data-reuse=unknown]'));
  check(hit.count === '2' && hit.p50 === '135 ms', `TTFT with prefix/KV-cache reuse: 2 requests, p50 135 ms (${JSON.stringify(hit)})`);
  check(miss.count === '2' && miss.p50 === '425 ms', `TTFT without: 2 requests, p50 425 ms (${JSON.stringify(miss)})`);
  check(unknown.count === '1', `one request does not report reuse (${JSON.stringify(unknown)})`);
  const slowest = await page.locator('[data-testid=trace-list-slowest] tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-trace')));
  const want = [2, 1, 9, 0, 3].map(traceId);
  check(slowest.join(',') === want.join(','), `the slowest requests, slowest first (${slowest.join(', ')})`);
  const recent = await page.locator('[data-testid=trace-list-recent] tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-trace')));
  check(recent[0] === traceId(9) && recent.at(-1) === traceId(0), `the latest requests, latest first (${recent.join(', ')})`);
  await shot('model-traces');

  // A clicked request's waterfall: vllm-2's derived phases on its 2.6 s axis.
  await page.locator(`[data-testid=trace-list-slowest] tr[data-trace="${traceId(2)}"] [data-testid=trace-link]`).click();
  await ready();
  check(new URL(page.url()).searchParams.get('trace') === traceId(2), `the request is in the URL (${page.url()})`);
  await page.waitForSelector('[data-testid=waterfall] .wf-row');
  const bars = await page.locator('[data-testid=waterfall] .wf-row').evaluateAll((rows) =>
    rows.map((r) => {
      const track = r.querySelector('.wf-track').getBoundingClientRect();
      const bar = r.querySelector('.wf-bar').getBoundingClientRect();
      return { phase: r.getAttribute('data-phase'), left: (bar.left - track.left) / track.width, width: bar.width / track.width };
    }),
  );
  const near = (a, b) => Math.abs(a - b) < 0.01;
  const bar = (p) => bars.find((b) => b.phase === p) ?? { left: NaN, width: NaN };
  check(bars.map((b) => b.phase).join(',') === 'request,preprocess,queue,prefill,decode,ttft', `vllm-2's rows: the request, its phases in time order, the first token (${bars.map((b) => b.phase).join(', ')})`);
  check(near(bar('request').left, 0) && near(bar('request').width, 1), 'the request bar spans the axis');
  check(near(bar('decode').left, 0.6 / 2.6) && near(bar('decode').width, 2 / 2.6), `decode from 0.6 s for 2 s of 2.6 s (${JSON.stringify(bar('decode'))})`);
  check(near(bar('queue').left, 0.1 / 2.6) && near(bar('queue').width, 0.2 / 2.6), `queue from 0.1 s for 0.2 s (${JSON.stringify(bar('queue'))})`);
  check(near(bar('ttft').width, 0.55 / 2.6), `the first token at 550 ms (${JSON.stringify(bar('ttft'))})`);
  const attrs = await page.locator('[data-testid=trace-attributes]').textContent();
  check(/gen_ai\.latency\.e2e/.test(attrs) && /vllm-2/.test(attrs), 'the request\u2019s attributes are beside its waterfall');
  check((await page.locator('[data-testid=trace-list-slowest] tr.selected').getAttribute('data-trace')) === traceId(2), 'its row is marked in the list');
  await shot('waterfall');

  // Its GPU profile link: the API's window of the request on pid 5151, opened in the profile panel.
  const link = page.locator('[data-testid=waterfall] [data-testid=trace-profile]');
  const apiProfile = new URL(await link.getAttribute('data-api'), base);
  const s0 = Math.floor(t0 + 20);
  const s1 = Math.ceil(t0 + 20 + 2.6);
  check(apiProfile.pathname === '/api/v1/profiles/merged' && apiProfile.searchParams.get('pid') === '5151' && apiProfile.searchParams.get('host') === 'inf-a' && apiProfile.searchParams.get('start') === String(s0) && apiProfile.searchParams.get('end') === String(s1), `the API names pid 5151's GPU profile of the request's window (${apiProfile})`);
  await link.click();
  await ready();
  const pu = new URL(page.url());
  check(pu.pathname === '/host/inf-a' && pu.searchParams.get('pk') === 'gpu' && pu.searchParams.get('pp') === '5151' && pu.searchParams.get('p') === `${s0}-${s1}`, `the link opens inf-a's profile panel on pid 5151 for that window (${pu.pathname}${pu.search})`);
  await page.goBack();
  await ready();

  // The engine's request: its child phase spans in order.
  await page.locator(`[data-testid=trace-list-slowest] tr[data-trace="${traceId(9)}"] [data-testid=trace-link]`).click();
  await ready();
  await page.waitForSelector(`[data-testid=waterfall] .wf-row[data-phase=respond]`);
  const engineRows = await page.locator('[data-testid=waterfall] .wf-row').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-phase')));
  check(engineRows.join(',') === 'request,receive,tokenize,queue,prefill,decode,detokenize,respond,ttft', `the engine's request: its seven phase spans in order (${engineRows.join(', ')})`);

  await page.goto(`${base}/inference/no-such-model?range=15m`);
  await ready();
  check(/No serving process reported model no-such-model/.test(await page.locator('[data-testid=inference-empty]').textContent()), 'an unknown model says so');
  check((await page.locator('[data-testid=traces-help]').count()) === 1 && (await page.locator('[data-testid=model-traces]').isVisible()) === false, 'and has no request traces, with the line on how to send them');

  // A model with request traces and no serving metrics: the card, and its traces under it.
  const only = traces(t0);
  only.resourceSpans = [only.resourceSpans[0]];
  only.resourceSpans[0].scopeSpans[0].spans = [only.resourceSpans[0].scopeSpans[0].spans[0]];
  const only0 = only.resourceSpans[0].scopeSpans[0].spans[0];
  only0.traceId = traceId(20);
  only0.attributes = only0.attributes.map((a) => (a.key === 'gen_ai.response.model' ? attr(a.key, 'traces-only') : a));
  await postTraces(base, token, only);
  await page.goto(`${base}/inference/traces-only?range=15m`);
  await ready();
  await page.waitForSelector('[data-testid=model-traces] [data-testid=phase-table]');
  check((await page.locator('[data-testid=inference-empty]').count()) === 1 && /^1 request in this window/.test(await page.locator('[data-testid=traces-summary]').textContent()), 'a model with traces but no metrics shows its one request under the card');
  check(errors.length === 0, `no page errors (${errors.join('; ')})`);
});

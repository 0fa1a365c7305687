// SPDX-License-Identifier: Apache-2.0
// An OpenTelemetry JS SDK application that sends inference request spans to an OTLP/HTTP
// endpoint and exits 0 only when every export was acknowledged. Used by
// test/integration/prometheus_remote_write_test.cc (OtelSdkTraceTest) as a sender that shares no code with
// warpscope.
//
//   node send_traces.mjs --url=http://127.0.0.1:PORT --token=T --protocol=json|proto \
//       --host=NAME --pid=N
//
// What it sends (the test checks these values), starting a minute ago:
//   model "llama": three `llm_request` spans shaped as vLLM's (kind SERVER, start at the arrival,
//     gen_ai.latency.* in seconds): request i (0..2) waits 0.005 s before the queue, queues
//     0.01 * (i + 1) s, prefills 0.1 s, decodes 0.2 * (i + 1) s; TTFT is the end of the prefill;
//     request 0 reuses 128 cached prompt tokens, the others none.
//   model "phased": one `generate` span with a child span per phase, as engines that trace each
//     phase do: tokenize 10 ms, queue 20 ms, prefill 50 ms, decode 200 ms, detokenize 10 ms.
import { context, SpanKind, trace } from '@opentelemetry/api';
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { parseArgs, RecordingExporter } from './sender_common.mjs';

// Seconds since the epoch as the SDK's [seconds, nanoseconds] time, exact to the nanosecond.
function at(baseSeconds, offsetMs) {
  const ns = Math.round(offsetMs * 1e6);
  return [baseSeconds + Math.floor(ns / 1e9), ns % 1e9];
}

function sendVllmRequests(tracer, base) {
  for (let i = 0; i < 3; i++) {
    const start = i * 1000;  // one request a second
    const preprocess = 5;
    const queue = 10 * (i + 1);
    const prefill = 100;
    const decode = 200 * (i + 1);
    const e2e = preprocess + queue + prefill + decode;
    const span = tracer.startSpan('llm_request', {
      kind: SpanKind.SERVER,
      startTime: at(base, start),
      attributes: {
        'gen_ai.response.model': 'llama',
        'gen_ai.request.id': `cmpl-${i}`,
        'gen_ai.request.max_tokens': 256,
        'gen_ai.usage.prompt_tokens': 1000,
        'gen_ai.usage.completion_tokens': 32 * (i + 1),
        'gen_ai.usage.cache_read.input_tokens': i === 0 ? 128 : 0,
        'gen_ai.latency.time_in_queue': queue / 1000,
        'gen_ai.latency.time_to_first_token': (preprocess + queue + prefill) / 1000,
        'gen_ai.latency.e2e': e2e / 1000,
        'gen_ai.latency.time_in_model_prefill': prefill / 1000,
        'gen_ai.latency.time_in_model_decode': decode / 1000,
        'gen_ai.latency.time_in_model_inference': (prefill + decode) / 1000,
      },
    });
    span.end(at(base, start + e2e));
  }
}

function sendPhasedRequest(tracer, base) {
  const start = 5000;
  const root = tracer.startSpan('generate', {
    kind: SpanKind.SERVER,
    startTime: at(base, start),
    attributes: { 'gen_ai.request.model': 'phased', 'gen_ai.request.id': 'phased-0' },
  });
  const parent = trace.setSpan(context.active(), root);
  let offset = 0;
  for (const [name, ms] of [['tokenize', 10], ['queue', 20], ['prefill', 50], ['decode', 200],
    ['detokenize', 10]]) {
    const child = tracer.startSpan(name, { startTime: at(base, start + offset) }, parent);
    offset += ms;
    child.end(at(base, start + offset));
  }
  root.end(at(base, start + offset));
}

async function main() {
  const args = parseArgs(process.argv.slice(2), { pid: '4242' }, 'send_traces.mjs');
  const options = {
    url: `${args.url}/v1/traces`,
    headers: args.token ? { Authorization: `Bearer ${args.token}` } : {},
    timeoutMillis: 10000,
  };
  const inner = args.protocol === 'json' ? new JsonExporter(options) : new ProtoExporter(options);
  const exporter = new RecordingExporter(inner);
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({
      'host.name': args.host,
      'service.name': 'vllm',
      'process.pid': Number(args.pid),
    }),
    spanProcessors: [new SimpleSpanProcessor(exporter)],
  });
  const tracer = provider.getTracer('warpscope-otel-sdk-peer', '1.0.0');
  const base = Math.floor(Date.now() / 1000) - 60;
  sendVllmRequests(tracer, base);
  sendPhasedRequest(tracer, base);

  await provider.forceFlush();
  await provider.shutdown();
  const failed = exporter.results.filter((r) => r.code !== 0);
  if (exporter.results.length === 0 || failed.length > 0) {
    const why = failed.map((r) => String(r.error)).join('; ') || 'nothing was exported';
    console.error(`export failed: ${why}`);
    process.exit(1);
  }
  console.log(`sent ${exporter.results.length} export(s) over OTLP/HTTP ${args.protocol}`);
}

main().catch((err) => {
  console.error(err && err.stack ? err.stack : String(err));
  process.exit(1);
});

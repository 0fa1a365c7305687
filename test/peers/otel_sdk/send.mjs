// SPDX-License-Identifier: Apache-2.0
// An OpenTelemetry JS SDK application that sends one set of metrics to an OTLP endpoint (HTTP
// JSON, HTTP protobuf or gRPC) and exits 0 only when every export was acknowledged. Used by
// test/integration/prometheus_remote_write_test.cc (OtelSdkIngestTest) as a sender that shares
// no code with warpscope.
//
//   node send.mjs --url=http://127.0.0.1:PORT --token=T --protocol=json|proto|grpc --host=NAME
//                 [--ca=CERT.pem]
//
// With --protocol=grpc, --url is the OTLP/gRPC listener (the server's
// --otlp-grpc-listen-address), the token travels as `authorization` metadata and messages are
// gzip-compressed; --ca makes it TLS, trusting that certificate.
//
// What it records (the test checks these values):
//   jobs.completed        counter, unit {job}: 3 + 4 = 7, attribute queue=train
//   queue.depth           up-down counter: 5 - 2 = 3
//   request.duration      histogram, unit s: 0.1 and 0.3 (count 2, sum 0.4)
//   gpu.fake.temperature  observable gauge, unit Cel: 61.5 with gpu=0, 48 with gpu=1
import { readFileSync } from 'node:fs';
import { credentials, Metadata } from '@grpc/grpc-js';
import { metrics } from '@opentelemetry/api';
import { OTLPMetricExporter as GrpcExporter } from '@opentelemetry/exporter-metrics-otlp-grpc';
import { OTLPMetricExporter as JsonExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPMetricExporter as ProtoExporter } from '@opentelemetry/exporter-metrics-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AggregationTemporality,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import { parseArgs, RecordingExporter } from './sender_common.mjs';

// Also answers the metric reader's temporality question for the wrapped exporter.
class MetricRecordingExporter extends RecordingExporter {
  selectAggregationTemporality(kind) {
    return this.inner.selectAggregationTemporality
      ? this.inner.selectAggregationTemporality(kind)
      : AggregationTemporality.CUMULATIVE;
  }
}

function grpcExporter(args) {
  const metadata = new Metadata();
  if (args.token) metadata.set('authorization', `Bearer ${args.token}`);
  const options = { url: args.url, metadata, compression: 'gzip', timeoutMillis: 10000 };
  if (args.ca) {
    options.credentials = credentials.createSsl(readFileSync(args.ca));
    options.url = args.url.replace(/^http:/, 'https:');
  }
  return new GrpcExporter(options);
}

function httpExporter(args) {
  const options = {
    url: `${args.url}/v1/metrics`,
    headers: args.token ? { Authorization: `Bearer ${args.token}` } : {},
    timeoutMillis: 10000,
  };
  return args.protocol === 'json' ? new JsonExporter(options) : new ProtoExporter(options);
}

async function main() {
  const args = parseArgs(process.argv.slice(2), {}, 'send.mjs', ['json', 'proto', 'grpc']);
  const inner = args.protocol === 'grpc' ? grpcExporter(args) : httpExporter(args);
  const exporter = new MetricRecordingExporter(inner);
  const reader = new PeriodicExportingMetricReader({
    exporter,
    exportIntervalMillis: 3600000,  // only the explicit flush below exports
    exportTimeoutMillis: 10000,
  });
  const provider = new MeterProvider({
    resource: resourceFromAttributes({
      'host.name': args.host,
      'service.name': 'otel-sdk-peer',
      'service.instance.id': `${args.host}-${args.protocol}`,
    }),
    readers: [reader],
  });
  metrics.setGlobalMeterProvider(provider);
  const meter = metrics.getMeter('warpscope-otel-sdk-peer', '1.0.0');

  const jobs = meter.createCounter('jobs.completed', { unit: '{job}', description: 'Jobs done' });
  jobs.add(3, { queue: 'train' });
  jobs.add(4, { queue: 'train' });
  const depth = meter.createUpDownCounter('queue.depth', { description: 'Jobs waiting' });
  depth.add(5);
  depth.add(-2);
  const duration = meter.createHistogram('request.duration', { unit: 's' });
  duration.record(0.1);
  duration.record(0.3);
  const temp = meter.createObservableGauge('gpu.fake.temperature', { unit: 'Cel' });
  temp.addCallback((result) => {
    result.observe(61.5, { gpu: '0' });
    result.observe(48, { gpu: '1' });
  });

  await provider.forceFlush();
  await provider.shutdown();
  const failed = exporter.results.filter((r) => r.code !== 0);
  if (exporter.results.length === 0 || failed.length > 0) {
    const why = failed.map((r) => String(r.error)).join('; ') || 'nothing was exported';
    console.error(`export failed: ${why}`);
    process.exit(1);
  }
  console.log(`sent ${exporter.results.length} export(s) over OTLP ${args.protocol}`);
}

main().catch((err) => {
  console.error(err && err.stack ? err.stack : String(err));
  process.exit(1);
});

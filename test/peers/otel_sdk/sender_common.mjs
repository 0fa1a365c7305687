// SPDX-License-Identifier: Apache-2.0
// What the SDK senders (send.mjs, send_traces.mjs) share: their command line and an exporter
// wrapper that remembers every export's result.

// --name=value arguments over `defaults`; --url is required, --protocol one of `protocols`.
export function parseArgs(argv, defaults, script, protocols = ['json', 'proto']) {
  const args = { protocol: 'proto', host: 'otel-sdk-node', token: '', ...defaults };
  for (const a of argv) {
    const m = /^--([a-z]+)=(.*)$/.exec(a);
    if (!m) throw new Error(`unexpected argument ${a}; see the header of ${script}`);
    args[m[1]] = m[2];
  }
  if (!args.url) throw new Error('--url=http://127.0.0.1:PORT is required');
  if (!protocols.includes(args.protocol)) {
    throw new Error(`--protocol=${args.protocol}: use ${protocols.join(', ')}`);
  }
  return args;
}

// Wraps the real exporter to remember every export's result: the SDK's flush does not fail
// when an export does.
export class RecordingExporter {
  constructor(inner) {
    this.inner = inner;
    this.results = [];
  }
  export(data, done) {
    this.inner.export(data, (result) => {
      this.results.push(result);
      done(result);
    });
  }
  forceFlush() { return this.inner.forceFlush(); }
  shutdown() { return this.inner.shutdown(); }
}

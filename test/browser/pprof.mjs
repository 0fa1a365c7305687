// SPDX-License-Identifier: Apache-2.0
// A minimal pprof encoder for tests: gzip(perftools.profiles.Profile) with CPU sample types
// (samples/count, cpu/nanoseconds) from a list of stacks (root first) and their sample counts.
import zlib from 'node:zlib';

function varint(n) {
  const out = [];
  let v = BigInt(n);
  if (v < 0n) v += 1n << 64n;
  do {
    let b = Number(v & 0x7fn);
    v >>= 7n;
    if (v > 0n) b |= 0x80;
    out.push(b);
  } while (v > 0n);
  return out;
}
const key = (field, wire) => varint((field << 3) | wire);
const vfield = (field, n) => [...key(field, 0), ...varint(n)];
const bfield = (field, bytes) => [...key(field, 2), ...varint(bytes.length), ...bytes];

// stacks: [{frames: ['main', 'train_step', 'forward'], count: 10}], period_ns per sample.
export function encodeCpuProfile(stacks, { periodNs = 50_000_000, timeNs = Date.now() * 1e6, durationNs = 60e9 } = {}) {
  const strings = [''];
  const str = (s) => {
    let i = strings.indexOf(s);
    if (i < 0) {
      i = strings.length;
      strings.push(s);
    }
    return i;
  };
  const funcs = new Map(); // name -> id
  const body = [];
  // sample_type: samples/count, cpu/nanoseconds
  for (const [t, u] of [['samples', 'count'], ['cpu', 'nanoseconds']]) {
    body.push(...bfield(1, [...vfield(1, str(t)), ...vfield(2, str(u))]));
  }
  for (const s of stacks) {
    for (const f of s.frames) if (!funcs.has(f)) funcs.set(f, funcs.size + 1);
  }
  for (const s of stacks) {
    // location ids are function ids (one location per function); leaf first in pprof.
    const locs = s.frames.map((f) => funcs.get(f)).reverse();
    const packedLocs = locs.flatMap((l) => varint(l));
    const packedVals = [...varint(s.count), ...varint(s.count * periodNs)];
    body.push(...bfield(2, [...bfield(1, packedLocs), ...bfield(2, packedVals)]));
  }
  for (const [name, id] of funcs) {
    const line = [...vfield(1, id), ...vfield(2, 10 + id)];
    body.push(...bfield(4, [...vfield(1, id), ...bfield(4, line)]));
  }
  for (const [name, id] of funcs) {
    body.push(...bfield(5, [...vfield(1, id), ...vfield(2, str(name)), ...vfield(3, str(name)), ...vfield(4, str('train.py'))]));
  }
  for (const s of strings) body.push(...bfield(6, [...Buffer.from(s, 'utf8')]));
  body.push(...vfield(9, Math.round(timeNs)));
  body.push(...vfield(10, Math.round(durationNs)));
  body.push(...bfield(11, [...vfield(1, str('cpu')), ...vfield(2, str('nanoseconds'))]));
  body.push(...vfield(12, periodNs));
  return zlib.gzipSync(Buffer.from(body));
}

// The stacks the browser test posts and checks for.
export const TRAINING_STACKS = [
  { frames: ['python3', 'main', 'train_loop', 'train_step', 'forward', 'matmul'], count: 120 },
  { frames: ['python3', 'main', 'train_loop', 'train_step', 'backward', 'matmul_grad'], count: 90 },
  { frames: ['python3', 'main', 'train_loop', 'dataloader_next', 'decode_jpeg'], count: 60 },
  { frames: ['python3', 'main', 'train_loop', 'train_step', 'optimizer_step'], count: 25 },
  { frames: ['python3', 'main', 'train_loop', 'log_metrics'], count: 5 },
];

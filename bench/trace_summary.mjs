// SPDX-License-Identifier: Apache-2.0
// Where a page load's time went, from a Chromium trace (bench/ui_load.mjs --trace FILE): the
// renderer main thread's self time by event (script, style, layout, paint, parsing, ...), the
// JavaScript functions with the most self time (from the trace's sampling profile), the busy time
// of Chromium's other threads (which share the machine's cores with the server), and the main
// thread's longest tasks.
//
//   node bench/trace_summary.mjs FILE [--top 25]
import fs from 'node:fs';

const args = process.argv.slice(2);
const file = args[0];
if (!file) {
  console.error('usage: node bench/trace_summary.mjs TRACE.json [--top N]');
  process.exit(2);
}
const topN = Number(args[args.indexOf('--top') + 1] || 25) || 25;
const raw = JSON.parse(fs.readFileSync(file, 'utf8'));
const events = Array.isArray(raw) ? raw : raw.traceEvents;

const threadNames = new Map();
for (const e of events) if (e.ph === 'M' && e.name === 'thread_name') threadNames.set(`${e.pid}:${e.tid}`, e.args.name);

// The renderer main thread that ran the app: the one with the app's user timing measure.
const view = events.find((e) => e.cat?.includes('blink.user_timing') && String(e.name).startsWith('warpscope:view'));
const mains = [...threadNames].filter(([, n]) => n === 'CrRendererMain').map(([k]) => k);
const main = view ? `${view.pid}:${view.tid}` : mains[mains.length - 1];
const mainEvents = events.filter((e) => `${e.pid}:${e.tid}` === main && e.ph === 'X' && e.dur !== undefined).sort((a, b) => a.ts - b.ts || b.dur - a.dur);
if (mainEvents.length === 0) {
  console.error('no renderer main thread events in the trace');
  process.exit(1);
}
const t0 = mainEvents[0].ts;
const ms = (us) => (us / 1000).toFixed(1);

// Self time per event name: an event's duration less its children's (nested complete events).
const self = new Map();
const stack = [];
for (const e of mainEvents) {
  while (stack.length && stack[stack.length - 1].ts + stack[stack.length - 1].dur <= e.ts) stack.pop();
  const parent = stack[stack.length - 1];
  if (parent) self.set(parent.name, (self.get(parent.name) ?? 0) - e.dur);
  self.set(e.name, (self.get(e.name) ?? 0) + e.dur);
  stack.push(e);
}
const busy = mainEvents.filter((e) => e.name === 'RunTask' || e.name === 'ThreadControllerImpl::RunTask').reduce((a, e) => a + e.dur, 0);
console.log(`renderer main thread: ${ms(busy)} ms in tasks over ${ms(mainEvents[mainEvents.length - 1].ts + mainEvents[mainEvents.length - 1].dur - t0)} ms`);
console.log('self time by event:');
for (const [name, us] of [...self].sort((a, b) => b[1] - a[1]).slice(0, topN)) if (us > 500) console.log(`  ${ms(us).padStart(8)} ms  ${name}`);

// JavaScript self time by function, from the sampled profile (ProfileChunk events).
// The chunks come from a profiler thread, tied to the main thread's Profile event by its id.
const profileIds = new Set(events.filter((e) => e.name === 'Profile' && `${e.pid}:${e.tid}` === main).map((e) => `${e.pid}:${e.id}`));
const nodes = new Map();
const selfByFn = new Map();
for (const e of events) {
  if (e.name !== 'ProfileChunk' || !profileIds.has(`${e.pid}:${e.id}`)) continue;
  const cp = e.args?.data?.cpuProfile;
  for (const n of cp?.nodes ?? []) nodes.set(n.id, n);
  const samples = cp?.samples ?? [];
  const deltas = e.args.data.timeDeltas ?? [];
  for (let i = 0; i < samples.length; i++) {
    const n = nodes.get(samples[i]);
    const f = n?.callFrame;
    const key = f ? `${f.functionName || '(anonymous)'} ${f.url ? f.url.split('/').pop() : ''}:${f.lineNumber ?? ''}:${f.columnNumber ?? ''}` : String(samples[i]);
    // A sample's time is the gap to the next one.
    const dt = deltas[i + 1] ?? 0;
    selfByFn.set(key, (selfByFn.get(key) ?? 0) + Math.max(0, dt));
  }
}
if (selfByFn.size) {
  console.log('sampled self time by function (main thread):');
  for (const [k, us] of [...selfByFn].sort((a, b) => b[1] - a[1]).slice(0, topN)) console.log(`  ${ms(us).padStart(8)} ms  ${k}`);
}

// Other threads' busy time (top-level tasks).
const other = new Map();
for (const e of events) {
  if (e.ph !== 'X' || e.dur === undefined) continue;
  const k = `${e.pid}:${e.tid}`;
  if (k === main || !(e.name === 'ThreadControllerImpl::RunTask' || e.name === 'RunTask')) continue;
  const name = threadNames.get(k) ?? k;
  other.set(name, (other.get(name) ?? 0) + e.dur);
}
console.log("other threads' tasks:");
for (const [name, us] of [...other].sort((a, b) => b[1] - a[1]).slice(0, 10)) if (us > 1000) console.log(`  ${ms(us).padStart(8)} ms  ${name}`);

// The main thread's longest tasks, in order.
console.log('main thread tasks over 8 ms (start from the first event, duration, longest child events):');
for (const e of mainEvents.filter((x) => (x.name === 'ThreadControllerImpl::RunTask' || x.name === 'RunTask') && x.dur > 8000)) {
  const kids = mainEvents.filter((k) => k !== e && k.ts >= e.ts && k.ts + k.dur <= e.ts + e.dur && k.name !== e.name && k.dur > 2000);
  const names = new Map();
  for (const k of kids) names.set(k.name, (names.get(k.name) ?? 0) + k.dur);
  console.log(`  +${ms(e.ts - t0).padStart(7)}  ${ms(e.dur).padStart(6)} ms  ${[...names].sort((a, b) => b[1] - a[1]).slice(0, 5).map(([n, d]) => `${n} ${ms(d)}`).join(', ')}`);
}

// SPDX-License-Identifier: Apache-2.0
// Numbers with their units, as the charts and tables show them.

const BYTE_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];

function trim(n: number, digits: number): string {
  const s = n.toFixed(digits);
  return s.includes('.') ? s.replace(/\.?0+$/, '') : s;
}

function withPrefix(v: number, base: number, units: string[], digits = 1): string {
  let i = 0;
  let x = Math.abs(v);
  while (x >= base && i < units.length - 1) {
    x /= base;
    i++;
  }
  return `${v < 0 ? '-' : ''}${trim(x, x < 10 ? digits + 1 : digits)} ${units[i]}`;
}

// The axis/legend label of a base unit (the server's UCUM-style units).
export function unitLabel(unit: string): string {
  switch (unit) {
    case '1':
      return '%';
    case 'By':
      return 'bytes';
    case 'By/s':
      return 'bytes/s';
    case 'W':
      return 'W';
    case 'J':
      return 'J';
    case 'Cel':
      return '°C';
    case 'Hz':
      return 'Hz';
    case 's':
      return 's';
    default:
      return plural(unit.replace(/[{}]/g, '')) || 'value';
  }
}

// "{thread}" counts threads: the plural for axes and for values other than 1.
function plural(word: string): string {
  if (!word || word.endsWith('s')) return word;
  return word.endsWith('y') ? `${word.slice(0, -1)}ies` : `${word}s`;
}

// One value with its unit: ratios as percent, bytes with binary prefixes, and so on.
export function formatValue(v: number | null | undefined, unit: string): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return '–';
  switch (unit) {
    case '1':
      return `${trim(v * 100, Math.abs(v) < 0.1 ? 2 : 1)} %`;
    case 'By':
      return withPrefix(v, 1024, BYTE_UNITS);
    case 'By/s':
      return withPrefix(v, 1024, BYTE_UNITS.map((u) => `${u}/s`));
    case 'W':
      return Math.abs(v) >= 1000 ? `${trim(v / 1000, 2)} kW` : `${trim(v, 0)} W`;
    case 'J':
      return withPrefix(v, 1000, ['J', 'kJ', 'MJ', 'GJ']);
    case 'Cel':
      return `${trim(v, 1)} °C`;
    case 'Hz':
      return withPrefix(v, 1000, ['Hz', 'kHz', 'MHz', 'GHz']);
    case 's':
      return formatDuration(v);
    default: {
      const word = unit.replace(/[{}]/g, '');
      const u = v === 1 ? word : unitLabel(unit);
      const n = Math.abs(v) >= 1000 ? withPrefix(v, 1000, ['', 'k', 'M', 'G', 'T']).trim() : trim(v, 2);
      return !u || u === 'value' ? n : `${n} ${u}`;
    }
  }
}

// Axis tick values: short, same unit as formatValue.
export function formatTick(v: number, unit: string): string {
  return formatValue(v, unit);
}

// Durations an axis steps by: whole seconds, minutes, hours, days.
const DURATION_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800];

// 1, 2 or 5 times a power of ten, the smallest not below `raw`.
function decimalStep(raw: number): number {
  const p = Math.pow(10, Math.floor(Math.log10(raw)));
  const m = raw / p;
  return (m <= 1.000001 ? 1 : m <= 2.000001 ? 2 : m <= 5.000001 ? 5 : 10) * p;
}

// The scale an axis counts in for a unit and its largest value: the divisor and the suffix of
// its labels (MiB for 300 MiB, percent for ratios, kW from 1000 W).
function axisScale(magnitude: number, unit: string): { scale: number; suffix: string } {
  const prefixed = (base: number, units: string[]) => {
    let i = 0;
    while (magnitude >= Math.pow(base, i + 1) * 0.999999 && i < units.length - 1) i++;
    return { scale: Math.pow(base, i), suffix: units[i] ? ` ${units[i]}` : '' };
  };
  switch (unit) {
    case '1':
      return { scale: 0.01, suffix: ' %' };
    case 'By':
      return prefixed(1024, BYTE_UNITS);
    case 'By/s':
      return prefixed(1024, BYTE_UNITS.map((u) => `${u}/s`));
    case 'W':
      return magnitude >= 1000 ? { scale: 1000, suffix: ' kW' } : { scale: 1, suffix: ' W' };
    case 'J':
      return prefixed(1000, ['J', 'kJ', 'MJ', 'GJ']);
    case 'Cel':
      return { scale: 1, suffix: ' °C' };
    case 'Hz':
      return prefixed(1000, ['Hz', 'kHz', 'MHz', 'GHz']);
    default: {
      // "2k threads": the prefix on the number, then the unit.
      const label = unitLabel(unit);
      const p = prefixed(1000, ['', 'k', 'M', 'G', 'T']);
      return { scale: p.scale, suffix: `${p.suffix.trim()}${label && label !== 'value' ? ` ${label}` : ''}` };
    }
  }
}

// The step between round ticks about `raw` apart: 1-2-5 in the scale the axis counts in (binary
// prefixes for bytes, percent for ratios), whole seconds/minutes/hours for durations.
export function tickStep(raw: number, unit: string, magnitude: number): number {
  if (!(raw > 0) || !Number.isFinite(raw)) return 1;
  if (unit === 's' && raw >= 1) return DURATION_STEPS.find((d) => d >= raw) ?? decimalStep(raw / 86400) * 86400;
  const { scale } = axisScale(magnitude, unit);
  return decimalStep(raw / scale) * scale;
}

// Round ticks covering [lo, hi], about `count` of them (a tick every 1, 2 or 5 units of the
// axis's scale: 0, 2, 4, 6 MiB/s, never 2.38, 4.77, 7.15).
export function niceTicks(lo: number, hi: number, count: number, unit: string): number[] {
  if (!(hi > lo)) return [lo];
  const step = tickStep((hi - lo) / Math.max(1, count), unit, Math.max(Math.abs(lo), Math.abs(hi)));
  const out: number[] = [];
  for (let k = Math.ceil(lo / step - 1e-9); k * step <= hi + step * 1e-9 && out.length < 1000; k++) out.push(k * step);
  return out;
}

// The labels of an axis's ticks, all in one scale with as many decimals as the step needs
// ("0.5 GiB, 1 GiB, 1.5 GiB", not "512 MiB, 1 GiB, 1.5 GiB").
export function formatTicks(ticks: number[], unit: string): string[] {
  if (unit === 's') return ticks.map((t) => (t === 0 ? '0' : formatDuration(t)));
  const magnitude = Math.max(0, ...ticks.map((t) => Math.abs(t)));
  const { scale, suffix } = axisScale(magnitude, unit);
  const step = ticks.length > 1 ? Math.abs(ticks[1] - ticks[0]) / scale : 1;
  const digits = Math.min(6, Math.max(0, -Math.floor(Math.log10(step) + 1e-9)));
  return ticks.map((t) => `${trim(t / scale, digits)}${suffix}`);
}

export function formatDuration(seconds: number): string {
  const s = Math.abs(seconds);
  if (s < 1e-6) return `${trim(seconds * 1e9, 0)} ns`;
  if (s < 1e-3) return `${trim(seconds * 1e6, 1)} µs`;
  if (s < 1) return `${trim(seconds * 1e3, 1)} ms`;
  if (s < 120) return `${trim(seconds, 2)} s`;
  if (s < 7200) return `${trim(seconds / 60, 1)} min`;
  return `${trim(seconds / 3600, 1)} h`;
}

// A pprof sample value with its unit ("nanoseconds", "count", "bytes").
export function formatSample(v: number, unit: string): string {
  switch (unit) {
    case 'nanoseconds':
      return formatDuration(v / 1e9);
    case 'microseconds':
      return formatDuration(v / 1e6);
    case 'milliseconds':
      return formatDuration(v / 1e3);
    case 'seconds':
      return formatDuration(v);
    case 'bytes':
      return withPrefix(v, 1024, BYTE_UNITS);
    default:
      return `${Math.round(v).toLocaleString('en-US')} ${unit === 'count' ? 'samples' : unit}`;
  }
}

export function formatPercent(fraction: number): string {
  return `${trim(fraction * 100, fraction < 0.1 ? 2 : 1)} %`;
}

// The clock formats, made once: Date.toLocale*String with options builds a new formatter on every
// call, which costs more than the rest of a chart's axis (a page draws hundreds of ticks).
let clockFormats: { minutes: Intl.DateTimeFormat; seconds: Intl.DateTimeFormat; day: Intl.DateTimeFormat; time: Intl.DateTimeFormat } | null = null;

function formats(): NonNullable<typeof clockFormats> {
  clockFormats ??= {
    minutes: new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit', hour12: false }),
    seconds: new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit', hour12: false }),
    day: new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric' }),
    time: new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit', hour12: false }),
  };
  return clockFormats;
}

// A time axis's tick: hours and minutes (seconds when the ticks are less than a minute apart),
// with the day at midnight and on the first tick of a window longer than a day. The same clock
// as formatTime, which the hover shows with seconds.
export function formatClock(unixSeconds: number, stepSeconds: number, withDay: boolean): string {
  const d = new Date(unixSeconds * 1000);
  const f = formats();
  const clock = (stepSeconds < 60 ? f.seconds : f.minutes).format(d);
  if (!withDay) return clock;
  return `${f.day.format(d)} ${clock}`;
}

export function formatTime(unixSeconds: number): string {
  return formats().time.format(new Date(unixSeconds * 1000));
}

export function formatAge(unixSeconds: number, now = Date.now() / 1000): string {
  const s = Math.max(0, now - unixSeconds);
  if (s < 90) return `${Math.round(s)} s ago`;
  if (s < 5400) return `${Math.round(s / 60)} min ago`;
  if (s < 172800) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} d ago`;
}

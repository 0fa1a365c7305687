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

export function formatTime(unixSeconds: number): string {
  const d = new Date(unixSeconds * 1000);
  return d.toLocaleString(undefined, {
    month: 'short',
    day: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
    hour12: false,
  });
}

export function formatAge(unixSeconds: number, now = Date.now() / 1000): string {
  const s = Math.max(0, now - unixSeconds);
  if (s < 90) return `${Math.round(s)} s ago`;
  if (s < 5400) return `${Math.round(s / 60)} min ago`;
  if (s < 172800) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} d ago`;
}

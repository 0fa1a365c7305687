// SPDX-License-Identifier: Apache-2.0
// The profile panel's filters: the process selector (processes, pid and command, under their
// executable), the sample label chips (device, stream, NVTX range, attribution) from the merged
// profile's `labels` menu, and the nearest profile when a window has none.
import { getJson } from './api';
import type { EntityRecord, LabelMenu, MergedTree, ProfileMeta } from './api';
import { h } from './dom';
import { formatDuration, formatPercent } from './format';
import type { ProfileRef } from './state';

// One process of the window: its profiles' entity, else its pid, and the kinds it has.
export interface Proc {
  key: string;
  entity?: string;
  pid?: number;
  executable: string;
  kinds: Set<string>;
}

export function processesOf(list: ProfileMeta[]): Map<string, Proc> {
  const out = new Map<string, Proc>();
  for (const p of list) {
    if (!p.entity && !p.pid) continue;
    const key = p.entity || `pid:${p.pid}`;
    const proc = out.get(key) ?? { key, entity: p.entity || undefined, pid: p.pid || undefined, executable: p.executable || p.entity || 'pid', kinds: new Set<string>() };
    proc.kinds.add(p.kind);
    out.set(key, proc);
  }
  return out;
}

const baseName = (path: string) => path.slice(path.lastIndexOf('/') + 1);

// The process selector's value for a chart's "others".
const OTHERS = '\u0000others';

// The pids a chart's "others" leaves out: the ref's pids and those of the window's processes of
// its executables (by path or base name); empty when the ref names one process.
export function excludedPids(procs: Map<string, Proc>, ref: ProfileRef): number[] {
  const out = new Set(ref.notPids ?? []);
  const exes = new Set(ref.notExes ?? []);
  for (const p of procs.values()) {
    if (p.pid !== undefined && (exes.has(p.executable) || exes.has(baseName(p.executable)))) out.add(p.pid);
  }
  return [...out].sort((a, b) => a - b);
}

// The process the ref names: by entity, else by pid (a host chart's process line gives both),
// else the only process of the executable a chart line named.
export function pickProcess(procs: Map<string, Proc>, ref: ProfileRef): Proc | undefined {
  if (ref.entity && procs.has(ref.entity)) return procs.get(ref.entity);
  if (ref.pid !== undefined) return [...procs.values()].find((p) => p.pid === ref.pid);
  if (ref.exe) {
    const same = [...procs.values()].filter((p) => p.executable === ref.exe || baseName(p.executable) === ref.exe);
    if (same.length === 1) return same[0];
  }
  return undefined;
}

// The command lines of the host's processes by pid (the process entities' process.command_line),
// empty when the entities cannot be read: the selector then shows pids and executables only.
export async function commandLines(host: string, signal: AbortSignal): Promise<Map<number, string>> {
  const out = new Map<number, string>();
  try {
    const r = await getJson<{ entities: EntityRecord[] }>('/api/v1/entities', { host, kind: 'process', limit: 1000 }, signal);
    for (const e of r.entities) {
      const pid = Number(e.attributes['process.pid']);
      const cmd = e.attributes['process.command_line'];
      if (Number.isFinite(pid) && cmd) out.set(pid, cmd);
    }
  } catch {
    // Best effort: a name without its command line.
  }
  return out;
}

// The process selector: "all processes", then each executable's processes (pid · command).
// A chart's "others" (`excluded`: the processes left out) is one more option, selected.
export function processSelect(procs: Map<string, Proc>, current: Proc | undefined, profiles: number, commands: Map<number, string>, onPick: (p: Proc | undefined) => void, excluded: number[] = []): HTMLElement {
  const byExe = new Map<string, Proc[]>();
  for (const p of procs.values()) byExe.set(p.executable, [...(byExe.get(p.executable) ?? []), p]);
  const short = (s: string) => (s.length > 60 ? `${s.slice(0, 57)}…` : s);
  const groups = [...byExe.entries()]
    .sort((a, b) => a[0].localeCompare(b[0]))
    .map(([exe, list]) =>
      h(
        'optgroup',
        { label: `${exe} (${list.length} process${list.length === 1 ? '' : 'es'})` },
        ...list
          .sort((a, b) => (a.pid ?? 0) - (b.pid ?? 0))
          .map((p) => {
            const cmd = p.pid !== undefined ? commands.get(p.pid) : undefined;
            const text = `${p.pid !== undefined ? `pid ${p.pid}` : p.entity} · ${short(cmd ?? baseName(exe))}`;
            return h('option', { value: p.key, selected: p.key === current?.key, title: cmd ?? exe }, text);
          }),
      ),
    );
  return h(
    'select',
    { 'aria-label': 'Process', 'data-testid': 'profile-process', onchange: (e: Event) => onPick(procs.get((e.target as HTMLSelectElement).value)) },
    h('option', { value: '' }, `all processes (${profiles} profiles)`),
    ...(excluded.length ? [h('option', { value: OTHERS, selected: true, title: `pids ${excluded.join(', ')}` }, `others: all but ${excluded.length} process${excluded.length === 1 ? '' : 'es'}`)] : []),
    ...groups,
  );
}

// The label keys the panel offers as chips, in this order, and what each is called.
const CHIP_KEYS: Record<string, string> = { device: 'GPU (CUDA device)', stream: 'stream', nvtx: 'NVTX range', attribution: 'attribution' };

// The sample label chips: per key, one toggle per value with its share; the active filters
// (`label=` values) pressed. An active filter the menu does not list (it matches nothing) stays
// as a chip, so that it can be removed.
export function labelChips(tree: MergedTree, active: string[], onChange: (labels: string[]) => void): HTMLElement | null {
  const menus = new Map<string, LabelMenu>((tree.labels ?? []).map((m) => [m.key, m]));
  const rows: HTMLElement[] = [];
  const toggle = (filter: string) => onChange(active.includes(filter) ? active.filter((f) => f !== filter) : [...active, filter]);
  for (const [key, name] of Object.entries(CHIP_KEYS)) {
    const menu = menus.get(key);
    const mine = active.filter((f) => f.startsWith(`${key}:`));
    if (!menu && mine.length === 0) continue;
    const listed = new Set((menu?.values ?? []).map((v) => v.filter));
    const chips = [
      ...(menu?.values ?? []).map((v) => chip(v.filter, `${v.value}`, v.share, active.includes(v.filter), toggle)),
      ...mine.filter((f) => !listed.has(f)).map((f) => chip(f, f.slice(key.length + 1), null, true, toggle)),
    ];
    const more = menu?.values_omitted ? h('span.muted', {}, ` +${menu.values_omitted} more`) : null;
    // What the key leaves unlabelled: measured samples have no attribution, copies no NVTX range.
    const total = menu ? (menu.total[tree.value] ?? 0) : 0;
    const rest = menu && total > 0 ? (menu.unlabelled[tree.value] ?? 0) / total : 0;
    const unlabelled = rest > 0 ? h('span.muted', {}, ` · ${key === 'attribution' ? 'measured' : 'none'} ${formatPercent(rest)}`) : null;
    rows.push(h('div.chip-row', { 'data-key': key }, h('span.chip-key', {}, `${name}:`), ...chips, more, unlabelled));
  }
  if (rows.length === 0) return null;
  const clear = active.length ? h('button.btn', { type: 'button', 'data-testid': 'label-clear', onclick: () => onChange([]) }, 'Clear filters') : null;
  return h('div.label-chips', { role: 'group', 'aria-label': 'Sample label filters', 'data-testid': 'label-chips' }, ...rows, clear);
}

function chip(filter: string, text: string, share: number | null, on: boolean, toggle: (f: string) => void): HTMLElement {
  return h(
    'button.chip',
    { type: 'button', 'aria-pressed': String(on), 'data-filter': filter, title: on ? `Remove the filter ${filter}` : `Only the samples with ${filter}`, onclick: () => toggle(filter) },
    text,
    share === null ? null : h('span.muted', {}, ` ${formatPercent(share)}`),
  );
}

// How far the nearest profile of the host (of the ref's kind and process when it names them)
// lies before or after the window, searched a day either way; null when there is none.
export interface Nearest {
  profile: ProfileMeta;
  offset: number; // seconds; < 0 earlier, > 0 later
}

const SEARCH_SECONDS = 86400;

export async function nearestProfile(host: string, ref: ProfileRef, signal: AbortSignal): Promise<Nearest | null> {
  const scope = { host, kind: ref.kind, pid: ref.pid };
  // The list is newest first: the newest before the window is the nearest earlier one; after it,
  // the one that starts first (of a bounded list).
  const [before, after] = await Promise.all([
    getJson<{ profiles: ProfileMeta[] }>('/api/v1/profiles', { ...scope, start: ref.start - SEARCH_SECONDS, end: ref.start, limit: 1 }, signal),
    getJson<{ profiles: ProfileMeta[] }>('/api/v1/profiles', { ...scope, start: ref.end, end: ref.end + SEARCH_SECONDS, limit: 200 }, signal),
  ]);
  const candidates: Nearest[] = [];
  const earlier = before.profiles.filter((p) => p.end <= ref.start + 1).sort((a, b) => b.end - a.end)[0];
  if (earlier) candidates.push({ profile: earlier, offset: earlier.end - ref.start });
  const later = after.profiles.filter((p) => p.start >= ref.end - 1).sort((a, b) => a.start - b.start)[0];
  if (later) candidates.push({ profile: later, offset: later.start - ref.end });
  candidates.sort((a, b) => Math.abs(a.offset) - Math.abs(b.offset));
  return candidates[0] ?? null;
}

// "nearest profile: 5 min earlier (gpu)", a link that opens it.
export function nearestLink(n: Nearest, open: (p: ProfileMeta) => void): HTMLElement {
  const when = Math.abs(n.offset) < 1 ? 'right next to this window' : `${formatDuration(Math.abs(n.offset))} ${n.offset < 0 ? 'earlier' : 'later'}`;
  return h(
    'p',
    {},
    h(
      'a',
      {
        href: '#',
        'data-testid': 'nearest-profile',
        onclick: (e: Event) => {
          e.preventDefault();
          open(n.profile);
        },
      },
      `nearest profile: ${when}`,
    ),
    ` (${n.profile.kind}${n.profile.executable ? `, ${baseName(n.profile.executable)}` : ''}${n.profile.pid ? ` pid ${n.profile.pid}` : ''})`,
  );
}

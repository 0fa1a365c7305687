// SPDX-License-Identifier: Apache-2.0
// The findings of the server's insights engine (docs/api.md, "Insights"), typed, with what the
// views share: the order of severities, an entity's name, the "insights are off" answer.
import { ApiError, getJson } from './api';
import type { Params } from './api';
import { h } from './dom';
import type { ViewContext } from './view';

export type Severity = 'page' | 'ticket' | 'info';
export type FindingState = 'pending' | 'firing' | 'resolved';

export const SEVERITIES: Severity[] = ['page', 'ticket', 'info'];
export const STATES: FindingState[] = ['firing', 'pending', 'resolved'];

export interface EvidenceSeries {
  metric: string;
  unit: string;
  start: number; // Unix ms
  step_ms: number;
  values: (number | null)[];
}

export interface EvidenceProfile {
  kind: string;
  host: string;
  entity: string;
  pid?: number; // GPU profiles are stored by pid, without an entity
  start: number; // Unix ms
  end: number;
}

export interface Finding {
  id: string;
  rule: string;
  title: string;
  severity: Severity;
  state: FindingState;
  host: string;
  entity: string;
  kind: string;
  attributes: Record<string, string>;
  start: number; // Unix ms
  end: number;
  summary: string;
  evidence: Record<string, unknown> & { series?: EvidenceSeries[]; profile?: EvidenceProfile };
  suggestion: string;
  waste: { gpu_hours: number; cost: number };
}

export interface InsightsResponse {
  insights: Finding[];
  totals: { firing: number; pending: number; gpu_hours: number; cost: number };
  rules: { name: string; title: string; severity: Severity }[];
}

// The list, or null when the server runs with insights off (its 404 says so: `off`).
export async function fetchInsights(params: Params): Promise<{ list: InsightsResponse | null; off: string }> {
  try {
    return { list: await getJson<InsightsResponse>('/api/v1/insights', params), off: '' };
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) return { list: null, off: e.message };
    throw e;
  }
}

// Page before ticket before info, then the newest first.
export function byUrgency(a: Finding, b: Finding): number {
  return SEVERITIES.indexOf(a.severity) - SEVERITIES.indexOf(b.severity) || b.start - a.start || a.id.localeCompare(b.id);
}

export function isOpen(f: Finding): boolean {
  return f.state !== 'resolved';
}

// "GPU 2", "python3 (pid 4242)", else the entity id.
export function entityName(f: Finding): string {
  const a = f.attributes;
  if (f.kind === 'gpu') {
    const gpu = a['gpu.index'] !== undefined ? `GPU ${a['gpu.index']}` : f.entity;
    const pid = a['process.pid'];
    return pid ? `${gpu} · ${a['process.executable.name'] ?? 'process'} (pid ${pid})` : gpu;
  }
  if (f.kind === 'process') return `${a['process.executable.name'] ?? 'process'} (pid ${a['process.pid'] ?? f.entity})`;
  if (f.kind === 'cluster') {
    const name = a['cluster'] ? `cluster ${a['cluster']}` : 'the hosts without a cluster tag';
    const size = a['host.count'] !== undefined ? ` · ${a['host.count']} hosts, ${a['gpu.count'] ?? '?'} GPUs` : '';
    return `${name}${size}`;
  }
  return f.entity;
}

// The page of a finding's entity: a GPU's, a process's (null for a host or a cluster).
export function entityHref(f: Finding, c: ViewContext): string | null {
  if (f.host && f.kind === 'gpu') return c.href({ view: 'gpu', host: f.host, gpu: f.entity });
  if (f.host && f.kind === 'process' && f.entity.startsWith('pid/')) return c.href({ view: 'process', host: f.host, process: f.entity });
  return null;
}

// Where a finding lives: its host, or "fleet" for a finding about a cluster (no one host).
export function findingPlace(f: Finding): string {
  return f.host || 'fleet';
}

// Findings as a list, most urgent first: severity, state, title (a link to the finding) and summary.
export function findingList(items: Finding[], c: ViewContext): HTMLElement {
  return h(
    'ul.finding-list',
    {},
    ...[...items].sort(byUrgency).map((f) => h('li', { 'data-rule': f.rule }, severityBadge(f.severity), ' ', stateBadge(f.state), ' ', h('a', { href: c.href({ view: 'finding', finding: f.id }) }, f.title), h('span.muted', {}, ` · ${f.summary}`))),
  );
}

export function severityBadge(s: Severity, text: string = s): HTMLElement {
  return h('span', { class: `badge sev-${s}` }, text);
}

export function stateBadge(s: FindingState): HTMLElement {
  return h('span', { class: `badge state-${s}` }, s);
}

export function formatGpuHours(v: number): string {
  return v >= 10 ? v.toFixed(0) : v >= 1 ? v.toFixed(1) : v.toFixed(2);
}

export function formatCost(v: number): string {
  return v > 0 ? v.toFixed(2) : '–';
}

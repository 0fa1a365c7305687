// SPDX-License-Identifier: Apache-2.0
// The server's query API (docs/api.md), typed for the views.

export type Point = [number, number | null];

export interface MetricInfo {
  key: string;
  kind: 'gauge' | 'counter';
  unit: string;
  help: string;
  entity_kind: string;
}

export interface Series {
  host: string;
  entity: string;
  kind: string;
  labels: Record<string, string>;
  attributes: Record<string, string>;
  points: Point[];
}

export interface RangeResponse {
  metric: MetricInfo;
  start: number;
  end: number;
  step: number;
  series: Series[];
}

export interface TopEntry {
  host: string;
  entity: string;
  kind: string;
  attributes: Record<string, string>;
  value: number | null;
  latest: number | null;
  latest_time: number;
  sparkline?: Point[];
}

export interface EntityRecord {
  host: string;
  kind: string;
  id: string;
  parent: string;
  attributes: Record<string, string>;
  first_seen: number;
  last_seen: number;
}

export interface EventRecord {
  host: string;
  entity: string;
  time: number;
  kind: string;
  code: number;
  message: string;
  attributes: Record<string, string>;
}

export interface FleetHost {
  host: string;
  attributes: Record<string, string>;
  last_seen: number;
  gpus: number;
  gpu_utilization: number | null;
  power_watts: number | null;
  power_limit_watts: number | null;
  memory_used_bytes: number | null;
  memory_total_bytes: number | null;
  temperature_max: number | null;
  gpu_processes: number;
  degraded_gpus: number;
  events: number;
  xid_events: number;
}

export interface FleetResponse {
  start: number;
  end: number;
  totals: Omit<FleetHost, 'host' | 'attributes' | 'last_seen' | 'xid_events'> & {
    hosts: number;
    hosts_with_problems: number;
  };
  hosts: FleetHost[];
  utilization: Point[];
  power: Point[];
}

export interface BreakdownGroup {
  key: string;
  entities: number;
  series: number;
  points: Point[];
}

export interface BreakdownResponse {
  metric: MetricInfo;
  by: string;
  step: number;
  groups: BreakdownGroup[];
}

export interface ProfileMeta {
  id: number;
  host: string;
  entity: string;
  pid: number;
  executable: string;
  kind: string;
  start: number;
  end: number;
  labels: Record<string, string>;
  size_bytes: number;
}

// What a frame stands for (docs/api.md, the merged profile).
export type FrameKind =
  | 'python'
  | 'native'
  | 'kernel'
  | 'os_kernel'
  | 'launch'
  | 'sass'
  | 'stall'
  | 'memory'
  | 'marker'
  | 'process'
  | 'unknown';

export interface FlameNode {
  name: string;
  kind?: FrameKind;
  self: number[];
  total: number[];
  children?: FlameNode[];
  // The source of the node's frames when the profile has it (native frames with DWARF, Python
  // frames): `line` only when every frame of the node is on that line; `inlined` when a frame
  // was inlined into its caller.
  file?: string;
  line?: number;
  inlined?: boolean;
}

export interface ThreadTotal {
  tid: number;
  name: string;
  total: number[];
}

// What a frame's share of all the host's cores needs: total[value] / capacity_ns.
export interface CpuCapacity {
  value: number;
  window_seconds: number;
  cores: number | null;
  capacity_ns: number | null;
  cores_metric: string;
  unknown_reason?: string;
}

export interface MergedTree {
  sample_types: { type: string; unit: string }[];
  value: number;
  profiles: number;
  skipped_profiles: number;
  kinds?: string[];
  threads?: ThreadTotal[];
  threads_omitted?: number;
  cpu?: CpuCapacity | null;
  root: FlameNode;
  labels?: LabelMenu[];
  label_filters?: string[];
}

// One sample label key of a merged profile and its values, for a filter menu (docs/api.md).
export interface LabelMenu {
  key: string;
  total: number[];
  unlabelled: number[];
  values: { value: string | number; filter: string; total: number[]; share: number }[];
  values_omitted?: number;
  omitted_total?: number[];
}

export class ApiError extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

// A list repeats the parameter (`label=device:0&label=stream:7`).
export type Params = Record<string, string | number | string[] | undefined | null>;

export function apiUrl(path: string, params: Params = {}): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (Array.isArray(v)) for (const one of v) q.append(k, one);
    else if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  }
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}

// The read token of a server started with --auth-read. Kept in sessionStorage (this tab only)
// unless the user asked to be remembered on this browser (localStorage); never in a URL.
const TOKEN_KEY = 'warpscope.token';
let memoryToken = '';

function storedToken(): string {
  try {
    return sessionStorage.getItem(TOKEN_KEY) ?? localStorage.getItem(TOKEN_KEY) ?? '';
  } catch {
    return ''; // storage disabled: the user signs in again on every load
  }
}

export function tokenRemembered(): boolean {
  try {
    return localStorage.getItem(TOKEN_KEY) !== null;
  } catch {
    return false;
  }
}

export function storeToken(token: string, remember: boolean): void {
  clearToken();
  try {
    (remember ? localStorage : sessionStorage).setItem(TOKEN_KEY, token);
  } catch {
    // storage disabled or full: keep it in memory for this page only
    memoryToken = token;
  }
}

export function clearToken(): void {
  memoryToken = '';
  try {
    sessionStorage.removeItem(TOKEN_KEY);
    localStorage.removeItem(TOKEN_KEY);
  } catch {
    // storage disabled: nothing stored
  }
}

// The token requests carry: the stored one, else one kept in memory when storage is disabled.
export function currentToken(): string {
  return storedToken() || memoryToken;
}

// Called on every 401 answer with the server's message and the token the request carried ('' for
// none); the app shell shows its sign-in panel.
type AuthListener = (message: string, sentToken: string) => void;
let authListener: AuthListener | null = null;
export function onAuthRequired(listener: AuthListener): void {
  authListener = listener;
}

// A fetch of the API with the stored token (or `token` when given) as a bearer token.
export async function apiFetch(url: string, init: RequestInit = {}, token = currentToken()): Promise<Response> {
  const headers = new Headers(init.headers);
  if (token) headers.set('Authorization', `Bearer ${token}`);
  return fetch(url, { ...init, headers });
}

async function errorOf(res: Response): Promise<ApiError> {
  let message = `HTTP ${res.status}`;
  try {
    const body = await res.json();
    if (body && typeof body.error === 'string') message = body.error;
  } catch {
    // not JSON: keep the status line
  }
  return new ApiError(res.status, message);
}

// Throws ApiError for an answer that is not 2xx; a 401 also goes to the onAuthRequired listener.
async function checked(res: Response, sentToken: string): Promise<Response> {
  if (res.ok) return res;
  const e = await errorOf(res);
  if (res.status === 401) authListener?.(e.message, sentToken);
  throw e;
}

export async function getJson<T>(path: string, params: Params = {}, signal?: AbortSignal): Promise<T> {
  const token = currentToken();
  const res = await checked(await apiFetch(apiUrl(path, params), { signal, headers: { Accept: 'application/json' } }, token), token);
  return (await res.json()) as T;
}

// The paths POST /api/v1/query_batch answers, and the most queries one batch takes.
export type BatchPath = 'query_range' | 'breakdown';
const MAX_BATCH = 64;

// A query's identity for prefetch(): its path and the parameters it sends, in key order.
function queryKey(path: string, params: Params): string {
  const sent = Object.entries(params)
    .filter(([, v]) => v !== undefined && v !== null && v !== '')
    .map(([k, v]) => [k, String(v)])
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  return `${path}?${JSON.stringify(sent)}`;
}

// Sends queries as POST /api/v1/query_batch (in requests of at most 64) and resolves, in order,
// to each query's answer or the ApiError the GET of that query would have thrown. A failure of
// the request itself (network, 401, ...) rejects; a 401 also goes to the onAuthRequired listener.
export async function batch(queries: { path: BatchPath; params: Params }[], signal?: AbortSignal): Promise<unknown[]> {
  const chunks: { path: BatchPath; params: Params }[][] = [];
  for (let i = 0; i < queries.length; i += MAX_BATCH) chunks.push(queries.slice(i, i + MAX_BATCH));
  const answers = await Promise.all(
    chunks.map(async (chunk) => {
      const body = {
        queries: chunk.map((q) => {
          const params: Record<string, string> = {};
          for (const [k, v] of Object.entries(q.params)) {
            if (v !== undefined && v !== null && v !== '') params[k] = String(v);
          }
          return { path: q.path, params };
        }),
      };
      const token = currentToken();
      const res = await checked(
        await apiFetch('/api/v1/query_batch', { method: 'POST', signal, body: JSON.stringify(body), headers: { Accept: 'application/json', 'Content-Type': 'application/json' } }, token),
        token,
      );
      const r = (await res.json()) as { results: unknown[] };
      return r.results.map((x) => {
        const e = x as { error?: unknown; status?: unknown };
        return typeof e?.error === 'string' && typeof e.status === 'number' ? new ApiError(e.status, e.error) : x;
      });
    }),
  );
  return answers.flat();
}

// Gathers the range queries a view issues within one task into one batch request: get() has
// getJson's contract for /api/v1/query_range and /api/v1/breakdown (and passes any other path to
// getJson), so each widget keeps its own error handling.
//
// prefetch() sends queries a view is about to ask for before it knows it will (the first screen's
// charts, while the page still waits for the host's GPU list): the get() of the same query later
// takes that answer instead of sending it again. Answers nobody asks for are dropped with the
// batcher.
export class QueryBatcher {
  private pending: { path: BatchPath; params: Params; resolve: (v: unknown) => void; reject: (e: unknown) => void }[] = [];
  private scheduled = false;
  private readonly prefetched = new Map<string, Promise<unknown>>();

  get<T>(path: string, params: Params = {}): Promise<T> {
    const short = path.replace(/^\/api\/v1\//, '');
    if (short !== 'query_range' && short !== 'breakdown') return getJson<T>(path, params);
    const key = queryKey(short, params);
    const early = this.prefetched.get(key);
    if (early) {
      this.prefetched.delete(key);
      return early as Promise<T>;
    }
    return this.queue<T>(short, params);
  }

  // Sends `queries` now, as one batch request (not after the current task, as get() does: the
  // request goes out before the ones the page sends next).
  prefetch(queries: [path: string, params: Params][]): void {
    for (const [path, params] of queries) {
      const short = path.replace(/^\/api\/v1\//, '') as BatchPath;
      const key = queryKey(short, params);
      if (this.prefetched.has(key)) continue;
      const answer = this.queue(short, params);
      // Not asked for in the end: its failure is nobody's.
      answer.catch(() => undefined);
      this.prefetched.set(key, answer);
    }
    if (this.pending.length) this.flush();
  }

  private queue<T>(short: BatchPath, params: Params): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.pending.push({ path: short, params, resolve: resolve as (v: unknown) => void, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        // After the current task: every widget waiting on the same promise has queued its query.
        setTimeout(() => this.flush(), 0);
      }
    });
  }

  private flush(): void {
    if (this.pending.length === 0) {
      this.scheduled = false;
      return;
    }
    const list = this.pending;
    this.pending = [];
    this.scheduled = false;
    batch(list.map((q) => ({ path: q.path, params: q.params }))).then(
      (results) =>
        list.forEach((q, i) => {
          const r = results[i];
          if (r instanceof ApiError) q.reject(r);
          else if (r === undefined) q.reject(new ApiError(500, 'query_batch: the server left this query unanswered'));
          else q.resolve(r);
        }),
      (e) => list.forEach((q) => q.reject(e)),
    );
  }
}

// Checks a token against the server before it is stored: null when the server accepts it,
// otherwise the server's message.
export async function checkToken(token: string): Promise<string | null> {
  const res = await apiFetch('/api/v1/metrics', { headers: { Accept: 'application/json' } }, token);
  if (res.ok) return null;
  return (await errorOf(res)).message;
}

// Downloads an API answer as a file: fetched with the token, handed to the browser as a blob URL
// (so the token never appears in a URL, a history entry or a server log).
export async function download(path: string, params: Params, filename: string): Promise<void> {
  const token = currentToken();
  const res = await checked(await apiFetch(apiUrl(path, params), {}, token), token);
  const url = URL.createObjectURL(await res.blob());
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  a.style.display = 'none';
  document.body.append(a);
  a.click();
  a.remove();
  // The browser reads the blob after the click's task; release it a little later.
  window.setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

let metricsCache: Promise<Map<string, MetricInfo>> | null = null;

// Every metric the server knows, by key (fetched once per page load; a metric appears the first
// time any agent sends it, so a miss is refetched at most once a minute).
let metricsFetched = 0;
export function knownMetrics(): Promise<Map<string, MetricInfo>> {
  if (!metricsCache || Date.now() - metricsFetched > 60_000) {
    metricsFetched = Date.now();
    metricsCache = getJson<{ metrics: MetricInfo[] }>('/api/v1/metrics').then(
      (r) => new Map(r.metrics.map((m) => [m.key, m])),
      (e) => {
        metricsCache = null;
        throw e;
      },
    );
  }
  return metricsCache;
}

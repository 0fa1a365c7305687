// SPDX-License-Identifier: Apache-2.0
// The training jobs API (docs/api.md, "Training jobs"; docs/design/training.md), typed, with what
// the Jobs views share: the fetches (an unknown job is null, not an error), the rank's name, the
// straggler's reason in words, the line on how to get steps.
import { ApiError, getJson } from './api';
import type { Finding } from './insights_api';

// The rank that holds the others back, as the jobs list names it.
export interface StragglerRef {
  rank: number;
  host: string;
  entity: string;
}

export interface JobSummary {
  job: string;
  world_size: number;
  ranks: number;
  steps: number;
  first_step: number;
  last_step: number;
  first: number; // Unix ms
  last: number;
  hosts: string[];
  step_time_p50_s: number | null;
  comm_share: number | null;
  straggler: StragglerRef | null;
  findings: number;
}

// Shares are of the rank's summed step time; null where unknown (the NCCL plugin alone reports
// no kernels: compute, overlap and idle are unknown, comm is the NCCL operations' share).
export interface Shares {
  compute_share: number | null;
  comm_share: number | null;
  overlap_share: number | null;
  idle_share: number | null;
}

export interface RankRow extends Shares {
  rank: number;
  host: string;
  entity: string;
  pid: number | null;
  gpus: string[]; // UUIDs
  steps: number;
  step_time_mean_s: number | null;
  step_time_p50_s: number | null;
  nccl_time_mean_s: number | null;
  last_collective_offset_mean_s: number | null;
  late_fraction: number | null;
  compute_excess_s: number | null;
  straggler: boolean;
  slow_interconnect: boolean;
}

export interface StepRow {
  step: number;
  start: number; // Unix ms
  duration_s: (number | null)[]; // per rank, in JobDetail.ranks order
  max_s: number | null;
  last_rank: number | null; // the rank that started the step's last large collective last
}

export type StragglerReason = 'late_collective' | 'long_compute';

export interface Straggler extends StragglerRef {
  reason: StragglerReason;
  late_fraction: number | null;
  lag_s: number | null;
  step_share: number | null;
  gpu_hours_lost: number | null;
}

export interface SlowStep {
  step: number;
  start: number; // Unix ms
  duration_s: number;
  trailing_median_s: number;
  stall: boolean;
}

export interface CollectiveRank {
  rank: number;
  host: string;
  count: number | null;
  gpu_time_s: number | null;
  mean_time_s: number | null;
  bus_bandwidth_bytes_per_second: number | null;
}

export interface Collective {
  collective: string;
  comm: string;
  comm_name: string;
  per_rank: CollectiveRank[];
}

export interface JobDetail extends Shares {
  job: string;
  world_size: number;
  hosts: string[];
  from: number; // Unix ms: the analysed steps' span
  to: number;
  complete_steps: number;
  step_time_p50_s: number | null;
  gpu_hours: number | null;
  ranks: RankRow[];
  steps: StepRow[];
  straggler: Straggler | null;
  slow_interconnect_ranks: number[];
  slow_steps: SlowStep[];
  collectives: Collective[];
  findings: Finding[];
}

// The query window of a view: Unix seconds, whole (the API takes from/to as start/end).
function window(start: number, end: number): { from: number; to: number } {
  return { from: Math.floor(start), to: Math.ceil(end) };
}

// The jobs with steps in the window, newest last step first (the server's most, 1000).
export async function fetchJobs(start: number, end: number): Promise<JobSummary[]> {
  const r = await getJson<{ jobs: JobSummary[] }>('/api/v1/jobs', { ...window(start, end), limit: 1000 });
  return r.jobs ?? [];
}

// One job's analysis over the window, or null when no rank of it reported steps in the window.
// The jobs list is asked first: a job it does not hold is not requested (whose 404 the browser
// would log as an error); a 404 of the job itself (its steps expired in between) is null too.
export async function fetchJob(job: string, start: number, end: number): Promise<JobDetail | null> {
  if (!(await fetchJobs(start, end)).some((j) => j.job === job)) return null;
  try {
    return await getJson<JobDetail>(`/api/v1/jobs/${encodeURIComponent(job)}`, window(start, end));
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) return null;
    throw e;
  }
}

export function rankName(r: { rank: number; host: string }): string {
  return `rank ${r.rank} · ${r.host}`;
}

export function reasonText(reason: string): string {
  if (reason === 'late_collective') return 'starts the step\u2019s last collective after every other rank';
  if (reason === 'long_compute') return 'computes longer than the other ranks before each collective';
  return reason;
}

// Said wherever there are no steps: how a job's ranks report them.
export const NO_STEPS_HELP =
  'Training steps come from the agent\u2019s step tracker on each rank\u2019s host: load the NCCL profiler plugin into the job (NCCL_PROFILER_PLUGIN=libwarpscope_nccl.so, steps are cut from the collectives\u2019 period) and/or emit NVTX ProfilerStep#N ranges (torch.profiler does) with the CUDA profiler injected, then send the agents to this server.';

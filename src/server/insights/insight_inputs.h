// SPDX-License-Identifier: Apache-2.0
// What the insight rules look at: the recent past of every GPU and GPU process as aligned
// per-bucket series, and the events of the same range, read from the server's storage in one
// pass per evaluation. Rules are pure functions of this snapshot, so each is tested with hand-
// made inputs, and storage is read once however many rules there are.
#ifndef WARPSCOPE_SERVER_INSIGHTS_INSIGHT_INPUTS_H_
#define WARPSCOPE_SERVER_INSIGHTS_INSIGHT_INPUTS_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/time.h"
#include "model/labels.h"
#include "server/storage/storage.h"
#include "server/training/job_analysis.h"

namespace warpscope::server::insights {

// One value per step bucket, oldest first; NaN where the bucket has no data (never 0).
using Series = std::vector<double>;

struct GpuInput {
  std::string host;
  std::string uuid;          // the GPU's entity id
  model::Labels attributes;  // the GPU entity's (gpu.index, gpu.model, …)
  std::string cluster;       // the host's `cluster` tag; "" when it has none
  Series utilization;        // gpu.utilization, 0..1
  Series power;              // gpu.power.usage, W
  Series power_limit;        // gpu.power.limit, W
  Series temperature;        // gpu.temperature, °C
  Series memory_used;        // gpu.memory.used, bytes
  Series memory_total;       // gpu.memory.total, bytes
  Series ecc_uncorrected;    // gpu.ecc.uncorrected.volatile, cumulative (the bucket's last)
  Series remapping_failed;   // gpu.remapped_rows.failure, 0 or 1
  Series sm_occupancy;       // gpu.sm.occupancy, 0..1 (GPM: Hopper and later)
  Series dram_active;        // gpu.dram.active, 0..1 (GPM)
  Series tensor_active;      // gpu.tensor.active, 0..1 (GPM: any tensor pipe)
  Series fp32_active;        // gpu.fp32.active, 0..1 (GPM: the non-tensor FP32 pipe)
  Series fp16_active;        // gpu.fp16.active, 0..1 (GPM: the non-tensor FP16 pipe)
  Series sm_clock;           // gpu.clock.sm, MHz
};

// One process's GPU (CUDA kernel) profiles over a window, reduced to what rules read: its
// kernels' GPU time and the part of it in matrix multiplications (gpu_profiles.h).
struct KernelTime {
  std::string name;  // the kernel's demangled name
  int64_t gpu_ns = 0;
};
struct GpuProfileDigest {
  std::string host;
  std::string entity;  // the process's entity id, as in ProcessGpuInput
  int64_t pid = 0;
  base::TimePoint start;  // the window the profiles were read for
  base::TimePoint end;
  base::TimePoint read_at;           // when it was read from storage
  size_t profiles = 0;               // stored profiles merged; 0: none in the window
  int64_t kernel_ns = 0;             // GPU time of every kernel (copies and memsets not counted)
  int64_t matmul_ns = 0;             // of matmul kernels (IsMatmulKernel)
  std::vector<KernelTime> matmuls;   // the largest matmul kernels, largest first (at most 5)
};

// One process's use of one GPU.
struct ProcessGpuInput {
  std::string host;
  std::string entity;        // the process's entity id ("pid/<pid>/<start>")
  std::string gpu;           // the GPU's uuid
  model::Labels attributes;  // the process entity's (process.pid, process.executable.name, …)
  base::TimePoint first_seen;
  Series memory_used;      // gpu.process.memory.used, bytes
  Series cpu_utilization;  // process.cpu.utilization: share of all the host's CPUs, 0..1
  // The process's CUDA runtime metrics from the injected library, its CUDA devices summed, as
  // rates per second; NaN where the library did not run (docs/metrics.md, "cuda.*").
  Series cuda_kernel_time;  // cuda.kernel.time: GPU seconds of kernels per second
  Series cuda_h2d_time;     // cuda.memcpy.time{direction="H2D"}: seconds of copies per second
  Series cuda_allocations;  // cuda.memory.allocations: allocations per second
  Series cuda_releases;     // cuda.memory.releases: releases per second
};

// One host's CPU.
struct HostInput {
  std::string host;
  std::string cluster;
  Series cpu_idle;      // host.cpu.utilization{mode="idle"}, 0..1
  Series cpu_iowait;    // host.cpu.utilization{mode="iowait"}, 0..1
  Series logical_cpus;  // host.cpu.logical_count
};

// One model one serving process serves (vLLM, SGLang, TensorRT-LLM, TGI: the agent's inference
// metrics, docs/design/inference.md), by the series' `model` label.
struct InferenceInput {
  std::string host;
  std::string entity;        // the serving process's entity id ("pid/<pid>/<start>")
  std::string model;         // the `model` label
  model::Labels attributes;  // the process entity's: inference.engine, inference.gpu.uuids, …
  // inference.batch.efficiency, 0..1: per bucket the higher of its bases (tokens, sequences),
  // the limit the engine is closest to.
  Series batch_efficiency;
  Series requests_running;   // inference.requests.running
  Series requests_waiting;   // inference.requests.waiting
  Series request_rate;       // inference.request.rate, requests/s
  Series input_token_rate;   // inference.token.rate{token_type="input"}, tokens/s
  Series output_token_rate;  // inference.token.rate{token_type="output"}, tokens/s
  Series kv_cache_usage;     // inference.kv_cache.usage, 0..1
  Series ttft_p95;           // inference.time_to_first_token{quantile="0.95"}, s (none for TGI)
  Series queue_time_p95;     // inference.queue_time{quantile="0.95"}, s
};

// The long view: a few series per GPU in coarse (1-minute) buckets over the last 90 minutes, for
// trends longer than the 15 minutes of 10 s buckets (fleet_regression). Only complete buckets:
// it ends at the last step boundary, so it changes once a step (ReadLongView).
struct LongGpuInput {
  std::string host;
  std::string uuid;
  Series utilization;  // gpu.utilization, 0..1
  Series power;        // gpu.power.usage, W
  Series memory_used;  // gpu.memory.used, bytes
};

struct LongView {
  base::TimePoint start;  // aligned to `step`
  base::Duration step = std::chrono::minutes(1);
  size_t buckets = 0;
  std::vector<LongGpuInput> gpus;  // ordered by (host, uuid)
  bool host_all = true;

  base::TimePoint BucketStart(size_t i) const { return start + step * static_cast<int64_t>(i); }
  base::TimePoint end() const { return BucketStart(buckets); }
};

// One distributed training job with steps in the snapshot's range, analysed
// (server/training/job_analysis.h); read by training_inputs.h, not by ReadInsightInputs.
struct JobInput {
  training::JobAnalysis analysis;
  // Per rank (analysis.ranks order), where known: whether the GPU its process uses has active
  // NVLink links (it stored gpu.nvlink.transmit.bytes series in the range). Read for the ranks
  // with a verdict only (the straggler and slow-interconnect ranks); nullopt elsewhere.
  std::vector<std::optional<bool>> nvlink;
};

struct InsightInputs {
  base::TimePoint start;  // bucket 0 starts here; aligned to `step`
  base::Duration step = std::chrono::seconds(10);
  size_t buckets = 0;
  std::vector<GpuInput> gpus;              // ordered by (host, uuid)
  std::vector<ProcessGpuInput> processes;  // ordered by (host, entity, gpu)
  std::vector<HostInput> hosts;            // ordered by host
  std::vector<InferenceInput> inference;   // ordered by (host, entity, model)
  // In [start, end()), oldest first. An event of a MIG instance is its GPU's (entity), with the
  // instance in its attributes (mig.entity, mig.gpu_instance_id, ...).
  std::vector<EventRecord> events;
  // GPU profile digests of the processes on the GPUs a rule asks profiles for
  // (Rule::WantsGpuProfiles), ordered by (host, entity). Filled by the engine from its cache
  // (GpuProfileCache), not by ReadInsightInputs.
  std::vector<GpuProfileDigest> gpu_profiles;
  bool host_all = true;                    // read for every host (InputsQuery::host empty)
  // The slow GPU metrics (those only rules over windows of minutes read: SM occupancy, DRAM,
  // tensor and FP pipes; and those rules read as their latest value: power limit, memory total)
  // hold data read up to here; their buckets after it are NaN until the
  // next slow read (InputsQuery::slow_every).
  base::TimePoint slow_end;
  // The long view, shared between evaluations (it changes once a minute); null when not read.
  std::shared_ptr<const LongView> long_view;
  // Training jobs with steps in the range, ordered by job id; shared between evaluations (read
  // once a `training_refresh`, training_inputs.h); null when not read.
  std::shared_ptr<const std::vector<JobInput>> jobs;

  base::TimePoint BucketStart(size_t i) const { return start + step * static_cast<int64_t>(i); }
  base::TimePoint end() const { return BucketStart(buckets); }
  // The first bucket that starts at or after `t` (buckets when none does).
  size_t BucketAt(base::TimePoint t) const;
};

struct InputsQuery {
  base::TimePoint end;  // usually now; the last bucket is the one that holds end - step
  base::Duration lookback = std::chrono::minutes(15);
  base::Duration step = std::chrono::seconds(10);
  std::string host;  // "" for every host
  // With a previous snapshot: the part of it that is re-read (windows that arrive late, up to
  // this long after their time, are still seen).
  base::Duration reread = std::chrono::minutes(1);
  // With a previous snapshot: how often the slow GPU metrics are read (every read when zero).
  // Their rules judge means over 5–10 minutes, which a minute's lag does not move; reading them
  // once a minute takes a third of the GPU reads off most evaluations.
  base::Duration slow_every = std::chrono::minutes(1);
};

struct LongViewQuery {
  base::TimePoint end;  // usually now; the view ends at the step boundary at or before it
  base::Duration lookback = std::chrono::minutes(90);
  base::Duration step = std::chrono::minutes(1);
  std::string host;  // "" for every host
  // With a previous view: the part of it that is re-read (late windows, and the newest buckets
  // that were still filling when it was read).
  base::Duration reread = std::chrono::minutes(5);
};

// Reads the long view: each GPU's utilization, power and memory used per `step` bucket, from
// the 1-minute rollups where they are built and from raw windows where not yet. With
// `previous` (same step and host), only its last `reread` and what is new are read; a GPU with
// no data left is dropped.
[[nodiscard]] base::Result<LongView> ReadLongView(Storage& storage, const LongViewQuery& query,
                                                  const LongView* previous = nullptr);

// Reads the snapshot from `storage`. A metric the server never received leaves its series all
// NaN; other storage errors are returned. With `previous` (the snapshot of an earlier call with
// the same step and host), only the buckets from `reread` before its end on are read and the
// rest is taken from it: an evaluation reads about a minute of data instead of fifteen. GPUs
// and processes with no data left in the lookback are dropped.
[[nodiscard]] base::Result<InsightInputs> ReadInsightInputs(
    Storage& storage, const InputsQuery& query, const InsightInputs* previous = nullptr);

}  // namespace warpscope::server::insights

#endif  // WARPSCOPE_SERVER_INSIGHTS_INSIGHT_INPUTS_H_

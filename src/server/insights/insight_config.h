// SPDX-License-Identifier: Apache-2.0
// The insight rules' thresholds and the price of a GPU-hour. Defaults follow docs/insights.md;
// watt thresholds are given for a 700 W card and scale with each GPU's expected full-load power
// (gpu_models.h).
#ifndef WARPSCOPE_SERVER_INSIGHTS_INSIGHT_CONFIG_H_
#define WARPSCOPE_SERVER_INSIGHTS_INSIGHT_CONFIG_H_

#include <chrono>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <variant>

#include "base/status.h"
#include "base/time.h"

namespace warpscope::server::insights {

using std::chrono::minutes;
using std::chrono::seconds;

struct InsightConfig {
  double gpu_hour_price = 0;  // currency units per GPU-hour; 0: costs are not priced

  // cooling_failure: the temperature's least-squares slope over `cooling_window` above this
  // rate, with at least `cooling_min_rise_c` between the window's coolest and latest value.
  double cooling_rate_c_per_min = 10;
  double cooling_min_rise_c = 5;
  base::Duration cooling_window = minutes(1);
  // ... and resolves once the climb has been gone this long.
  base::Duration cooling_clear_after = minutes(2);

  // thermal_outlier: a GPU's mean temperature over `thermal_window` more than `thermal_outlier_c`
  // above the median of its peers (same cluster and model, mean power within
  // `thermal_peer_power_fraction` of its own); it clears below `thermal_clear_c`.
  double thermal_outlier_c = 5;
  double thermal_clear_c = 3;
  double thermal_peer_power_fraction = 0.15;
  size_t thermal_min_peers = 3;
  base::Duration thermal_window = minutes(5);

  // power_drop: power falls by more than `power_drop_watts` (at 700 W full load) from the
  // highest of the `power_drop_window` before to one bucket, while the GPU was busy (mean
  // utilization before >= `power_drop_busy_utilization`); it holds while power stays below
  // the level before by half the threshold.
  double power_drop_watts = 300;
  double power_drop_busy_utilization = 0.5;
  base::Duration power_drop_window = seconds(30);
  // ... and, where the GPU reports its SM clock, the clock fell too: by at least this share of
  // the window before's highest. A throttle slows the clocks; power that falls at full clocks
  // is the work changing (ranks spinning in a hung collective), not a throttle.
  double power_drop_clock_fraction = 0.1;

  // hardware_errors: an XID, an uncorrectable ECC error or a failed row remapping within
  // `hardware_hold`.
  base::Duration hardware_hold = minutes(10);

  // idle_allocated: memory used above `idle_min_memory_bytes` with mean utilization below
  // `idle_utilization` over `idle_window`; it clears when the last `idle_clear_window` averages
  // above `idle_clear_utilization`.
  double idle_utilization = 0.02;
  double idle_clear_utilization = 0.10;
  double idle_min_memory_bytes = 1024.0 * 1024 * 1024;
  base::Duration idle_window = minutes(10);
  base::Duration idle_clear_window = minutes(2);

  // memory_leak: a process's GPU memory grew by more than `leak_growth_of_peak` of its peak
  // over `leak_window`, still grows in the window's last third (by `leak_tail_growth_of_peak`),
  // never fell by more than `leak_max_fall_of_peak`, and the process has run `leak_warmup`
  // before the window.
  double leak_growth_of_peak = 0.02;
  double leak_tail_growth_of_peak = 0.004;
  double leak_max_fall_of_peak = 0.01;
  base::Duration leak_window = minutes(10);
  base::Duration leak_warmup = minutes(3);

  // input_bound: over `input_window`, a GPU at least `input_min_utilization` busy (a job runs)
  // whose mean utilization is under `input_gpu_utilization` (0.1 more to clear) or whose mean
  // power is under `input_gpu_power_fraction` of its full load, while the process holding
  // memory on it uses at least `input_process_cores` CPU cores or the host's CPUs are at least
  // `input_host_busy` busy, or host-to-device copies take at least `input_h2d_copy_share` of
  // the GPU time of its kernels and those copies (from the injected library's cuda.* metrics).
  double input_gpu_utilization = 0.60;
  double input_gpu_power_fraction = 0.50;
  double input_min_utilization = 0.05;
  double input_process_cores = 0.90;
  double input_host_busy = 0.90;
  double input_h2d_copy_share = 0.30;
  base::Duration input_window = minutes(5);

  // memory_bound: over `efficiency_window`, a busy GPU (mean utilization >=
  // `efficiency_busy_utilization`) with mean SM occupancy under `memory_bound_occupancy` and
  // mean DRAM activity above `memory_bound_dram`.
  double memory_bound_occupancy = 0.60;
  double memory_bound_dram = 0.80;
  // underpowered: over `efficiency_window`, a GPU busy at >= `underpowered_utilization` whose
  // mean power stays under `underpowered_watts` (at 700 W full load) and, where the GPU reports
  // it, whose SM occupancy is under `underpowered_occupancy`.
  double underpowered_utilization = 0.80;
  double underpowered_watts = 500;
  double underpowered_occupancy = 0.40;
  double efficiency_busy_utilization = 0.50;
  base::Duration efficiency_window = minutes(10);

  // tensor_cores_idle: over `tensor_window`, a GPU at least `efficiency_busy_utilization` busy
  // whose mean tensor-pipe activity is under `tensor_active` (`tensor_clear_active` to clear)
  // while matmul kernels take at least `tensor_matmul_share` of its processes' kernel time (their
  // GPU profiles, read every `tensor_profile_refresh`) or, without a profile, its FP32 and FP16
  // pipes are together at least `tensor_fp_pipes_busy` busy.
  double tensor_active = 0.60;
  double tensor_clear_active = 0.65;
  double tensor_matmul_share = 0.50;
  double tensor_fp_pipes_busy = 0.50;
  base::Duration tensor_window = minutes(10);
  base::Duration tensor_profile_refresh = minutes(5);

  // fleet_regression, over the long view (1-minute buckets): in the last `fleet_window`, with
  // at least `fleet_min_span` of it holding data, the median utilization of a cluster's working
  // GPUs has a negative least-squares slope and falls by at least `fleet_drop` from the span's
  // first third to its last (once open, it holds while the fall is at least
  // `fleet_clear_drop`); at least `fleet_broad_share` of those GPUs fell by `fleet_gpu_drop` or
  // more each; no `fleet_step_window` holds more than `fleet_max_step_share` of the fall (a
  // step is power_drop's or hardware_errors'); the cluster has at least `fleet_min_hosts` hosts
  // or `fleet_min_gpus` GPUs. A GPU whose last `fleet_step_window` averages under
  // `fleet_idle_utilization`, or whose memory fell to under half its peak, ran a job that
  // ended (idle_allocated's) and is left out. The finding is pending until the regression has
  // been seen for `fleet_hold` (its evidence is already half an hour or more of data).
  double fleet_drop = 0.10;
  double fleet_clear_drop = 0.05;
  double fleet_gpu_drop = 0.05;
  double fleet_broad_share = 0.60;
  double fleet_max_step_share = 0.50;
  double fleet_idle_utilization = 0.05;
  size_t fleet_min_hosts = 2;
  size_t fleet_min_gpus = 8;
  base::Duration fleet_window = minutes(60);
  base::Duration fleet_min_span = minutes(30);
  base::Duration fleet_step_window = minutes(5);
  base::Duration fleet_hold = minutes(5);

  // Inference sizing (rule 13), per model a serving process serves, over `inference_window`:
  // inference_overprovisioned: batch efficiency (inference.batch.efficiency, the basis the
  // engine is closest to) under `inference_low_efficiency` in at least
  // `inference_sustained_share` of the window's buckets; its waste is the GPUs a consolidation
  // of the model's pool to `inference_target_efficiency` would free.
  // inference_queueing: batch efficiency above `inference_high_efficiency` in as many buckets
  // while at least `inference_queue_waiting` requests wait on average.
  // inference_memory_bound: KV-cache use at least `inference_kv_cache_full` in as many buckets
  // while the waiting requests rise (a positive least-squares slope, and at least
  // `inference_queue_growth` more waiting on average in the window's last third than in its
  // first).
  double inference_low_efficiency = 0.30;
  double inference_high_efficiency = 0.80;
  double inference_target_efficiency = 0.60;
  double inference_sustained_share = 0.80;
  double inference_queue_waiting = 1;
  double inference_kv_cache_full = 0.90;
  double inference_queue_growth = 1;
  base::Duration inference_window = minutes(10);
  // inference_slow_first_token: the p95 time to first token above `inference_ttft_target_s`
  // (seconds) in at least `inference_sustained_share` of the buckets with a p95 over
  // `inference_ttft_window`, which has one in at least half its buckets (a percentile exists
  // only for windows in which requests finished; TGI has none).
  double inference_ttft_target_s = 0.5;
  base::Duration inference_ttft_window = minutes(5);

  // Training jobs (rules 9-11, docs/design/training-analysis.md), over the steps that ended in
  // the last `training_window`:
  // training_straggler: a rank starts the step's last large collective last in more than
  // `training_late_fraction` of the complete steps, later than the median rank by at least
  // `training_min_lag_share` of the median step time; or, in steps without such a collective,
  // its compute exceeds its peers' median by `training_compute_excess` of the step time as
  // often. training_slow_interconnect: a rank whose NCCL time (less its wait for the last rank)
  // is at least 1 + `training_nccl_excess` times the median rank's in as many steps.
  // training_comm_heavy: communication not overlapped by compute above `training_comm_share` of
  // the step time, job-wide. training_step_regression: a step longer than
  // `training_slow_step_factor` x the median of the `training_trailing_steps` complete steps
  // before it that started in the last `training_step_window`; `training_stall_factor` x pages.
  // Verdicts need `training_min_steps` complete steps. At most `training_max_jobs` jobs (those
  // with the newest steps) and `training_max_step_records` step records per job (the newest)
  // are read, once every `training_refresh`.
  double training_late_fraction = 0.5;
  double training_min_lag_share = 0.02;
  double training_compute_excess = 0.05;
  double training_nccl_excess = 0.5;
  double training_comm_share = 0.25;
  double training_slow_step_factor = 1.5;
  double training_stall_factor = 5;
  size_t training_trailing_steps = 20;
  size_t training_min_steps = 5;
  size_t training_max_jobs = 50;
  size_t training_max_step_records = 100000;
  base::Duration training_window = minutes(15);
  base::Duration training_step_window = minutes(5);
  base::Duration training_refresh = seconds(30);

  // OK, or InvalidArgument naming the first threshold out of range and its allowed range.
  [[nodiscard]] base::Status Validate() const;
};

// One threshold as the server's config file names it, in its `[server.insights]` section
// (docs/insights.md, "Thresholds"): the field's name with dashes ("thermal-outlier-c"), the
// field, and what it means. InsightConfigKeys() lists every field but gpu_hour_price (the
// server's --gpu-hour-price); a new field is one row there.
struct InsightConfigKey {
  std::string_view key;
  std::variant<double InsightConfig::*, size_t InsightConfig::*, base::Duration InsightConfig::*>
      field;
  std::string_view meaning;
};
std::span<const InsightConfigKey> InsightConfigKeys();

// `key`'s value in `config` as the config file writes it: "5", "0.15", "10m".
std::string InsightConfigValue(const InsightConfig& config, const InsightConfigKey& key);

// Sets `key` from the config file's text: a number, a whole number, or a duration with its unit
// ("90s", "10m"). InvalidArgument naming the key and the closest valid one for an unknown key,
// or the key, its value and the form wanted for a value that does not parse. Ranges are
// Validate()'s.
[[nodiscard]] base::Status SetInsightConfig(InsightConfig& config, std::string_view key,
                                            std::string_view value);

// The Markdown table of every key (key, default, meaning) that docs/insights.md holds.
std::string InsightConfigTable();

}  // namespace warpscope::server::insights

#endif  // WARPSCOPE_SERVER_INSIGHTS_INSIGHT_CONFIG_H_

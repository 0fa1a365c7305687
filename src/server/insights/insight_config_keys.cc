// SPDX-License-Identifier: Apache-2.0
// The `[server.insights]` keys of the server's config file: one row per InsightConfig field,
// their parsing, and the reference table docs/insights.md holds.
#include <charconv>
#include <cmath>
#include <limits>
#include <string>

#include "fmt/format.h"
#include "server/insights/insight_config.h"

namespace warpscope::server::insights {
namespace {

using C = InsightConfig;

// Ordered as docs/insights.md lists the rules. Watt thresholds are for a 700 W card.
const InsightConfigKey kKeys[] = {
    {"input-gpu-utilization", &C::input_gpu_utilization,
     "`input_bound`: mean utilization under which a GPU works under its capacity (0..1)"},
    {"input-gpu-power-fraction", &C::input_gpu_power_fraction,
     "`input_bound`: or mean power under this share of the card's full load (0..1)"},
    {"input-min-utilization", &C::input_min_utilization,
     "`input_bound`: the least utilization that says a job runs (0..1)"},
    {"input-process-cores", &C::input_process_cores,
     "`input_bound`: CPU cores the GPU's process uses that make it CPU-bound"},
    {"input-host-busy", &C::input_host_busy,
     "`input_bound`: or the host's busy CPU share (0..1)"},
    {"input-h2d-copy-share", &C::input_h2d_copy_share,
     "`input_bound`: or the share of the process's GPU time (kernels and host-to-device copies) "
     "that host-to-device copies take (0..1; needs the CUDA profiler)"},
    {"input-window", &C::input_window, "`input_bound`: the window judged"},
    {"memory-bound-occupancy", &C::memory_bound_occupancy,
     "`memory_bound`: mean SM occupancy under which a busy GPU waits (0..1)"},
    {"memory-bound-dram", &C::memory_bound_dram,
     "`memory_bound`: mean DRAM activity above which it waits on memory (0..1)"},
    {"underpowered-utilization", &C::underpowered_utilization,
     "`underpowered`: the least mean utilization of a training GPU (0..1)"},
    {"underpowered-watts", &C::underpowered_watts,
     "`underpowered`: mean power under which it is underpowered (W, scaled)"},
    {"underpowered-occupancy", &C::underpowered_occupancy,
     "`underpowered`: and SM occupancy under this, where reported (0..1)"},
    {"efficiency-busy-utilization", &C::efficiency_busy_utilization,
     "`memory_bound`: the least mean utilization judged (0..1)"},
    {"efficiency-window", &C::efficiency_window,
     "`memory_bound`, `underpowered`: the window judged"},
    {"tensor-active", &C::tensor_active,
     "`tensor_cores_idle`: mean tensor-pipe activity under which a busy GPU's are idle (0..1)"},
    {"tensor-clear-active", &C::tensor_clear_active,
     "`tensor_cores_idle`: tensor activity above which it clears (at least tensor-active)"},
    {"tensor-matmul-share", &C::tensor_matmul_share,
     "`tensor_cores_idle`: the least share of kernel time in matmuls, from GPU profiles (0.01..1)"},
    {"tensor-fp-pipes-busy", &C::tensor_fp_pipes_busy,
     "`tensor_cores_idle`: without a profile, FP32 + FP16 pipe activity that means dense math (0.01..2)"},
    {"tensor-window", &C::tensor_window, "`tensor_cores_idle`: the window judged"},
    {"tensor-profile-refresh", &C::tensor_profile_refresh,
     "`tensor_cores_idle`: how often a process's GPU profiles are read again"},
    {"thermal-outlier-c", &C::thermal_outlier_c,
     "`thermal_outlier`: °C above the peers' median that raises it"},
    {"thermal-clear-c", &C::thermal_clear_c,
     "`thermal_outlier`: °C above it under which it clears (at most thermal-outlier-c)"},
    {"thermal-peer-power-fraction", &C::thermal_peer_power_fraction,
     "`thermal_outlier`: peers draw at least 1 − this of the GPU's power (0.01..1)"},
    {"thermal-min-peers", &C::thermal_min_peers, "`thermal_outlier`: the fewest peers judged"},
    {"thermal-window", &C::thermal_window, "`thermal_outlier`: the window of the means"},
    {"cooling-rate-c-per-min", &C::cooling_rate_c_per_min,
     "`cooling_failure`: the temperature's climb that raises it (°C/min)"},
    {"cooling-min-rise-c", &C::cooling_min_rise_c,
     "`cooling_failure`: the least rise within the window (°C)"},
    {"cooling-window", &C::cooling_window, "`cooling_failure`: the window of the slope"},
    {"cooling-clear-after", &C::cooling_clear_after,
     "`cooling_failure`: how long the climb has stopped before it resolves"},
    {"power-drop-watts", &C::power_drop_watts,
     "`power_drop`: the loss from the window's highest power (W, scaled)"},
    {"power-drop-busy-utilization", &C::power_drop_busy_utilization,
     "`power_drop`: the least mean utilization before the drop (0..1)"},
    {"power-drop-window", &C::power_drop_window, "`power_drop`: the window before the drop"},
    {"power-drop-clock-fraction", &C::power_drop_clock_fraction,
     "`power_drop`: how much the SM clock must fall too, where reported (share of before)"},
    {"hardware-hold", &C::hardware_hold,
     "`hardware_errors`: how long an XID or ECC error holds the finding"},
    {"training-late-fraction", &C::training_late_fraction,
     "`training_straggler`: the share of complete steps a rank must start the last large "
     "collective last in (or run long compute in) (0.05..0.99); also `training_slow_interconnect`'s "
     "share of steps"},
    {"training-min-lag-share", &C::training_min_lag_share,
     "`training_straggler`: how much later than the median rank it starts it, as a share of the "
     "median step time (0..1)"},
    {"training-compute-excess", &C::training_compute_excess,
     "`training_straggler`: without large collectives, the compute beyond its peers' median that "
     "makes a step long, as a share of the step time (0..1)"},
    {"training-nccl-excess", &C::training_nccl_excess,
     "`training_slow_interconnect`: NCCL time at least 1 + this times the median rank's"},
    {"training-comm-share", &C::training_comm_share,
     "`training_comm_heavy`: the share of step time in communication not overlapped by compute "
     "above which it raises (0.01..1)"},
    {"training-slow-step-factor", &C::training_slow_step_factor,
     "`training_step_regression`: a step this many times the trailing median is slow"},
    {"training-stall-factor", &C::training_stall_factor,
     "`training_step_regression`: this many times is a stall, which pages"},
    {"training-trailing-steps", &C::training_trailing_steps,
     "`training_step_regression`: the complete steps of the trailing median"},
    {"training-min-steps", &C::training_min_steps,
     "`training_*`: the fewest complete steps a verdict needs"},
    {"training-max-jobs", &C::training_max_jobs,
     "`training_*`: the most jobs judged (those with the newest steps)"},
    {"training-max-step-records", &C::training_max_step_records,
     "`training_*`: the most step records read per job (the newest; one per rank and step)"},
    {"training-window", &C::training_window, "`training_*`: the steps judged ended in this window"},
    {"training-step-window", &C::training_step_window,
     "`training_step_regression`: a slow step counts while it started this recently"},
    {"training-refresh", &C::training_refresh,
     "`training_*`: how often the jobs' steps are read again (0s to 10m)"},
    {"leak-growth-of-peak", &C::leak_growth_of_peak,
     "`memory_leak`: growth over the window, as a share of the peak"},
    {"leak-tail-growth-of-peak", &C::leak_tail_growth_of_peak,
     "`memory_leak`: growth still in the window's last third (share of the peak)"},
    {"leak-max-fall-of-peak", &C::leak_max_fall_of_peak,
     "`memory_leak`: the most memory freed in between (share of the peak)"},
    {"leak-window", &C::leak_window, "`memory_leak`: the window judged"},
    {"leak-warmup", &C::leak_warmup,
     "`memory_leak`: how long a process runs before it is judged (0s to 60m)"},
    {"inference-low-efficiency", &C::inference_low_efficiency,
     "`inference_overprovisioned`: batch efficiency under which a model's serving pool is "
     "over-provisioned (0.01..1)"},
    {"inference-target-efficiency", &C::inference_target_efficiency,
     "`inference_overprovisioned`: the efficiency a consolidation aims at, for the GPUs it frees "
     "(inference-low-efficiency..inference-high-efficiency)"},
    {"inference-high-efficiency", &C::inference_high_efficiency,
     "`inference_queueing`: batch efficiency above which the engine runs full "
     "(inference-target-efficiency..1)"},
    {"inference-queue-waiting", &C::inference_queue_waiting,
     "`inference_queueing`: the least mean number of waiting requests"},
    {"inference-kv-cache-full", &C::inference_kv_cache_full,
     "`inference_memory_bound`: KV-cache use at which the cache is full (0.1..1)"},
    {"inference-queue-growth", &C::inference_queue_growth,
     "`inference_memory_bound`: how many more requests wait in the window's last third than in "
     "its first"},
    {"inference-sustained-share", &C::inference_sustained_share,
     "`inference_*`: the least share of the window's buckets the condition holds in (0.1..1)"},
    {"inference-window", &C::inference_window,
     "`inference_overprovisioned`, `inference_queueing`, `inference_memory_bound`: the window "
     "judged"},
    {"inference-ttft-target-s", &C::inference_ttft_target_s,
     "`inference_slow_first_token`: the p95 time to first token above which it pages (s)"},
    {"inference-ttft-window", &C::inference_ttft_window,
     "`inference_slow_first_token`: the window judged"},
    {"idle-utilization", &C::idle_utilization,
     "`idle_allocated`: mean utilization under which a GPU is idle (0..1)"},
    {"idle-clear-utilization", &C::idle_clear_utilization,
     "`idle_allocated`: mean utilization of the clear window that clears it (0..1)"},
    {"idle-min-memory-bytes", &C::idle_min_memory_bytes,
     "`idle_allocated`: the least memory held (bytes)"},
    {"idle-window", &C::idle_window, "`idle_allocated`: the window judged"},
    {"idle-clear-window", &C::idle_clear_window, "`idle_allocated`: the window that clears it"},
    {"fleet-drop", &C::fleet_drop,
     "`fleet_regression`: the fall of the cluster's median utilization, first third to last "
     "(0.01..1)"},
    {"fleet-clear-drop", &C::fleet_clear_drop,
     "`fleet_regression`: the fall under which it clears (at most fleet-drop)"},
    {"fleet-gpu-drop", &C::fleet_gpu_drop,
     "`fleet_regression`: the fall of one GPU that counts it as declined (0..1)"},
    {"fleet-broad-share", &C::fleet_broad_share,
     "`fleet_regression`: the least share of the cluster's GPUs that declined (0.01..1)"},
    {"fleet-max-step-share", &C::fleet_max_step_share,
     "`fleet_regression`: the most of the fall one step window may hold (0.01..1)"},
    {"fleet-idle-utilization", &C::fleet_idle_utilization,
     "`fleet_regression`: a GPU under this at the end ran a job that ended, and is left out"},
    {"fleet-min-hosts", &C::fleet_min_hosts,
     "`fleet_regression`: a cluster needs this many hosts (or fleet-min-gpus GPUs)"},
    {"fleet-min-gpus", &C::fleet_min_gpus,
     "`fleet_regression`: or this many GPUs"},
    {"fleet-window", &C::fleet_window, "`fleet_regression`: the long window judged (10s to 60m)"},
    {"fleet-min-span", &C::fleet_min_span,
     "`fleet_regression`: the least data in it (3m to fleet-window)"},
    {"fleet-step-window", &C::fleet_step_window,
     "`fleet_regression`: the window a step is looked for in (1m to half of fleet-min-span)"},
    {"fleet-hold", &C::fleet_hold,
     "`fleet_regression`: how long it is seen before it fires (0s to 60m)"},
};

template <typename... F>
struct Overloaded : F... {
  using F::operator()...;
};

// The edit distance of two keys, for "did you mean".
size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1] ? 1 : 0)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

std::string_view Closest(std::string_view key) {
  std::string_view best = kKeys[0].key;
  size_t best_distance = std::numeric_limits<size_t>::max();
  for (const InsightConfigKey& k : kKeys) {
    size_t d = EditDistance(key, k.key);
    if (d < best_distance) best = k.key, best_distance = d;
  }
  return best;
}

std::string FormatNumber(double v) { return fmt::format("{}", v); }

}  // namespace

std::span<const InsightConfigKey> InsightConfigKeys() { return kKeys; }

std::string InsightConfigValue(const InsightConfig& config, const InsightConfigKey& key) {
  return std::visit(
      Overloaded{[&](double C::*f) { return FormatNumber(config.*f); },
                 [&](size_t C::*f) { return std::to_string(config.*f); },
                 [&](base::Duration C::*f) { return base::FormatDuration(config.*f); }},
      key.field);
}

base::Status SetInsightConfig(InsightConfig& config, std::string_view key, std::string_view value) {
  const InsightConfigKey* found = nullptr;
  for (const InsightConfigKey& k : kKeys) {
    if (k.key == key) found = &k;
  }
  if (!found) {
    return base::InvalidArgument(
        "[server.insights] has no key \"{}\"; did you mean \"{}\"? (docs/insights.md lists every "
        "key)",
        key, Closest(key));
  }
  auto bad = [&](std::string_view wanted) {
    return base::InvalidArgument("[server.insights] {} = \"{}\": give {}", key, value, wanted);
  };
  return std::visit(
      Overloaded{
          [&](double C::*f) -> base::Status {
            double v = 0;
            auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
            if (ec != std::errc() || end != value.data() + value.size() || !std::isfinite(v)) {
              return bad("a number (5, 0.15)");
            }
            config.*f = v;
            return base::OkStatus();
          },
          [&](size_t C::*f) -> base::Status {
            size_t v = 0;
            auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
            if (ec != std::errc() || end != value.data() + value.size()) {
              return bad("a whole number (3)");
            }
            config.*f = v;
            return base::OkStatus();
          },
          [&](base::Duration C::*f) -> base::Status {
            base::Result<base::Duration> d = base::ParseDuration(value);
            if (!d) return bad("a duration with its unit (\"90s\", \"10m\")");
            config.*f = *d;
            return base::OkStatus();
          }},
      found->field);
}

std::string InsightConfigTable() {
  const InsightConfig defaults;
  std::string out = "| key | default | meaning |\n|---|---|---|\n";
  for (const InsightConfigKey& k : kKeys) {
    const bool duration = std::holds_alternative<base::Duration C::*>(k.field);
    const std::string value = InsightConfigValue(defaults, k);
    out += fmt::format("| `{}` | {} | {} |\n", k.key,
                       duration ? fmt::format("`\"{}\"`", value) : fmt::format("`{}`", value),
                       k.meaning);
  }
  return out;
}

}  // namespace warpscope::server::insights

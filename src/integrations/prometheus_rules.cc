// SPDX-License-Identifier: Apache-2.0
#include "integrations/prometheus_rules.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "base/logging.h"
#include "server/insights/finding.h"
#include "server/insights/rule.h"
#include "server/insights/rules.h"

namespace warpscope::integrations {
namespace {

using server::insights::InsightConfig;

// Watt thresholds are written for a 700 W card; PromQL scales them with the GPU's power limit.
constexpr double kReferenceWatts = 700;
constexpr double kBytesPerMiB = 1024.0 * 1024;

constexpr UnexportedRule kUnexported[] = {
    {"input_bound",
     "needs the CPU use of the process that holds memory on the GPU (the agent's process "
     "attribution) and the host-to-device copy share of the injected CUDA library"},
    {"fleet_regression",
     "needs the least-squares slope of a cluster's median utilization over an hour, the share "
     "of GPUs that declined and the exclusion of steps and ended jobs"},
    {"training_straggler",
     "needs the training steps of every rank, aligned by step number (the server's job "
     "analysis), which are not Prometheus series"},
    {"training_slow_interconnect",
     "needs each rank's NCCL time per step less its wait for the last rank (the server's job "
     "analysis)"},
    {"training_comm_heavy",
     "needs the GPU time in communication not overlapped by compute per step (the training "
     "steps)"},
    {"training_step_regression",
     "needs the job's step times (the slowest rank's per step) against their trailing median"},
};

// A number as PromQL writes it: the shortest form that reads back the same.
std::string Num(double v) { return fmt::format("{}", v); }

// The quantile of a window's samples above which `share` of them lie (1 − share), without the
// float noise of the subtraction (0.2, not 0.19999999999999996).
std::string Complement(double share) { return Num(std::round((1 - share) * 1e6) / 1e6); }

std::string XidAlerts(const InsightConfig& c, bool application) {
  std::string codes;
  for (int64_t code : server::insights::ApplicationXids()) {
    codes += (codes.empty() ? "" : "|") + std::to_string(code);
  }
  const std::string selector = fmt::format("warpscope_gpu_xid_errors_total{{xid{}\"{}\"}}",
                                           application ? "=~" : "!~", codes);
  const std::string hold = PromDuration(c.hardware_hold);
  // A series is born with its first XID, so a new one shows as a series absent `hold` ago.
  return fmt::format("increase({0}[{1}]) > 0\nor\n({0} unless {0} offset {1})", selector, hold);
}

// One alert of the table: its engine rule, name, and how it reads the config.
struct Spec {
  std::string_view rule;
  std::string_view alert;
  std::string (*expr)(const InsightConfig&);
  std::string (*summary)(const InsightConfig&);
  std::string (*description)(const InsightConfig&);
  std::string_view severity_override;  // "" = the engine rule's
};

constexpr std::string_view kOnGpu = "GPU {{ $labels.gpu }} of {{ $labels.Hostname }}";
constexpr std::string_view kOnServer =
    "{{ $labels.model }} (pid {{ $labels.pid }}) on {{ $labels.Hostname }}";
// A model's batch efficiency: the higher of its bases (tokens, sequences), the engine's.
constexpr std::string_view kInferenceEfficiency =
    "max without (basis) (warpscope_inference_batch_efficiency_ratio)";

// The table. Each expression's value is the figure its description quotes.
const Spec kSpecs[] = {
    {"memory_bound", "GpuMemoryBound",
     [](const InsightConfig& c) {
       const std::string w = PromDuration(c.efficiency_window);
       return fmt::format(
           "avg_over_time(DCGM_FI_PROF_DRAM_ACTIVE[{0}]) > {1}\n"
           "and avg_over_time(DCGM_FI_PROF_SM_OCCUPANCY[{0}]) < {2}\n"
           "and avg_over_time(DCGM_FI_DEV_GPU_UTIL[{0}]) >= {3}",
           w, Num(c.memory_bound_dram), Num(c.memory_bound_occupancy),
           Num(c.efficiency_busy_utilization * 100));
     },
     [](const InsightConfig&) { return fmt::format("Memory-bound kernels on {}", kOnGpu); },
     [](const InsightConfig& c) {
       return fmt::format(
           "DRAM activity averaged {{{{ $value | humanizePercentage }}}} over {} with SM "
           "occupancy under {} while the GPU was busy.",
           PromDuration(c.efficiency_window), Num(c.memory_bound_occupancy));
     },
     ""},
    {"tensor_cores_idle", "GpuTensorCoresIdle",
     [](const InsightConfig& c) {
       const std::string w = PromDuration(c.tensor_window);
       return fmt::format(
           "avg_over_time(DCGM_FI_PROF_PIPE_TENSOR_ACTIVE[{0}]) < {1}\n"
           "and avg_over_time(DCGM_FI_DEV_GPU_UTIL[{0}]) >= {2}\n"
           "and (avg_over_time(DCGM_FI_PROF_PIPE_FP32_ACTIVE[{0}])"
           " + avg_over_time(DCGM_FI_PROF_PIPE_FP16_ACTIVE[{0}])) >= {3}",
           w, Num(c.tensor_active), Num(c.efficiency_busy_utilization * 100),
           Num(c.tensor_fp_pipes_busy));
     },
     [](const InsightConfig&) { return fmt::format("Tensor cores idle on {}", kOnGpu); },
     [](const InsightConfig& c) {
       return fmt::format(
           "Tensor-pipe activity averaged {{{{ $value | humanizePercentage }}}} over {} while "
           "the FP32 and FP16 pipes were together at least {} busy.",
           PromDuration(c.tensor_window), Num(c.tensor_fp_pipes_busy));
     },
     ""},
    {"underpowered", "GpuUnderpowered",
     [](const InsightConfig& c) {
       const std::string w = PromDuration(c.efficiency_window);
       return fmt::format(
           "avg_over_time(DCGM_FI_DEV_POWER_USAGE[{0}]) < {1} / {4} * "
           "DCGM_FI_DEV_POWER_MGMT_LIMIT\n"
           "and avg_over_time(DCGM_FI_DEV_GPU_UTIL[{0}]) >= {2}\n"
           "unless avg_over_time(DCGM_FI_PROF_SM_OCCUPANCY[{0}]) >= {3}",
           w, Num(c.underpowered_watts), Num(c.underpowered_utilization * 100),
           Num(c.underpowered_occupancy), Num(kReferenceWatts));
     },
     [](const InsightConfig&) { return fmt::format("Under-powered training on {}", kOnGpu); },
     [](const InsightConfig& c) {
       return fmt::format(
           "Mean power {{{{ $value | printf \"%.0f\" }}}} W over {} at {}% utilization or more: "
           "under {} W for a 700 W card.",
           PromDuration(c.efficiency_window), Num(c.underpowered_utilization * 100),
           Num(c.underpowered_watts));
     },
     ""},
    {"thermal_outlier", "GpuThermalOutlier",
     [](const InsightConfig& c) {
       const std::string mean =
           fmt::format("avg_over_time(DCGM_FI_DEV_GPU_TEMP[{}])", PromDuration(c.thermal_window));
       return fmt::format(
           "{0}\n  - on(cluster, modelName) group_left()\n"
           "  quantile by (cluster, modelName) (0.5, {0})\n"
           "> {1}\n"
           "and on(cluster, modelName) (count by (cluster, modelName) (DCGM_FI_DEV_GPU_TEMP) > "
           "{2})",
           mean, Num(c.thermal_outlier_c), c.thermal_min_peers);
     },
     [](const InsightConfig&) { return fmt::format("Thermal outlier: {}", kOnGpu); },
     [](const InsightConfig& c) {
       return fmt::format(
           "Its mean temperature over {} is {{{{ $value | printf \"%.1f\" }}}} °C above the "
           "median of the GPUs of its model in its cluster (threshold {} °C).",
           PromDuration(c.thermal_window), Num(c.thermal_outlier_c));
     },
     ""},
    {"cooling_failure", "GpuCoolingFailure",
     [](const InsightConfig& c) {
       const std::string w = PromDuration(c.cooling_window);
       return fmt::format(
           "deriv(DCGM_FI_DEV_GPU_TEMP[{0}]) * 60 > {1}\n"
           "and DCGM_FI_DEV_GPU_TEMP - min_over_time(DCGM_FI_DEV_GPU_TEMP[{0}]) >= {2}",
           w, Num(c.cooling_rate_c_per_min), Num(c.cooling_min_rise_c));
     },
     [](const InsightConfig&) { return fmt::format("Cooling failure on {}", kOnGpu); },
     [](const InsightConfig& c) {
       return fmt::format(
           "The temperature climbs at {{{{ $value | printf \"%.1f\" }}}} °C/min over the last {} "
           "(threshold {} °C/min, at least {} °C of rise).",
           PromDuration(c.cooling_window), Num(c.cooling_rate_c_per_min),
           Num(c.cooling_min_rise_c));
     },
     ""},
    {"power_drop", "GpuPowerDrop",
     [](const InsightConfig& c) {
       const std::string w = PromDuration(c.power_drop_window);
       const std::string busy = Num(c.power_drop_busy_utilization * 100);
       return fmt::format(
           "max_over_time(DCGM_FI_DEV_POWER_USAGE[{0}]) - DCGM_FI_DEV_POWER_USAGE\n"
           "  > {1} / {4} * DCGM_FI_DEV_POWER_MGMT_LIMIT\n"
           "and avg_over_time(DCGM_FI_DEV_GPU_UTIL[{0}] offset {0}) >= {2}\n"
           "and DCGM_FI_DEV_GPU_UTIL >= {2}\n"
           "unless max_over_time(DCGM_FI_DEV_SM_CLOCK[{0}]) - DCGM_FI_DEV_SM_CLOCK\n"
           "  < {3} * max_over_time(DCGM_FI_DEV_SM_CLOCK[{0}])",
           w, Num(c.power_drop_watts), busy, Num(c.power_drop_clock_fraction),
           Num(kReferenceWatts));
     },
     [](const InsightConfig&) { return fmt::format("Power drop while busy on {}", kOnGpu); },
     [](const InsightConfig& c) {
       return fmt::format(
           "Power fell by {{{{ $value | printf \"%.0f\" }}}} W from the highest reading of the "
           "last {} while the GPU stayed busy (threshold {} W for a 700 W card), its SM clock "
           "down by {}% or more where reported.",
           PromDuration(c.power_drop_window), Num(c.power_drop_watts),
           Num(c.power_drop_clock_fraction * 100));
     },
     ""},
    {"hardware_errors", "GpuXidError", [](const InsightConfig& c) { return XidAlerts(c, false); },
     [](const InsightConfig&) { return fmt::format("XID {{{{ $labels.xid }}}} on {}", kOnGpu); },
     [](const InsightConfig& c) {
       return fmt::format("The driver reported XID {{{{ $labels.xid }}}} within the last {}.",
                          PromDuration(c.hardware_hold));
     },
     ""},
    {"hardware_errors", "GpuApplicationXid",
     [](const InsightConfig& c) { return XidAlerts(c, true); },
     [](const InsightConfig&) {
       return fmt::format("Application XID {{{{ $labels.xid }}}} on {}", kOnGpu);
     },
     [](const InsightConfig& c) {
       return fmt::format(
           "The driver reported XID {{{{ $labels.xid }}}} within the last {}: an error the "
           "application raised (an illegal access, a page fault, a torn-down context), a "
           "ticket for its owner.",
           PromDuration(c.hardware_hold));
     },
     "ticket"},
    {"hardware_errors", "GpuUncorrectableEccErrors",
     [](const InsightConfig& c) {
       return fmt::format("increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL[{}]) > 0",
                          PromDuration(c.hardware_hold));
     },
     [](const InsightConfig&) { return fmt::format("Uncorrectable ECC errors on {}", kOnGpu); },
     [](const InsightConfig& c) {
       return fmt::format(
           "{{{{ $value | printf \"%.0f\" }}}} uncorrectable ECC errors within "
           "the last {}.",
           PromDuration(c.hardware_hold));
     },
     ""},
    {"hardware_errors", "GpuRowRemapFailure",
     [](const InsightConfig& c) {
       return fmt::format("max_over_time(DCGM_FI_DEV_ROW_REMAP_FAILURE[{}]) > 0",
                          PromDuration(c.hardware_hold));
     },
     [](const InsightConfig&) { return fmt::format("Row remapping failed on {}", kOnGpu); },
     [](const InsightConfig& c) {
       return fmt::format(
           "A memory row remapping failed within the last {}: the GPU should be "
           "replaced.",
           PromDuration(c.hardware_hold));
     },
     ""},
    {"memory_leak", "GpuProcessMemoryLeak",
     [](const InsightConfig& c) {
       constexpr std::string_view m = "warpscope_gpu_process_memory_used_bytes";
       const std::string w = PromDuration(c.leak_window);
       const std::string peak = fmt::format("max_over_time({}[{}])", m, w);
       return fmt::format(
           "{0} - {0} offset {1} > {2} * {3}\n"
           "and {0} - {0} offset {4} > {5} * {3}\n"
           "and {3} - {0} <= {6} * {3}\n"
           "and {0} offset {7}",
           m, w, Num(c.leak_growth_of_peak), peak, PromDuration(c.leak_window / 3),
           Num(c.leak_tail_growth_of_peak), Num(c.leak_max_fall_of_peak),
           PromDuration(c.leak_window + c.leak_warmup));
     },
     [](const InsightConfig&) {
       return std::string(
           "GPU memory leak: {{ $labels.executable }} (pid {{ $labels.pid }}) on GPU "
           "{{ $labels.gpu }} of {{ $labels.Hostname }}");
     },
     [](const InsightConfig& c) {
       return fmt::format(
           "Its GPU memory grew by {{{{ $value | humanize1024 }}}}B over the last {} (more than "
           "{}% of its peak) and still grows.",
           PromDuration(c.leak_window), Num(c.leak_growth_of_peak * 100));
     },
     ""},
    {"inference_overprovisioned", "InferenceOverprovisioned",
     [](const InsightConfig& c) {
       const std::string e = fmt::format("({})[{}:]", kInferenceEfficiency,
                                         PromDuration(c.inference_window));
       return fmt::format("avg_over_time({0})\nand quantile_over_time({1}, {0}) < {2}", e,
                          Num(c.inference_sustained_share), Num(c.inference_low_efficiency));
     },
     [](const InsightConfig&) {
       return fmt::format("Inference pool over-provisioned: {}", kOnServer);
     },
     [](const InsightConfig& c) {
       return fmt::format(
           "Batch efficiency averaged {{{{ $value | humanizePercentage }}}} over {}, under {}% "
           "in {}% of it: the model's GPUs run mostly empty batches.",
           PromDuration(c.inference_window), Num(c.inference_low_efficiency * 100),
           Num(c.inference_sustained_share * 100));
     },
     ""},
    {"inference_queueing", "InferenceQueueing",
     [](const InsightConfig& c) {
       const std::string w = PromDuration(c.inference_window);
       const std::string e = fmt::format("({})[{}:]", kInferenceEfficiency, w);
       return fmt::format(
           "avg_over_time(warpscope_inference_requests_waiting[{0}]) >= {1}\n"
           "and quantile_over_time({2}, {3}) > {4}",
           w, Num(c.inference_queue_waiting), Complement(c.inference_sustained_share), e,
           Num(c.inference_high_efficiency));
     },
     [](const InsightConfig&) { return fmt::format("Inference queueing: {}", kOnServer); },
     [](const InsightConfig& c) {
       return fmt::format(
           "{{{{ $value | printf \"%.1f\" }}}} requests waited on average over {} while batch "
           "efficiency stayed above {}%.",
           PromDuration(c.inference_window), Num(c.inference_high_efficiency * 100));
     },
     ""},
    {"inference_slow_first_token", "InferenceSlowFirstToken",
     [](const InsightConfig& c) {
       const std::string m = fmt::format(
           "warpscope_inference_time_to_first_token_seconds{{quantile=\"0.95\"}}[{}]",
           PromDuration(c.inference_ttft_window));
       return fmt::format("avg_over_time({0})\nand quantile_over_time({1}, {0}) > {2}", m,
                          Complement(c.inference_sustained_share), Num(c.inference_ttft_target_s));
     },
     [](const InsightConfig&) {
       return fmt::format("Time to first token above target: {}", kOnServer);
     },
     [](const InsightConfig& c) {
       return fmt::format(
           "The p95 time to first token averaged {{{{ $value | humanizeDuration }}}} over {} "
           "(target {} s).",
           PromDuration(c.inference_ttft_window), Num(c.inference_ttft_target_s));
     },
     ""},
    {"inference_memory_bound", "InferenceMemoryBound",
     [](const InsightConfig& c) {
       constexpr std::string_view kv = "warpscope_inference_kv_cache_usage_ratio";
       constexpr std::string_view waiting = "warpscope_inference_requests_waiting";
       const std::string w = PromDuration(c.inference_window);
       const std::string third = PromDuration(c.inference_window / 3);
       return fmt::format(
           "avg_over_time({0}[{2}])\n"
           "and quantile_over_time({3}, {0}[{2}]) >= {4}\n"
           "and deriv({1}[{2}]) > 0\n"
           "and avg_over_time({1}[{5}]) - avg_over_time({1}[{5}] offset {6}) >= {7}",
           kv, waiting, w, Complement(c.inference_sustained_share), Num(c.inference_kv_cache_full),
           third, PromDuration(c.inference_window - c.inference_window / 3),
           Num(c.inference_queue_growth));
     },
     [](const InsightConfig&) { return fmt::format("Memory-bound serving: {}", kOnServer); },
     [](const InsightConfig& c) {
       return fmt::format(
           "The KV cache averaged {{{{ $value | humanizePercentage }}}} full over {} while the "
           "waiting requests rose by {} or more.",
           PromDuration(c.inference_window), Num(c.inference_queue_growth));
     },
     ""},
    {"idle_allocated", "GpuIdleAllocated",
     [](const InsightConfig& c) {
       return fmt::format(
           "avg_over_time(DCGM_FI_DEV_GPU_UTIL[{}]) < {}\nand DCGM_FI_DEV_FB_USED > {}",
           PromDuration(c.idle_window), Num(c.idle_utilization * 100),
           Num(c.idle_min_memory_bytes / kBytesPerMiB));
     },
     [](const InsightConfig&) { return fmt::format("GPU allocated but idle: {}", kOnGpu); },
     [](const InsightConfig& c) {
       return fmt::format(
           "Mean utilization {{{{ $value | printf \"%.1f\" }}}}% over the last {} while "
           "processes hold more than {} MiB of its memory.",
           PromDuration(c.idle_window), Num(c.idle_min_memory_bytes / kBytesPerMiB));
     },
     ""},
};

const server::insights::Rule* FindRule(
    const std::vector<std::unique_ptr<server::insights::Rule>>& rules, std::string_view name) {
  for (const auto& r : rules) {
    if (r->info().name == name) return r.get();
  }
  return nullptr;
}

}  // namespace

std::string PromDuration(base::Duration d) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
  if (ms <= 0) return "0s";
  std::string out;
  struct {
    int64_t unit;
    const char* suffix;
  } units[] = {{3'600'000, "h"}, {60'000, "m"}, {1000, "s"}, {1, "ms"}};
  for (const auto& u : units) {
    if (ms >= u.unit) {
      out += std::to_string(ms / u.unit) + u.suffix;
      ms %= u.unit;
    }
  }
  return out;
}

std::span<const UnexportedRule> UnexportedRules() { return kUnexported; }

std::vector<AlertRule> PrometheusAlertRules(const InsightConfig& config) {
  const auto rules = server::insights::DefaultRules();
  std::vector<AlertRule> out;
  for (const auto& r : rules) {
    for (const Spec& spec : kSpecs) {
      if (spec.rule != r->info().name) continue;
      AlertRule a;
      a.alert = spec.alert;
      a.rule = r->info().name;
      a.severity = spec.severity_override.empty()
                       ? server::insights::SeverityName(r->info().severity)
                       : spec.severity_override;
      a.hold_for = r->HoldFor(config);
      a.keep_firing_for = r->info().clear_after;
      a.expr = spec.expr(config);
      a.summary = spec.summary(config);
      a.description = fmt::format("{} {}", spec.description(config), r->info().suggestion);
      out.push_back(std::move(a));
    }
  }
  // Every row names an engine rule: a renamed rule is caught here, not by a missing alert.
  for (const Spec& spec : kSpecs) {
    WARPSCOPE_CHECK(FindRule(rules, spec.rule) != nullptr);
  }
  return out;
}

std::string PrometheusRulesYaml(const InsightConfig& config,
                                const PrometheusRulesOptions& options) {
  std::string header =
      "# Prometheus alerting rules generated by `warpscope export prometheus-rules`: the\n"
      "# warpscope insight rules that PromQL can express, over the names the warpscope agent\n"
      "# serves on /metrics, with the thresholds of the [server.insights] config they were\n"
      "# generated from (docs/alerts.md). Labels: severity (page, ticket, info) and rule (the\n"
      "# insights engine's rule name).\n"
      "#\n"
      "# Not exported (the engine needs more than PromQL sees):\n";
  for (const UnexportedRule& u : kUnexported) {
    header += fmt::format("#   {}: {}\n", u.rule, u.reason);
  }
  header +=
      "# Exported with a difference: thermal_outlier compares a GPU with every GPU of its model\n"
      "# in its cluster (the `cluster` label; all GPUs without one), not only with those whose\n"
      "# power stayed within the engine's peer fraction of its own; tensor_cores_idle uses the\n"
      "# FP32/FP16 pipes, not the GPU profiles' matmul share; watt thresholds scale with the\n"
      "# power limit, not the engine's table of full-load power per model; the engine's lower\n"
      "# thresholds to clear (hysteresis) are not expressed, keep_firing_for holds alerts "
      "instead; the inference rules judge quantiles of the window's samples where the engine\n"
      "# counts its 10 s buckets, and do not require data over most of the window.\n";

  YAML::Emitter out;
  out << YAML::BeginMap << YAML::Key << "groups" << YAML::Value << YAML::BeginSeq;
  out << YAML::BeginMap << YAML::Key << "name" << YAML::Value << "warpscope";
  out << YAML::Key << "rules" << YAML::Value << YAML::BeginSeq;
  for (const AlertRule& a : PrometheusAlertRules(config)) {
    out << YAML::BeginMap;
    out << YAML::Key << "alert" << YAML::Value << a.alert;
    out << YAML::Key << "expr" << YAML::Value << YAML::Literal << a.expr;
    if (a.hold_for > base::Duration::zero()) {
      out << YAML::Key << "for" << YAML::Value << PromDuration(a.hold_for);
    }
    if (options.keep_firing_for && a.keep_firing_for > base::Duration::zero()) {
      out << YAML::Key << "keep_firing_for" << YAML::Value << PromDuration(a.keep_firing_for);
    }
    out << YAML::Key << "labels" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "severity" << YAML::Value << std::string(a.severity);
    out << YAML::Key << "rule" << YAML::Value << std::string(a.rule);
    out << YAML::EndMap;
    out << YAML::Key << "annotations" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "summary" << YAML::Value << a.summary;
    out << YAML::Key << "description" << YAML::Value << a.description;
    out << YAML::Key << "runbook_url" << YAML::Value << options.runbook_base_url + "#rules";
    out << YAML::EndMap;
    out << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::EndMap << YAML::EndSeq << YAML::EndMap;
  return header + out.c_str() + "\n";
}

}  // namespace warpscope::integrations

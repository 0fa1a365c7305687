// SPDX-License-Identifier: Apache-2.0
#include "server/insights/insight_config.h"

#include <algorithm>
#include <cmath>
#include <string_view>

namespace warpscope::server::insights {
namespace {

// The config file's name of a field: "thermal_outlier_c" -> "thermal-outlier-c".
std::string Key(std::string_view field) {
  std::string key(field);
  std::replace(key.begin(), key.end(), '_', '-');
  return key;
}

base::Status Check(std::string_view name, double v, double lo, double hi) {
  if (!std::isfinite(v) || v < lo || v > hi) {
    return base::InvalidArgument("insights: {} = {} is out of range; use a value in [{}, {}]",
                                 Key(name), v, lo, hi);
  }
  return base::OkStatus();
}

base::Status CheckWindow(std::string_view name, base::Duration d) {
  if (d < seconds(10) || d > minutes(60)) {
    return base::InvalidArgument("insights: {} = {} is out of range; use 10s to 60m", Key(name),
                                 base::FormatDuration(d));
  }
  return base::OkStatus();
}

}  // namespace

base::Status InsightConfig::Validate() const {
  WARPSCOPE_RETURN_IF_ERROR(Check("gpu_hour_price", gpu_hour_price, 0, 1e6));
  WARPSCOPE_RETURN_IF_ERROR(Check("cooling_rate_c_per_min", cooling_rate_c_per_min, 0.1, 1000));
  WARPSCOPE_RETURN_IF_ERROR(Check("cooling_min_rise_c", cooling_min_rise_c, 0, 100));
  WARPSCOPE_RETURN_IF_ERROR(CheckWindow("cooling_window", cooling_window));
  WARPSCOPE_RETURN_IF_ERROR(CheckWindow("cooling_clear_after", cooling_clear_after));
  WARPSCOPE_RETURN_IF_ERROR(Check("thermal_outlier_c", thermal_outlier_c, 0.5, 100));
  WARPSCOPE_RETURN_IF_ERROR(Check("thermal_clear_c", thermal_clear_c, 0, thermal_outlier_c));
  WARPSCOPE_RETURN_IF_ERROR(
      Check("thermal_peer_power_fraction", thermal_peer_power_fraction, 0.01, 1));
  WARPSCOPE_RETURN_IF_ERROR(
      Check("thermal_min_peers", static_cast<double>(thermal_min_peers), 1, 10000));
  WARPSCOPE_RETURN_IF_ERROR(CheckWindow("thermal_window", thermal_window));
  WARPSCOPE_RETURN_IF_ERROR(Check("power_drop_watts", power_drop_watts, 10, 10000));
  WARPSCOPE_RETURN_IF_ERROR(
      Check("power_drop_busy_utilization", power_drop_busy_utilization, 0, 1));
  WARPSCOPE_RETURN_IF_ERROR(CheckWindow("power_drop_window", power_drop_window));
  WARPSCOPE_RETURN_IF_ERROR(Check("power_drop_clock_fraction", power_drop_clock_fraction, 0, 1));
  WARPSCOPE_RETURN_IF_ERROR(CheckWindow("hardware_hold", hardware_hold));
  WARPSCOPE_RETURN_IF_ERROR(Check("idle_utilization", idle_utilization, 0, 1));
  WARPSCOPE_RETURN_IF_ERROR(
      Check("idle_clear_utilization", idle_clear_utilization, idle_utilization, 1));
  WARPSCOPE_RETURN_IF_ERROR(Check("idle_min_memory_bytes", idle_min_memory_bytes, 0, 1e15));
  WARPSCOPE_RETURN_IF_ERROR(CheckWindow("idle_window", idle_window));
  WARPSCOPE_RETURN_IF_ERROR(CheckWindow("idle_clear_window", idle_clear_window));
  WARPSCOPE_RETURN_IF_ERROR(Check("leak_growth_of_peak", leak_growth_of_peak, 0.0001, 1));
  WARPSCOPE_RETURN_IF_ERROR(
      Check("leak_tail_growth_of_peak", leak_tail_growth_of_peak, 0, leak_growth_of_peak));
  WARPSCOPE_RETURN_IF_ERROR(Check("leak_max_fall_of_peak", leak_max_fall_of_peak, 0, 1));
  WARPSCOPE_RETURN_IF_ERROR(CheckWindow("leak_window", leak_window));
  WARPSCOPE_RETURN_IF_ERROR(Check("input_gpu_utilization", input_gpu_utilization, 0, 1));
  WARPSCOPE_RETURN_IF_ERROR(Check("input_gpu_power_fraction", input_gpu_power_fraction, 0, 1));
  WARPSCOPE_RETURN_IF_ERROR(Check("input_min_utilization", input_min_utilization, 0, 1));
  WARPSCOPE_RETURN_IF_ERROR(Check("input_process_cores", input_process_cores, 0.01, 10000));
  WARPSCOPE_RETURN_IF_ERROR(Check("input_host_busy", input_host_busy, 0, 1));
  WARPSCOPE_RETURN_IF_ERROR(Check("input_h2d_copy_share", input_h2d_copy_share, 0, 1));
  WARPSCOPE_RETURN_IF_ERROR(CheckWindow("input_window", input_window));
  WARPSCOPE_RETURN_IF_ERROR(Check("memory_bound_occupancy", memory_bound_occupancy, 0, 1));
  WARPSCOPE_RETURN_IF_ERROR(Check("memory_bound_dram", memory_bound_dram, 0, 1));
  WARPSCOPE_RETURN_IF_ERROR(Check("underpowered_utilization", underpowered_utilization, 0, 1));
  WARPSCOPE_RETURN_IF_ERROR(Check("underpowered_watts", underpowered_watts, 10, 10000));
  WARPSCOPE_RETURN_IF_ERROR(Check("underpowered_occupancy", underpowered_occupancy, 0, 1));
  WARPSCOPE_RETURN_IF_ERROR(
      Check("efficiency_busy_utilization", efficiency_busy_utilization, 0, 1));
  WARPSCOPE_RETURN_IF_ERROR(CheckWindow("efficiency_window", efficiency_window));
  WARPSCOPE_RETURN_IF_ERROR(Check("tensor_active", tensor_active, 0, 1));
  WARPSCOPE_RETURN_IF_ERROR(Check("tensor_clear_active", tensor_clear_active, tensor_active, 1));
  WARPSCOPE_RETURN_IF_ERROR(Check("tensor_matmul_share", tensor_matmul_share, 0.01, 1));
  WARPSCOPE_RETURN_IF_ERROR(Check("tensor_fp_pipes_busy", tensor_fp_pipes_busy, 0.01, 2));
  WARPSCOPE_RETURN_IF_ERROR(CheckWindow("tensor_window", tensor_window));
  WARPSCOPE_RETURN_IF_ERROR(CheckWindow("tensor_profile_refresh", tensor_profile_refresh));
  if (leak_warmup < base::Duration::zero() || leak_warmup > minutes(60)) {
    return base::InvalidArgument("insights: leak-warmup = {} is out of range; use 0s to 60m",
                                 base::FormatDuration(leak_warmup));
  }
  WARPSCOPE_RETURN_IF_ERROR(Check("fleet_drop", fleet_drop, 0.01, 1));
  WARPSCOPE_RETURN_IF_ERROR(Check("fleet_clear_drop", fleet_clear_drop, 0, fleet_drop));
  WARPSCOPE_RETURN_IF_ERROR(Check("fleet_gpu_drop", fleet_gpu_drop, 0, 1));
  WARPSCOPE_RETURN_IF_ERROR(Check("fleet_broad_share", fleet_broad_share, 0.01, 1));
  WARPSCOPE_RETURN_IF_ERROR(Check("fleet_max_step_share", fleet_max_step_share, 0.01, 1));
  WARPSCOPE_RETURN_IF_ERROR(Check("fleet_idle_utilization", fleet_idle_utilization, 0, 1));
  WARPSCOPE_RETURN_IF_ERROR(
      Check("fleet_min_hosts", static_cast<double>(fleet_min_hosts), 1, 10000));
  WARPSCOPE_RETURN_IF_ERROR(
      Check("fleet_min_gpus", static_cast<double>(fleet_min_gpus), 1, 100000));
  WARPSCOPE_RETURN_IF_ERROR(CheckWindow("fleet_window", fleet_window));
  if (fleet_min_span < minutes(3) || fleet_min_span > fleet_window) {
    return base::InvalidArgument(
        "insights: fleet-min-span = {} is out of range; use 3m to fleet-window ({})",
        base::FormatDuration(fleet_min_span), base::FormatDuration(fleet_window));
  }
  if (fleet_step_window < minutes(1) || fleet_step_window > fleet_min_span / 2) {
    return base::InvalidArgument(
        "insights: fleet-step-window = {} is out of range; use 1m to half of fleet-min-span "
        "({})",
        base::FormatDuration(fleet_step_window), base::FormatDuration(fleet_min_span / 2));
  }
  if (fleet_hold < base::Duration::zero() || fleet_hold > minutes(60)) {
    return base::InvalidArgument("insights: fleet-hold = {} is out of range; use 0s to 60m",
                                 base::FormatDuration(fleet_hold));
  }
  WARPSCOPE_RETURN_IF_ERROR(Check("inference_low_efficiency", inference_low_efficiency, 0.01, 1));
  WARPSCOPE_RETURN_IF_ERROR(Check("inference_target_efficiency", inference_target_efficiency,
                                  inference_low_efficiency, 1));
  WARPSCOPE_RETURN_IF_ERROR(Check("inference_high_efficiency", inference_high_efficiency,
                                  inference_target_efficiency, 1));
  WARPSCOPE_RETURN_IF_ERROR(Check("inference_sustained_share", inference_sustained_share, 0.1, 1));
  WARPSCOPE_RETURN_IF_ERROR(Check("inference_queue_waiting", inference_queue_waiting, 0, 1e6));
  WARPSCOPE_RETURN_IF_ERROR(Check("inference_kv_cache_full", inference_kv_cache_full, 0.1, 1));
  WARPSCOPE_RETURN_IF_ERROR(Check("inference_queue_growth", inference_queue_growth, 0, 1e6));
  WARPSCOPE_RETURN_IF_ERROR(CheckWindow("inference_window", inference_window));
  WARPSCOPE_RETURN_IF_ERROR(Check("inference_ttft_target_s", inference_ttft_target_s, 0.001, 600));
  WARPSCOPE_RETURN_IF_ERROR(CheckWindow("inference_ttft_window", inference_ttft_window));
  WARPSCOPE_RETURN_IF_ERROR(Check("training_late_fraction", training_late_fraction, 0.05, 0.99));
  WARPSCOPE_RETURN_IF_ERROR(Check("training_min_lag_share", training_min_lag_share, 0, 1));
  WARPSCOPE_RETURN_IF_ERROR(Check("training_compute_excess", training_compute_excess, 0, 1));
  WARPSCOPE_RETURN_IF_ERROR(Check("training_nccl_excess", training_nccl_excess, 0.05, 100));
  WARPSCOPE_RETURN_IF_ERROR(Check("training_comm_share", training_comm_share, 0.01, 1));
  WARPSCOPE_RETURN_IF_ERROR(
      Check("training_slow_step_factor", training_slow_step_factor, 1.05, 100));
  WARPSCOPE_RETURN_IF_ERROR(
      Check("training_stall_factor", training_stall_factor, training_slow_step_factor, 1000));
  WARPSCOPE_RETURN_IF_ERROR(
      Check("training_trailing_steps", static_cast<double>(training_trailing_steps), 1, 10000));
  WARPSCOPE_RETURN_IF_ERROR(
      Check("training_min_steps", static_cast<double>(training_min_steps), 2, 10000));
  WARPSCOPE_RETURN_IF_ERROR(
      Check("training_max_jobs", static_cast<double>(training_max_jobs), 1, 10000));
  WARPSCOPE_RETURN_IF_ERROR(
      Check("training_max_step_records", static_cast<double>(training_max_step_records), 100, 1e7));
  WARPSCOPE_RETURN_IF_ERROR(CheckWindow("training_window", training_window));
  WARPSCOPE_RETURN_IF_ERROR(CheckWindow("training_step_window", training_step_window));
  if (training_refresh < base::Duration::zero() || training_refresh > minutes(10)) {
    return base::InvalidArgument("insights: training-refresh = {} is out of range; use 0s to 10m",
                                 base::FormatDuration(training_refresh));
  }
  return base::OkStatus();
}

}  // namespace warpscope::server::insights

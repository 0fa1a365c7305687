// SPDX-License-Identifier: Apache-2.0
// What a GPU model draws at full load, so that watt thresholds written for a 700 W card (an
// H100/H200 SXM) scale to every other card.
#ifndef WARPSCOPE_SERVER_INSIGHTS_GPU_MODELS_H_
#define WARPSCOPE_SERVER_INSIGHTS_GPU_MODELS_H_

#include <optional>
#include <string_view>

namespace warpscope::server::insights {

// The reference card the configured watt thresholds are written for.
inline constexpr double kReferenceFullLoadWatts = 700;

// The full-load power of `model` (the NVML name, "NVIDIA H100 80GB HBM3") from the known-model
// table, else the card's power limit as read from NVML, else the reference.
double ExpectedFullLoadWatts(std::string_view model, std::optional<double> power_limit_watts);

// `watts_at_reference` scaled to a card with `full_load_watts`.
inline double ScaleWatts(double watts_at_reference, double full_load_watts) {
  return watts_at_reference * full_load_watts / kReferenceFullLoadWatts;
}

}  // namespace warpscope::server::insights

#endif  // WARPSCOPE_SERVER_INSIGHTS_GPU_MODELS_H_

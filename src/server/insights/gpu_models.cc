// SPDX-License-Identifier: Apache-2.0
#include "server/insights/gpu_models.h"

#include <cmath>

namespace warpscope::server::insights {
namespace {

struct KnownModel {
  std::string_view substring;  // matched in the NVML name; the first match wins
  double full_load_watts;
};
// Board power at full load of common data-centre cards (their TDP/TBP). A name that contains
// another (GH200 and H200, H100 PCIe and H100, L40 and L4) comes first.
constexpr KnownModel kModels[] = {
    {"GH200", 900}, {"GB200", 1200},   {"B200", 1000}, {"H100 PCIe", 350}, {"H100 NVL", 400},
    {"H100", 700},  {"H200 NVL", 600}, {"H200", 700},  {"A100-PCIE", 300}, {"A100 PCIe", 300},
    {"A100", 400},  {"A800", 400},     {"L40S", 350},  {"L40", 300},       {"L4", 72},
    {"A10G", 300},  {"A10", 150},      {"A30", 165},   {"A40", 300},       {"V100", 300},
    {"T4", 70},
};

}  // namespace

double ExpectedFullLoadWatts(std::string_view model, std::optional<double> power_limit_watts) {
  for (const KnownModel& m : kModels) {
    if (model.find(m.substring) != std::string_view::npos) return m.full_load_watts;
  }
  if (power_limit_watts && std::isfinite(*power_limit_watts) && *power_limit_watts > 0) {
    return *power_limit_watts;
  }
  return kReferenceFullLoadWatts;
}

}  // namespace warpscope::server::insights

// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_CLI_SIMULATION_H_
#define WARPSCOPE_CLI_SIMULATION_H_

#include <string>
#include <string_view>

#include "base/status.h"

namespace warpscope::cli {

struct Simulation {
  std::string scenario_path;  // the YAML file
  std::string library_path;   // the simulator's libnvidia-ml.so.1
};

// Resolves `--simulate SCENARIO` (a path, or the name of a shipped scenario looked up in
// <exe dir>/../share/warpscope/scenarios) and the simulator library (<exe dir>/../lib/sim), then
// points the simulator at the scenario (WARPSCOPE_SIM_SCENARIO). `search_root` overrides the exe
// dir for tests.
base::Result<Simulation> PrepareSimulation(std::string_view scenario,
                                           const std::string& search_root = "");

}  // namespace warpscope::cli

#endif  // WARPSCOPE_CLI_SIMULATION_H_

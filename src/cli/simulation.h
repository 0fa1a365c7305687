// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_CLI_SIMULATION_H_
#define WARPSCOPE_CLI_SIMULATION_H_

#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"

namespace warpscope::cli {

struct Simulation {
  std::string scenario_path;  // the YAML file
  std::string library_path;   // the simulator's libnvidia-ml.so.1
  // A fresh directory in which the simulator keeps the scenario's host as a synthetic /proc
  // tree: the root the agent reads host metrics and resolves GPU processes from, instead of
  // --host-root. Removed when the last copy of this Simulation goes.
  std::string host_root;
  std::shared_ptr<const void> host_root_owner;
};

// The scenario file and the simulator library of `--simulate SCENARIO` (as PrepareSimulation),
// without creating anything or setting the environment.
base::Result<Simulation> ResolveSimulation(std::string_view scenario,
                                           const std::string& search_root = "");

// Resolves `--simulate SCENARIO` (a path, or the name of a shipped scenario) and the simulator
// library, both where FindInstallLayout (install_layout.h) says,
// creates the host root (warpscope-sim-host-* under $TMPDIR, else /tmp), then points the
// simulator at both (WARPSCOPE_SIM_SCENARIO, WARPSCOPE_SIM_HOST_ROOT). `search_root` overrides
// the exe dir for tests.
base::Result<Simulation> PrepareSimulation(std::string_view scenario,
                                           const std::string& search_root = "");

}  // namespace warpscope::cli

#endif  // WARPSCOPE_CLI_SIMULATION_H_

// SPDX-License-Identifier: Apache-2.0
#include "cli/simulation.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <filesystem>
#include <vector>

#include "base/file_util.h"
#include "cli/install_layout.h"

namespace warpscope::cli {

namespace fs = std::filesystem;

base::Result<Simulation> ResolveSimulation(std::string_view scenario,
                                           const std::string& search_root) {
  const InstallLayout layout =
      search_root.empty() ? OwnInstallLayout() : FindInstallLayout(search_root);
  const fs::path scenarios(layout.scenarios_dir);
  std::error_code ec;
  Simulation sim;
  fs::path as_path(scenario);
  if (fs::is_regular_file(as_path, ec)) {
    sim.scenario_path = fs::absolute(as_path, ec).string();
  } else if (fs::is_regular_file(scenarios / (std::string(scenario) + ".yaml"), ec)) {
    sim.scenario_path = fs::canonical(scenarios / (std::string(scenario) + ".yaml"), ec).string();
  } else {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(scenarios, ec)) {
      if (entry.path().extension() == ".yaml") names.push_back(entry.path().stem().string());
    }
    std::sort(names.begin(), names.end());
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    return base::Error(base::NotFound(
        "scenario '{}' is neither a file nor a shipped scenario; shipped scenarios: {}", scenario,
        list.empty() ? "(none found in " + scenarios.string() + ")" : list));
  }
  fs::path lib = fs::path(layout.sim_dir) / "libnvidia-ml.so.1";
  if (!fs::is_regular_file(lib, ec)) {
    return base::Error(base::NotFound(
        "the NVML simulator library is missing ({}); rebuild warpscope (target warpscope_nvml_sim)",
        lib.string()));
  }
  sim.library_path = fs::canonical(lib, ec).string();
  return sim;
}

base::Result<Simulation> PrepareSimulation(std::string_view scenario,
                                           const std::string& search_root) {
  WARPSCOPE_ASSIGN_OR_RETURN(Simulation sim, ResolveSimulation(scenario, search_root));
  const char* tmpdir = getenv("TMPDIR");
  std::string templ = (tmpdir != nullptr && *tmpdir != '\0' ? std::string(tmpdir) : "/tmp") +
                      "/warpscope-sim-host-XXXXXX";
  if (mkdtemp(templ.data()) == nullptr) {
    return base::Error(base::Unavailable("cannot create the simulated host's directory {}: {}",
                                         templ, strerror(errno)));
  }
  sim.host_root = templ;
  sim.host_root_owner = std::shared_ptr<const void>(nullptr, [dir = templ](const void*) {
    std::error_code ignored;
    fs::remove_all(dir, ignored);
  });
  setenv("WARPSCOPE_SIM_SCENARIO", sim.scenario_path.c_str(), 1);
  setenv("WARPSCOPE_SIM_HOST_ROOT", sim.host_root.c_str(), 1);
  return sim;
}

}  // namespace warpscope::cli

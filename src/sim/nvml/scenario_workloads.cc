// SPDX-License-Identifier: Apache-2.0
// ListWorkloads and ApplyPidMap: how `warpscope up --simulate` lines the scenario's GPU
// processes up with the demo workloads it runs (docs/design/simulator.md, "Demo workloads").
#include <charconv>
#include <map>
#include <set>
#include <string>
#include <string_view>

#include "sim/nvml/scenario.h"

namespace warpscope::sim {

std::vector<WorkloadProcess> ListWorkloads(const Scenario& scenario) {
  std::vector<WorkloadProcess> out;
  std::set<unsigned> seen;
  for (const DeviceSpec& d : scenario.devices) {
    for (const ProcessSpec& p : d.processes) {
      if (p.workload.empty() || !seen.insert(p.pid).second) continue;
      out.push_back({p.pid, d.index, p.workload, p.slowdown_percent});
    }
  }
  return out;
}

namespace {

base::Result<unsigned> ParsePid(std::string_view text, std::string_view entry) {
  unsigned v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v == 0 || v > 4194304) {
    return base::Error(base::InvalidArgument(
        "pid map entry '{}': '{}' is not a pid (1..4194304); write SCENARIO_PID=PID", entry,
        text));
  }
  return v;
}

}  // namespace

base::Status ApplyPidMap(std::string_view map, Scenario& scenario) {
  std::map<unsigned, unsigned> renames;
  while (!map.empty()) {
    const size_t comma = map.find(',');
    const std::string_view entry = map.substr(0, comma);
    map = comma == std::string_view::npos ? std::string_view() : map.substr(comma + 1);
    if (entry.empty()) continue;
    const size_t eq = entry.find('=');
    if (eq == std::string_view::npos) {
      return base::InvalidArgument("pid map entry '{}' has no '='; write SCENARIO_PID=PID", entry);
    }
    WARPSCOPE_ASSIGN_OR_RETURN(unsigned from, ParsePid(entry.substr(0, eq), entry));
    WARPSCOPE_ASSIGN_OR_RETURN(unsigned to, ParsePid(entry.substr(eq + 1), entry));
    renames[from] = to;
  }
  std::set<unsigned> pids;
  for (const DeviceSpec& d : scenario.devices) {
    for (const ProcessSpec& p : d.processes) pids.insert(p.pid);
  }
  for (const ProcessSpec& p : scenario.host.processes) pids.insert(p.pid);
  std::set<unsigned> targets;
  for (const auto& [from, to] : renames) {
    if (!pids.contains(from)) {
      return base::InvalidArgument("pid map: scenario {} has no process with pid {}",
                                   scenario.name, from);
    }
    if (!targets.insert(to).second) {
      return base::InvalidArgument("pid map: two scenario pids are renamed to {}", to);
    }
  }
  for (unsigned to : targets) {
    if (pids.contains(to) && !renames.contains(to)) {
      return base::InvalidArgument(
          "pid map: pid {} is also a process of scenario {} that keeps its pid", to,
          scenario.name);
    }
  }
  auto rename = [&](ProcessSpec& p) {
    if (auto it = renames.find(p.pid); it != renames.end()) p.pid = it->second;
  };
  for (DeviceSpec& d : scenario.devices) {
    for (ProcessSpec& p : d.processes) rename(p);
  }
  for (ProcessSpec& p : scenario.host.processes) rename(p);
  return base::OkStatus();
}

}  // namespace warpscope::sim

// SPDX-License-Identifier: Apache-2.0
// Grafana dashboards over the names the agent serves on /metrics, in a triage hierarchy: the
// fleet (every host and GPU), one host (its GPUs, processes, CPU, memory, links), one GPU (all
// its metrics). Each links down (data links carrying var-Hostname and var-gpu) and back up
// (dashboard links); all read a Prometheus chosen by the `datasource` variable (docs/alerts.md).
#ifndef WARPSCOPE_INTEGRATIONS_GRAFANA_DASHBOARDS_H_
#define WARPSCOPE_INTEGRATIONS_GRAFANA_DASHBOARDS_H_

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace warpscope::integrations {

// The dashboards' stable uids: links and provisioned copies find them by these.
inline constexpr std::string_view kFleetDashboardUid = "warpscope-fleet";
inline constexpr std::string_view kHostDashboardUid = "warpscope-host";
inline constexpr std::string_view kGpuDashboardUid = "warpscope-gpu";

struct GrafanaDashboard {
  std::string file_name;  // "warpscope-fleet.json"
  nlohmann::json json;    // Grafana's dashboard JSON model (schemaVersion 39)
};

// The three dashboards, fleet first.
std::vector<GrafanaDashboard> GrafanaDashboards();

}  // namespace warpscope::integrations

#endif  // WARPSCOPE_INTEGRATIONS_GRAFANA_DASHBOARDS_H_

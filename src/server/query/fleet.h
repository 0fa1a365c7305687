// SPDX-License-Identifier: Apache-2.0
// The fleet overview: per host and fleet-wide GPU figures over a time range (GPUs, utilization,
// power, memory, temperature, GPU processes, degraded GPUs, events), and fleet-wide timelines
// of GPU utilization and power. What GET /api/v1/fleet answers, for the UI's overview page and
// for any other reader of the fleet's state.
#ifndef WARPSCOPE_SERVER_QUERY_FLEET_H_
#define WARPSCOPE_SERVER_QUERY_FLEET_H_

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/time.h"
#include "model/labels.h"
#include "server/storage/storage.h"

namespace warpscope::server::query {

// One host's figures. A figure whose metric was never received in the range is absent
// (nullopt), never zero.
struct FleetHost {
  std::string host;
  model::Labels attributes;                  // the host entity's (agent tags included)
  std::optional<base::TimePoint> last_seen;  // absent: not a host entity seen in the range
  size_t gpus = 0;                           // GPUs with any of the figures below
  std::optional<double> gpu_utilization;     // mean over its GPUs of their average
  std::optional<double> power_watts;         // sums over its GPUs of the latest values
  std::optional<double> power_limit_watts;
  std::optional<double> memory_used_bytes;
  std::optional<double> memory_total_bytes;
  std::optional<double> temperature_max;  // the hottest GPU's maximum
  // Processes that had GPU memory at some time in the range (ended ones included), each once.
  size_t gpu_processes = 0;
  size_t degraded_gpus = 0;  // GPUs whose latest gpu.degraded is > 0
  size_t events = 0;
  size_t xid_events = 0;
};

// The same over every host; gpu_utilization is the mean over all GPUs.
struct FleetTotals {
  size_t hosts = 0;
  size_t hosts_with_problems = 0;  // with events or degraded GPUs
  size_t gpus = 0;
  size_t degraded_gpus = 0;
  std::optional<double> gpu_utilization;
  std::optional<double> power_watts;
  std::optional<double> power_limit_watts;
  std::optional<double> memory_used_bytes;
  std::optional<double> memory_total_bytes;
  std::optional<double> temperature_max;
  size_t gpu_processes = 0;
  size_t events = 0;
};

struct Fleet {
  base::TimePoint start;
  base::TimePoint end;
  FleetTotals totals;
  std::vector<FleetHost> hosts;  // by name
  // About 120 steps (at least 10 s each) over the range: the mean GPU utilization and the total
  // GPU power of the fleet per step.
  std::vector<Point> utilization;
  std::vector<Point> power;
};

// The fleet over [start, end). Errors are the storage's; metrics never received are absent
// figures, not errors.
[[nodiscard]] base::Result<Fleet> QueryFleet(Storage& storage, base::TimePoint start,
                                             base::TimePoint end);

// GET /api/v1/fleet's answer.
nlohmann::json FleetJson(const Fleet& fleet);

}  // namespace warpscope::server::query

#endif  // WARPSCOPE_SERVER_QUERY_FLEET_H_

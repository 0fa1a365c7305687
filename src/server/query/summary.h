// SPDX-License-Identifier: Apache-2.0
// The summary of one host over a time range: for each of its GPUs and for the host itself the
// average, maximum and latest value of the metrics the host page shows. What GET
// /api/v1/summary answers.
#ifndef WARPSCOPE_SERVER_QUERY_SUMMARY_H_
#define WARPSCOPE_SERVER_QUERY_SUMMARY_H_

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "base/time.h"
#include "model/labels.h"
#include "server/storage/storage.h"

namespace warpscope::server::query {

// One metric of one entity over the range. Values may be NaN (written as null).
struct MetricSummary {
  std::optional<double> avg;
  std::optional<double> max;
  std::optional<double> latest;
};

// One entity's metrics.
struct EntitySummary {
  model::Labels attributes;
  std::map<std::string, MetricSummary> metrics;  // by metric key
};

struct HostSummary {
  std::string host;
  base::TimePoint start;
  base::TimePoint end;
  // The host's own metrics. The CPU is reported as host.cpu.busy (avg and latest), the
  // complement of the stored idle share.
  std::map<std::string, MetricSummary> host_metrics;
  std::map<std::string, EntitySummary> gpus;  // by GPU entity id
};

// The summary of `host` over [start, end): its GPUs' utilization, SM, tensor and DRAM activity,
// memory, power and temperatures, and the host's memory, load, process count and CPU. A metric the
// server has never received (e.g. GPM metrics from GPUs before Hopper) is absent, not an error;
// other errors are the storage's.
[[nodiscard]] base::Result<HostSummary> SummarizeHost(Storage& storage, std::string_view host,
                                                      base::TimePoint start, base::TimePoint end);

// GET /api/v1/summary's answer.
nlohmann::json SummaryJson(const HostSummary& summary);

}  // namespace warpscope::server::query

#endif  // WARPSCOPE_SERVER_QUERY_SUMMARY_H_

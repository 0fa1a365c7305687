// SPDX-License-Identifier: Apache-2.0
#include "server/query/summary.h"

#include <cmath>
#include <utility>

#include "server/query/json_format.h"
#include "server/query/storage_reads.h"

namespace warpscope::server::query {
namespace {

using nlohmann::json;

constexpr std::string_view kGpuMetrics[] = {
    "gpu.utilization", "gpu.sm.active",   "gpu.sm.occupancy",      "gpu.tensor.active",
    "gpu.dram.active", "gpu.memory.used", "gpu.memory.total",      "gpu.power.usage",
    "gpu.power.limit", "gpu.temperature", "gpu.memory.temperature"};
constexpr std::string_view kHostMetrics[] = {"host.memory.used", "host.memory.total",
                                             "host.memory.utilization", "host.load.1m",
                                             "host.process.count"};
constexpr std::string_view kCpuMetric = "host.cpu.utilization";
constexpr std::string_view kCpuBusy = "host.cpu.busy";

// avg, max and latest of one metric for every entity of `kind` on the host, into `out` by
// entity id. A metric the server has never seen is simply absent.
base::Status Summarize(Storage& storage, std::string_view host, base::TimePoint start,
                       base::TimePoint end, std::string_view metric, model::EntityKind kind,
                       const model::Labels& labels, std::map<std::string, EntitySummary>& out) {
  for (Aggregation agg : {Aggregation::kAvg, Aggregation::kMax}) {
    TopQuery q = RankQuery(metric, kind, start, end, agg, 10000);
    q.match.host = std::string(host);
    q.match.labels = labels;
    WARPSCOPE_ASSIGN_OR_RETURN(std::vector<TopEntry> top, TopEntitiesIfKnown(storage, q));
    for (const TopEntry& e : top) {
      EntitySummary& entity = out[e.entity];
      MetricSummary& m = entity.metrics[std::string(metric)];
      (agg == Aggregation::kAvg ? m.avg : m.max) = e.value;
      m.latest = e.latest;
      entity.attributes = e.entity_attributes;
    }
  }
  return base::OkStatus();
}

// The busy share from the stored idle share: its complement, where it is a finite number.
MetricSummary BusyFromIdle(const MetricSummary& idle) {
  MetricSummary busy;
  if (idle.avg && std::isfinite(*idle.avg)) {
    busy.avg = 1.0 - *idle.avg;
  }
  if (idle.latest && std::isfinite(*idle.latest)) {
    busy.latest = 1.0 - *idle.latest;
  }
  return busy;
}

json MetricsJson(const std::map<std::string, MetricSummary>& metrics) {
  json out = json::object();
  for (const auto& [key, m] : metrics) {
    json& j = out[key];
    j = json::object();
    if (m.avg) {
      j["avg"] = Number(*m.avg);
    }
    if (m.max) {
      j["max"] = Number(*m.max);
    }
    if (m.latest) {
      j["latest"] = Number(*m.latest);
    }
  }
  return out;
}

}  // namespace

base::Result<HostSummary> SummarizeHost(Storage& storage, std::string_view host,
                                        base::TimePoint start, base::TimePoint end) {
  std::map<std::string, EntitySummary> gpus;
  for (std::string_view m : kGpuMetrics) {
    WARPSCOPE_RETURN_IF_ERROR(
        Summarize(storage, host, start, end, m, model::EntityKind::kGpu, {}, gpus));
  }
  std::map<std::string, EntitySummary> hosts;
  for (std::string_view m : kHostMetrics) {
    WARPSCOPE_RETURN_IF_ERROR(
        Summarize(storage, host, start, end, m, model::EntityKind::kHost, {}, hosts));
  }
  WARPSCOPE_RETURN_IF_ERROR(Summarize(storage, host, start, end, kCpuMetric,
                                      model::EntityKind::kHost, model::Labels{{"mode", "idle"}},
                                      hosts));
  HostSummary out;
  out.host = std::string(host);
  out.start = start;
  out.end = end;
  out.gpus = std::move(gpus);
  if (auto it = hosts.find(out.host); it != hosts.end()) {
    out.host_metrics = std::move(it->second.metrics);
  }
  // Stored per mode; the summary reports the idle share as the complement: busy.
  if (auto idle = out.host_metrics.find(std::string(kCpuMetric)); idle != out.host_metrics.end()) {
    MetricSummary busy = BusyFromIdle(idle->second);
    out.host_metrics.erase(idle);
    out.host_metrics[std::string(kCpuBusy)] = busy;
  }
  return out;
}

json SummaryJson(const HostSummary& summary) {
  json gpus = json::array();
  for (const auto& [id, g] : summary.gpus) {
    gpus.push_back({{"entity", id},
                    {"attributes", LabelsJson(g.attributes)},
                    {"metrics", MetricsJson(g.metrics)}});
  }
  return json{{"host", summary.host},
              {"start", Seconds(summary.start)},
              {"end", Seconds(summary.end)},
              {"host_metrics", MetricsJson(summary.host_metrics)},
              {"gpus", std::move(gpus)}};
}

}  // namespace warpscope::server::query

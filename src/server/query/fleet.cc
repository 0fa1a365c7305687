// SPDX-License-Identifier: Apache-2.0
#include "server/query/fleet.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <utility>

#include "model/process.h"
#include "server/query/bucket_sums.h"
#include "server/query/json_format.h"
#include "server/query/storage_reads.h"

namespace warpscope::server::query {
namespace {

using nlohmann::json;

// One host's figures while they are gathered.
struct HostFigures {
  FleetHost out;
  std::set<std::string> gpus;
  double utilization_sum = 0;
  size_t utilization_n = 0;
};

// Adds `v` to `into` when it is finite (an absent figure becomes present).
void AddFinite(std::optional<double>& into, double v) {
  if (std::isfinite(v)) {
    into = into.value_or(0) + v;
  }
}

void MaxFinite(std::optional<double>& into, double v) {
  if (std::isfinite(v)) {
    into = std::max(into.value_or(v), v);
  }
}

// The GPU figures of a host, each from one metric ranked over the range.
struct GpuFigure {
  std::string_view metric;
  Aggregation aggregation;
  void (*apply)(HostFigures&, const TopEntry&);
};
constexpr GpuFigure kGpuFigures[] = {
    {"gpu.utilization", Aggregation::kAvg,
     [](HostFigures& f, const TopEntry& e) {
       if (std::isfinite(e.value)) {
         f.utilization_sum += e.value;
         ++f.utilization_n;
       }
     }},
    {"gpu.power.usage", Aggregation::kAvg,
     [](HostFigures& f, const TopEntry& e) { AddFinite(f.out.power_watts, e.latest); }},
    {"gpu.power.limit", Aggregation::kAvg,
     [](HostFigures& f, const TopEntry& e) { AddFinite(f.out.power_limit_watts, e.latest); }},
    {"gpu.memory.used", Aggregation::kAvg,
     [](HostFigures& f, const TopEntry& e) { AddFinite(f.out.memory_used_bytes, e.latest); }},
    {"gpu.memory.total", Aggregation::kAvg,
     [](HostFigures& f, const TopEntry& e) { AddFinite(f.out.memory_total_bytes, e.latest); }},
    {"gpu.temperature", Aggregation::kMax,
     [](HostFigures& f, const TopEntry& e) { MaxFinite(f.out.temperature_max, e.value); }},
    {"gpu.degraded", Aggregation::kAvg,
     [](HostFigures& f, const TopEntry& e) {
       if (e.latest > 0) {
         ++f.out.degraded_gpus;
       }
     }},
};

// Every entity of `kind` ranked by `metric`; a metric never received is no entries.
base::Result<std::vector<TopEntry>> RankAll(Storage& storage, std::string_view metric,
                                            model::EntityKind kind, Aggregation aggregation,
                                            base::TimePoint start, base::TimePoint end) {
  return TopEntitiesIfKnown(storage, RankQuery(metric, kind, start, end, aggregation, 1000000));
}

// A fleet-wide timeline of a GPU metric, in about 120 steps: the mean or the sum over GPUs.
base::Result<std::vector<Point>> GpuTimeline(Storage& storage, std::string_view metric, bool mean,
                                             base::TimePoint start, base::TimePoint end) {
  RangeQuery q;
  q.metric = std::string(metric);
  q.match.entity_kind = model::EntityKind::kGpu;
  q.start = start;
  q.end = end;
  q.step = std::max<base::Duration>(std::chrono::seconds(10), (q.end - q.start) / 120);
  q.max_series = 100000;
  WARPSCOPE_ASSIGN_OR_RETURN(RangeResult result, QueryRangeIfKnown(storage, q));
  BucketSums sums;
  sums.AddSeries(result.series);
  return sums.Points(mean);
}

// Per host, the processes that ran among `entries` (process entities), each once: a process
// entity without a start time ("pid/<pid>/0": the agent saw the pid in NVML but not in /proc,
// typically as the process exited) is the process of that pid with a start time, when there is
// one; every other entity is a process of its own (a reused pid is another process).
std::map<std::string, size_t> CountProcesses(const std::vector<TopEntry>& entries) {
  std::map<std::string, std::set<int>> known_pids;  // host -> pids with a start time
  for (const TopEntry& e : entries) {
    std::optional<model::ProcessIdentity> p = model::ParseProcessEntityId(e.entity);
    if (p && p->known()) {
      known_pids[e.host].insert(p->pid);
    }
  }
  std::map<std::string, size_t> counts;
  for (const TopEntry& e : entries) {
    std::optional<model::ProcessIdentity> p = model::ParseProcessEntityId(e.entity);
    if (p && !p->known()) {
      auto host = known_pids.find(e.host);
      if (host != known_pids.end() && host->second.contains(p->pid)) {
        continue;
      }
    }
    ++counts[e.host];
  }
  return counts;
}

// Per host: entities, GPU figures, GPU processes and events over [start, end).
base::Result<std::map<std::string, HostFigures>> GatherHosts(Storage& storage,
                                                             base::TimePoint start,
                                                             base::TimePoint end) {
  std::map<std::string, HostFigures> hosts;
  EntityQuery eq;
  eq.kind = model::EntityKind::kHost;
  eq.seen_since = start;
  eq.limit = 100000;
  WARPSCOPE_ASSIGN_OR_RETURN(std::vector<EntityRecord> host_list, storage.ListEntities(eq));
  for (const EntityRecord& h : host_list) {
    HostFigures& f = hosts[h.host];
    f.out.attributes = h.entity.attributes;
    f.out.last_seen = h.last_seen;
  }
  for (const GpuFigure& figure : kGpuFigures) {
    WARPSCOPE_ASSIGN_OR_RETURN(
        std::vector<TopEntry> entries,
        RankAll(storage, figure.metric, model::EntityKind::kGpu, figure.aggregation, start, end));
    for (const TopEntry& e : entries) {
      HostFigures& f = hosts[e.host];
      f.gpus.insert(e.entity);
      figure.apply(f, e);
    }
  }
  WARPSCOPE_ASSIGN_OR_RETURN(std::vector<TopEntry> processes,
                             RankAll(storage, "gpu.process.memory.used",
                                     model::EntityKind::kProcess, Aggregation::kAvg, start, end));
  for (auto& [host, count] : CountProcesses(processes)) {
    hosts[host].out.gpu_processes = count;
  }
  EventQuery evq;
  evq.start = start;
  evq.end = end;
  evq.limit = 100000;
  WARPSCOPE_ASSIGN_OR_RETURN(std::vector<EventRecord> events, storage.QueryEvents(evq));
  for (const EventRecord& r : events) {
    HostFigures& f = hosts[r.host];
    ++f.out.events;
    if (r.event.kind == "xid") {
      ++f.out.xid_events;
    }
  }
  return hosts;
}

json FigureFields(const auto& f) {
  return {{"power_watts", Number(f.power_watts)},
          {"power_limit_watts", Number(f.power_limit_watts)},
          {"memory_used_bytes", Number(f.memory_used_bytes)},
          {"memory_total_bytes", Number(f.memory_total_bytes)},
          {"temperature_max", Number(f.temperature_max)}};
}

}  // namespace

base::Result<Fleet> QueryFleet(Storage& storage, base::TimePoint start, base::TimePoint end) {
  WARPSCOPE_ASSIGN_OR_RETURN(auto hosts, GatherHosts(storage, start, end));
  Fleet fleet;
  fleet.start = start;
  fleet.end = end;
  FleetTotals& t = fleet.totals;
  double utilization_sum = 0;
  size_t utilization_n = 0;
  for (auto& [name, f] : hosts) {
    FleetHost& h = f.out;
    h.host = name;
    h.gpus = f.gpus.size();
    if (f.utilization_n > 0) {
      h.gpu_utilization = f.utilization_sum / static_cast<double>(f.utilization_n);
    }
    t.gpus += h.gpus;
    t.gpu_processes += h.gpu_processes;
    t.events += h.events;
    t.degraded_gpus += h.degraded_gpus;
    if (h.events > 0 || h.degraded_gpus > 0) {
      ++t.hosts_with_problems;
    }
    utilization_sum += f.utilization_sum;
    utilization_n += f.utilization_n;
    for (auto [from, into] : {std::pair{&h.power_watts, &t.power_watts},
                              std::pair{&h.power_limit_watts, &t.power_limit_watts},
                              std::pair{&h.memory_used_bytes, &t.memory_used_bytes},
                              std::pair{&h.memory_total_bytes, &t.memory_total_bytes}}) {
      if (*from) {
        AddFinite(*into, **from);
      }
    }
    if (h.temperature_max) {
      t.temperature_max =
          std::max(t.temperature_max.value_or(*h.temperature_max), *h.temperature_max);
    }
    fleet.hosts.push_back(std::move(h));
  }
  t.hosts = fleet.hosts.size();
  if (utilization_n > 0) {
    t.gpu_utilization = utilization_sum / static_cast<double>(utilization_n);
  }
  WARPSCOPE_ASSIGN_OR_RETURN(fleet.utilization,
                             GpuTimeline(storage, "gpu.utilization", /*mean=*/true, start, end));
  WARPSCOPE_ASSIGN_OR_RETURN(fleet.power,
                             GpuTimeline(storage, "gpu.power.usage", /*mean=*/false, start, end));
  return fleet;
}

json FleetJson(const Fleet& fleet) {
  json hosts = json::array();
  for (const FleetHost& h : fleet.hosts) {
    json host = FigureFields(h);
    host.update({{"host", h.host},
                 {"attributes", LabelsJson(h.attributes)},
                 {"last_seen", h.last_seen ? Seconds(*h.last_seen) : json(0)},
                 {"gpus", h.gpus},
                 {"gpu_utilization", Number(h.gpu_utilization)},
                 {"gpu_processes", h.gpu_processes},
                 {"degraded_gpus", h.degraded_gpus},
                 {"events", h.events},
                 {"xid_events", h.xid_events}});
    hosts.push_back(std::move(host));
  }
  const FleetTotals& t = fleet.totals;
  json totals = FigureFields(t);
  totals.update({{"hosts", t.hosts},
                 {"hosts_with_problems", t.hosts_with_problems},
                 {"gpus", t.gpus},
                 {"degraded_gpus", t.degraded_gpus},
                 {"gpu_utilization", Number(t.gpu_utilization)},
                 {"gpu_processes", t.gpu_processes},
                 {"events", t.events}});
  return json{{"start", Seconds(fleet.start)},
              {"end", Seconds(fleet.end)},
              {"totals", std::move(totals)},
              {"hosts", std::move(hosts)},
              {"utilization", TimelineJson(fleet.utilization)},
              {"power", TimelineJson(fleet.power)}};
}

}  // namespace warpscope::server::query

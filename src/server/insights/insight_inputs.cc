// SPDX-License-Identifier: Apache-2.0
#include "server/insights/insight_inputs.h"

#include <algorithm>
#include <limits>
#include <map>
#include <tuple>
#include <utility>

namespace warpscope::server::insights {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// Bounds on what one evaluation reads, so a fleet larger than expected makes the evaluation
// slower, never unbounded.
constexpr size_t kMaxSeries = 100000;
constexpr size_t kMaxEntities = 200000;
constexpr size_t kMaxEvents = 10000;

// The series of `metric` for every entity of `kind`, by (host, entity); NotFound (a metric never
// received) reads as no series.
base::Result<RangeResult> ReadMetric(Storage& storage, const InsightInputs& in,
                                     const InputsQuery& query, std::string_view metric,
                                     model::EntityKind kind, Aggregation aggregation) {
  RangeQuery q;
  q.metric = std::string(metric);
  q.match.host = query.host;
  q.match.entity_kind = kind;
  q.start = in.start;
  q.end = in.end();
  q.step = in.step;
  q.aggregation = aggregation;
  q.max_series = kMaxSeries;
  q.max_points = in.buckets + 1;
  base::Result<RangeResult> r = storage.QueryRange(q);
  if (!r && r.error().code() == base::StatusCode::kNotFound) return RangeResult{};
  return r;
}

Series ToSeries(const InsightInputs& in, const std::vector<Point>& points) {
  Series s(in.buckets, kNaN);
  for (const Point& p : points) {
    if (p.time < in.start) continue;
    size_t i = static_cast<size_t>((p.time - in.start) / in.step);
    if (i < s.size()) s[i] = p.value;
  }
  return s;
}

// The GPU metrics every GpuInput carries, with the member each fills and how windows combine.
struct GpuMetric {
  std::string_view key;
  Series GpuInput::*member;
  Aggregation aggregation;
};
constexpr GpuMetric kGpuMetrics[] = {
    {"gpu.utilization", &GpuInput::utilization, Aggregation::kAvg},
    {"gpu.power.usage", &GpuInput::power, Aggregation::kAvg},
    {"gpu.power.limit", &GpuInput::power_limit, Aggregation::kAvg},
    {"gpu.temperature", &GpuInput::temperature, Aggregation::kAvg},
    {"gpu.memory.used", &GpuInput::memory_used, Aggregation::kAvg},
    {"gpu.memory.total", &GpuInput::memory_total, Aggregation::kAvg},
    {"gpu.ecc.uncorrected.volatile", &GpuInput::ecc_uncorrected, Aggregation::kLast},
    {"gpu.remapped_rows.failure", &GpuInput::remapping_failed, Aggregation::kMax},
};

}  // namespace

size_t InsightInputs::BucketAt(base::TimePoint t) const {
  if (t <= start) return 0;
  size_t i = static_cast<size_t>((t - start + step - base::Duration(1)) / step);
  return std::min(i, buckets);
}

base::Result<InsightInputs> ReadInsightInputs(Storage& storage, const InputsQuery& query) {
  if (query.step <= base::Duration::zero() || query.lookback < query.step) {
    return base::Error(base::InvalidArgument(
        "insights: the step must be positive and the lookback at least one step"));
  }
  InsightInputs in;
  in.step = query.step;
  const int64_t step_ns = query.step.count();
  const int64_t from = base::ToUnixNanos(query.end - query.lookback);
  in.start = base::FromUnixNanos(from - ((from % step_ns) + step_ns) % step_ns);
  in.buckets =
      static_cast<size_t>((query.end - in.start + query.step - base::Duration(1)) / query.step);

  // Host tags: the cluster a GPU belongs to, for per-cluster baselines.
  EntityQuery hosts;
  hosts.kind = model::EntityKind::kHost;
  hosts.host = query.host;
  hosts.limit = kMaxEntities;
  WARPSCOPE_ASSIGN_OR_RETURN(std::vector<EntityRecord> host_records, storage.ListEntities(hosts));
  std::map<std::string, std::string, std::less<>> cluster_of;
  for (const EntityRecord& h : host_records) {
    cluster_of[h.host] = std::string(h.entity.attributes.Get("cluster"));
  }

  std::map<std::pair<std::string, std::string>, GpuInput> gpus;
  for (const GpuMetric& m : kGpuMetrics) {
    WARPSCOPE_ASSIGN_OR_RETURN(RangeResult r, ReadMetric(storage, in, query, m.key,
                                                         model::EntityKind::kGpu, m.aggregation));
    for (const RangeSeries& rs : r.series) {
      GpuInput& g = gpus[{rs.series.host, rs.series.entity}];
      if (g.uuid.empty()) {
        g.host = rs.series.host;
        g.uuid = rs.series.entity;
        g.attributes = rs.series.entity_attributes;
        auto it = cluster_of.find(g.host);
        if (it != cluster_of.end()) g.cluster = it->second;
      }
      // A GPU metric has one series per GPU; should one ever carry labels (per link, per
      // instance), the unlabelled one is the device's.
      Series& target = g.*m.member;
      if (target.empty() || rs.series.labels.empty()) target = ToSeries(in, rs.points);
    }
  }
  for (auto& [key, g] : gpus) {
    for (const GpuMetric& m : kGpuMetrics) {
      if ((g.*m.member).empty()) (g.*m.member).assign(in.buckets, kNaN);
    }
    in.gpus.push_back(std::move(g));
  }

  EntityQuery procs;
  procs.kind = model::EntityKind::kProcess;
  procs.host = query.host;
  procs.seen_since = in.start;
  procs.limit = kMaxEntities;
  WARPSCOPE_ASSIGN_OR_RETURN(std::vector<EntityRecord> proc_records, storage.ListEntities(procs));
  std::map<std::pair<std::string, std::string>, base::TimePoint> first_seen;
  for (const EntityRecord& p : proc_records) first_seen[{p.host, p.entity.id}] = p.first_seen;
  WARPSCOPE_ASSIGN_OR_RETURN(RangeResult proc_memory,
                             ReadMetric(storage, in, query, "gpu.process.memory.used",
                                        model::EntityKind::kProcess, Aggregation::kAvg));
  for (const RangeSeries& rs : proc_memory.series) {
    ProcessGpuInput p;
    p.host = rs.series.host;
    p.entity = rs.series.entity;
    p.gpu = std::string(rs.series.labels.Get("gpu.uuid"));
    p.attributes = rs.series.entity_attributes;
    auto it = first_seen.find({p.host, p.entity});
    p.first_seen = it != first_seen.end() ? it->second : in.start;
    p.memory_used = ToSeries(in, rs.points);
    in.processes.push_back(std::move(p));
  }
  std::sort(in.processes.begin(), in.processes.end(), [](const auto& a, const auto& b) {
    return std::tie(a.host, a.entity, a.gpu) < std::tie(b.host, b.entity, b.gpu);
  });

  EventQuery events;
  events.host = query.host;
  events.start = in.start;
  events.end = in.end();
  events.limit = kMaxEvents;
  WARPSCOPE_ASSIGN_OR_RETURN(in.events, storage.QueryEvents(events));
  std::stable_sort(in.events.begin(), in.events.end(),
                   [](const auto& a, const auto& b) { return a.event.time < b.event.time; });
  return in;
}

}  // namespace warpscope::server::insights

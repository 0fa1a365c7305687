// SPDX-License-Identifier: Apache-2.0
#include "server/insights/insight_inputs.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
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
                                     base::TimePoint from, const InputsQuery& query,
                                     std::string_view metric, model::EntityKind kind,
                                     Aggregation aggregation) {
  RangeQuery q;
  q.metric = std::string(metric);
  q.match.host = query.host;
  q.match.entity_kind = kind;
  q.start = from;
  q.end = in.end();
  q.step = in.step;
  q.aggregation = aggregation;
  q.max_series = kMaxSeries;
  q.max_points = in.buckets + 1;
  base::Result<RangeResult> r = storage.QueryRange(q);
  if (!r && r.error().code() == base::StatusCode::kNotFound) return RangeResult{};
  return r;
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
    {"gpu.sm.occupancy", &GpuInput::sm_occupancy, Aggregation::kAvg},
    {"gpu.dram.active", &GpuInput::dram_active, Aggregation::kAvg},
};

}  // namespace

size_t InsightInputs::BucketAt(base::TimePoint t) const {
  if (t <= start) return 0;
  size_t i = static_cast<size_t>((t - start + step - base::Duration(1)) / step);
  return std::min(i, buckets);
}

namespace {

// `old`'s values moved to the buckets of `in` (which starts `shift` buckets later); buckets from
// `fresh` on are left NaN for the new read to fill.
Series Shifted(const Series& old, size_t shift, size_t buckets, size_t fresh) {
  Series s(buckets, kNaN);
  for (size_t i = 0; i < std::min(buckets, fresh); ++i) {
    if (i + shift < old.size()) s[i] = old[i + shift];
  }
  return s;
}

// Writes `points` into `s` (buckets of `in`), at buckets >= `fresh` only.
void Fill(Series& s, const InsightInputs& in, const std::vector<Point>& points, size_t fresh) {
  for (const Point& p : points) {
    if (p.time < in.start) continue;
    size_t i = static_cast<size_t>((p.time - in.start) / in.step);
    if (i >= fresh && i < s.size()) s[i] = p.value;
  }
}

bool AllNaN(const GpuInput& g) {
  for (const GpuMetric& m : kGpuMetrics) {
    for (double v : g.*m.member) {
      if (!std::isnan(v)) return false;
    }
  }
  return true;
}

}  // namespace

base::Result<InsightInputs> ReadInsightInputs(Storage& storage, const InputsQuery& query,
                                              const InsightInputs* previous) {
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

  // What can be kept of the previous snapshot: its buckets before `fresh` (the re-read margin
  // before its end), shifted to this one's start.
  size_t shift = 0;
  size_t fresh = 0;
  if (previous && previous->step == in.step && previous->start <= in.start &&
      in.start < previous->end() && query.host.empty() == previous->host_all) {
    shift = static_cast<size_t>((in.start - previous->start) / in.step);
    const base::TimePoint reread = std::max(in.start, previous->end() - query.reread);
    fresh = static_cast<size_t>((reread - in.start) / in.step);
  }
  in.host_all = query.host.empty();
  const base::TimePoint read_from = in.BucketStart(fresh);

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
  if (fresh > 0) {
    for (const GpuInput& old : previous->gpus) {
      GpuInput& g = gpus[{old.host, old.uuid}];
      g.host = old.host;
      g.uuid = old.uuid;
      g.attributes = old.attributes;
      for (const GpuMetric& m : kGpuMetrics) {
        g.*m.member = Shifted(old.*m.member, shift, in.buckets, fresh);
      }
    }
  }
  for (const GpuMetric& m : kGpuMetrics) {
    WARPSCOPE_ASSIGN_OR_RETURN(RangeResult r, ReadMetric(storage, in, read_from, query, m.key,
                                                         model::EntityKind::kGpu, m.aggregation));
    // A GPU metric has one series per GPU; should one ever carry labels (per link, per
    // instance), the unlabelled one is the device's. Series come ordered by labels, so an
    // unlabelled series is seen before labelled ones of its GPU.
    std::set<std::pair<std::string, std::string>> filled;
    for (const RangeSeries& rs : r.series) {
      std::pair<std::string, std::string> key{rs.series.host, rs.series.entity};
      if (filled.contains(key)) continue;
      filled.insert(key);
      GpuInput& g = gpus[key];
      if (g.uuid.empty()) {
        g.host = rs.series.host;
        g.uuid = rs.series.entity;
        for (const GpuMetric& each : kGpuMetrics) (g.*each.member).assign(in.buckets, kNaN);
      }
      g.attributes = rs.series.entity_attributes;
      Fill(g.*m.member, in, rs.points, fresh);
    }
  }
  for (auto& [key, g] : gpus) {
    if (AllNaN(g)) continue;  // gone for the whole lookback
    auto it = cluster_of.find(g.host);
    g.cluster = it != cluster_of.end() ? it->second : "";
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
  std::map<std::tuple<std::string, std::string, std::string>, ProcessGpuInput> processes;
  if (fresh > 0) {
    for (const ProcessGpuInput& old : previous->processes) {
      ProcessGpuInput& p = processes[{old.host, old.entity, old.gpu}];
      p = old;
      p.memory_used = Shifted(old.memory_used, shift, in.buckets, fresh);
    }
  }
  WARPSCOPE_ASSIGN_OR_RETURN(RangeResult proc_memory,
                             ReadMetric(storage, in, read_from, query, "gpu.process.memory.used",
                                        model::EntityKind::kProcess, Aggregation::kAvg));
  for (const RangeSeries& rs : proc_memory.series) {
    ProcessGpuInput& p = processes[{rs.series.host, rs.series.entity,
                                    std::string(rs.series.labels.Get("gpu.uuid"))}];
    if (p.entity.empty()) {
      p.host = rs.series.host;
      p.entity = rs.series.entity;
      p.gpu = std::string(rs.series.labels.Get("gpu.uuid"));
      p.memory_used.assign(in.buckets, kNaN);
    }
    p.attributes = rs.series.entity_attributes;
    Fill(p.memory_used, in, rs.points, fresh);
  }
  for (auto& [key, p] : processes) {
    if (std::all_of(p.memory_used.begin(), p.memory_used.end(),
                    [](double v) { return std::isnan(v); })) {
      continue;
    }
    auto it = first_seen.find({p.host, p.entity});
    p.first_seen = it != first_seen.end() ? it->second : in.start;
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

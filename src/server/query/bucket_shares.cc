// SPDX-License-Identifier: Apache-2.0
#include "server/query/bucket_shares.h"

#include <algorithm>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include "model/process.h"
#include "server/query/storage_reads.h"

namespace warpscope::server::query {
namespace {

// The slot of a series: the processes that held one pid on one host, with one set of labels
// (one GPU), ran one after the other. Other entities are their own slot.
using Slot = std::tuple<std::string, std::string, model::Labels>;  // host, pid or entity, labels

Slot SlotOf(const SeriesIdentity& s) {
  std::string slot = s.entity;
  if (s.entity_kind == model::EntityKind::kProcess) {
    if (std::optional<model::ProcessIdentity> p = model::ParseProcessEntityId(s.entity)) {
      slot = "pid/" + std::to_string(p->pid);
    }
  }
  return {s.host, std::move(slot), s.labels};
}

}  // namespace

bool ComesAndGoes(model::EntityKind kind) {
  return kind == model::EntityKind::kProcess || kind == model::EntityKind::kExecutable ||
         kind == model::EntityKind::kContainer;
}

base::Result<BucketShares> BucketShares::Read(Storage& storage, const RangeQuery& q,
                                              const RangeResult& result) {
  BucketShares shares;
  if (q.aggregation != Aggregation::kAvg) {
    return shares;
  }
  std::set<std::string_view> hosts;
  for (const RangeSeries& s : result.series) {
    if (ComesAndGoes(s.series.entity_kind)) {
      hosts.insert(s.series.host);
    }
  }
  if (hosts.empty()) {
    return shares;
  }
  shares.weighted_ = true;

  RangeQuery cq;
  cq.metric = std::string(kCycleMetric);
  cq.match.host = hosts.size() == 1 ? std::string(*hosts.begin()) : q.match.host;
  cq.match.entity_kind = model::EntityKind::kHost;
  cq.start = q.start;
  cq.end = q.end;
  cq.step = q.step;
  cq.max_series = 100000;
  cq.max_points = q.max_points;
  WARPSCOPE_ASSIGN_OR_RETURN(RangeResult cycles, QueryRangeIfKnown(storage, cq));
  for (const RangeSeries& s : cycles.series) {
    if (!hosts.contains(s.series.host)) {
      continue;
    }
    auto& per_bucket = shares.cycles_[s.series.host];
    for (const Point& p : s.points) {
      per_bucket[base::ToUnixNanos(p.time)] += p.samples;  // one series per agent version
    }
  }

  std::map<Slot, std::map<int64_t, uint64_t>> slots;
  for (const RangeSeries& s : result.series) {
    if (!ComesAndGoes(s.series.entity_kind)) {
      continue;
    }
    auto& per_bucket = slots[SlotOf(s.series)];
    for (const Point& p : s.points) {
      per_bucket[base::ToUnixNanos(p.time)] += p.samples;
    }
  }
  for (const auto& [slot, per_bucket] : slots) {
    auto& host_cycles = shares.cycles_[std::get<0>(slot)];
    for (const auto& [t, samples] : per_bucket) {
      uint64_t& cycles = host_cycles[t];
      cycles = std::max(cycles, samples);
    }
  }
  return shares;
}

double BucketShares::Share(const RangeSeries& series, const Point& p) const {
  if (!weighted_ || p.samples == 0 || !ComesAndGoes(series.series.entity_kind)) {
    return 1;
  }
  auto host = cycles_.find(series.series.host);
  if (host == cycles_.end()) {
    return 1;
  }
  auto bucket = host->second.find(base::ToUnixNanos(p.time));
  if (bucket == host->second.end() || bucket->second == 0) {
    return 1;
  }
  return std::min(1.0, static_cast<double>(p.samples) / static_cast<double>(bucket->second));
}

}  // namespace warpscope::server::query

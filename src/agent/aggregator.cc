// SPDX-License-Identifier: Apache-2.0
#include "agent/aggregator.h"

#include <algorithm>
#include <cmath>
#include <functional>

namespace warpscope::agent {
namespace {

uint64_t Mix(uint64_t h, uint64_t v) {
  // 64-bit variant of boost::hash_combine's constant; enough to spread series keys.
  return h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
}

uint64_t SeriesHash(const model::MetricDesc& metric, std::string_view entity_id,
                    const model::Labels& labels) {
  std::hash<std::string_view> hs;
  uint64_t h = reinterpret_cast<uintptr_t>(&metric);
  h = Mix(h, hs(entity_id));
  for (const auto& [k, v] : labels) {
    h = Mix(h, hs(k));
    h = Mix(h, hs(v));
  }
  return h;
}

}  // namespace

Aggregator::Aggregator(size_t max_series) : max_series_(max_series) {}

void Aggregator::BeginCycle(base::TimePoint now) {
  cycle_time_ = now;
  if (!window_started_) {
    window_start_ = now;
    window_started_ = true;
  }
  cycle_.entities.clear();
  cycle_.series.clear();
  cycle_.events.clear();
  cycle_index_.clear();
  cycle_entity_index_.clear();
  cycle_.start = now;
  cycle_.end = now;
}

void Aggregator::EndCycle() {
  cycle_.sequence = latest_.sequence + 1;
  std::swap(latest_, cycle_);
}

void Aggregator::AddEntity(const model::Entity& entity) {
  auto [pos, inserted] = cycle_entity_index_.emplace(entity.id, cycle_.entities.size());
  if (inserted) {
    cycle_.entities.push_back(entity);
  } else {
    model::Entity& merged = cycle_.entities[pos->second];
    for (const auto& [k, v] : entity.attributes) merged.attributes.Set(k, v);
    if (!entity.parent.empty()) merged.parent = entity.parent;
  }
  const model::Entity& current = cycle_.entities[pos->second];
  auto it = window_entities_.find(entity.id);
  if (it == window_entities_.end()) {
    window_entity_order_.push_back(entity.id);
    window_entities_.emplace(entity.id, current);
  } else {
    it->second = current;  // attributes may change (e.g. a process exec'd)
  }
}

size_t Aggregator::FindOrInsert(std::unordered_map<uint64_t, std::vector<uint32_t>>& index,
                                std::vector<SeriesState>& states, const model::MetricDesc& metric,
                                std::string_view entity_id, const model::Labels& labels,
                                size_t limit, bool* inserted) {
  uint64_t h = SeriesHash(metric, entity_id, labels);
  auto& bucket = index[h];
  for (uint32_t i : bucket) {
    const auto& p = states[i].point;
    if (p.metric == &metric && p.entity == entity_id && p.labels == labels) {
      *inserted = false;
      return i;
    }
  }
  if (states.size() >= limit) {
    *inserted = false;
    return SIZE_MAX;
  }
  SeriesState s;
  s.point.metric = &metric;
  s.point.entity = std::string(entity_id);
  s.point.labels = labels;
  states.push_back(std::move(s));
  bucket.push_back(static_cast<uint32_t>(states.size() - 1));
  *inserted = true;
  return states.size() - 1;
}

void Aggregator::AddValue(const model::MetricDesc& metric, std::string_view entity_id,
                          const model::Labels& labels, double value) {
  if (std::isnan(value)) return;  // NaN means "no value": absent, never zero
  bool inserted = false;
  size_t wi = FindOrInsert(window_index_, window_series_, metric, entity_id, labels, max_series_,
                           &inserted);
  if (wi == SIZE_MAX) {
    ++dropped_values_total_;
    // Count each distinct rejected series once per window would need another set; count values.
    dropped_series_total_ += 1;
    return;
  }
  model::SeriesPoint& w = window_series_[wi].point;
  if (inserted || w.count == 0) {
    w.avg = value;  // running sum
    w.min = value;
    w.max = value;
    w.count = 1;
  } else {
    w.avg += value;
    w.min = std::min(w.min, value);
    w.max = std::max(w.max, value);
    ++w.count;
  }
  w.last = value;
  w.last_time = cycle_time_;

  // The latest-cycle frame shares the series layout but holds one value per series. A source
  // writing the same series twice in one cycle overwrites.
  uint64_t h = SeriesHash(metric, entity_id, labels);
  auto& bucket = cycle_index_[h];
  for (uint32_t i : bucket) {
    auto& p = cycle_.series[i];
    if (p.metric == &metric && p.entity == entity_id && p.labels == labels) {
      p.avg = p.min = p.max = p.last = value;
      return;
    }
  }
  model::SeriesPoint p;
  p.metric = &metric;
  p.entity = std::string(entity_id);
  p.labels = labels;
  p.avg = p.min = p.max = p.last = value;
  p.count = 1;
  p.last_time = cycle_time_;
  cycle_.series.push_back(std::move(p));
  bucket.push_back(static_cast<uint32_t>(cycle_.series.size() - 1));
}

void Aggregator::AddEvent(const model::Event& event) {
  cycle_.events.push_back(event);
  window_events_.push_back(event);
}

model::Frame Aggregator::CloseWindow(base::TimePoint end) {
  model::Frame frame;
  frame.start = window_started_ ? window_start_ : end;
  frame.end = end;
  frame.sequence = ++sequence_;
  frame.series.reserve(window_series_.size());
  for (auto& s : window_series_) {
    model::SeriesPoint p = std::move(s.point);
    if (p.count == 0) continue;
    if (p.metric->kind == model::MetricKind::kCounter) {
      p.avg = p.min = p.max = p.last;
    } else {
      p.avg /= p.count;
    }
    frame.series.push_back(std::move(p));
  }
  frame.entities.reserve(window_entity_order_.size());
  for (const auto& id : window_entity_order_) {
    frame.entities.push_back(std::move(window_entities_[id]));
  }
  frame.events = std::move(window_events_);

  window_series_.clear();
  window_index_.clear();
  window_entities_.clear();
  window_entity_order_.clear();
  window_events_.clear();
  window_start_ = end;
  return frame;
}

}  // namespace warpscope::agent

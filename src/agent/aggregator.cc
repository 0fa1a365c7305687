// SPDX-License-Identifier: Apache-2.0
#include "agent/aggregator.h"

#include <algorithm>
#include <bit>
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

Aggregator::Aggregator(size_t max_series, size_t max_steps)
    : max_series_(max_series), max_steps_(max_steps) {}

void Aggregator::BeginCycle(base::TimePoint now) {
  cycle_time_ = now;
  if (!window_started_) {
    window_start_ = now;
    window_started_ = true;
  }
  ++cycle_id_;
  cycle_series_count_ = 0;
  cycle_entity_count_ = 0;
  cycle_.events.clear();
  cycle_.start = now;
  cycle_.end = now;
}

void Aggregator::EndCycle() {
  // Trim what is left from two cycles ago (series or entities that this cycle did not write).
  cycle_.series.erase(cycle_.series.begin() + static_cast<std::ptrdiff_t>(cycle_series_count_),
                      cycle_.series.end());
  cycle_.entities.erase(cycle_.entities.begin() + static_cast<std::ptrdiff_t>(cycle_entity_count_),
                        cycle_.entities.end());
  cycle_.sequence = latest_.sequence + 1;
  std::swap(latest_, cycle_);
  cycle_series_count_ = 0;
  cycle_entity_count_ = 0;
}

void Aggregator::AddEntity(const model::Entity& entity) {
  EntityState& state = entities_.try_emplace(entity.id).first->second;
  model::Entity* current = nullptr;
  if (state.cycle == cycle_id_) {
    current = &cycle_.entities[state.cycle_pos];
    for (const auto& [k, v] : entity.attributes) current->attributes.Set(k, v);
    if (!entity.parent.empty()) current->parent = entity.parent;
  } else {
    state.cycle = cycle_id_;
    state.cycle_pos = static_cast<uint32_t>(cycle_entity_count_++);
    if (state.cycle_pos == cycle_.entities.size()) {
      cycle_.entities.push_back(entity);
    } else {
      cycle_.entities[state.cycle_pos] = entity;  // reuses the strings of two cycles ago
    }
    current = &cycle_.entities[state.cycle_pos];
  }
  if (state.window != window_id_) {
    state.window = window_id_;
    window_entities_.push_back(&state);
  }
  state.merged = *current;  // attributes may change (e.g. a process exec'd)
}

uint32_t Aggregator::Find(uint64_t hash, const model::MetricDesc& metric,
                          std::string_view entity_id, const model::Labels& labels) const {
  if (table_.empty()) return kNoSlot;
  const size_t mask = table_.size() - 1;
  // The table is at most half full, so the probe ends at an empty entry.
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    const uint32_t entry = table_[i];
    if (entry == 0) return kNoSlot;
    const Slot& s = slots_[entry - 1];
    if (s.hash == hash && s.metric == &metric && s.entity == entity_id && s.labels == labels) {
      return entry - 1;
    }
  }
}

uint32_t Aggregator::Insert(uint64_t hash, const model::MetricDesc& metric,
                            std::string_view entity_id, const model::Labels& labels) {
  Slot& s = slots_.emplace_back();
  s.metric = &metric;
  s.entity = std::string(entity_id);
  s.labels = labels;
  s.hash = hash;
  const auto index = static_cast<uint32_t>(slots_.size() - 1);
  if (slots_.size() * 2 > table_.size()) {
    Rehash(slots_.size());  // places every slot, the new one included
    return index;
  }
  const size_t mask = table_.size() - 1;
  size_t i = hash & mask;
  while (table_[i] != 0) i = (i + 1) & mask;
  table_[i] = index + 1;
  return index;
}

void Aggregator::Rehash(size_t slots) {
  table_.assign(std::bit_ceil(std::max<size_t>(64, 2 * slots)), 0);
  const size_t mask = table_.size() - 1;
  for (size_t k = 0; k < slots_.size(); ++k) {
    size_t i = slots_[k].hash & mask;
    while (table_[i] != 0) i = (i + 1) & mask;
    table_[i] = static_cast<uint32_t>(k + 1);
  }
}

void Aggregator::AddValue(const model::MetricDesc& metric, std::string_view entity_id,
                          const model::Labels& labels, double value) {
  if (std::isnan(value)) return;  // NaN means "no value": absent, never zero
  const uint64_t hash = SeriesHash(metric, entity_id, labels);
  uint32_t index = Find(hash, metric, entity_id, labels);
  if (index == kNoSlot || slots_[index].window != window_id_) {
    // The first value of this series in the window.
    if (window_order_.size() >= max_series_) {
      ++dropped_values_total_;
      // Count each distinct rejected series once per window would need another set; count
      // values.
      dropped_series_total_ += 1;
      return;
    }
    if (index == kNoSlot) index = Insert(hash, metric, entity_id, labels);
    Slot& s = slots_[index];
    s.window = window_id_;
    s.sum = s.min = s.max = value;  // sum: the running sum until the window closes
    s.count = 1;
    window_order_.push_back(index);
  } else {
    Slot& s = slots_[index];
    s.sum += value;
    s.min = std::min(s.min, value);
    s.max = std::max(s.max, value);
    ++s.count;
  }
  Slot& s = slots_[index];
  s.last = value;
  s.last_time = cycle_time_;

  // The latest-cycle frame shares the series identity but holds one value per series. A source
  // writing the same series twice in one cycle overwrites.
  if (s.cycle != cycle_id_) {
    s.cycle = cycle_id_;
    s.cycle_pos = static_cast<uint32_t>(cycle_series_count_++);
    if (s.cycle_pos == cycle_.series.size()) cycle_.series.emplace_back();
    // Assignments into the point of two cycles ago, which usually held this very series: the
    // strings keep their capacity, so nothing is allocated.
    model::SeriesPoint& p = cycle_.series[s.cycle_pos];
    p.metric = s.metric;
    p.entity = s.entity;
    p.labels = s.labels;
    p.count = 1;
    p.last_time = cycle_time_;
  }
  model::SeriesPoint& p = cycle_.series[s.cycle_pos];
  p.avg = p.min = p.max = p.last = value;
}

void Aggregator::AddEvent(const model::Event& event) {
  cycle_.events.push_back(event);
  window_events_.push_back(event);
}

void Aggregator::AddStep(const model::TrainingStep& step) {
  if (window_steps_.size() >= max_steps_) {
    ++dropped_steps_total_;
    return;
  }
  window_steps_.push_back(step);
}

model::Frame Aggregator::CloseWindow(base::TimePoint end) {
  model::Frame frame;
  frame.start = window_started_ ? window_start_ : end;
  frame.end = end;
  frame.sequence = ++sequence_;
  frame.series.reserve(window_order_.size());
  for (uint32_t index : window_order_) {
    const Slot& s = slots_[index];
    model::SeriesPoint& p = frame.series.emplace_back();
    p.metric = s.metric;
    p.entity = s.entity;
    p.labels = s.labels;
    p.last = s.last;
    p.count = s.count;
    p.last_time = s.last_time;
    if (s.metric->kind == model::MetricKind::kCounter) {
      p.avg = p.min = p.max = s.last;
    } else {
      p.avg = s.sum / s.count;
      p.min = s.min;
      p.max = s.max;
    }
  }
  frame.entities.reserve(window_entities_.size());
  for (EntityState* state : window_entities_) {
    frame.entities.push_back(std::move(state->merged));
  }
  frame.events = std::move(window_events_);
  window_events_.clear();
  frame.steps = std::move(window_steps_);
  window_steps_.clear();

  ForgetUnwritten();
  window_order_.clear();
  window_entities_.clear();
  ++window_id_;
  window_start_ = end;
  return frame;
}

void Aggregator::ForgetUnwritten() {
  // What the closed window wrote is likely written again; the rest (an exited process, a
  // vanished link) would only grow the tables.
  size_t kept = 0;
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i].window != window_id_) continue;
    if (kept != i) slots_[kept] = std::move(slots_[i]);
    ++kept;
  }
  if (kept != slots_.size()) {
    slots_.erase(slots_.begin() + static_cast<std::ptrdiff_t>(kept), slots_.end());
    Rehash(kept);
  }
  std::erase_if(entities_, [&](const auto& entry) { return entry.second.window != window_id_; });
}

}  // namespace warpscope::agent

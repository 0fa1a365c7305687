// SPDX-License-Identifier: Apache-2.0
// SampleBuffer: a SampleSink that keeps what one poll wrote, for a replay into another sink
// later and on another thread (a source's worker writes it; the agent main sequence replays it).
// Copies everything it is given. Clear() keeps the storage, and slots are reused by assignment,
// so a poll that writes the same series as the previous one allocates nothing.
//
// Not thread-safe: one thread at a time, with a handoff (DeadlineWorker's) in between.
#ifndef WARPSCOPE_AGENT_SOURCES_SAMPLE_BUFFER_H_
#define WARPSCOPE_AGENT_SOURCES_SAMPLE_BUFFER_H_

#include <string>
#include <vector>

#include "model/sample_sink.h"

namespace warpscope::agent {

class SampleBuffer final : public model::SampleSink {
 public:
  void AddEntity(const model::Entity& entity) override { Slot(entities_, entity_count_) = entity; }
  void AddValue(const model::MetricDesc& metric, std::string_view entity_id,
                const model::Labels& labels, double value) override {
    Value& v = Slot(values_, value_count_);
    v.metric = &metric;
    v.entity.assign(entity_id);
    v.labels = labels;
    v.value = value;
  }
  void AddEvent(const model::Event& event) override { Slot(events_, event_count_) = event; }
  void AddStep(const model::TrainingStep& step) override { steps_.push_back(step); }
  using model::SampleSink::AddValue;

  // Forgets the contents, keeps the storage.
  void Clear() {
    entity_count_ = value_count_ = event_count_ = 0;
    steps_.clear();
  }
  bool empty() const {
    return entity_count_ == 0 && value_count_ == 0 && event_count_ == 0 && steps_.empty();
  }
  size_t values() const { return value_count_; }
  size_t events() const { return event_count_; }

  // Writes the entities, then the values, then the events and steps, each in the order they
  // came.
  void ReplayInto(model::SampleSink& out) const {
    for (size_t i = 0; i < entity_count_; ++i) {
      out.AddEntity(entities_[i]);
    }
    for (size_t i = 0; i < value_count_; ++i) {
      const Value& v = values_[i];
      out.AddValue(*v.metric, v.entity, v.labels, v.value);
    }
    ReplayEventsInto(out);
  }
  // The events and steps only: what still matters of a poll whose values are too old to be used.
  void ReplayEventsInto(model::SampleSink& out) const {
    for (size_t i = 0; i < event_count_; ++i) {
      out.AddEvent(events_[i]);
    }
    for (const auto& step : steps_) {
      out.AddStep(step);
    }
  }

 private:
  struct Value {
    const model::MetricDesc* metric = nullptr;
    std::string entity;
    model::Labels labels;
    double value = 0;
  };

  template <typename T>
  static T& Slot(std::vector<T>& slots, size_t& count) {
    if (count == slots.size()) {
      slots.emplace_back();
    }
    return slots[count++];
  }

  std::vector<model::Entity> entities_;
  std::vector<Value> values_;
  std::vector<model::Event> events_;
  std::vector<model::TrainingStep> steps_;  // rare: no slot reuse
  size_t entity_count_ = 0;
  size_t value_count_ = 0;
  size_t event_count_ = 0;
};

}  // namespace warpscope::agent

#endif  // WARPSCOPE_AGENT_SOURCES_SAMPLE_BUFFER_H_

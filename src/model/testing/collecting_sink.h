// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_MODEL_TESTING_COLLECTING_SINK_H_
#define WARPSCOPE_MODEL_TESTING_COLLECTING_SINK_H_

#include <optional>
#include <string>
#include <vector>

#include "model/sample_sink.h"

namespace warpscope::model {

// Keeps everything written to it, for assertions.
class CollectingSink : public SampleSink {
 public:
  struct Value {
    const MetricDesc* metric;
    std::string entity;
    Labels labels;
    double value;
  };

  void AddEntity(const Entity& entity) override { entities.push_back(entity); }
  void AddValue(const MetricDesc& metric, std::string_view entity_id, const Labels& labels,
                double value) override {
    values.push_back({&metric, std::string(entity_id), labels, value});
  }
  void AddEvent(const Event& event) override { events.push_back(event); }
  void AddStep(const TrainingStep& step) override { steps.push_back(step); }
  using SampleSink::AddValue;

  // The value of `key` for `entity` (and `labels`), if written.
  std::optional<double> Find(std::string_view key, std::string_view entity,
                             const Labels& labels = {}) const {
    for (const auto& v : values) {
      if (v.metric->key == key && v.entity == entity && v.labels == labels) return v.value;
    }
    return std::nullopt;
  }
  bool Has(std::string_view key) const {
    for (const auto& v : values) {
      if (v.metric->key == key) return true;
    }
    return false;
  }
  const Entity* FindEntity(std::string_view id) const {
    for (const auto& e : entities) {
      if (e.id == id) return &e;
    }
    return nullptr;
  }
  void Clear() {
    entities.clear();
    values.clear();
    events.clear();
    steps.clear();
  }

  std::vector<Entity> entities;
  std::vector<Value> values;
  std::vector<Event> events;
  std::vector<TrainingStep> steps;
};

}  // namespace warpscope::model

#endif  // WARPSCOPE_MODEL_TESTING_COLLECTING_SINK_H_

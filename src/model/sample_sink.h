// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_MODEL_SAMPLE_SINK_H_
#define WARPSCOPE_MODEL_SAMPLE_SINK_H_

#include "base/time.h"
#include "model/entity.h"
#include "model/frame.h"
#include "model/labels.h"
#include "model/metric.h"

namespace warpscope::model {

// Where a source writes one collection cycle. Entities must be declared (Entity) in the cycle in
// which their series are written. Single-threaded: the agent main sequence.
class SampleSink {
 public:
  virtual ~SampleSink() = default;
  virtual void AddEntity(const Entity& entity) = 0;
  virtual void AddValue(const MetricDesc& metric, std::string_view entity_id, const Labels& labels,
                        double value) = 0;
  virtual void AddEvent(const Event& event) = 0;
  // A training step a source cut (model::TrainingStep, emitted once). Sinks that keep no steps
  // ignore them.
  virtual void AddStep(const TrainingStep& step) { (void)step; }

  void AddValue(const MetricDesc& metric, std::string_view entity_id, double value) {
    AddValue(metric, entity_id, kNoLabels, value);
  }

 protected:
  static inline const Labels kNoLabels{};
};

}  // namespace warpscope::model

#endif  // WARPSCOPE_MODEL_SAMPLE_SINK_H_

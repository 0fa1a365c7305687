// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_AGENT_AGGREGATOR_H_
#define WARPSCOPE_AGENT_AGGREGATOR_H_

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/time.h"
#include "model/frame.h"
#include "model/sample_sink.h"

namespace warpscope::agent {

// Turns collection cycles into frames. Sources write one cycle between BeginCycle and EndCycle;
// the aggregator keeps
//   - the latest cycle (what /metrics serves: one value per series, series not written in the
//     last cycle disappear), and
//   - the current export window: per series avg/min/max/last/count of every sample taken since
//     the last CloseWindow (so a spike shorter than the window survives). Counters keep `last`.
// Runs on the agent main sequence; not thread-safe.
class Aggregator : public model::SampleSink {
 public:
  // At most `max_series` distinct series per window; more are dropped and counted.
  explicit Aggregator(size_t max_series = 200000);

  void BeginCycle(base::TimePoint now);
  void EndCycle();

  // An entity written twice in a cycle (two sources describing the same host) keeps the
  // attributes of both, the later write winning on conflicts.
  void AddEntity(const model::Entity& entity) override;
  void AddValue(const model::MetricDesc& metric, std::string_view entity_id,
                const model::Labels& labels, double value) override;
  void AddEvent(const model::Event& event) override;
  using model::SampleSink::AddValue;

  // The last complete cycle. Valid until the next EndCycle.
  const model::Frame& latest() const { return latest_; }
  // Returns the window [window start, end) and starts a new one. The sequence number increases
  // by one per window.
  model::Frame CloseWindow(base::TimePoint end);

  // Entities written in the cycle in progress (for sources that depend on earlier ones).
  const std::vector<model::Entity>& cycle_entities() const { return cycle_.entities; }
  uint64_t dropped_series_total() const { return dropped_series_total_; }
  uint64_t dropped_values_total() const { return dropped_values_total_; }
  size_t window_series() const { return window_series_.size(); }

 private:
  struct SeriesState {
    model::SeriesPoint point;  // avg holds the running sum until the window closes
  };
  size_t FindOrInsert(std::unordered_map<uint64_t, std::vector<uint32_t>>& index,
                      std::vector<SeriesState>& states, const model::MetricDesc& metric,
                      std::string_view entity_id, const model::Labels& labels, size_t limit,
                      bool* inserted);

  size_t max_series_;
  base::TimePoint cycle_time_;
  base::TimePoint window_start_;
  bool window_started_ = false;
  uint64_t sequence_ = 0;

  model::Frame cycle_;   // being written
  model::Frame latest_;  // last complete cycle
  std::unordered_map<uint64_t, std::vector<uint32_t>> cycle_index_;
  std::unordered_map<std::string, size_t> cycle_entity_index_;

  std::vector<SeriesState> window_series_;
  std::unordered_map<uint64_t, std::vector<uint32_t>> window_index_;
  std::unordered_map<std::string, model::Entity> window_entities_;
  std::vector<std::string> window_entity_order_;
  std::vector<model::Event> window_events_;

  uint64_t dropped_series_total_ = 0;
  uint64_t dropped_values_total_ = 0;
};

}  // namespace warpscope::agent

#endif  // WARPSCOPE_AGENT_AGGREGATOR_H_

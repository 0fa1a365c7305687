// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_AGENT_AGGREGATOR_H_
#define WARPSCOPE_AGENT_AGGREGATOR_H_

#include <cstdint>
#include <span>
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
//
// Cost: the series and entities of a window are remembered across cycles, so a cycle that
// writes the series of the cycle before costs one hash lookup per value and no allocation: a
// series' slot knows its place in the cycle frame, and the two cycle frames (the one being
// written, the latest) are reused in turn, so their entity ids and labels are overwritten in
// place. Series and entities that a whole window did not write are forgotten when it closes.
class Aggregator : public model::SampleSink {
 public:
  // At most `max_series` distinct series per window; more are dropped and counted.
  explicit Aggregator(size_t max_series = 200000, size_t max_steps = 10000);

  void BeginCycle(base::TimePoint now);
  void EndCycle();

  // An entity written twice in a cycle (two sources describing the same host) keeps the
  // attributes of both, the later write winning on conflicts.
  void AddEntity(const model::Entity& entity) override;
  void AddValue(const model::MetricDesc& metric, std::string_view entity_id,
                const model::Labels& labels, double value) override;
  void AddEvent(const model::Event& event) override;
  // Steps go to the window (Frame::steps), at most `max_steps` a window; more are counted.
  void AddStep(const model::TrainingStep& step) override;
  using model::SampleSink::AddValue;

  // The last complete cycle. Valid until the next EndCycle.
  const model::Frame& latest() const { return latest_; }
  // Returns the window [window start, end) and starts a new one. The sequence number increases
  // by one per window. Called between cycles.
  model::Frame CloseWindow(base::TimePoint end);

  // Entities written in the cycle in progress (for sources that depend on earlier ones). Valid
  // until the next AddEntity or EndCycle.
  std::span<const model::Entity> cycle_entities() const {
    return {cycle_.entities.data(), cycle_entity_count_};
  }
  uint64_t dropped_series_total() const { return dropped_series_total_; }
  uint64_t dropped_values_total() const { return dropped_values_total_; }
  uint64_t dropped_steps_total() const { return dropped_steps_total_; }
  // Distinct series in the window in progress.
  size_t window_series() const { return window_order_.size(); }

 private:
  // One series, remembered while windows write it.
  struct Slot {
    const model::MetricDesc* metric = nullptr;
    std::string entity;
    model::Labels labels;
    uint64_t hash = 0;
    uint64_t window = 0;     // the window that last wrote it
    uint64_t cycle = 0;      // the cycle that last wrote it
    uint32_t cycle_pos = 0;  // its index in cycle_.series while `cycle` is the current one
    double sum = 0;          // window statistics, valid while `window` is the current one
    double min = 0;
    double max = 0;
    double last = 0;
    uint32_t count = 0;
    base::TimePoint last_time;
  };
  struct EntityState {
    uint64_t window = 0;     // the window that last wrote it
    uint64_t cycle = 0;      // the cycle that last wrote it
    uint32_t cycle_pos = 0;  // its index in cycle_.entities while `cycle` is the current one
    model::Entity merged;    // the latest cycle's version, for the window
  };

  // The slot of a series, or kNoSlot when there is none. One probe sequence of the hash table.
  static constexpr uint32_t kNoSlot = UINT32_MAX;
  uint32_t Find(uint64_t hash, const model::MetricDesc& metric, std::string_view entity_id,
                const model::Labels& labels) const;
  uint32_t Insert(uint64_t hash, const model::MetricDesc& metric, std::string_view entity_id,
                  const model::Labels& labels);
  // Rebuilds the hash table over slots_ with room for `slots` entries.
  void Rehash(size_t slots);
  // Forgets the series and entities that the closed window did not write.
  void ForgetUnwritten();

  size_t max_series_;
  size_t max_steps_;
  base::TimePoint cycle_time_;
  base::TimePoint window_start_;
  bool window_started_ = false;
  uint64_t sequence_ = 0;
  uint64_t cycle_id_ = 0;   // current cycle, from 1
  uint64_t window_id_ = 1;  // current window, from 1

  // The cycle being written and the last complete one; swapped by EndCycle so that each reuses
  // the storage of the cycle before the last. Elements past the counts are left from then and
  // are overwritten or trimmed.
  model::Frame cycle_;
  model::Frame latest_;
  size_t cycle_series_count_ = 0;
  size_t cycle_entity_count_ = 0;

  std::vector<Slot> slots_;
  std::vector<uint32_t> table_;  // open addressing, linear probing: slot index + 1, 0 = empty
  std::vector<uint32_t> window_order_;  // slots in the order the window first wrote them
  std::unordered_map<std::string, EntityState> entities_;
  std::vector<EntityState*> window_entities_;  // in the order the window first wrote them
  std::vector<model::Event> window_events_;
  std::vector<model::TrainingStep> window_steps_;

  uint64_t dropped_series_total_ = 0;
  uint64_t dropped_values_total_ = 0;
  uint64_t dropped_steps_total_ = 0;
};

}  // namespace warpscope::agent

#endif  // WARPSCOPE_AGENT_AGGREGATOR_H_

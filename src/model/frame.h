// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_MODEL_FRAME_H_
#define WARPSCOPE_MODEL_FRAME_H_

#include <cstdint>
#include <string>
#include <vector>

#include "base/time.h"
#include "model/entity.h"
#include "model/labels.h"
#include "model/metric.h"

namespace warpscope::model {

// One series over one window: its identity plus the statistics of the samples taken in it.
// For counters avg/min/max equal `last`.
struct SeriesPoint {
  const MetricDesc* metric = nullptr;
  std::string entity;  // Entity::id
  Labels labels;       // dimensions beyond the entity
  double avg = 0;
  double min = 0;
  double max = 0;
  double last = 0;
  uint32_t count = 0;  // samples aggregated
  base::TimePoint last_time;
};

// Something that happened at an instant: an XID error, a GPU lost, a process start.
struct Event {
  base::TimePoint time;
  std::string entity;
  std::string kind;     // "xid", "gpu_lost", "gpu_recovered", ...
  int64_t code = 0;     // XID number for "xid"
  std::string message;  // human text ("Graphics Engine Exception")
  Labels attributes;
};

// The unit of export: every entity seen, every series and every event of one window
// [start, end). Produced by the agent's aggregator; consumed by the exporters (the server
// receives it as the batch the server exporter encodes, proto/warpscope/v1/batch.proto, and
// stores it with the same entities, metric descriptions and labels).
struct Frame {
  base::TimePoint start;
  base::TimePoint end;
  uint64_t sequence = 0;
  std::vector<Entity> entities;
  std::vector<SeriesPoint> series;
  std::vector<Event> events;

  const Entity* FindEntity(std::string_view id) const {
    for (const auto& e : entities) {
      if (e.id == id) return &e;
    }
    return nullptr;
  }
};

}  // namespace warpscope::model

#endif  // WARPSCOPE_MODEL_FRAME_H_

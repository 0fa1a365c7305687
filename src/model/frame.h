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

// One training step of one rank, as the agent's step tracker found it (proto TrainingStep in
// proto/warpscope/v1/batch.proto has the fields' meaning; docs/design/training.md).
struct TrainingStep {
  std::string entity;  // the rank's process entity id
  std::string job;     // job.id, else "comm-<comm>"
  std::string comm;    // communicator id, 16 hex digits; "" without NCCL
  uint32_t rank = 0;
  uint32_t world_size = 0;
  int64_t step = 0;
  base::TimePoint start;
  base::TimePoint end;
  int64_t compute_ns = -1;  // -1: unknown (no kernel records)
  int64_t comm_ns = 0;
  int64_t overlap_ns = 0;
  int64_t last_collective_offset_ns = -1;  // -1: no large collective in the step
  int64_t nccl_ns = 0;
  uint32_t collectives = 0;
  uint64_t bus_bytes = 0;
  std::string source;  // "nvtx" or "collectives"
  friend bool operator==(const TrainingStep&, const TrainingStep&) = default;
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
  std::vector<TrainingStep> steps;  // steps that ended in the window

  const Entity* FindEntity(std::string_view id) const {
    for (const auto& e : entities) {
      if (e.id == id) return &e;
    }
    return nullptr;
  }
};

}  // namespace warpscope::model

#endif  // WARPSCOPE_MODEL_FRAME_H_

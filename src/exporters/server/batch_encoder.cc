// SPDX-License-Identifier: Apache-2.0
#include "exporters/server/batch_encoder.h"

#include <string_view>
#include <unordered_map>

namespace warpscope::exporters {

namespace {

v1::EntityKind ToProto(model::EntityKind kind) {
  switch (kind) {
    case model::EntityKind::kHost:
      return v1::ENTITY_KIND_HOST;
    case model::EntityKind::kGpu:
      return v1::ENTITY_KIND_GPU;
    case model::EntityKind::kMigInstance:
      return v1::ENTITY_KIND_MIG;
    case model::EntityKind::kProcess:
      return v1::ENTITY_KIND_PROCESS;
    case model::EntityKind::kExecutable:
      return v1::ENTITY_KIND_EXECUTABLE;
    case model::EntityKind::kContainer:
      return v1::ENTITY_KIND_CONTAINER;
    case model::EntityKind::kCluster:  // findings only: never sent
      return v1::ENTITY_KIND_UNSPECIFIED;
  }
  return v1::ENTITY_KIND_UNSPECIFIED;
}

v1::MetricKind ToProto(model::MetricKind kind) {
  switch (kind) {
    case model::MetricKind::kGauge:
      return v1::METRIC_KIND_GAUGE;
    case model::MetricKind::kCounter:
      return v1::METRIC_KIND_COUNTER;
  }
  return v1::METRIC_KIND_UNSPECIFIED;
}

template <typename RepeatedKeyValue>
void AddLabels(const model::Labels& labels, RepeatedKeyValue* out) {
  out->Reserve(static_cast<int>(labels.size()));
  for (const auto& [k, v] : labels) {
    v1::KeyValue* kv = out->Add();
    kv->set_key(k);
    kv->set_value(v);
  }
}

int64_t UnixNanos(base::TimePoint t) { return base::ToUnixNanos(t); }

}  // namespace

v1::Batch BatchEncoder::ToProto(const model::Frame& frame, uint64_t sequence) const {
  v1::Batch batch;
  batch.set_version(kBatchVersion);
  batch.set_agent_id(options_.agent_id);
  batch.set_sequence(sequence);
  batch.set_start_unix_nano(UnixNanos(frame.start));
  batch.set_end_unix_nano(UnixNanos(frame.end));
  if (!options_.host.empty()) {
    batch.set_host(options_.host);
  } else {
    for (const model::Entity& e : frame.entities) {
      if (e.kind == model::EntityKind::kHost) {
        batch.set_host(e.id);
        break;
      }
    }
  }
  for (const auto& [k, v] : options_.tags) {
    v1::KeyValue* kv = batch.add_tags();
    kv->set_key(k);
    kv->set_value(v);
  }

  batch.mutable_entities()->Reserve(static_cast<int>(frame.entities.size()));
  for (const model::Entity& e : frame.entities) {
    v1::Entity* out = batch.add_entities();
    out->set_kind(exporters::ToProto(e.kind));
    out->set_id(e.id);
    out->set_parent(e.parent);
    AddLabels(e.attributes, out->mutable_attributes());
  }

  // Keyed by the canonical key, which is unique per metric; pointers would also do (descs live
  // in static tables) but two tables describing one key must still share one index.
  std::unordered_map<std::string_view, uint32_t> metric_index;
  batch.mutable_series()->Reserve(static_cast<int>(frame.series.size()));
  for (const model::SeriesPoint& s : frame.series) {
    if (s.metric == nullptr) {
      continue;
    }
    const model::MetricDesc& desc = *s.metric;
    auto [it, inserted] =
        metric_index.try_emplace(desc.key, static_cast<uint32_t>(batch.metrics_size()));
    if (inserted) {
      v1::Metric* m = batch.add_metrics();
      m->set_key(std::string(desc.key));
      m->set_kind(exporters::ToProto(desc.kind));
      m->set_unit(std::string(desc.unit));
      m->set_help(std::string(desc.help));
      m->set_prom_name(std::string(desc.prom_name));
      m->set_prom_scale(desc.prom_scale);
      m->set_otel_name(std::string(desc.otel_name));
      m->set_entity_kind(exporters::ToProto(desc.entity));
    }
    v1::Series* out = batch.add_series();
    out->set_metric(it->second);
    out->set_entity(s.entity);
    AddLabels(s.labels, out->mutable_labels());
    out->set_avg(s.avg);
    out->set_min(s.min);
    out->set_max(s.max);
    out->set_last(s.last);
    out->set_count(s.count);
    out->set_last_time_unix_nano(UnixNanos(s.last_time));
  }

  batch.mutable_events()->Reserve(static_cast<int>(frame.events.size()));
  for (const model::Event& e : frame.events) {
    v1::Event* out = batch.add_events();
    out->set_time_unix_nano(UnixNanos(e.time));
    out->set_entity(e.entity);
    out->set_kind(e.kind);
    out->set_code(e.code);
    out->set_message(e.message);
    AddLabels(e.attributes, out->mutable_attributes());
  }

  batch.mutable_steps()->Reserve(static_cast<int>(frame.steps.size()));
  for (const model::TrainingStep& s : frame.steps) {
    v1::TrainingStep* out = batch.add_steps();
    out->set_entity(s.entity);
    out->set_job(s.job);
    out->set_comm(s.comm);
    out->set_rank(s.rank);
    out->set_world_size(s.world_size);
    out->set_step(s.step);
    out->set_start_unix_nano(UnixNanos(s.start));
    out->set_end_unix_nano(UnixNanos(s.end));
    out->set_compute_ns(s.compute_ns);
    out->set_comm_ns(s.comm_ns);
    out->set_overlap_ns(s.overlap_ns);
    out->set_last_collective_offset_ns(s.last_collective_offset_ns);
    out->set_nccl_ns(s.nccl_ns);
    out->set_collectives(s.collectives);
    out->set_bus_bytes(s.bus_bytes);
    out->set_source(s.source);
  }
  return batch;
}

std::string BatchEncoder::Encode(const model::Frame& frame, uint64_t sequence) const {
  std::string bytes;
  ToProto(frame, sequence).SerializeToString(&bytes);
  return bytes;
}

}  // namespace warpscope::exporters

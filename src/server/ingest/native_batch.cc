// SPDX-License-Identifier: Apache-2.0
#include "server/ingest/native_batch.h"

#include <cmath>
#include <unordered_set>
#include <vector>

#include "server/ingest/request_body.h"
#include "warpscope/v1/batch.pb.h"

namespace warpscope::server {
namespace {

using base::Error;
using base::InvalidArgument;
using base::Result;

namespace pb = ::warpscope::v1;

constexpr BodyMessage kBatchBody{
    .what = "batch",
    .size_note = "",
    .protobuf = "warpscope.v1.Batch protobuf message (strings must be UTF-8)",
    .json = "JSON for warpscope.v1.Batch"};

Result<model::EntityKind> ToEntityKind(int kind) {
  switch (kind) {
    case pb::ENTITY_KIND_HOST:
      return model::EntityKind::kHost;
    case pb::ENTITY_KIND_GPU:
      return model::EntityKind::kGpu;
    case pb::ENTITY_KIND_MIG:
      return model::EntityKind::kMigInstance;
    case pb::ENTITY_KIND_PROCESS:
      return model::EntityKind::kProcess;
    case pb::ENTITY_KIND_EXECUTABLE:
      return model::EntityKind::kExecutable;
    case pb::ENTITY_KIND_CONTAINER:
      return model::EntityKind::kContainer;
    default:
      return Error(InvalidArgument("entity kind {} is not one of 1..6 (host .. container)", kind));
  }
}

Result<model::Labels> ToLabels(const google::protobuf::RepeatedPtrField<pb::KeyValue>& kvs,
                               std::string_view what) {
  model::Labels labels;
  for (const pb::KeyValue& kv : kvs) {
    if (kv.key().empty()) {
      return Error(InvalidArgument("{}: a label has an empty key", what));
    }
    labels.Set(kv.key(), kv.value());
  }
  return labels;
}

std::string_view NonFiniteField(const pb::Series& s) {
  if (!std::isfinite(s.avg())) {
    return "avg";
  }
  if (!std::isfinite(s.min())) {
    return "min";
  }
  if (!std::isfinite(s.max())) {
    return "max";
  }
  if (!std::isfinite(s.last())) {
    return "last";
  }
  return {};
}

Result<std::vector<model::TrainingStep>> ToSteps(
    const google::protobuf::RepeatedPtrField<pb::TrainingStep>& in,
    const std::unordered_set<std::string_view>& entity_ids, std::string_view where) {
  if (in.size() > static_cast<int>(kMaxStepsPerBatch)) {
    return Error(InvalidArgument(
        "{}: {} training steps; a batch carries at most {}: shorten the agent's export interval",
        where, in.size(), kMaxStepsPerBatch));
  }
  std::vector<model::TrainingStep> out;
  out.reserve(static_cast<size_t>(in.size()));
  for (int i = 0; i < in.size(); ++i) {
    const pb::TrainingStep& s = in.Get(i);
    if (s.job().empty()) {
      return Error(InvalidArgument("{}: step {} has an empty job", where, i));
    }
    if (entity_ids.count(s.entity()) == 0) {
      return Error(InvalidArgument(
          "{}: step {} of job \"{}\" refers to entity \"{}\", which is neither the host nor one "
          "of the batch's entities",
          where, i, s.job(), s.entity()));
    }
    if (s.end_unix_nano() < s.start_unix_nano()) {
      return Error(
          InvalidArgument("{}: step {} of job \"{}\" ends ({} ns) before it starts ({} ns)", where,
                          i, s.job(), s.end_unix_nano(), s.start_unix_nano()));
    }
    if (s.step() < 0) {
      return Error(InvalidArgument("{}: step {} of job \"{}\" has a negative step number {}", where,
                                   i, s.job(), s.step()));
    }
    if (s.source() != "nvtx" && s.source() != "collectives") {
      return Error(InvalidArgument(
          "{}: step {} of job \"{}\" has source \"{}\"; use \"nvtx\" or \"collectives\"", where, i,
          s.job(), s.source()));
    }
    model::TrainingStep step;
    step.entity = s.entity();
    step.job = s.job();
    step.comm = s.comm();
    step.rank = s.rank();
    step.world_size = s.world_size();
    step.step = s.step();
    step.start = base::FromUnixNanos(s.start_unix_nano());
    step.end = base::FromUnixNanos(s.end_unix_nano());
    step.compute_ns = s.compute_ns();
    step.comm_ns = s.comm_ns();
    step.overlap_ns = s.overlap_ns();
    step.last_collective_offset_ns = s.last_collective_offset_ns();
    step.nccl_ns = s.nccl_ns();
    step.collectives = s.collectives();
    step.bus_bytes = s.bus_bytes();
    step.source = s.source();
    out.push_back(std::move(step));
  }
  return out;
}

Result<DecodedBatch> Convert(const pb::Batch& in) {
  if (in.version() != kNativeBatchVersion) {
    return Error(InvalidArgument(
        "batch version {} is not supported: this server reads version {}; {}", in.version(),
        kNativeBatchVersion,
        in.version() == 0 ? "set Batch.version" : "upgrade the server or downgrade the agent"));
  }
  if (in.agent_id().empty()) {
    return Error(InvalidArgument("batch: agent_id is empty: every agent needs an id"));
  }
  const std::string where = fmt::format("batch {} from agent {}", in.sequence(), in.agent_id());
  if (in.host().empty()) {
    return Error(InvalidArgument("{}: host is empty", where));
  }
  if (in.end_unix_nano() < in.start_unix_nano()) {
    return Error(InvalidArgument("{}: window ends ({} ns) before it starts ({} ns)", where,
                                 in.end_unix_nano(), in.start_unix_nano()));
  }

  DecodedBatch out;
  IngestBatch& b = out.batch;
  b.agent_id = in.agent_id();
  b.sequence = in.sequence();
  b.start = base::FromUnixNanos(in.start_unix_nano());
  b.end = base::FromUnixNanos(in.end_unix_nano());
  b.host = in.host();
  WARPSCOPE_ASSIGN_OR_RETURN(b.tags, ToLabels(in.tags(), where + ": tags"));

  std::unordered_set<std::string_view> entity_ids{in.host()};
  b.entities.reserve(static_cast<size_t>(in.entities_size()));
  for (int i = 0; i < in.entities_size(); ++i) {
    const pb::Entity& e = in.entities(i);
    if (e.id().empty()) {
      return Error(InvalidArgument("{}: entity {} has an empty id", where, i));
    }
    auto kind = ToEntityKind(e.kind());
    if (!kind) {
      return Error(kind.error().WithContext(fmt::format("{}: entity \"{}\"", where, e.id())));
    }
    model::Entity entity;
    entity.kind = *kind;
    entity.id = e.id();
    entity.parent = e.parent();
    WARPSCOPE_ASSIGN_OR_RETURN(entity.attributes,
                               ToLabels(e.attributes(), fmt::format("{}: entity \"{}\"", where,
                                                                    e.id())));
    b.entities.push_back(std::move(entity));
    entity_ids.insert(e.id());
  }

  b.metrics.reserve(static_cast<size_t>(in.metrics_size()));
  for (int i = 0; i < in.metrics_size(); ++i) {
    const pb::Metric& m = in.metrics(i);
    if (m.key().empty()) {
      return Error(InvalidArgument("{}: metric {} has an empty key", where, i));
    }
    MetricInfo info;
    info.key = m.key();
    if (m.kind() == pb::METRIC_KIND_GAUGE) {
      info.kind = model::MetricKind::kGauge;
    } else if (m.kind() == pb::METRIC_KIND_COUNTER) {
      info.kind = model::MetricKind::kCounter;
    } else {
      return Error(InvalidArgument("{}: metric \"{}\" has kind {}; use 1 (gauge) or 2 (counter)",
                                   where, m.key(), static_cast<int>(m.kind())));
    }
    auto kind = ToEntityKind(m.entity_kind());
    if (!kind) {
      return Error(kind.error().WithContext(
          fmt::format("{}: metric \"{}\" entity_kind", where, m.key())));
    }
    info.entity_kind = *kind;
    info.unit = m.unit();
    info.help = m.help();
    info.prom_name = m.prom_name();
    info.prom_scale = m.prom_scale() == 0 ? 1.0 : m.prom_scale();
    info.otel_name = m.otel_name();
    b.metrics.push_back(std::move(info));
  }

  b.series.reserve(static_cast<size_t>(in.series_size()));
  for (int i = 0; i < in.series_size(); ++i) {
    const pb::Series& s = in.series(i);
    if (s.metric() >= static_cast<uint32_t>(in.metrics_size())) {
      return Error(InvalidArgument(
          "{}: series {} refers to metric index {} but the batch describes {} metrics", where, i,
          s.metric(), in.metrics_size()));
    }
    const std::string& key = in.metrics(static_cast<int>(s.metric())).key();
    if (entity_ids.count(s.entity()) == 0) {
      return Error(InvalidArgument(
          "{}: series {} of \"{}\" refers to entity \"{}\", which is neither the host nor one of "
          "the batch's entities",
          where, i, key, s.entity()));
    }
    std::string_view bad = NonFiniteField(s);
    if (!bad.empty()) {
      if (out.rejected_series == 0) {
        out.first_rejection =
            fmt::format("{}: series {} of \"{}\" on \"{}\": {} is not a finite number", where, i,
                        key, s.entity(), bad);
      }
      ++out.rejected_series;
      continue;
    }
    IngestSeries series;
    series.metric = key;
    series.entity = s.entity();
    WARPSCOPE_ASSIGN_OR_RETURN(
        series.labels, ToLabels(s.labels(), fmt::format("{}: series {} of \"{}\"", where, i, key)));
    series.avg = s.avg();
    series.min = s.min();
    series.max = s.max();
    series.last = s.last();
    series.count = s.count() == 0 ? 1 : s.count();
    b.series.push_back(std::move(series));
  }

  b.events.reserve(static_cast<size_t>(in.events_size()));
  for (int i = 0; i < in.events_size(); ++i) {
    const pb::Event& e = in.events(i);
    model::Event event;
    event.time = base::FromUnixNanos(e.time_unix_nano());
    event.entity = e.entity().empty() ? in.host() : e.entity();
    event.kind = e.kind();
    event.code = e.code();
    event.message = e.message();
    WARPSCOPE_ASSIGN_OR_RETURN(event.attributes,
                               ToLabels(e.attributes(), fmt::format("{}: event {}", where, i)));
    b.events.push_back(std::move(event));
  }

  WARPSCOPE_ASSIGN_OR_RETURN(b.steps, ToSteps(in.steps(), entity_ids, where));
  return out;
}

}  // namespace

Result<DecodedBatch> DecodeNativeBatchProto(std::string_view bytes) {
  pb::Batch batch;
  WARPSCOPE_RETURN_IF_ERROR(ParseProtobufBody(bytes, batch, kBatchBody));
  return Convert(batch);
}

Result<DecodedBatch> DecodeNativeBatchJson(std::string_view json) {
  pb::Batch batch;
  WARPSCOPE_RETURN_IF_ERROR(ParseJsonBody(json, batch, kBatchBody));
  return Convert(batch);
}

}  // namespace warpscope::server

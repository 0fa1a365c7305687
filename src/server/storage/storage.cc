// SPDX-License-Identifier: Apache-2.0
#include "server/storage/storage.h"

#include <unordered_set>

namespace warpscope::server {

std::string_view AggregationName(Aggregation a) {
  switch (a) {
    case Aggregation::kAvg:
      return "avg";
    case Aggregation::kMin:
      return "min";
    case Aggregation::kMax:
      return "max";
    case Aggregation::kLast:
      return "last";
    case Aggregation::kRate:
      return "rate";
  }
  return "avg";
}

base::Result<Aggregation> ParseAggregation(std::string_view name) {
  for (Aggregation a : {Aggregation::kAvg, Aggregation::kMin, Aggregation::kMax,
                        Aggregation::kLast, Aggregation::kRate}) {
    if (AggregationName(a) == name) {
      return a;
    }
  }
  return base::Error(base::InvalidArgument(
      "aggregation \"{}\" is unknown: use one of avg, min, max, last, rate", name));
}

base::Result<model::EntityKind> ParseEntityKind(std::string_view name) {
  for (model::EntityKind k :
       {model::EntityKind::kHost, model::EntityKind::kGpu, model::EntityKind::kMigInstance,
        model::EntityKind::kProcess, model::EntityKind::kExecutable,
        model::EntityKind::kContainer}) {
    if (model::EntityKindName(k) == name) {
      return k;
    }
  }
  return base::Error(base::InvalidArgument(
      "entity kind \"{}\" is unknown: use one of host, gpu, mig, process, executable, container",
      name));
}

std::string_view ResolutionName(Resolution r) {
  switch (r) {
    case Resolution::kRaw:
      return "raw";
    case Resolution::kMinute:
      return "1m";
    case Resolution::kHour:
      return "1h";
  }
  return "raw";
}

base::Status StorageOptions::Validate() const {
  if (max_series_per_host == 0) {
    return base::InvalidArgument("storage: max_series_per_host must be at least 1");
  }
  if (series_active_window <= base::Duration::zero()) {
    return base::InvalidArgument("storage: series_active_window must be positive");
  }
  if (raw_retention < std::chrono::hours(1)) {
    return base::InvalidArgument("storage: raw retention {} is too short: keep at least 1h",
                                 base::FormatDuration(raw_retention));
  }
  if (minute_retention < raw_retention || hour_retention < minute_retention) {
    return base::InvalidArgument(
        "storage: retention must grow with the resolution (raw {} <= 1m {} <= 1h {})",
        base::FormatDuration(raw_retention), base::FormatDuration(minute_retention),
        base::FormatDuration(hour_retention));
  }
  if (event_retention <= base::Duration::zero() || profile_retention <= base::Duration::zero()) {
    return base::InvalidArgument("storage: event and profile retention must be positive");
  }
  if (step_retention <= base::Duration::zero()) {
    return base::InvalidArgument("storage: step retention {} must be positive",
                                 base::FormatDuration(step_retention));
  }
  if (rollup_delay < base::Duration::zero()) {
    return base::InvalidArgument("storage: rollup_delay must not be negative");
  }
  return base::OkStatus();
}

BatchesWritten Storage::WriteBatches(std::span<const IngestBatch> batches) {
  BatchesWritten out;
  for (const IngestBatch& batch : batches) {
    base::Result<WriteResult> written = WriteBatch(batch);
    if (!written) {
      out.status = written.error();
      break;
    }
    out.results.push_back(*written);
  }
  return out;
}

base::Result<std::vector<StoredStep>> Storage::QuerySteps(const StepQuery&) {
  return base::Error(base::Unsupported("this storage backend keeps no training steps"));
}

base::Result<std::vector<JobRecord>> Storage::ListJobs(const JobQuery&) {
  return base::Error(base::Unsupported("this storage backend keeps no training steps"));
}

base::Status CheckProfile(const ProfileMeta& meta, std::string_view data, size_t max_bytes) {
  if (meta.host.empty()) {
    return base::InvalidArgument("profile: host is empty");
  }
  if (meta.kind.empty()) {
    return base::InvalidArgument("profile from {}: kind is empty (\"cpu\", \"gpu\")", meta.host);
  }
  if (meta.end < meta.start) {
    return base::InvalidArgument("profile from {}: window ends before it starts", meta.host);
  }
  if (data.size() > max_bytes) {
    return base::InvalidArgument(
        "profile from {}: {} bytes exceeds the limit of {} bytes; profile a shorter window",
        meta.host, data.size(), max_bytes);
  }
  return base::OkStatus();
}

base::Status CheckIngestBatch(const IngestBatch& batch,
                              const std::function<bool(const std::string&)>& known_metric) {
  std::unordered_set<std::string_view> described;
  for (const MetricInfo& m : batch.metrics) {
    if (m.key.empty()) {
      return base::InvalidArgument("batch {} from agent {}: a metric has an empty key",
                                   batch.sequence, batch.agent_id);
    }
    described.insert(m.key);
  }
  for (const model::Entity& e : batch.entities) {
    if (e.id.empty()) {
      return base::InvalidArgument("batch {} from agent {}: an entity has an empty id",
                                   batch.sequence, batch.agent_id);
    }
  }
  for (const IngestSeries& s : batch.series) {
    if (described.count(s.metric) == 0 && !known_metric(s.metric)) {
      return base::InvalidArgument(
          "batch {} from agent {}: series of metric \"{}\" but the metric is not described; "
          "send its description in the batch",
          batch.sequence, batch.agent_id, s.metric);
    }
    if (s.entity.empty()) {
      return base::InvalidArgument(
          "batch {} from agent {}: a series of metric \"{}\" has an empty entity id",
          batch.sequence, batch.agent_id, s.metric);
    }
  }
  for (size_t i = 0; i < batch.steps.size(); ++i) {
    const model::TrainingStep& s = batch.steps[i];
    if (s.job.empty() || s.entity.empty()) {
      return base::InvalidArgument("batch {} from agent {}: step {} has an empty job or entity",
                                   batch.sequence, batch.agent_id, i);
    }
    if (s.end < s.start) {
      return base::InvalidArgument("batch {} from agent {}: step {} ends before it starts",
                                   batch.sequence, batch.agent_id, i);
    }
  }
  return base::OkStatus();
}

}  // namespace warpscope::server

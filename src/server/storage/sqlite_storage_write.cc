// SPDX-License-Identifier: Apache-2.0
// SqliteStorage's write path: WriteBatch (validation, dedup, interning of hosts, metrics,
// entities and series, events, training steps, and staging of the samples) and WriteProfile.
#include <algorithm>
#include <cmath>
#include <iterator>
#include <unordered_set>

#include "base/logging.h"
#include "server/storage/label_codec.h"
#include "server/storage/sqlite_db.h"
#include "server/storage/sqlite_storage.h"
#include "server/storage/sqlite_storage_internal.h"

namespace warpscope::server {
namespace {

using base::Error;
using base::Result;
using base::Status;
using sqlite::Statement;
using storage_internal::EntityKey;
using storage_internal::kDirtyMinute;
using storage_internal::kLastSeenPersistMs;
using storage_internal::kMetaFirstWindow;
using storage_internal::MetricKindName;
using storage_internal::ToMs;

bool Finite(const IngestSeries& s) {
  return std::isfinite(s.avg) && std::isfinite(s.min) && std::isfinite(s.max) &&
         std::isfinite(s.last);
}

}  // namespace

Result<WriteResult> SqliteStorage::WriteBatch(const IngestBatch& batch) {
  BatchesWritten written = WriteBatches(std::span<const IngestBatch>(&batch, 1));
  if (!written.status.ok()) {
    return Error(std::move(written.status));
  }
  return written.results.front();
}

BatchesWritten SqliteStorage::WriteBatches(std::span<const IngestBatch> batches) {
  PendingWrite me;
  me.batches = batches;
  if (batches.empty()) {
    return std::move(me.written);
  }
  ResolveSeries(me);
  std::unique_lock queue(queue_mu_);
  pending_.push_back(&me);
  if (write_thread_.joinable()) {
    write_wanted_.notify_one();
    queue_cv_.wait(queue, [&] { return me.done; });
    return std::move(me.written);
  }
  // Whoever finds no leader leads: its transaction takes every batch queued until it starts.
  queue_cv_.wait(queue, [&] { return me.done || !leading_; });
  if (!me.done) {
    leading_ = true;
    queue.unlock();
    LeadGroup();
  }
  return std::move(me.written);
}

void SqliteStorage::WriteLoop() {
  std::unique_lock queue(queue_mu_);
  while (true) {
    write_wanted_.wait(queue, [&] { return stopping_writes_ || !pending_.empty(); });
    if (pending_.empty()) {
      return;  // stopping, nothing left
    }
    queue.unlock();
    LeadGroup();
    queue.lock();
  }
}

void SqliteStorage::LeadGroup() {
  std::unique_lock lock(write_mu_);
  // Bounded memory: while a move runs, at most four times the threshold waits behind it.
  const size_t stage_max = StageMax();
  move_done_.wait(lock, [&] { return !moving_ || staged_.size() < 4 * stage_max; });
  std::vector<PendingWrite*> group;
  {
    std::lock_guard queue(queue_mu_);
    group.swap(pending_);
  }
  WriteGroup(group, lock);
  const bool full = staged_.size() >= stage_max && !moving_;
  if (full && !mover_.joinable()) {
    // Without a mover thread the group's writes move the stage they filled before they return
    // (tests count head chunks right after a write). The batches are committed; a failure here
    // leaves the samples staged for the next try.
    if (Status moved = MoveStaged(lock); !moved.ok()) {
      WARPSCOPE_LOG_EVERY_N(ERROR, 100, "{}: moving staged samples: {}", path_, moved.ToString());
    }
  }
  {
    std::lock_guard queue(queue_mu_);
    for (PendingWrite* p : group) {
      p->done = true;  // the waiting callers may return (and free *p) from here on
    }
    leading_ = false;
  }
  queue_cv_.notify_all();
  if (full && mover_.joinable()) {
    move_wanted_.notify_one();
  }
}

void SqliteStorage::WriteGroup(const std::vector<PendingWrite*>& group,
                               std::unique_lock<std::mutex>& lock) {
  Status shared = WriteMembers(group, lock);
  if (shared.ok()) {
    return;
  }
  if (group.size() == 1 && group.front()->batches.size() == 1) {
    group.front()->written.status = std::move(shared);
    return;
  }
  for (PendingWrite* p : group) {
    for (const IngestBatch& batch : p->batches) {
      PendingWrite one;
      one.batches = std::span<const IngestBatch>(&batch, 1);
      PendingWrite* alone = &one;
      Status st = WriteMembers(std::span<PendingWrite* const>(&alone, 1), lock);
      if (st.ok()) {
        st = std::move(one.written.status);
      }
      if (!st.ok()) {
        p->written.status = std::move(st);
        break;
      }
      p->written.results.push_back(one.written.results.front());
    }
  }
}

Status SqliteStorage::WriteMembers(std::span<PendingWrite* const> members,
                                   std::unique_lock<std::mutex>& lock) {
  StagedBatch staged;
  staged.last_id = staged_last_id_;
  std::vector<BatchesWritten> written(members.size());
  Status st = sqlite::InWriteTransaction(*writer_, [&]() -> Status {
    for (size_t m = 0; m < members.size(); ++m) {
      const PendingWrite& member = *members[m];
      const bool resolved = !member.resolved.empty() && member.generation == series_generation_;
      for (size_t b = 0; b < member.batches.size(); ++b) {
        const IngestBatch& batch = member.batches[b];
        // Checked here, after the batches before it: they may declare its metrics.
        if (Status check = CheckBatch(batch); !check.ok()) {
          written[m].status = std::move(check);
          break;
        }
        WARPSCOPE_RETURN_IF_ERROR(StageBatch(batch, resolved ? &member.resolved[b] : nullptr,
                                             written[m].results.emplace_back(), staged));
      }
    }
    // The samples: appended to staged_samples as one blob (a few sequential pages; about 12
    // bytes a sample, staged_codec.h), moved into the head later in bulk.
    if (staged.rows.empty()) {
      return base::OkStatus();
    }
    std::string blob;
    storage_internal::EncodeStaged(staged.rows, blob);
    WARPSCOPE_RETURN_IF_ERROR(
        writer_->Run("INSERT INTO staged_samples(samples) VALUES(?1)", sqlite::Blob{blob}));
    staged.last_id = writer_->last_insert_rowid();
    return base::OkStatus();
  });
  if (!st.ok()) {
    // The transaction rolled back; the caches may hold ids it created. A move in progress
    // finishes first, so the staged samples reloaded are exactly those still in the table.
    move_done_.wait(lock, [&] { return !moving_; });
    ReloadAfterFailedWrite();
    return st;
  }
  staged_last_id_ = staged.last_id;
  recent_.AddAll(staged.rows.size(), [&](size_t i) {
    const StagedSample& r = staged.rows[i];
    return std::pair(r.series_id, Row{r.start_ms, r.avg, r.min, r.max, r.last, r.count});
  });
  if (staged_.capacity() == 0) {
    // Grown once to the threshold, not by doubling copies on the writer's thread.
    staged_.reserve(StageMax() + staged.rows.size());
  }
  staged_.insert(staged_.end(), staged.rows.begin(), staged.rows.end());
  staged_count_ += staged.rows.size();
  for (size_t m = 0; m < members.size(); ++m) {
    members[m]->written = std::move(written[m]);
  }
  return base::OkStatus();
}

Status SqliteStorage::CheckBatch(const IngestBatch& batch) {
  if (batch.agent_id.empty()) {
    return base::InvalidArgument("batch: agent_id is empty: every agent needs an id");
  }
  if (batch.host.empty()) {
    return base::InvalidArgument("batch from agent {}: host is empty", batch.agent_id);
  }
  if (batch.end < batch.start) {
    return base::InvalidArgument("batch {} from agent {}: window ends before it starts",
                                 batch.sequence, batch.agent_id);
  }
  if (raw_cutoff_ != 0 && ToMs(batch.start) < raw_cutoff_) {
    return base::InvalidArgument(
        "batch {} from agent {}: window starts at {} ms, before the oldest raw data kept ({} "
        "ms, raw retention {}); it cannot be stored",
        batch.sequence, batch.agent_id, ToMs(batch.start), raw_cutoff_,
        base::FormatDuration(options_.storage.raw_retention));
  }
  return CheckIngestBatch(batch,
                          [this](const std::string& key) { return metrics_.count(key) > 0; });
}

void SqliteStorage::ReloadAfterFailedWrite() {
  Status reload = LoadState();
  if (!reload.ok()) {
    WARPSCOPE_LOG(ERROR, "{}: reloading caches after a failed write: {}", path_, reload.ToString());
  }
}

void SqliteStorage::ResolveSeries(PendingWrite& write) {
  std::shared_lock lock(series_mu_);
  if (series_.empty()) {
    return;
  }
  write.generation = series_generation_;
  write.resolved.resize(write.batches.size());
  std::string key;
  for (size_t b = 0; b < write.batches.size(); ++b) {
    const IngestBatch& batch = write.batches[b];
    std::vector<SeriesEntry*>& entries = write.resolved[b];
    entries.reserve(batch.series.size());
    for (const IngestSeries& s : batch.series) {
      key.clear();
      storage_internal::AppendSeriesKeyPrefix(key, batch.host, s.entity, s.metric);
      AppendEncodedLabels(key, s.labels);
      auto it = series_.find(key);
      entries.push_back(it == series_.end() ? nullptr : &it->second);
    }
  }
}

Status SqliteStorage::StageBatch(const IngestBatch& batch,
                                 const std::vector<SeriesEntry*>* resolved, WriteResult& result,
                                 StagedBatch& staged) {
  // Dedup on (agent, sequence, window start). A duplicate writes nothing (the agent exists
  // already: it sent the first copy).
  WARPSCOPE_ASSIGN_OR_RETURN(int64_t agent_id, InternAgent(batch.agent_id));
  WARPSCOPE_ASSIGN_OR_RETURN(result.duplicate, IsDuplicate(agent_id, batch));
  if (result.duplicate) {
    return base::OkStatus();
  }
  return WriteBatchRows(batch, resolved, agent_id, result, staged);
}

Result<bool> SqliteStorage::IsDuplicate(int64_t agent_id, const IngestBatch& batch) {
  WARPSCOPE_ASSIGN_OR_RETURN(
      Statement stmt,
      writer_->Prepare("SELECT start_ms FROM ingested WHERE agent_id = ?1 AND sequence = ?2"));
  stmt.Bind(agent_id, static_cast<int64_t>(batch.sequence));
  WARPSCOPE_ASSIGN_OR_RETURN(bool row, stmt.Step());
  return row && stmt.ColumnInt(0) == ToMs(batch.start);
}

Status SqliteStorage::WriteBatchRows(const IngestBatch& batch,
                                     const std::vector<SeriesEntry*>* resolved, int64_t agent_id,
                                     WriteResult& result, StagedBatch& staged) {
  const int64_t start_ms = ToMs(batch.start);
  const int64_t end_ms = ToMs(batch.end);
  WARPSCOPE_ASSIGN_OR_RETURN(int64_t host_id, InternHost(batch.host, batch.tags));
  for (const MetricInfo& info : batch.metrics) {
    WARPSCOPE_RETURN_IF_ERROR(UpsertMetric(info));
  }
  std::unordered_map<std::string_view, EntityEntry*> touched;
  WARPSCOPE_RETURN_IF_ERROR(TouchDeclaredEntities(batch, host_id, start_ms, end_ms, touched));

  std::string key;  // reused across series: most exist already, and the lookup allocates nothing
  for (size_t i = 0; i < batch.series.size(); ++i) {
    const IngestSeries& s = batch.series[i];
    auto metric = metrics_.find(s.metric);
    if (metric == metrics_.end()) {  // checked in WriteBatch
      return base::Internal("metric \"{}\" vanished from the cache", s.metric);
    }
    if (!Finite(s)) {
      ++result.invalid_series;
      continue;
    }
    auto entity_it = touched.find(s.entity);
    if (entity_it == touched.end()) {
      model::Entity implied{metric->second.info.entity_kind, s.entity, "", {}};
      WARPSCOPE_ASSIGN_OR_RETURN(EntityEntry * entry,
                                 TouchEntity(host_id, implied, false, start_ms, end_ms));
      entity_it = touched.emplace(s.entity, entry).first;
    }
    SeriesEntry* series = resolved != nullptr ? (*resolved)[i] : nullptr;
    if (series != nullptr) {
      WARPSCOPE_RETURN_IF_ERROR(TouchSeries(*series, end_ms));
    } else {
      WARPSCOPE_ASSIGN_OR_RETURN(series, InternSeries(s, batch.host, host_id, entity_it->second->id,
                                                      metric->second.id, start_ms, end_ms, key));
    }
    if (series == nullptr) {
      ++result.dropped_series;
      continue;
    }
    staged.rows.push_back(StagedSample{series->id, start_ms, end_ms - start_ms, s.avg, s.min, s.max,
                                       s.last, std::max<int64_t>(s.count, 1)});
    ++result.stored;
  }

  WARPSCOPE_RETURN_IF_ERROR(WriteEvents(batch, host_id));
  WARPSCOPE_RETURN_IF_ERROR(WriteSteps(batch, host_id));
  WARPSCOPE_RETURN_IF_ERROR(
      writer_->Run("INSERT OR REPLACE INTO ingested(agent_id, sequence, start_ms) "
                   "VALUES(?1, ?2, ?3)",
                   agent_id, static_cast<int64_t>(batch.sequence), start_ms));
  // A window behind the minute rollups (or the slice being rolled up now): its minute is
  // rebuilt for this host at the next Compact.
  if (start_ms < std::max(minute_watermark_, minute_building_to_)) {
    WARPSCOPE_RETURN_IF_ERROR(MarkDirty(kDirtyMinute, host_id, FloorTo(start_ms, kMinuteMs)));
  }
  // A window of a span already in chunks (or being moved): the next Compact merges it in.
  if (start_ms < std::max(chunk_watermark_, chunk_building_to_)) {
    late_chunked_ = true;
  }
  if (first_window_ms_ == 0 || start_ms < first_window_ms_) {
    WARPSCOPE_RETURN_IF_ERROR(SetMeta(kMetaFirstWindow, start_ms));
    first_window_ms_ = start_ms;
  }
  return base::OkStatus();
}

Status SqliteStorage::TouchDeclaredEntities(
    const IngestBatch& batch, int64_t host_id, int64_t start_ms, int64_t end_ms,
    std::unordered_map<std::string_view, EntityEntry*>& touched) {
  // The host (tags as attributes, its declared attributes winning), then the declared ones.
  model::Entity host_entity{model::EntityKind::kHost, batch.host, "", batch.tags};
  for (const model::Entity& e : batch.entities) {
    if (e.id == batch.host) {
      host_entity.kind = e.kind;
      host_entity.parent = e.parent;
      for (const auto& [k, v] : e.attributes) {
        host_entity.attributes.Set(k, v);
      }
    }
  }
  WARPSCOPE_ASSIGN_OR_RETURN(touched[batch.host],
                             TouchEntity(host_id, host_entity, true, start_ms, end_ms));
  for (const model::Entity& e : batch.entities) {
    if (touched.count(e.id) != 0) {
      continue;
    }
    WARPSCOPE_ASSIGN_OR_RETURN(touched[e.id], TouchEntity(host_id, e, true, start_ms, end_ms));
  }
  return base::OkStatus();
}

Result<SqliteStorage::SeriesEntry*> SqliteStorage::InternSeries(
    const IngestSeries& s, std::string_view host, int64_t host_id, int64_t entity_row,
    int64_t metric_id, int64_t start_ms, int64_t end_ms, std::string& key) {
  // The series key as AppendSeriesKeyPrefix and the encoded labels make it, in the caller's
  // buffer.
  key.clear();
  storage_internal::AppendSeriesKeyPrefix(key, host, s.entity, s.metric);
  const size_t labels_at = key.size();
  AppendEncodedLabels(key, s.labels);
  auto it = series_.find(key);
  if (it != series_.end()) {
    WARPSCOPE_RETURN_IF_ERROR(TouchSeries(it->second, end_ms));
    return &it->second;
  }
  size_t& active = active_series_[host_id];
  if (active >= options_.storage.max_series_per_host) {
    return nullptr;
  }
  WARPSCOPE_RETURN_IF_ERROR(writer_->Run(
      "INSERT INTO series(host_id, entity_id, metric_id, labels, first_seen_ms, "
      "last_seen_ms) VALUES(?1, ?2, ?3, ?4, ?5, ?6)",
      host_id, entity_row, metric_id, std::string_view(key).substr(labels_at), start_ms, end_ms));
  SeriesEntry entry;
  entry.id = writer_->last_insert_rowid();
  entry.host_id = host_id;
  entry.persisted_last_seen = entry.last_seen = end_ms;
  entry.active = true;
  ++active;
  std::unique_lock series_lock(series_mu_);
  return &series_.emplace(key, entry).first->second;
}

Status SqliteStorage::TouchSeries(SeriesEntry& entry, int64_t end_ms) {
  if (!entry.active) {
    entry.active = true;
    ++active_series_[entry.host_id];
  }
  entry.last_seen = std::max(entry.last_seen, end_ms);
  if (entry.last_seen - entry.persisted_last_seen >= kLastSeenPersistMs) {
    WARPSCOPE_RETURN_IF_ERROR(writer_->Run("UPDATE series SET last_seen_ms = ?2 WHERE id = ?1",
                                           entry.id, entry.last_seen));
    entry.persisted_last_seen = entry.last_seen;
  }
  return base::OkStatus();
}

Status SqliteStorage::WriteEvents(const IngestBatch& batch, int64_t host_id) {
  for (const model::Event& ev : batch.events) {
    WARPSCOPE_RETURN_IF_ERROR(
        writer_->Run("INSERT INTO events(host_id, entity, time_ms, kind, code, message, "
                     "attributes) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                     host_id, ev.entity, ToMs(ev.time), ev.kind, ev.code, ev.message,
                     EncodeLabels(ev.attributes)));
  }
  return base::OkStatus();
}

Status SqliteStorage::WriteSteps(const IngestBatch& batch, int64_t host_id) {
  if (batch.steps.empty()) {
    return base::OkStatus();
  }
  WARPSCOPE_ASSIGN_OR_RETURN(
      Statement stmt,
      writer_->Prepare("INSERT INTO training_steps(host_id, entity, job, comm, rank, world_size, "
                       "step, start_ns, end_ns, compute_ns, comm_ns, overlap_ns, "
                       "last_collective_offset_ns, nccl_ns, collectives, bus_bytes, source) "
                       "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, "
                       "?16, ?17)"));
  for (const model::TrainingStep& s : batch.steps) {
    // bus_bytes is stored as its int64 bit pattern and read back as uint64.
    stmt.Bind(host_id, s.entity, s.job, s.comm, s.rank, s.world_size, s.step,
              base::ToUnixNanos(s.start), base::ToUnixNanos(s.end), s.compute_ns, s.comm_ns,
              s.overlap_ns, s.last_collective_offset_ns, s.nccl_ns, s.collectives,
              static_cast<int64_t>(s.bus_bytes), s.source);
    WARPSCOPE_RETURN_IF_ERROR(stmt.Run());
    stmt.Reset();
  }
  return base::OkStatus();
}

Status SqliteStorage::MarkDirty(int64_t resolution, int64_t host_id, int64_t from_ms) {
  return writer_->Run(
      "INSERT INTO rollup_dirty(resolution, host_id, from_ms, generation) VALUES(?1, ?2, ?3, 1) "
      "ON CONFLICT(resolution, host_id) DO UPDATE SET from_ms = min(from_ms, excluded.from_ms), "
      "generation = generation + 1",
      resolution, host_id, from_ms);
}

Result<int64_t> SqliteStorage::InternAgent(const std::string& name) {
  auto it = agents_.find(name);
  if (it != agents_.end()) {
    return it->second;
  }
  WARPSCOPE_RETURN_IF_ERROR(writer_->Run("INSERT INTO agents(name) VALUES(?1)", name));
  int64_t id = writer_->last_insert_rowid();
  agents_[name] = id;
  return id;
}

Result<int64_t> SqliteStorage::InternHost(const std::string& name, const model::Labels& tags) {
  std::string encoded = EncodeLabels(tags);
  auto it = hosts_.find(name);
  if (it == hosts_.end()) {
    WARPSCOPE_RETURN_IF_ERROR(
        writer_->Run("INSERT INTO hosts(name, tags) VALUES(?1, ?2)", name, encoded));
    int64_t id = writer_->last_insert_rowid();
    hosts_[name] = HostEntry{id, encoded};
    return id;
  }
  if (it->second.tags != encoded) {
    WARPSCOPE_RETURN_IF_ERROR(
        writer_->Run("UPDATE hosts SET tags = ?2 WHERE id = ?1", it->second.id, encoded));
    it->second.tags = encoded;
  }
  return it->second.id;
}

Status SqliteStorage::UpsertMetric(const MetricInfo& info) {
  if (info.key.empty()) {
    return base::InvalidArgument("batch: a metric description has an empty key");
  }
  auto it = metrics_.find(info.key);
  if (it != metrics_.end() && it->second.info == info) {
    return base::OkStatus();
  }
  WARPSCOPE_RETURN_IF_ERROR(writer_->Run(
      "INSERT INTO metrics(key, kind, unit, help, prom_name, prom_scale, otel_name, entity_kind) "
      "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT(key) DO UPDATE SET kind = "
      "excluded.kind, unit = excluded.unit, help = excluded.help, prom_name = excluded.prom_name, "
      "prom_scale = excluded.prom_scale, otel_name = excluded.otel_name, entity_kind = "
      "excluded.entity_kind",
      info.key, MetricKindName(info.kind), info.unit, info.help, info.prom_name, info.prom_scale,
      info.otel_name, model::EntityKindName(info.entity_kind)));
  if (it == metrics_.end()) {
    metrics_[info.key] = MetricEntry{writer_->last_insert_rowid(), info};
  } else {
    it->second.info = info;
  }
  return base::OkStatus();
}

Result<SqliteStorage::EntityEntry*> SqliteStorage::TouchEntity(int64_t host_id,
                                                               const model::Entity& entity,
                                                               bool declared, int64_t start_ms,
                                                               int64_t end_ms) {
  std::string key = EntityKey(host_id, entity.id);
  auto it = entities_.find(key);
  if (it == entities_.end()) {
    EntityEntry e;
    e.kind = entity.kind;
    e.parent = entity.parent;
    e.attributes = EncodeLabels(entity.attributes);
    e.first_seen = start_ms;
    e.last_seen = end_ms;
    WARPSCOPE_RETURN_IF_ERROR(
        writer_->Run("INSERT INTO entities(host_id, entity, kind, parent, attributes, "
                     "first_seen_ms, last_seen_ms) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                     host_id, entity.id, model::EntityKindName(e.kind), e.parent, e.attributes,
                     e.first_seen, e.last_seen));
    e.id = writer_->last_insert_rowid();
    it = entities_.emplace(std::move(key), std::move(e)).first;
    return &it->second;
  }
  EntityEntry& e = it->second;
  bool changed = false;
  if (declared) {
    std::string attributes = EncodeLabels(entity.attributes);
    if (e.kind != entity.kind || e.parent != entity.parent || e.attributes != attributes) {
      e.kind = entity.kind;
      e.parent = entity.parent;
      e.attributes = std::move(attributes);
      changed = true;
    }
  }
  if (start_ms < e.first_seen) {
    e.first_seen = start_ms;
    changed = true;
  }
  if (end_ms > e.last_seen) {
    e.last_seen = end_ms;
    changed = true;
  }
  if (changed) {
    WARPSCOPE_RETURN_IF_ERROR(writer_->Run(
        "UPDATE entities SET kind = ?2, parent = ?3, attributes = ?4, "
        "first_seen_ms = ?5, last_seen_ms = ?6 WHERE id = ?1",
        e.id, model::EntityKindName(e.kind), e.parent, e.attributes, e.first_seen, e.last_seen));
  }
  return &e;
}

Result<int64_t> SqliteStorage::WriteProfile(const ProfileMeta& meta, std::string_view data) {
  WARPSCOPE_RETURN_IF_ERROR(CheckProfile(meta, data, options_.storage.max_profile_bytes));
  std::lock_guard lock(write_mu_);
  auto id = sqlite::InWriteTransaction(*writer_, [&]() -> Result<int64_t> {
    int64_t host_id = 0;
    auto host = hosts_.find(meta.host);
    if (host != hosts_.end()) {
      host_id = host->second.id;
    } else {
      WARPSCOPE_ASSIGN_OR_RETURN(host_id, InternHost(meta.host, {}));
    }
    WARPSCOPE_RETURN_IF_ERROR(writer_->Run(
        "INSERT INTO profiles(host_id, entity, pid, executable, kind, start_ms, end_ms, labels, "
        "size, data) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        host_id, meta.entity, meta.pid, meta.executable, meta.kind, ToMs(meta.start),
        ToMs(meta.end), EncodeLabels(meta.labels), static_cast<int64_t>(data.size()),
        sqlite::Blob{data}));
    return writer_->last_insert_rowid();
  });
  if (!id) {
    ReloadAfterFailedWrite();
  }
  return id;
}

}  // namespace warpscope::server

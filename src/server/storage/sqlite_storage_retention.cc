// SPDX-License-Identifier: Apache-2.0
// SqliteStorage's retention: cutoffs per resolution, deletion in short chunks, forgetting
// series and entities without data, and the active-series recount of the cardinality cap.
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "server/storage/sqlite_db.h"
#include "server/storage/sqlite_storage.h"
#include "server/storage/sqlite_storage_internal.h"

namespace warpscope::server {
namespace {

using base::Status;
using sqlite::Statement;
using storage_internal::DurationMs;
using storage_internal::EntityKey;
using storage_internal::kDeleteBatch;
using storage_internal::kLastSeenSlackMs;
using storage_internal::kMetaHourCutoff;
using storage_internal::kMetaMinuteCutoff;
using storage_internal::kMetaRawCutoff;
using storage_internal::kRetentionStepMs;

}  // namespace

Status SqliteStorage::DeleteSeriesRows(const char* table, const char* time_column,
                                       int64_t before_ms, CompactResult& result) {
  std::string sql = fmt::format(
      "DELETE FROM {} WHERE series_id IN (SELECT id FROM series WHERE id BETWEEN ?1 AND ?2) "
      "AND {} < ?3",
      table, time_column);
  for (const auto& range : SeriesChunks(0)) {
    // Plain variables: the lambda below captures them (clang before 16 cannot capture bindings).
    const int64_t lo = range.first;
    const int64_t hi = range.second;
    std::unique_lock lock(write_mu_);
    if (std::string_view(table) == "head_chunks") {
      WARPSCOPE_RETURN_IF_ERROR(ApplyStagedLocked(lock));
    }
    WARPSCOPE_RETURN_IF_ERROR(sqlite::InWriteTransaction(*writer_, [&]() -> Status {
      WARPSCOPE_RETURN_IF_ERROR(writer_->Run(sql, lo, hi, before_ms));
      result.deleted_rows += static_cast<uint64_t>(writer_->changes());
      return base::OkStatus();
    }));
  }
  return base::OkStatus();
}

Status SqliteStorage::DeleteInChunks(const std::string& sql, int64_t before,
                                     CompactResult& result) {
  while (true) {
    std::lock_guard lock(write_mu_);
    int64_t deleted = 0;
    WARPSCOPE_RETURN_IF_ERROR(sqlite::InWriteTransaction(*writer_, [&]() -> Status {
      WARPSCOPE_RETURN_IF_ERROR(writer_->Run(sql, before, kDeleteBatch));
      deleted = writer_->changes();
      result.deleted_rows += static_cast<uint64_t>(deleted);
      return base::OkStatus();
    }));
    if (deleted < kDeleteBatch) {
      return base::OkStatus();
    }
  }
}

Status SqliteStorage::AdvanceCutoff(const char* key, int64_t& mirror, int64_t value) {
  std::lock_guard lock(write_mu_);
  WARPSCOPE_RETURN_IF_ERROR(
      sqlite::InWriteTransaction(*writer_, [&] { return SetMeta(key, value); }));
  mirror = value;
  return base::OkStatus();
}

Status SqliteStorage::ApplyRetention(int64_t now_ms, CompactResult& result) {
  const StorageOptions& o = options_.storage;
  int64_t minute_wm = 0, hour_wm = 0, raw_cutoff = 0, minute_cutoff = 0, hour_cutoff = 0;
  {
    std::lock_guard lock(write_mu_);
    minute_wm = minute_watermark_;
    hour_wm = hour_watermark_;
    raw_cutoff = raw_cutoff_;
    minute_cutoff = minute_cutoff_;
    hour_cutoff = hour_cutoff_;
  }
  bool advanced = false;

  // Never delete what the next resolution has not absorbed yet: cutoffs stay at or below the
  // watermark of the next resolution. 1m cutoffs are whole hours so an hour rebuilt from late
  // data always finds all its minutes.
  if (minute_wm != 0) {
    int64_t target = std::min(FloorTo(now_ms - DurationMs(o.raw_retention), kMinuteMs), minute_wm);
    if (target >= raw_cutoff + kRetentionStepMs) {
      advanced = true;
      WARPSCOPE_RETURN_IF_ERROR(AdvanceCutoff(kMetaRawCutoff, raw_cutoff_, target));
      // Whole chunks whose last window is before the cutoff; a chunk the cutoff cuts through
      // stays until its end expires (readers start raw segments at the cutoff).
      WARPSCOPE_RETURN_IF_ERROR(DeleteSeriesRows("head_chunks", "end_ms", target + 1, result));
      WARPSCOPE_RETURN_IF_ERROR(DeleteSeriesRows("samples", "start_ms", target, result));
      WARPSCOPE_RETURN_IF_ERROR(DeleteSeriesRows("sample_chunks", "end_ms", target + 1, result));
      WARPSCOPE_RETURN_IF_ERROR(DeleteInChunks(
          "DELETE FROM ingested WHERE (agent_id, sequence) IN (SELECT agent_id, sequence FROM "
          "ingested WHERE start_ms < ?1 LIMIT ?2)",
          target, result));
    }
  }
  if (hour_wm != 0) {
    int64_t target = std::min(FloorTo(now_ms - DurationMs(o.minute_retention), kHourMs),
                              FloorTo(hour_wm, kHourMs));
    if (target >= minute_cutoff + kRetentionStepMs) {
      advanced = true;
      WARPSCOPE_RETURN_IF_ERROR(AdvanceCutoff(kMetaMinuteCutoff, minute_cutoff_, target));
      WARPSCOPE_RETURN_IF_ERROR(DeleteSeriesRows("rollup_1m", "bucket_ms", target, result));
      // As for raw chunks: whole chunks, reads start minute segments at the cutoff.
      WARPSCOPE_RETURN_IF_ERROR(DeleteSeriesRows("rollup_1m_chunks", "end_ms", target + 1, result));
    }
  }
  {
    int64_t target = FloorTo(now_ms - DurationMs(o.hour_retention), kHourMs);
    if (target >= hour_cutoff + kRetentionStepMs) {
      advanced = true;
      WARPSCOPE_RETURN_IF_ERROR(AdvanceCutoff(kMetaHourCutoff, hour_cutoff_, target));
      WARPSCOPE_RETURN_IF_ERROR(DeleteSeriesRows("rollup_1h", "bucket_ms", target, result));
    }
  }
  // Series and entities with no data left in any resolution (when a cutoff moved).
  int64_t forget_before = 0;
  if (advanced) {
    std::lock_guard lock(write_mu_);
    if (raw_cutoff_ != 0 && minute_cutoff_ != 0 && hour_cutoff_ != 0) {
      forget_before = std::min({raw_cutoff_, minute_cutoff_, hour_cutoff_});
    }
  }
  if (forget_before != 0) {
    // After a reopen, SeriesEntry::last_seen is the persisted value, up to kLastSeenPersistMs
    // behind; the slack keeps series whose last windows may still have rollup rows.
    forget_before -= kLastSeenSlackMs;
    WARPSCOPE_RETURN_IF_ERROR(ForgetSeries(forget_before, result));
    WARPSCOPE_RETURN_IF_ERROR(ForgetEntities(forget_before, result));
  }
  // Events, profiles and training steps by their own retention; checked at most every
  // kRetentionStepMs.
  if (now_ms >= other_retention_ms_ + kRetentionStepMs) {
    WARPSCOPE_RETURN_IF_ERROR(DeleteInChunks(
        "DELETE FROM events WHERE id IN (SELECT id FROM events WHERE time_ms < ?1 LIMIT ?2)",
        now_ms - DurationMs(o.event_retention), result));
    WARPSCOPE_RETURN_IF_ERROR(DeleteInChunks(
        "DELETE FROM profiles WHERE id IN (SELECT id FROM profiles WHERE end_ms < ?1 LIMIT ?2)",
        now_ms - DurationMs(o.profile_retention), result));
    WARPSCOPE_RETURN_IF_ERROR(DeleteInChunks(
        "DELETE FROM training_steps WHERE id IN (SELECT id FROM training_steps WHERE end_ns < ?1 "
        "LIMIT ?2)",
        (now_ms - DurationMs(o.step_retention)) * 1'000'000, result));
    other_retention_ms_ = now_ms;
  }
  return base::OkStatus();
}

Status SqliteStorage::ForgetSeries(int64_t before_ms, CompactResult& result) {
  // Ids are AUTOINCREMENT, so rows of a forgotten series can never attach to a new one.
  while (true) {
    std::lock_guard lock(write_mu_);
    std::vector<std::string> keys;
    for (const auto& [key, s] : series_) {
      if (s.last_seen < before_ms) {
        keys.push_back(key);
        if (keys.size() >= static_cast<size_t>(kDeleteBatch)) {
          break;
        }
      }
    }
    if (keys.empty()) {
      return base::OkStatus();
    }
    WARPSCOPE_RETURN_IF_ERROR(sqlite::InWriteTransaction(*writer_, [&]() -> Status {
      WARPSCOPE_ASSIGN_OR_RETURN(Statement stmt,
                                 writer_->Prepare("DELETE FROM series WHERE id = ?1"));
      WARPSCOPE_ASSIGN_OR_RETURN(
          Statement chunks, writer_->Prepare("DELETE FROM sample_chunks WHERE series_id = ?1"));
      WARPSCOPE_ASSIGN_OR_RETURN(Statement head,
                                 writer_->Prepare("DELETE FROM head_chunks WHERE series_id = ?1"));
      WARPSCOPE_ASSIGN_OR_RETURN(
          Statement minutes, writer_->Prepare("DELETE FROM rollup_1m_chunks WHERE series_id = ?1"));
      for (const std::string& key : keys) {
        for (Statement* s : {&stmt, &chunks, &head, &minutes}) {
          WARPSCOPE_RETURN_IF_ERROR(s->Bind(series_[key].id).Run());
          s->Reset();
        }
      }
      return base::OkStatus();
    }));
    {
      std::unique_lock series_lock(series_mu_);
      for (const std::string& key : keys) {
        series_.erase(key);
      }
      ++series_generation_;
    }
    result.deleted_rows += keys.size();
  }
}

Status SqliteStorage::ForgetEntities(int64_t before_ms, CompactResult& result) {
  // Entities not seen since, that no series refers to any more.
  std::lock_guard lock(write_mu_);
  std::vector<std::pair<int64_t, std::string>> gone;  // row id, cache key
  WARPSCOPE_RETURN_IF_ERROR(sqlite::InWriteTransaction(*writer_, [&]() -> Status {
    {
      WARPSCOPE_ASSIGN_OR_RETURN(
          Statement stmt,
          writer_->Prepare("SELECT id, host_id, entity FROM entities WHERE last_seen_ms < ?1 "
                           "AND id NOT IN (SELECT entity_id FROM series)"));
      stmt.Bind(before_ms);
      WARPSCOPE_RETURN_IF_ERROR(stmt.ForEachRow([&](const Statement& row) {
        gone.emplace_back(row.ColumnInt(0), EntityKey(row.ColumnInt(1), row.ColumnText(2)));
      }));
    }
    WARPSCOPE_ASSIGN_OR_RETURN(Statement stmt,
                               writer_->Prepare("DELETE FROM entities WHERE id = ?1"));
    for (const auto& [id, key] : gone) {
      stmt.Bind(id);
      WARPSCOPE_RETURN_IF_ERROR(stmt.Run());
      stmt.Reset();
    }
    return base::OkStatus();
  }));
  for (const auto& [id, key] : gone) {
    entities_.erase(key);
  }
  result.deleted_rows += gone.size();
  return base::OkStatus();
}

void SqliteStorage::RecountActiveSeries(int64_t now_ms) {
  const int64_t active_since = now_ms - DurationMs(options_.storage.series_active_window);
  active_series_.clear();
  for (auto& [key, s] : series_) {
    s.active = s.last_seen >= active_since;
    if (s.active) {
      ++active_series_[s.host_id];
    }
  }
}

}  // namespace warpscope::server

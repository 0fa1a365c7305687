// SPDX-License-Identifier: Apache-2.0
// SqliteStorage's rollups: Compact() and the minute and hour rollups it builds, new and dirty,
// in short chunks of series and time.
#include <algorithm>
#include <vector>

#include "server/storage/sqlite_db.h"
#include "server/storage/sqlite_storage.h"
#include "server/storage/sqlite_storage_internal.h"

namespace warpscope::server {
namespace {

using base::Result;
using base::Status;
using sqlite::Statement;
using storage_internal::DurationMs;
using storage_internal::kChunkSeries;
using storage_internal::kDirtyHour;
using storage_internal::kDirtyMinute;
using storage_internal::kHourSliceMs;
using storage_internal::kMetaHourWatermark;
using storage_internal::kMetaMinuteWatermark;
using storage_internal::kMinuteSliceMs;
using storage_internal::ToMs;

// One rollup row being built: a bucket of one series.
struct RollupRow {
  int64_t series_id;
  int64_t bucket;
  Bucket b;
};

// Adds one source row of `series_id` to `out`, opening a new bucket when the series or the
// bucket changes.
void AddSourceRow(int64_t series_id, const Row& row, int64_t bucket_ms,
                  std::vector<RollupRow>& out) {
  int64_t bucket = FloorTo(row.start, bucket_ms);
  if (out.empty() || out.back().series_id != series_id || out.back().bucket != bucket) {
    out.push_back(RollupRow{series_id, bucket, Bucket{}});
  }
  Bucket& b = out.back().b;
  int64_t count = std::max<int64_t>(row.count, 1);
  b.count += count;
  b.weighted_sum += row.avg * static_cast<double>(count);
  b.min = std::min(b.min, row.min);
  b.max = std::max(b.max, row.max);
  b.last = row.last;  // rows come in time order
  b.last_start = row.start;
}

// The minute rollup's source for new minutes: the windows of series [id_lo, id_hi] (of the host,
// unless 0) in [from_ms, to_ms), all from head chunks, in (series, time) order.
Status RollUpHead(sqlite::Connection& db, int64_t host_id, int64_t id_lo, int64_t id_hi,
                  int64_t from_ms, int64_t to_ms, std::vector<RollupRow>& out) {
  WARPSCOPE_ASSIGN_OR_RETURN(
      Statement stmt,
      db.Prepare("SELECT h.id, h.data, h.series_id FROM head_chunks h WHERE h.series_id IN "
                 "(SELECT id FROM series WHERE id BETWEEN ?1 AND ?2 AND (?5 = 0 OR "
                 "host_id = ?5)) AND h.start_ms > ?3 - ?6 AND h.start_ms < ?4 AND "
                 "h.end_ms > ?3 ORDER BY h.series_id, h.id"));
  stmt.Bind(id_lo, id_hi, from_ms, to_ms, host_id, storage_internal::kChunkSpanMs);
  int64_t series_id = 0;
  std::vector<ChunkWindow> moved;
  auto fold = [&] {
    std::vector<ChunkWindow> windows;
    storage_internal::Overlay(windows, std::move(moved));
    moved.clear();
    for (const ChunkWindow& w : windows) {
      AddSourceRow(series_id, Row{w.start_ms, w.avg, w.min, w.max, w.last, w.count}, kMinuteMs,
                   out);
    }
  };
  WARPSCOPE_RETURN_IF_ERROR(stmt.ForEachRow([&](const Statement& row) {
    if (row.ColumnInt(2) != series_id) {
      fold();
      series_id = row.ColumnInt(2);
    }
    return storage_internal::AppendChunkWindows("head_chunks", row, from_ms, to_ms, moved);
  }));
  fold();
  return base::OkStatus();
}

// Writes new minute buckets (`out`, in (series, bucket) order) as rollup_1m_chunks rows: one
// chunk per series and span (a slice may cross a span's start; a chunk never does).
Status WriteMinuteChunks(sqlite::Connection& db, const std::vector<RollupRow>& out) {
  ChunkCutter cutter(storage_internal::kChunkSpanMs, storage_internal::kChunkTargetBytes);
  for (const RollupRow& o : out) {
    cutter.Add(o.series_id,
               ChunkWindow{o.bucket, kMinuteMs, o.b.weighted_sum / static_cast<double>(o.b.count),
                           o.b.min, o.b.max, o.b.last, o.b.count});
  }
  return storage_internal::InsertChunks(db, "rollup_1m_chunks", cutter.Finish());
}

}  // namespace

std::vector<std::pair<int64_t, int64_t>> SqliteStorage::SeriesChunks(int64_t host_id,
                                                                     size_t per_chunk) {
  if (per_chunk == 0) {
    per_chunk = kChunkSeries;
  }
  std::vector<int64_t> ids;
  {
    std::lock_guard lock(write_mu_);
    ids.reserve(series_.size());
    for (const auto& [key, s] : series_) {
      if (host_id == 0 || s.host_id == host_id) {
        ids.push_back(s.id);
      }
    }
  }
  std::sort(ids.begin(), ids.end());
  std::vector<std::pair<int64_t, int64_t>> chunks;
  for (size_t i = 0; i < ids.size(); i += per_chunk) {
    chunks.emplace_back(ids[i], ids[std::min(i + per_chunk, ids.size()) - 1]);
  }
  return chunks;
}

Result<uint64_t> SqliteStorage::RollUpChunk(Resolution target, int64_t host_id, int64_t id_lo,
                                            int64_t id_hi, int64_t from_ms, int64_t to_ms,
                                            bool rebuild) {
  const bool minute = target == Resolution::kMinute;
  const int64_t bucket_ms = minute ? kMinuteMs : kHourMs;
  std::unique_lock lock(write_mu_);
  if (minute) {
    WARPSCOPE_RETURN_IF_ERROR(ApplyStagedLocked(lock));
  }
  return sqlite::InWriteTransaction(*writer_, [&]() -> Result<uint64_t> {
    std::vector<RollupRow> out;
    if (minute && from_ms >= chunk_watermark_ && !head_rows_) {
      // New minutes: only head chunks hold them, read for the whole group in one query.
      WARPSCOPE_RETURN_IF_ERROR(RollUpHead(*writer_, host_id, id_lo, id_hi, from_ms, to_ms, out));
    } else {
      // Hours (their minutes are chunks, with rows for rebuilt minutes), minutes of chunked
      // spans (rebuilt for late windows), or minutes of a database whose older head is samples
      // rows: per series, each layer in turn.
      std::vector<int64_t> ids;
      {
        WARPSCOPE_ASSIGN_OR_RETURN(
            Statement stmt, writer_->Prepare("SELECT id FROM series WHERE id BETWEEN ?1 AND ?2 "
                                             "AND (?3 = 0 OR host_id = ?3) ORDER BY id"));
        stmt.Bind(id_lo, id_hi, host_id);
        WARPSCOPE_RETURN_IF_ERROR(
            stmt.ForEachRow([&](const Statement& row) { ids.push_back(row.ColumnInt(0)); }));
      }
      for (int64_t id : ids) {
        auto add = [&](const Row& row) { AddSourceRow(id, row, bucket_ms, out); };
        WARPSCOPE_RETURN_IF_ERROR(
            minute ? storage_internal::ForEachRawRow(*writer_, id, from_ms, to_ms, add)
                   : storage_internal::ForEachMinuteRow(*writer_, id, from_ms, to_ms, std::nullopt,
                                                        add));
      }
      if (minute && rebuild && from_ms < chunk_watermark_) {
        // These rows lie over closed spans' chunks: the next Compact's sweep merges them in.
        late_chunked_ = true;
      }
    }
    if (minute && !rebuild) {
      WARPSCOPE_RETURN_IF_ERROR(WriteMinuteChunks(*writer_, out));
      return static_cast<uint64_t>(out.size());
    }
    WARPSCOPE_ASSIGN_OR_RETURN(
        Statement insert,
        writer_->Prepare(minute ? "INSERT OR REPLACE INTO rollup_1m(series_id, bucket_ms, avg, "
                                  "min, max, last, count) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)"
                                : "INSERT OR REPLACE INTO rollup_1h(series_id, bucket_ms, avg, "
                                  "min, max, last, count) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)"));
    for (const RollupRow& o : out) {
      insert.Bind(o.series_id, o.bucket, o.b.weighted_sum / static_cast<double>(o.b.count), o.b.min,
                  o.b.max, o.b.last, o.b.count);
      WARPSCOPE_RETURN_IF_ERROR(insert.Run());
      insert.Reset();
    }
    return static_cast<uint64_t>(out.size());
  });
}

Status SqliteStorage::RollUpRange(Resolution target, int64_t host_id, int64_t from_ms,
                                  int64_t to_ms, CompactResult& result) {
  const int64_t slice_ms = target == Resolution::kMinute ? kMinuteSliceMs : kHourSliceMs;
  std::vector<std::pair<int64_t, int64_t>> chunks = SeriesChunks(host_id);
  for (int64_t from = from_ms; from < to_ms; from += slice_ms) {
    int64_t to = std::min(to_ms, from + slice_ms);
    for (const auto& [lo, hi] : chunks) {
      WARPSCOPE_ASSIGN_OR_RETURN(uint64_t rows,
                                 RollUpChunk(target, host_id, lo, hi, from, to, /*rebuild=*/true));
      (target == Resolution::kMinute ? result.minute_rows : result.hour_rows) += rows;
    }
  }
  return base::OkStatus();
}

Status SqliteStorage::RollUpNew(Resolution target, int64_t until_ms, CompactResult& result) {
  const bool minute = target == Resolution::kMinute;
  const int64_t bucket_ms = minute ? kMinuteMs : kHourMs;
  const int64_t slice_ms = minute ? kMinuteSliceMs : kHourSliceMs;
  until_ms = FloorTo(until_ms, bucket_ms);
  int64_t from = 0;
  {
    std::lock_guard lock(write_mu_);
    from = minute ? minute_watermark_ : hour_watermark_;
    if (from == 0) {
      if (first_window_ms_ == 0) {
        return base::OkStatus();  // nothing written yet
      }
      from = FloorTo(first_window_ms_, bucket_ms);
    }
  }
  // Windows written while a slice is rolled up are flagged dirty by WriteBatch (it compares
  // with minute_building_to_); clear the mark however this function returns.
  struct ClearBuilding {
    SqliteStorage* self;
    bool active;
    ~ClearBuilding() {
      if (active) {
        std::lock_guard lock(self->write_mu_);
        self->minute_building_to_ = 0;
      }
    }
  } clear_building{this, minute};

  while (from < until_ms) {
    int64_t to = std::min(until_ms, from + slice_ms);
    if (minute) {
      std::lock_guard lock(write_mu_);
      minute_building_to_ = to;
    }
    std::vector<std::pair<int64_t, int64_t>> chunks = SeriesChunks(0);
    for (const auto& [lo, hi] : chunks) {
      WARPSCOPE_ASSIGN_OR_RETURN(uint64_t rows,
                                 RollUpChunk(target, 0, lo, hi, from, to, /*rebuild=*/false));
      (minute ? result.minute_rows : result.hour_rows) += rows;
    }
    {
      std::lock_guard lock(write_mu_);
      WARPSCOPE_RETURN_IF_ERROR(sqlite::InWriteTransaction(*writer_, [&] {
        return SetMeta(minute ? kMetaMinuteWatermark : kMetaHourWatermark, to);
      }));
      (minute ? minute_watermark_ : hour_watermark_) = to;
    }
    from = to;
  }
  return base::OkStatus();
}

Status SqliteStorage::RollUpDirty(Resolution target, CompactResult& result) {
  const bool minute = target == Resolution::kMinute;
  const int64_t resolution = minute ? kDirtyMinute : kDirtyHour;
  struct Dirty {
    int64_t host_id;
    int64_t from_ms;
    int64_t generation;
  };
  std::vector<Dirty> dirty;
  int64_t watermark = 0;
  int64_t lower = 0;
  {
    std::lock_guard lock(write_mu_);
    watermark = minute ? minute_watermark_ : hour_watermark_;
    lower = minute ? raw_cutoff_ : minute_cutoff_;
    WARPSCOPE_ASSIGN_OR_RETURN(
        Statement stmt, writer_->Prepare("SELECT host_id, from_ms, generation FROM rollup_dirty "
                                         "WHERE resolution = ?1"));
    stmt.Bind(resolution);
    WARPSCOPE_RETURN_IF_ERROR(stmt.ForEachRow([&](const Statement& row) {
      dirty.push_back(Dirty{row.ColumnInt(0), row.ColumnInt(1), row.ColumnInt(2)});
    }));
  }
  const int64_t bucket_ms = minute ? kMinuteMs : kHourMs;
  for (const Dirty& d : dirty) {
    int64_t from = FloorTo(std::max(d.from_ms, lower), bucket_ms);
    WARPSCOPE_RETURN_IF_ERROR(RollUpRange(target, d.host_id, from, watermark, result));
    std::lock_guard lock(write_mu_);
    WARPSCOPE_RETURN_IF_ERROR(sqlite::InWriteTransaction(*writer_, [&]() -> Status {
      if (minute && from < hour_watermark_) {
        // The rebuilt minutes feed hours that are already built.
        WARPSCOPE_RETURN_IF_ERROR(MarkDirty(kDirtyHour, d.host_id, FloorTo(from, kHourMs)));
      }
      // Only if no window arrived for this host meanwhile (it would have bumped generation).
      return writer_->Run(
          "DELETE FROM rollup_dirty WHERE resolution = ?1 AND host_id = ?2 AND generation = ?3",
          resolution, d.host_id, d.generation);
    }));
  }
  return base::OkStatus();
}

Result<CompactResult> SqliteStorage::Compact(base::TimePoint now) {
  std::lock_guard compact_lock(compact_mu_);
  const int64_t now_ms = ToMs(now);
  CompactResult result;
  const int64_t minute_until = now_ms - DurationMs(options_.storage.rollup_delay);
  WARPSCOPE_RETURN_IF_ERROR(RollUpDirty(Resolution::kMinute, result));
  WARPSCOPE_RETURN_IF_ERROR(RollUpNew(Resolution::kMinute, minute_until, result));
  int64_t hour_until = 0;
  {
    std::lock_guard lock(write_mu_);
    hour_until = minute_watermark_;
  }
  WARPSCOPE_RETURN_IF_ERROR(RollUpDirty(Resolution::kHour, result));
  if (hour_until != 0) {
    WARPSCOPE_RETURN_IF_ERROR(RollUpNew(Resolution::kHour, hour_until, result));
  }
  WARPSCOPE_RETURN_IF_ERROR(ChunkClosedSpans(now_ms, result));
  WARPSCOPE_RETURN_IF_ERROR(MergeSmallHeadChunks(result));
  WARPSCOPE_RETURN_IF_ERROR(ApplyRetention(now_ms, result));
  {
    std::lock_guard lock(write_mu_);
    RecountActiveSeries(now_ms);
  }
  return result;
}

}  // namespace warpscope::server

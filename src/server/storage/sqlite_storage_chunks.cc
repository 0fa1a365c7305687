// SPDX-License-Identifier: Apache-2.0
// SqliteStorage's sample chunks: Compact moves the raw windows of closed spans from the samples
// table (the head) into compressed chunks (sample_chunk.h), and readers see both as one
// sequence (docs/design/storage.md, "Sample chunks").
#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "server/storage/sample_chunk.h"
#include "server/storage/sqlite_db.h"
#include "server/storage/sqlite_storage.h"
#include "server/storage/sqlite_storage_internal.h"

namespace warpscope::server {

namespace storage_internal {

namespace {

Row ToRow(const ChunkWindow& w) {
  return Row{w.start_ms, w.avg, w.min, w.max, w.last, w.count};
}

}  // namespace

base::Status ForEachRawRow(sqlite::Connection& db, int64_t series_id, int64_t from_ms,
                           int64_t to_ms, const std::function<void(const Row&)>& fn) {
  // A chunk lies inside one aligned span, so one that reaches into [from, to) starts after
  // from - kChunkSpanMs: the index range stays short.
  std::vector<Row> chunked;
  {
    WARPSCOPE_ASSIGN_OR_RETURN(
        sqlite::Statement stmt,
        db.Prepare("SELECT id, data FROM sample_chunks WHERE series_id = ?1 AND start_ms > ?2 "
                   "AND start_ms < ?3 AND end_ms > ?4 ORDER BY start_ms"));
    stmt.Bind(series_id, from_ms - kChunkSpanMs, to_ms, from_ms);
    WARPSCOPE_RETURN_IF_ERROR(stmt.ForEachRow([&](const sqlite::Statement& row) -> base::Status {
      auto windows = DecodeChunk(row.ColumnBlob(1));
      if (!windows) {
        return windows.error().WithContext(fmt::format(
            "sample_chunks row {} (series {}) is damaged; restore the database from a backup",
            row.ColumnInt(0), series_id));
      }
      for (const ChunkWindow& w : *windows) {
        if (w.start_ms >= from_ms && w.start_ms < to_ms) {
          chunked.push_back(ToRow(w));
        }
      }
      return base::OkStatus();
    }));
  }
  WARPSCOPE_ASSIGN_OR_RETURN(
      sqlite::Statement stmt,
      db.Prepare("SELECT start_ms, avg, min, max, last, count FROM samples WHERE series_id = ?1 "
                 "AND start_ms >= ?2 AND start_ms < ?3 ORDER BY start_ms"));
  stmt.Bind(series_id, from_ms, to_ms);
  size_t next = 0;  // the next chunked row not yet passed on
  WARPSCOPE_RETURN_IF_ERROR(stmt.ForEachRow([&](const sqlite::Statement& row) {
    Row r{row.ColumnInt(0),    row.ColumnDouble(1), row.ColumnDouble(2),
          row.ColumnDouble(3), row.ColumnDouble(4), row.ColumnInt(5)};
    while (next < chunked.size() && chunked[next].start < r.start) {
      fn(chunked[next++]);
    }
    if (next < chunked.size() && chunked[next].start == r.start) {
      ++next;  // replaced by the later write
    }
    fn(r);
  }));
  while (next < chunked.size()) {
    fn(chunked[next++]);
  }
  return base::OkStatus();
}

}  // namespace storage_internal

namespace {

using base::Result;
using base::Status;
using sqlite::Statement;
using storage_internal::DurationMs;
using storage_internal::kChunkingSeries;
using storage_internal::kChunkSpanMs;
using storage_internal::kChunkTargetBytes;
using storage_internal::kMetaChunkWatermark;

// Windows of one series in one span, in start order.
using SpanKey = std::pair<int64_t, int64_t>;  // series id, span start

}  // namespace

Result<uint64_t> SqliteStorage::ChunkSeriesGroup(int64_t id_lo, int64_t id_hi, int64_t end_ms) {
  std::unique_lock lock(write_mu_);
  WARPSCOPE_RETURN_IF_ERROR(ApplyStagedLocked(lock));
  return sqlite::InWriteTransaction(*writer_, [&]() -> Result<uint64_t> {
    std::map<SpanKey, std::vector<ChunkWindow>> spans;
    {
      // Per series, so that each read is one seek on the (series_id, start_ms) key.
      std::vector<int64_t> ids;
      WARPSCOPE_ASSIGN_OR_RETURN(
          Statement series, writer_->Prepare("SELECT id FROM series WHERE id BETWEEN ?1 AND ?2"));
      series.Bind(id_lo, id_hi);
      WARPSCOPE_RETURN_IF_ERROR(
          series.ForEachRow([&](const Statement& row) { ids.push_back(row.ColumnInt(0)); }));
      WARPSCOPE_ASSIGN_OR_RETURN(
          Statement stmt,
          writer_->Prepare("SELECT start_ms, duration_ms, avg, min, max, last, count FROM samples "
                           "WHERE series_id = ?1 AND start_ms < ?2 ORDER BY start_ms"));
      for (int64_t id : ids) {
        stmt.Bind(id, end_ms);
        WARPSCOPE_RETURN_IF_ERROR(stmt.ForEachRow([&](const Statement& row) {
          ChunkWindow w{row.ColumnInt(0),    row.ColumnInt(1),    row.ColumnDouble(2),
                        row.ColumnDouble(3), row.ColumnDouble(4), row.ColumnDouble(5),
                        row.ColumnInt(6)};
          spans[{id, FloorTo(w.start_ms, kChunkSpanMs)}].push_back(w);
        }));
        stmt.Reset();
      }
    }
    WARPSCOPE_ASSIGN_OR_RETURN(
        Statement existing,
        writer_->Prepare("SELECT id, data FROM sample_chunks WHERE series_id = ?1 AND "
                         "start_ms >= ?2 AND start_ms < ?3 ORDER BY start_ms"));
    WARPSCOPE_ASSIGN_OR_RETURN(
        Statement drop,
        writer_->Prepare("DELETE FROM sample_chunks WHERE series_id = ?1 AND start_ms >= ?2 AND "
                         "start_ms < ?3"));
    WARPSCOPE_ASSIGN_OR_RETURN(
        Statement insert,
        writer_->Prepare("INSERT INTO sample_chunks(series_id, start_ms, end_ms, count, data) "
                         "VALUES(?1, ?2, ?3, ?4, ?5)"));
    WARPSCOPE_ASSIGN_OR_RETURN(
        Statement clear,
        writer_->Prepare("DELETE FROM samples WHERE series_id = ?1 AND start_ms < ?2"));
    uint64_t moved = 0;
    int64_t cleared_series = 0;
    for (auto& [key, head] : spans) {
      const int64_t series_id = key.first;  // captured below: not a binding (clang < 16)
      const int64_t span = key.second;
      moved += head.size();
      // Windows of a span that has chunks already (late arrivals, or a span a crash left half
      // moved) join them: decode, merge (the head row wins on an equal start), write the span's
      // chunks again. One index seek when there are none.
      std::vector<ChunkWindow> merged;
      {
        existing.Bind(series_id, span, span + kChunkSpanMs);
        WARPSCOPE_RETURN_IF_ERROR(existing.ForEachRow([&](const Statement& row) -> Status {
          auto windows = DecodeChunk(row.ColumnBlob(1));
          if (!windows) {
            return windows.error().WithContext(fmt::format(
                "{}: sample_chunks row {} is damaged; restore the database from a backup", path_,
                row.ColumnInt(0)));
          }
          merged.insert(merged.end(), windows->begin(), windows->end());
          return base::OkStatus();
        }));
        existing.Reset();
      }
      if (!merged.empty()) {
        std::vector<ChunkWindow> all;
        all.reserve(merged.size() + head.size());
        std::merge(head.begin(), head.end(), merged.begin(), merged.end(),
                   std::back_inserter(all),
                   [](const ChunkWindow& a, const ChunkWindow& b) { return a.start_ms < b.start_ms; });
        // std::merge puts head (first range) before an equal chunked start: keep the first.
        all.erase(std::unique(all.begin(), all.end(),
                              [](const ChunkWindow& a, const ChunkWindow& b) {
                                return a.start_ms == b.start_ms;
                              }),
                  all.end());
        head = std::move(all);
        WARPSCOPE_RETURN_IF_ERROR(drop.Bind(series_id, span, span + kChunkSpanMs).Run());
        drop.Reset();
      }
      ChunkEncoder encoder;
      int64_t first = 0, last = 0;
      auto flush = [&]() -> Status {
        const int64_t count = static_cast<int64_t>(encoder.windows());
        std::string data = encoder.Finish();
        WARPSCOPE_RETURN_IF_ERROR(insert.Bind(series_id, first, last + 1, count, sqlite::Blob{data}).Run());
        insert.Reset();
        return base::OkStatus();
      };
      for (const ChunkWindow& w : head) {
        if (encoder.windows() == 0) {
          first = w.start_ms;
        }
        encoder.Append(w);
        last = w.start_ms;
        if (encoder.bytes() >= kChunkTargetBytes) {
          WARPSCOPE_RETURN_IF_ERROR(flush());
        }
      }
      if (encoder.windows() > 0) {
        WARPSCOPE_RETURN_IF_ERROR(flush());
      }
      if (series_id != cleared_series) {
        WARPSCOPE_RETURN_IF_ERROR(clear.Bind(series_id, end_ms).Run());
        clear.Reset();
        cleared_series = series_id;
      }
    }
    return moved;
  });
}

Status SqliteStorage::ChunkClosedSpans(int64_t now_ms, CompactResult& result) {
  int64_t from = 0;
  int64_t until = 0;
  {
    std::lock_guard lock(write_mu_);
    if (first_window_ms_ == 0 || minute_watermark_ == 0) {
      return base::OkStatus();
    }
    // Spans the minute rollup has passed: no rollup of new minutes reads them any more.
    until = FloorTo(minute_watermark_, kChunkSpanMs);
    from = chunk_watermark_ != 0 ? chunk_watermark_ : FloorTo(first_window_ms_, kChunkSpanMs);
    // Not from before raw retention: retention deletes those rows in this Compact, and a
    // window from a clock years off must not cost a pass per span in between.
    from = std::max(from, FloorTo(now_ms - DurationMs(options_.storage.raw_retention),
                                  kChunkSpanMs));
  }
  // Windows written while a span is moved are flagged by WriteBatch (it compares with
  // chunk_building_to_); clear the mark however this function returns.
  struct ClearBuilding {
    SqliteStorage* self;
    ~ClearBuilding() {
      std::lock_guard lock(self->write_mu_);
      self->chunk_building_to_ = 0;
    }
  } clear_building{this};
  // One span at a time (an upgraded database may hold days of rows), each group of series in
  // its own short transaction; the watermark moves once a span is done, so a crash in between
  // leaves rows in samples that the next Compact moves.
  for (int64_t end = from + kChunkSpanMs; end <= until; end += kChunkSpanMs) {
    {
      std::lock_guard lock(write_mu_);
      chunk_building_to_ = end;
    }
    WARPSCOPE_RETURN_IF_ERROR(ChunkAllSeries(end, result));
    std::lock_guard lock(write_mu_);
    WARPSCOPE_RETURN_IF_ERROR(
        sqlite::InWriteTransaction(*writer_, [&] { return SetMeta(kMetaChunkWatermark, end); }));
    chunk_watermark_ = end;
  }
  // Late windows below the watermark join their spans' chunks.
  int64_t watermark = 0;
  {
    std::lock_guard lock(write_mu_);
    if (!late_chunked_ || chunk_watermark_ == 0) {
      return base::OkStatus();
    }
    late_chunked_ = false;
    watermark = chunk_watermark_;
    chunk_building_to_ = watermark;
  }
  if (Status st = ChunkAllSeries(watermark, result); !st.ok()) {
    std::lock_guard lock(write_mu_);
    late_chunked_ = true;
    return st;
  }
  return base::OkStatus();
}

Status SqliteStorage::ChunkAllSeries(int64_t end_ms, CompactResult& result) {
  for (const auto& [lo, hi] : SeriesChunks(0, kChunkingSeries)) {
    WARPSCOPE_ASSIGN_OR_RETURN(uint64_t moved, ChunkSeriesGroup(lo, hi, end_ms));
    result.chunked_windows += moved;
    if (options_.after_chunk_group_for_testing) {
      options_.after_chunk_group_for_testing();
    }
  }
  return base::OkStatus();
}

}  // namespace warpscope::server

// SPDX-License-Identifier: Apache-2.0
// SqliteStorage's sample chunks: Compact merges the raw windows of closed spans from the head
// (head_chunks, and the samples rows of an older head) into compressed chunks (sample_chunk.h)
// of up to kChunkTargetBytes, and readers see them all as one sequence (docs/design/storage.md,
// "Sample chunks" and "The head").
#include <algorithm>
#include <climits>
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

Row ToRow(const ChunkWindow& w) { return Row{w.start_ms, w.avg, w.min, w.max, w.last, w.count}; }

// The windows in [from_ms, to_ms) of the series' chunks in `table` (sample_chunks: in time
// order; head_chunks and rollup_1m_chunks: in the order they were written, rowid order).
base::Status ReadChunks(sqlite::Connection& db, std::string_view table, int64_t series_id,
                        int64_t from_ms, int64_t to_ms, std::vector<ChunkWindow>& out) {
  // A chunk lies inside one aligned span, so one that reaches into [from, to) starts after
  // from - kChunkSpanMs: the index range stays short.
  WARPSCOPE_ASSIGN_OR_RETURN(
      sqlite::Statement stmt,
      db.Prepare(fmt::format("SELECT id, data FROM {} WHERE series_id = ?1 AND start_ms > ?2 "
                             "AND start_ms < ?3 AND end_ms > ?4 ORDER BY {}",
                             table, table == "sample_chunks" ? "start_ms" : "id")));
  stmt.Bind(series_id, from_ms - kChunkSpanMs, to_ms, from_ms);
  return stmt.ForEachRow([&](const sqlite::Statement& row) {
    return AppendChunkWindows(table, row, from_ms, to_ms, out);
  });
}

}  // namespace

void Overlay(std::vector<ChunkWindow>& base, std::vector<ChunkWindow> top) {
  if (top.empty()) {
    return;
  }
  if (base.empty() &&
      std::adjacent_find(top.begin(), top.end(), [](const ChunkWindow& a, const ChunkWindow& b) {
        return a.start_ms >= b.start_ms;
      }) == top.end()) {
    base = std::move(top);  // already sorted and unique: closed chunks read in order
    return;
  }
  // Of equal starts in `top` the last is kept: stable order, then the last of each run.
  std::stable_sort(top.begin(), top.end(), [](const ChunkWindow& a, const ChunkWindow& b) {
    return a.start_ms < b.start_ms;
  });
  size_t kept = 0;
  for (size_t i = 0; i < top.size(); ++i) {
    if (i + 1 < top.size() && top[i + 1].start_ms == top[i].start_ms) {
      continue;
    }
    top[kept++] = top[i];
  }
  top.resize(kept);
  std::vector<ChunkWindow> out;
  out.reserve(base.size() + top.size());
  size_t b = 0;
  for (const ChunkWindow& w : top) {
    while (b < base.size() && base[b].start_ms < w.start_ms) {
      out.push_back(base[b++]);
    }
    if (b < base.size() && base[b].start_ms == w.start_ms) {
      ++b;  // replaced by the later write
    }
    out.push_back(w);
  }
  out.insert(out.end(), base.begin() + static_cast<ptrdiff_t>(b), base.end());
  base = std::move(out);
}

base::Status AppendChunkWindows(std::string_view table, const sqlite::Statement& row,
                                int64_t from_ms, int64_t to_ms, std::vector<ChunkWindow>& out) {
  auto windows = DecodeChunk(row.ColumnBlob(1));
  if (!windows) {
    return windows.error().WithContext(fmt::format(
        "{} row {} is damaged; restore the database from a backup", table, row.ColumnInt(0)));
  }
  for (const ChunkWindow& w : *windows) {
    if (w.start_ms >= from_ms && w.start_ms < to_ms) {
      out.push_back(w);
    }
  }
  return base::OkStatus();
}

base::Status ForEachRawRow(sqlite::Connection& db, int64_t series_id, int64_t from_ms,
                           int64_t to_ms, const std::function<void(const Row&)>& fn) {
  // Three layers, each later one replacing a window with the same start: the closed spans'
  // chunks, the samples rows of an older head, the head's chunks in the order they were moved.
  std::vector<ChunkWindow> windows;
  std::vector<ChunkWindow> layer;
  WARPSCOPE_RETURN_IF_ERROR(ReadChunks(db, "sample_chunks", series_id, from_ms, to_ms, windows));
  {
    WARPSCOPE_ASSIGN_OR_RETURN(
        sqlite::Statement stmt,
        db.Prepare("SELECT start_ms, avg, min, max, last, count FROM samples WHERE series_id = "
                   "?1 AND start_ms >= ?2 AND start_ms < ?3 ORDER BY start_ms"));
    stmt.Bind(series_id, from_ms, to_ms);
    WARPSCOPE_RETURN_IF_ERROR(stmt.ForEachRow([&](const sqlite::Statement& row) {
      layer.push_back(ChunkWindow{row.ColumnInt(0), 0, row.ColumnDouble(1), row.ColumnDouble(2),
                                  row.ColumnDouble(3), row.ColumnDouble(4), row.ColumnInt(5)});
    }));
    Overlay(windows, std::move(layer));
    layer.clear();
  }
  WARPSCOPE_RETURN_IF_ERROR(ReadChunks(db, "head_chunks", series_id, from_ms, to_ms, layer));
  Overlay(windows, std::move(layer));
  for (const ChunkWindow& w : windows) {
    fn(ToRow(w));
  }
  return base::OkStatus();
}

base::Status ForEachMinuteRow(sqlite::Connection& db, int64_t series_id, int64_t from_ms,
                              int64_t to_ms, std::optional<Aggregation> only,
                              const std::function<void(const Row&)>& fn) {
  // The chunks in the order they were written (a later one wins: a slice rolled up again after
  // a crash), then the rebuilt minutes' rows over them.
  std::vector<ChunkWindow> windows;
  std::vector<ChunkWindow> layer;
  WARPSCOPE_RETURN_IF_ERROR(ReadChunks(db, "rollup_1m_chunks", series_id, from_ms, to_ms, layer));
  Overlay(windows, std::move(layer));
  layer.clear();
  WARPSCOPE_ASSIGN_OR_RETURN(sqlite::Statement stmt,
                             db.Prepare(RowsSql(Resolution::kMinute, only)));
  stmt.Bind(series_id, from_ms, to_ms);
  WARPSCOPE_RETURN_IF_ERROR(stmt.ForEachRow([&](const sqlite::Statement& row) {
    Row r = ReadRow(row, only);
    layer.push_back(ChunkWindow{r.start, kMinuteMs, r.avg, r.min, r.max, r.last, r.count});
  }));
  Overlay(windows, std::move(layer));
  for (const ChunkWindow& w : windows) {
    fn(ToRow(w));
  }
  return base::OkStatus();
}

base::Status InsertChunks(sqlite::Connection& db, std::string_view table,
                          const std::vector<EncodedChunk>& chunks) {
  WARPSCOPE_ASSIGN_OR_RETURN(
      sqlite::Statement insert,
      db.Prepare(fmt::format(
          "INSERT INTO {}(series_id, start_ms, end_ms, count, data) VALUES(?1, ?2, ?3, ?4, ?5)",
          table)));
  for (const EncodedChunk& c : chunks) {
    WARPSCOPE_RETURN_IF_ERROR(
        insert.Bind(c.series_id, c.start_ms, c.end_ms, c.count, sqlite::Blob{c.data}).Run());
    insert.Reset();
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

using SpanKey = std::pair<int64_t, int64_t>;  // series id, span start
// A closed span's windows of one series that are not in sample_chunks yet: samples rows of an
// older head (in start order) and head chunks' windows (in the order they were moved).
struct SpanHead {
  std::vector<ChunkWindow> rows;
  std::vector<ChunkWindow> moved;
};

// The head of series `ids` before `end_ms`, by series and span.
Status ReadHead(sqlite::Connection& db, const std::vector<int64_t>& ids, int64_t end_ms,
                std::map<SpanKey, SpanHead>& spans) {
  WARPSCOPE_ASSIGN_OR_RETURN(
      Statement rows,
      db.Prepare("SELECT start_ms, duration_ms, avg, min, max, last, count FROM samples "
                 "WHERE series_id = ?1 AND start_ms < ?2 ORDER BY start_ms"));
  WARPSCOPE_ASSIGN_OR_RETURN(
      Statement chunks,
      db.Prepare("SELECT id, data FROM head_chunks WHERE series_id = ?1 AND start_ms < ?2 "
                 "ORDER BY id"));
  std::vector<ChunkWindow> moved;
  for (int64_t id : ids) {
    // Per series, so that each read is one seek on the (series_id, start_ms) key.
    rows.Bind(id, end_ms);
    WARPSCOPE_RETURN_IF_ERROR(rows.ForEachRow([&](const Statement& row) {
      ChunkWindow w{row.ColumnInt(0),    row.ColumnInt(1),    row.ColumnDouble(2),
                    row.ColumnDouble(3), row.ColumnDouble(4), row.ColumnDouble(5),
                    row.ColumnInt(6)};
      spans[{id, FloorTo(w.start_ms, kChunkSpanMs)}].rows.push_back(w);
    }));
    rows.Reset();
    moved.clear();
    chunks.Bind(id, end_ms);
    WARPSCOPE_RETURN_IF_ERROR(chunks.ForEachRow([&](const Statement& row) {
      return storage_internal::AppendChunkWindows("head_chunks", row, INT64_MIN, end_ms, moved);
    }));
    chunks.Reset();
    for (const ChunkWindow& w : moved) {
      spans[{id, FloorTo(w.start_ms, kChunkSpanMs)}].moved.push_back(w);
    }
  }
  return base::OkStatus();
}

// The minute rollup rows (rebuilt minutes) of series `ids` before `end_ms`, by series and span
// (as `rows`: one layer, in bucket order); with `span` set, that span of every series too (its
// minutes are chunks of the slices rolled up, merged when it closes).
Status ReadMinuteRows(sqlite::Connection& db, const std::vector<int64_t>& ids, int64_t end_ms,
                      std::optional<int64_t> span, std::map<SpanKey, SpanHead>& spans) {
  WARPSCOPE_ASSIGN_OR_RETURN(
      Statement rows,
      db.Prepare("SELECT bucket_ms, avg, min, max, last, count FROM rollup_1m WHERE series_id = "
                 "?1 AND bucket_ms < ?2 ORDER BY bucket_ms"));
  for (int64_t id : ids) {
    rows.Bind(id, end_ms);
    WARPSCOPE_RETURN_IF_ERROR(rows.ForEachRow([&](const Statement& row) {
      ChunkWindow w{row.ColumnInt(0),    kMinuteMs,           row.ColumnDouble(1),
                    row.ColumnDouble(2), row.ColumnDouble(3), row.ColumnDouble(4),
                    row.ColumnInt(5)};
      spans[{id, FloorTo(w.start_ms, kChunkSpanMs)}].rows.push_back(w);
    }));
    rows.Reset();
    if (span.has_value()) {
      spans.try_emplace({id, *span});
    }
  }
  return base::OkStatus();
}

// Writes each span of `spans` into `table` (sample_chunks, rollup_1m_chunks) again: the span's
// chunks so far (late arrivals, or a span a crash left half moved), the head's rows and then its
// moved windows over them, encoded as the span's chunks. One index seek for a span with no
// chunks yet. Returns the windows taken from the head and the windows written.
struct Rewritten {
  uint64_t taken = 0;
  uint64_t written = 0;
};
Result<Rewritten> RewriteSpans(sqlite::Connection& db, std::string_view table,
                               std::map<SpanKey, SpanHead>& spans) {
  WARPSCOPE_ASSIGN_OR_RETURN(
      Statement existing,
      db.Prepare(fmt::format("SELECT id, data FROM {} WHERE series_id = ?1 AND start_ms >= ?2 "
                             "AND start_ms < ?3 ORDER BY id",
                             table)));
  WARPSCOPE_ASSIGN_OR_RETURN(
      Statement drop,
      db.Prepare(fmt::format(
          "DELETE FROM {} WHERE series_id = ?1 AND start_ms >= ?2 AND start_ms < ?3", table)));
  ChunkCutter cutter(kChunkSpanMs, kChunkTargetBytes);
  Rewritten done;
  for (auto& [key, head] : spans) {
    const int64_t series_id = key.first;  // captured below: not a binding (clang < 16)
    const int64_t span = key.second;
    done.taken += head.rows.size() + head.moved.size();
    std::vector<ChunkWindow> windows;
    std::vector<ChunkWindow> chunks;  // in the order written: a later chunk wins
    existing.Bind(series_id, span, span + kChunkSpanMs);
    WARPSCOPE_RETURN_IF_ERROR(existing.ForEachRow([&](const Statement& row) {
      return storage_internal::AppendChunkWindows(table, row, INT64_MIN, INT64_MAX, chunks);
    }));
    existing.Reset();
    storage_internal::Overlay(windows, std::move(chunks));
    if (!windows.empty()) {
      WARPSCOPE_RETURN_IF_ERROR(drop.Bind(series_id, span, span + kChunkSpanMs).Run());
      drop.Reset();
    }
    storage_internal::Overlay(windows, std::move(head.rows));
    storage_internal::Overlay(windows, std::move(head.moved));
    for (const ChunkWindow& w : windows) {
      cutter.Add(series_id, w);
    }
    done.written += windows.size();
  }
  WARPSCOPE_RETURN_IF_ERROR(storage_internal::InsertChunks(db, table, cutter.Finish()));
  return done;
}

}  // namespace

Result<std::pair<uint64_t, uint64_t>> SqliteStorage::ChunkSeriesGroup(int64_t id_lo, int64_t id_hi,
                                                                      int64_t end_ms,
                                                                      bool closing) {
  std::unique_lock lock(write_mu_);
  WARPSCOPE_RETURN_IF_ERROR(ApplyStagedLocked(lock));
  return sqlite::InWriteTransaction(*writer_, [&]() -> Result<std::pair<uint64_t, uint64_t>> {
    std::vector<int64_t> ids;
    {
      WARPSCOPE_ASSIGN_OR_RETURN(
          Statement series, writer_->Prepare("SELECT id FROM series WHERE id BETWEEN ?1 AND ?2"));
      series.Bind(id_lo, id_hi);
      WARPSCOPE_RETURN_IF_ERROR(
          series.ForEachRow([&](const Statement& row) { ids.push_back(row.ColumnInt(0)); }));
    }
    std::map<SpanKey, SpanHead> spans;
    WARPSCOPE_RETURN_IF_ERROR(ReadHead(*writer_, ids, end_ms, spans));
    WARPSCOPE_ASSIGN_OR_RETURN(Rewritten raw, RewriteSpans(*writer_, "sample_chunks", spans));
    std::map<SpanKey, SpanHead> minutes;
    WARPSCOPE_RETURN_IF_ERROR(ReadMinuteRows(
        *writer_, ids, end_ms,
        closing ? std::optional<int64_t>(end_ms - kChunkSpanMs) : std::nullopt, minutes));
    WARPSCOPE_ASSIGN_OR_RETURN(Rewritten buckets,
                               RewriteSpans(*writer_, "rollup_1m_chunks", minutes));
    WARPSCOPE_ASSIGN_OR_RETURN(
        Statement clear_rows,
        writer_->Prepare("DELETE FROM samples WHERE series_id = ?1 AND start_ms < ?2"));
    WARPSCOPE_ASSIGN_OR_RETURN(
        Statement clear_head,
        writer_->Prepare("DELETE FROM head_chunks WHERE series_id = ?1 AND start_ms < ?2"));
    WARPSCOPE_ASSIGN_OR_RETURN(
        Statement clear_minutes,
        writer_->Prepare("DELETE FROM rollup_1m WHERE series_id = ?1 AND bucket_ms < ?2"));
    for (int64_t id : ids) {
      for (Statement* clear : {&clear_rows, &clear_head, &clear_minutes}) {
        WARPSCOPE_RETURN_IF_ERROR(clear->Bind(id, end_ms).Run());
        clear->Reset();
      }
    }
    return std::pair{raw.taken, buckets.written};
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
    from =
        std::max(from, FloorTo(now_ms - DurationMs(options_.storage.raw_retention), kChunkSpanMs));
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
    WARPSCOPE_RETURN_IF_ERROR(ChunkAllSeries(end, /*closing=*/true, result));
    std::lock_guard lock(write_mu_);
    WARPSCOPE_RETURN_IF_ERROR(
        sqlite::InWriteTransaction(*writer_, [&] { return SetMeta(kMetaChunkWatermark, end); }));
    chunk_watermark_ = end;
  }
  // Late windows below the watermark join their spans' chunks.
  int64_t watermark = 0;
  {
    std::lock_guard lock(write_mu_);
    if (head_rows_) {
      // An older head's rows leave as their spans close; nothing writes new ones.
      WARPSCOPE_ASSIGN_OR_RETURN(int64_t rows,
                                 writer_->QueryInt("SELECT EXISTS(SELECT 1 FROM samples)", 0));
      head_rows_ = rows != 0;
    }
    if (!late_chunked_ || chunk_watermark_ == 0) {
      return base::OkStatus();
    }
    late_chunked_ = false;
    watermark = chunk_watermark_;
    chunk_building_to_ = watermark;
  }
  if (Status st = ChunkAllSeries(watermark, /*closing=*/false, result); !st.ok()) {
    std::lock_guard lock(write_mu_);
    late_chunked_ = true;
    return st;
  }
  return base::OkStatus();
}

Status SqliteStorage::ChunkAllSeries(int64_t end_ms, bool closing, CompactResult& result) {
  for (const auto& [lo, hi] : SeriesChunks(0, kChunkingSeries)) {
    WARPSCOPE_ASSIGN_OR_RETURN(auto moved, ChunkSeriesGroup(lo, hi, end_ms, closing));
    result.chunked_windows += moved.first;
    result.chunked_minutes += moved.second;
    if (options_.after_chunk_group_for_testing) {
      options_.after_chunk_group_for_testing();
    }
  }
  return base::OkStatus();
}

Result<uint64_t> SqliteStorage::MergeHeadGroup(int64_t id_lo, int64_t id_hi) {
  std::lock_guard lock(write_mu_);
  return sqlite::InWriteTransaction(*writer_, [&]() -> Result<uint64_t> {
    // Newest first per series: a run taken from the newest end keeps the rowid order of what
    // stays (every chunk left is older than the merged ones, which replace theirs).
    // Size-tiered, as in a log-structured merge: an older chunk joins the run only while it
    // holds no more windows than the newer ones taken, so a window is rewritten about log2 of
    // its final chunk's windows times, not once per Compact until the chunk is large.
    WARPSCOPE_ASSIGN_OR_RETURN(
        Statement sizes,
        writer_->Prepare("SELECT series_id, id, length(data), count FROM head_chunks WHERE "
                         "series_id BETWEEN ?1 AND ?2 ORDER BY series_id, id DESC"));
    sizes.Bind(id_lo, id_hi);
    std::vector<std::pair<int64_t, std::vector<int64_t>>> runs;  // series, ids newest first
    int64_t series = 0;
    int64_t taken = 0;  // windows in the run so far
    bool open = false;
    WARPSCOPE_RETURN_IF_ERROR(sizes.ForEachRow([&](const Statement& row) {
      if (runs.empty() || row.ColumnInt(0) != series) {
        series = row.ColumnInt(0);
        runs.emplace_back(series, std::vector<int64_t>{});
        taken = 0;
        open = true;
      }
      open = open && static_cast<size_t>(row.ColumnInt(2)) < kChunkTargetBytes / 2 &&
             (taken == 0 || row.ColumnInt(3) <= taken);
      if (open) {
        runs.back().second.push_back(row.ColumnInt(1));
        taken += row.ColumnInt(3);
      }
    }));
    WARPSCOPE_ASSIGN_OR_RETURN(Statement read,
                               writer_->Prepare("SELECT id, data FROM head_chunks WHERE id = ?1"));
    WARPSCOPE_ASSIGN_OR_RETURN(Statement drop,
                               writer_->Prepare("DELETE FROM head_chunks WHERE id = ?1"));
    ChunkCutter cutter(kChunkSpanMs, kChunkTargetBytes);
    uint64_t merged = 0;
    for (auto& [series_id, ids] : runs) {
      if (ids.size() < 2) {
        continue;
      }
      std::vector<ChunkWindow> layer;  // oldest first: a later chunk's window wins
      for (auto id = ids.rbegin(); id != ids.rend(); ++id) {
        read.Bind(*id);
        WARPSCOPE_RETURN_IF_ERROR(read.ForEachRow([&](const Statement& row) {
          return storage_internal::AppendChunkWindows("head_chunks", row, INT64_MIN, INT64_MAX,
                                                      layer);
        }));
        read.Reset();
        WARPSCOPE_RETURN_IF_ERROR(drop.Bind(*id).Run());
        drop.Reset();
      }
      std::vector<ChunkWindow> windows;
      storage_internal::Overlay(windows, std::move(layer));
      for (const ChunkWindow& w : windows) {
        cutter.Add(series_id, w);
      }
      merged += ids.size();
    }
    WARPSCOPE_RETURN_IF_ERROR(
        storage_internal::InsertChunks(*writer_, "head_chunks", cutter.Finish()));
    return merged;
  });
}

Status SqliteStorage::MergeSmallHeadChunks(CompactResult& result) {
  for (const auto& [lo, hi] : SeriesChunks(0, kChunkingSeries)) {
    WARPSCOPE_ASSIGN_OR_RETURN(uint64_t merged, MergeHeadGroup(lo, hi));
    result.merged_head_chunks += merged;
  }
  return base::OkStatus();
}

}  // namespace warpscope::server

// SPDX-License-Identifier: Apache-2.0
// What the sqlite_storage*.cc files share: tuning constants, the meta table's keys, time and
// name conversions, and the few reads both the open and the query paths do. Private to
// SqliteStorage's implementation; nothing outside src/server/storage/ includes it.
#ifndef WARPSCOPE_SERVER_STORAGE_SQLITE_STORAGE_INTERNAL_H_
#define WARPSCOPE_SERVER_STORAGE_SQLITE_STORAGE_INTERNAL_H_

#include <fmt/format.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "base/time.h"
#include "model/entity.h"
#include "server/storage/backend_common.h"
#include "server/storage/query_plan.h"
#include "server/storage/sample_chunk.h"
#include "server/storage/sqlite_db.h"
#include "server/storage/sqlite_storage.h"
#include "server/storage/storage.h"

namespace warpscope::server {

struct SqliteStorage::MatchedSeries {
  int64_t id = 0;
  SeriesIdentity identity;
};

// What one write transaction staged, applied to staged_ once it has committed.
struct SqliteStorage::StagedBatch {
  std::vector<StagedSample> rows;
  int64_t last_id = 0;  // rowid of its staged_samples row (staged_last_id_ when it has none)
};

// A caller of WriteBatches waiting for the group commit (queue_mu_ guards `done`).
struct SqliteStorage::PendingWrite {
  std::span<const IngestBatch> batches;
  // Per batch, its series' entries found before the commit (ResolveSeries), valid while
  // series_generation_ is `generation`; empty when not resolved.
  std::vector<std::vector<SeriesEntry*>> resolved;
  uint64_t generation = 0;
  BatchesWritten written;
  bool done = false;
};

namespace storage_internal {

// series.last_seen_ms is written at most this often per series (an UPDATE per series per batch
// would double the write cost); readers allow twice this much slack when they use it.
inline constexpr int64_t kLastSeenPersistMs = 10 * kMinuteMs;
inline constexpr int64_t kLastSeenSlackMs = 2 * kLastSeenPersistMs;
// Compaction works on this many series per transaction, over slices of this many ms, so one
// chunk reads about 256 series x 60 rows and holds the write lock for a few milliseconds.
inline constexpr size_t kChunkSeries = 256;
inline constexpr int64_t kMinuteSliceMs = 10 * kMinuteMs;
inline constexpr int64_t kHourSliceMs = kHourMs;
// Sample chunks (sqlite_storage_chunks.cc): raw windows of closed, epoch-aligned spans of this
// length move from the head into sample_chunks, kChunkingSeries series per
// transaction; a chunk is closed once it holds kChunkTargetBytes, so that rows stay well under
// a page (no overflow pages) and leaves pack densely.
inline constexpr int64_t kChunkSpanMs = 2 * kHourMs;
inline constexpr size_t kChunkingSeries = 32;
inline constexpr size_t kChunkTargetBytes = 1000;
// Retention runs when its cutoff has moved at least this far.
inline constexpr int64_t kRetentionStepMs = kHourMs;
// Rows deleted per transaction by retention of events, profiles, steps and the dedup table.
inline constexpr int kDeleteBatch = 5000;

// Resolution keys of rollup_dirty: the bucket in seconds.
inline constexpr int64_t kDirtyMinute = 60;
inline constexpr int64_t kDirtyHour = 3600;

inline constexpr char kMetaSchemaVersion[] = "schema_version";
inline constexpr char kMetaFirstWindow[] = "first_window_ms";
inline constexpr char kMetaMinuteWatermark[] = "minute_watermark_ms";
inline constexpr char kMetaHourWatermark[] = "hour_watermark_ms";
inline constexpr char kMetaRawCutoff[] = "raw_cutoff_ms";
inline constexpr char kMetaMinuteCutoff[] = "minute_cutoff_ms";
inline constexpr char kMetaHourCutoff[] = "hour_cutoff_ms";
inline constexpr char kMetaChunkWatermark[] = "chunk_watermark_ms";

// Every table, in the order Stats() reports them.
inline constexpr const char* kTables[] = {
    "samples",          "sample_chunks", "head_chunks", "staged_samples", "rollup_1m",
    "rollup_1m_chunks", "rollup_1h",     "series",      "entities",       "hosts",
    "metrics",          "events",        "profiles",    "training_steps", "ingested",
    "agents",           "rollup_dirty",  "meta"};

// The time marks kept in the meta table, in ms; 0 when absent.
struct MetaMarks {
  int64_t first_window = 0;
  int64_t minute_watermark = 0;
  int64_t hour_watermark = 0;
  int64_t raw_cutoff = 0;
  int64_t minute_cutoff = 0;
  int64_t hour_cutoff = 0;
  int64_t chunk_watermark = 0;
};
[[nodiscard]] base::Result<MetaMarks> ReadMetaMarks(sqlite::Connection& db);

// The raw windows of one series with a start in [from_ms, to_ms), in start order: those in
// sample_chunks, in the samples table (the head before schema 5) and in head_chunks as one
// sequence, each replacing a window of the ones before with the same start (it was written
// later; among head chunks, a later move wins). `fn` takes a const Row&.
[[nodiscard]] base::Status ForEachRawRow(sqlite::Connection& db, int64_t series_id, int64_t from_ms,
                                         int64_t to_ms, const std::function<void(const Row&)>& fn);
// The minute rollup buckets of one series in [from_ms, to_ms), in time order: those in
// rollup_1m_chunks (a later chunk replacing an earlier one's bucket) with the rollup_1m rows
// over them (minutes rebuilt for late windows). With `only` set, rows read just that
// aggregation's columns (Row's defaults elsewhere).
[[nodiscard]] base::Status ForEachMinuteRow(sqlite::Connection& db, int64_t series_id,
                                            int64_t from_ms, int64_t to_ms,
                                            std::optional<Aggregation> only,
                                            const std::function<void(const Row&)>& fn);

// The rows of one series in [?2, ?3) of the rollup_1m or rollup_1h table (by `r`; raw windows
// are read by ForEachRawRow, from chunks). With `only` set, just the columns that aggregation
// needs are read (a chart over a day reads ~10^5 rows; fewer columns per row is the cheapest
// saving); otherwise all of them.
std::string RowsSql(Resolution r, std::optional<Aggregation> only);
// A row of RowsSql(_, only) as a Row; fields not read stay at Row's defaults.
Row ReadRow(const sqlite::Statement& stmt, std::optional<Aggregation> only);

// Puts `top` (windows in the order they were written) over `base` (sorted by start, unique):
// a window of `top` replaces the one of `base` with the same start, and of equal starts within
// `top` the last is kept. `base` stays sorted and unique.
void Overlay(std::vector<ChunkWindow>& base, std::vector<ChunkWindow> top);
// Inserts `chunks` as rows of a chunk table (sample_chunks, head_chunks, rollup_1m_chunks).
[[nodiscard]] base::Status InsertChunks(sqlite::Connection& db, std::string_view table,
                                        const std::vector<EncodedChunk>& chunks);
// Appends the windows in [from_ms, to_ms) of the chunk in `row` (columns: id, data) to `out`;
// a chunk that does not decode is an error naming `table` and the row.
[[nodiscard]] base::Status AppendChunkWindows(std::string_view table, const sqlite::Statement& row,
                                              int64_t from_ms, int64_t to_ms,
                                              std::vector<ChunkWindow>& out);

// Reads one metric row by key: its id and description. NotFound names the key.
[[nodiscard]] base::Result<std::pair<int64_t, MetricInfo>> ReadMetric(sqlite::Connection& db,
                                                                      const std::string& key);

using namespace backend_common;  // NOLINT(google-build-using-namespace)

// Keys of the entities_ and series_ caches. A series is keyed by names (host, entity id, metric
// key, each after its length, then the encoded labels), so that a caller can build its key
// without the writer's id caches.
inline std::string EntityKey(int64_t host_id, std::string_view entity) {
  return fmt::format("{}\x1f{}", host_id, entity);
}
inline void AppendKeyPart(std::string& out, std::string_view part) {
  const auto size = static_cast<uint32_t>(part.size());
  out.append(reinterpret_cast<const char*>(&size), sizeof(size));
  out.append(part);
}
// Appends the key's prefix; the encoded labels follow it.
inline void AppendSeriesKeyPrefix(std::string& out, std::string_view host, std::string_view entity,
                                  std::string_view metric) {
  AppendKeyPart(out, host);
  AppendKeyPart(out, entity);
  AppendKeyPart(out, metric);
}

}  // namespace storage_internal
}  // namespace warpscope::server

#endif  // WARPSCOPE_SERVER_STORAGE_SQLITE_STORAGE_INTERNAL_H_

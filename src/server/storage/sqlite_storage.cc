// SPDX-License-Identifier: Apache-2.0
// SqliteStorage: opening the database (data dir, pragmas), its schema and migrations, and
// loading the write connection's caches from it.
#include "server/storage/sqlite_storage.h"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>

#include "base/logging.h"
#include "server/storage/sqlite_db.h"
#include "server/storage/sqlite_storage_internal.h"

namespace warpscope::server {

namespace storage_internal {

base::Result<MetaMarks> ReadMetaMarks(sqlite::Connection& db) {
  WARPSCOPE_ASSIGN_OR_RETURN(sqlite::Statement stmt, db.Prepare("SELECT key, value FROM meta"));
  MetaMarks m;
  const std::pair<std::string_view, int64_t*> fields[] = {
      {kMetaFirstWindow, &m.first_window},      {kMetaMinuteWatermark, &m.minute_watermark},
      {kMetaHourWatermark, &m.hour_watermark},  {kMetaRawCutoff, &m.raw_cutoff},
      {kMetaMinuteCutoff, &m.minute_cutoff},    {kMetaHourCutoff, &m.hour_cutoff},
      {kMetaChunkWatermark, &m.chunk_watermark}};
  WARPSCOPE_RETURN_IF_ERROR(stmt.ForEachRow([&](const sqlite::Statement& row) {
    std::string_view key = row.ColumnText(0);
    for (const auto& [name, out] : fields) {
      if (key == name) {
        *out = row.ColumnInt(1);
      }
    }
  }));
  return m;
}

base::Result<std::pair<int64_t, MetricInfo>> ReadMetric(sqlite::Connection& db,
                                                        const std::string& key) {
  WARPSCOPE_ASSIGN_OR_RETURN(
      sqlite::Statement stmt,
      db.Prepare("SELECT id, key, kind, unit, help, prom_name, prom_scale, otel_name, "
                 "entity_kind FROM metrics WHERE key = ?1"));
  stmt.Bind(key);
  WARPSCOPE_ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) {
    return base::Error(base::NotFound("metric \"{}\" is unknown: no agent has sent it", key));
  }
  MetricInfo info;
  info.key = std::string(stmt.ColumnText(1));
  info.kind = ParseMetricKind(stmt.ColumnText(2));
  info.unit = std::string(stmt.ColumnText(3));
  info.help = std::string(stmt.ColumnText(4));
  info.prom_name = std::string(stmt.ColumnText(5));
  info.prom_scale = stmt.ColumnDouble(6);
  info.otel_name = std::string(stmt.ColumnText(7));
  info.entity_kind = EntityKindOrHost(stmt.ColumnText(8));
  return std::make_pair(stmt.ColumnInt(0), std::move(info));
}

}  // namespace storage_internal

namespace {

using base::Error;
using base::Result;
using base::Status;
using sqlite::Connection;
using sqlite::Statement;
using storage_internal::EntityKey;
using storage_internal::EntityKindOrHost;
using storage_internal::kLastSeenPersistMs;
using storage_internal::kMetaSchemaVersion;
using storage_internal::MetaMarks;
using storage_internal::ReadMetaMarks;
using storage_internal::ReadMetric;
using storage_internal::AppendSeriesKeyPrefix;

constexpr char kDatabaseFile[] = "warpscope.db";

constexpr const char* kSchema = R"sql(
CREATE TABLE meta(
  key TEXT PRIMARY KEY,
  value INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE agents(
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE
);
CREATE TABLE ingested(
  agent_id INTEGER NOT NULL,
  sequence INTEGER NOT NULL,
  start_ms INTEGER NOT NULL,
  PRIMARY KEY(agent_id, sequence)
) WITHOUT ROWID;
CREATE INDEX ingested_by_start ON ingested(start_ms);
CREATE TABLE hosts(
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  tags TEXT NOT NULL
);
CREATE TABLE metrics(
  id INTEGER PRIMARY KEY,
  key TEXT NOT NULL UNIQUE,
  kind TEXT NOT NULL,
  unit TEXT NOT NULL,
  help TEXT NOT NULL,
  prom_name TEXT NOT NULL,
  prom_scale REAL NOT NULL,
  otel_name TEXT NOT NULL,
  entity_kind TEXT NOT NULL
);
CREATE TABLE entities(
  id INTEGER PRIMARY KEY,
  host_id INTEGER NOT NULL,
  entity TEXT NOT NULL,
  kind TEXT NOT NULL,
  parent TEXT NOT NULL,
  attributes TEXT NOT NULL,
  first_seen_ms INTEGER NOT NULL,
  last_seen_ms INTEGER NOT NULL,
  UNIQUE(host_id, entity)
);
CREATE TABLE series(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  host_id INTEGER NOT NULL,
  entity_id INTEGER NOT NULL,
  metric_id INTEGER NOT NULL,
  labels TEXT NOT NULL,
  first_seen_ms INTEGER NOT NULL,
  last_seen_ms INTEGER NOT NULL,
  UNIQUE(entity_id, metric_id, labels)
);
CREATE INDEX series_by_metric ON series(metric_id, host_id);
CREATE TABLE samples(
  series_id INTEGER NOT NULL,
  start_ms INTEGER NOT NULL,
  duration_ms INTEGER NOT NULL,
  avg REAL NOT NULL,
  min REAL NOT NULL,
  max REAL NOT NULL,
  last REAL NOT NULL,
  count INTEGER NOT NULL,
  PRIMARY KEY(series_id, start_ms)
) WITHOUT ROWID;
CREATE TABLE rollup_1m(
  series_id INTEGER NOT NULL,
  bucket_ms INTEGER NOT NULL,
  avg REAL NOT NULL,
  min REAL NOT NULL,
  max REAL NOT NULL,
  last REAL NOT NULL,
  count INTEGER NOT NULL,
  PRIMARY KEY(series_id, bucket_ms)
) WITHOUT ROWID;
CREATE TABLE rollup_1h(
  series_id INTEGER NOT NULL,
  bucket_ms INTEGER NOT NULL,
  avg REAL NOT NULL,
  min REAL NOT NULL,
  max REAL NOT NULL,
  last REAL NOT NULL,
  count INTEGER NOT NULL,
  PRIMARY KEY(series_id, bucket_ms)
) WITHOUT ROWID;
CREATE TABLE rollup_dirty(
  resolution INTEGER NOT NULL,
  host_id INTEGER NOT NULL,
  from_ms INTEGER NOT NULL,
  generation INTEGER NOT NULL,
  PRIMARY KEY(resolution, host_id)
) WITHOUT ROWID;
CREATE TABLE events(
  id INTEGER PRIMARY KEY,
  host_id INTEGER NOT NULL,
  entity TEXT NOT NULL,
  time_ms INTEGER NOT NULL,
  kind TEXT NOT NULL,
  code INTEGER NOT NULL,
  message TEXT NOT NULL,
  attributes TEXT NOT NULL
);
CREATE INDEX events_by_time ON events(time_ms);
CREATE TABLE profiles(
  id INTEGER PRIMARY KEY,
  host_id INTEGER NOT NULL,
  entity TEXT NOT NULL,
  pid INTEGER NOT NULL,
  executable TEXT NOT NULL,
  kind TEXT NOT NULL,
  start_ms INTEGER NOT NULL,
  end_ms INTEGER NOT NULL,
  labels TEXT NOT NULL,
  size INTEGER NOT NULL,
  data BLOB NOT NULL
);
CREATE INDEX profiles_by_start ON profiles(start_ms);
)sql";

// Schema version 2: samples staged in arrival order, one blob of StagedSample images per batch.
constexpr char kStagedSchema[] = R"sql(
CREATE TABLE IF NOT EXISTS staged_samples(
  id INTEGER PRIMARY KEY,
  samples BLOB NOT NULL
);
)sql";

// Schema version 3: training steps, one row per rank and step (docs/design/storage.md). Times
// in ns, as sent: steps last milliseconds, and the job analysis compares them across ranks.
// By job and end for QuerySteps; by end for ListJobs and retention.
constexpr char kStepsSchema[] = R"sql(
CREATE TABLE IF NOT EXISTS training_steps(
  id INTEGER PRIMARY KEY,
  host_id INTEGER NOT NULL,
  entity TEXT NOT NULL,
  job TEXT NOT NULL,
  comm TEXT NOT NULL,
  rank INTEGER NOT NULL,
  world_size INTEGER NOT NULL,
  step INTEGER NOT NULL,
  start_ns INTEGER NOT NULL,
  end_ns INTEGER NOT NULL,
  compute_ns INTEGER NOT NULL,
  comm_ns INTEGER NOT NULL,
  overlap_ns INTEGER NOT NULL,
  last_collective_offset_ns INTEGER NOT NULL,
  nccl_ns INTEGER NOT NULL,
  collectives INTEGER NOT NULL,
  bus_bytes INTEGER NOT NULL,
  source TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS training_steps_by_job ON training_steps(job, end_ns);
CREATE INDEX IF NOT EXISTS training_steps_by_end ON training_steps(end_ns);
)sql";

// A table of compressed chunks (sample_chunk.h): one row per run of windows of one series inside
// one kChunkSpanMs span. start_ms is the first window's start, end_ms the last window's start + 1,
// count the windows. A rowid table: chunks are appended, so its leaves fill completely.
std::string ChunkTableSchema(std::string_view table, std::string_view index) {
  return fmt::format(
      "CREATE TABLE IF NOT EXISTS {0}(id INTEGER PRIMARY KEY, series_id INTEGER NOT NULL, "
      "start_ms INTEGER NOT NULL, end_ms INTEGER NOT NULL, count INTEGER NOT NULL, data BLOB NOT "
      "NULL); CREATE {1} IF NOT EXISTS {0}_by_series ON {0}(series_id, start_ms);",
      table, index);
}
// Schema version 4: raw windows of closed spans; the index finds a series' chunks in time order.
std::string ChunksSchema() { return ChunkTableSchema("sample_chunks", "UNIQUE INDEX"); }
// Schema version 5: the head. Staged samples move here, one chunk per series and move instead
// of one samples row per window; a later chunk's window replaces an earlier one with the same
// start (rowid order is move order). Compact merges a closed span's head chunks into
// sample_chunks.
std::string HeadSchema() { return ChunkTableSchema("head_chunks", "INDEX"); }
// Schema version 6: the minute rollups as chunks, a bucket as a window (start = bucket, its five
// values): one per series per slice rolled up, merged into one run per span when the span
// closes; a later chunk's bucket replaces an earlier one's (rowid order).
std::string MinuteChunksSchema() { return ChunkTableSchema("rollup_1m_chunks", "INDEX"); }

Status CheckDataDir(const std::string& dir) {
  if (dir.empty()) {
    return base::InvalidArgument("--data-dir is empty: give the directory to keep data in");
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return base::ErrStatus(base::StatusCode::kPermissionDenied,
                           "--data-dir {} cannot be created: {}; create it or choose another "
                           "directory",
                           dir, ec.message());
  }
  if (!std::filesystem::is_directory(dir, ec)) {
    return base::InvalidArgument("--data-dir {} is not a directory: choose a directory", dir);
  }
  if (access(dir.c_str(), W_OK | X_OK) != 0) {
    return base::ErrStatus(base::StatusCode::kPermissionDenied,
                           "--data-dir {} is not writable: {}; fix its permissions or choose "
                           "another directory",
                           dir, std::strerror(errno));
  }
  return base::OkStatus();
}

// The write connection's pragmas. The first statement reads the file header, so a file that is
// not SQLite fails here.
Status ConfigureWriter(Connection& writer, const std::string& path, bool sync_every_commit) {
  // 8 KiB pages for a new database (an existing one keeps its size): ingest dirties about one
  // page per series and batch, and 8 KiB cost ~10 % less CPU per sample than 4 KiB under
  // bench/remote_write_vs_prometheus.sh (2 KiB and 1 KiB cost more, 16 KiB the same as 8).
  WARPSCOPE_RETURN_IF_ERROR(writer.Exec("PRAGMA page_size = 8192"));
  std::string journal_mode;
  {
    auto mode = writer.Prepare("PRAGMA journal_mode = WAL");
    base::Result<bool> row = mode ? mode->Step() : base::Result<bool>(base::Error(mode.error()));
    if (!row) {
      return row.error().WithContext(
          fmt::format("{} is not a usable warpscope database; move it away or point --data-dir "
                      "at another directory",
                      path));
    }
    journal_mode = std::string(mode->ColumnText(0));
  }
  if (journal_mode != "wal") {
    return base::Unsupported(
        "{}: the file system does not support SQLite's WAL mode (journal mode is \"{}\"); put "
        "--data-dir on a local file system",
        path, journal_mode);
  }
  // See SqliteStorageOptions::sync_every_commit for what NORMAL and FULL survive. secure_delete
  // is on in Debian's build and would zero every page retention frees; our data is not secret
  // beyond the file's own permissions. Samples are clustered by series, so a batch of N series
  // dirties about N pages; checkpointing every 10,000 pages (40 MB of WAL) instead of SQLite's
  // 1,000 lets a page absorb several batches before it is copied into the database, which
  // roughly halved the wall time per batch in sqlite_storage_bench.
  return writer.Exec(fmt::format(
      "PRAGMA synchronous = {}; PRAGMA secure_delete = OFF; PRAGMA cache_size = -65536; "
      "PRAGMA wal_autocheckpoint = 10000; PRAGMA journal_size_limit = 67108864; "
      "PRAGMA foreign_keys = OFF;",
      sync_every_commit ? "FULL" : "NORMAL"));
}

}  // namespace

Result<std::unique_ptr<SqliteStorage>> SqliteStorage::Open(const SqliteStorageOptions& options) {
  WARPSCOPE_RETURN_IF_ERROR(options.storage.Validate());
  WARPSCOPE_RETURN_IF_ERROR(CheckDataDir(options.data_dir));
  std::string path = (std::filesystem::path(options.data_dir) / kDatabaseFile).string();
  auto writer = Connection::Open(path, true);
  if (!writer) {
    return Error(writer.error().WithContext(
        fmt::format("--data-dir {}: cannot open the database", options.data_dir)));
  }
  WARPSCOPE_RETURN_IF_ERROR(ConfigureWriter(**writer, path, options.sync_every_commit));

  std::unique_ptr<SqliteStorage> storage(new SqliteStorage(options, path, std::move(*writer)));
  std::lock_guard lock(storage->write_mu_);
  WARPSCOPE_RETURN_IF_ERROR(storage->InitSchema());
  WARPSCOPE_RETURN_IF_ERROR(storage->LoadState());
  if (options.write_thread) {
    storage->write_thread_ = std::thread([s = storage.get()] {
      pthread_setname_np(pthread_self(), "store-write");
      s->WriteLoop();
    });
  }
  if (options.move_in_background && options.staged_samples_max > 0) {
    storage->mover_ = std::thread([s = storage.get()] {
      pthread_setname_np(pthread_self(), "store-move");
      s->MoveLoop();
    });
  }
  return storage;
}

SqliteStorage::SqliteStorage(SqliteStorageOptions options, std::string path,
                             std::unique_ptr<Connection> writer)
    : options_(std::move(options)),
      path_(std::move(path)),
      writer_(std::move(writer)),
      readers_(std::make_unique<sqlite::ReaderPool>(path_, options_.max_idle_readers)),
      recent_(RecentSamples::Options{options_.recent_keep_ms, options_.recent_max_rows}) {}

SqliteStorage::~SqliteStorage() {
  {
    std::lock_guard queue(queue_mu_);
    stopping_writes_ = true;
  }
  write_wanted_.notify_all();
  if (write_thread_.joinable()) {
    write_thread_.join();
  }
  {
    std::lock_guard lock(write_mu_);
    stopping_ = true;
  }
  move_wanted_.notify_all();
  if (mover_.joinable()) {
    mover_.join();
  }
}

Status SqliteStorage::InitSchema() {
  return sqlite::InWriteTransaction(*writer_, [&]() -> Status {
    WARPSCOPE_ASSIGN_OR_RETURN(
        int64_t has_meta,
        writer_->QueryInt("SELECT COUNT(*) FROM sqlite_schema WHERE type = 'table' AND name = "
                          "'meta'",
                          0));
    if (has_meta == 0) {
      WARPSCOPE_ASSIGN_OR_RETURN(int64_t objects,
                                 writer_->QueryInt("SELECT COUNT(*) FROM sqlite_schema", 0));
      if (objects != 0) {
        return base::InvalidArgument(
            "{} is an SQLite database but not a warpscope one; point --data-dir at another "
            "directory",
            path_);
      }
      WARPSCOPE_RETURN_IF_ERROR(writer_->Exec(kSchema));
      WARPSCOPE_RETURN_IF_ERROR(writer_->Exec(kStagedSchema));
      WARPSCOPE_RETURN_IF_ERROR(writer_->Exec(kStepsSchema));
      WARPSCOPE_RETURN_IF_ERROR(writer_->Exec(ChunksSchema()));
      WARPSCOPE_RETURN_IF_ERROR(writer_->Exec(HeadSchema()));
      WARPSCOPE_RETURN_IF_ERROR(writer_->Exec(MinuteChunksSchema()));
      return SetMeta(kMetaSchemaVersion, kSchemaVersion);
    }
    WARPSCOPE_ASSIGN_OR_RETURN(
        int64_t version,
        writer_->QueryInt("SELECT value FROM meta WHERE key = 'schema_version'", 0));
    if (version > kSchemaVersion) {
      return base::Unsupported(
          "{} was written by a newer warpscope (schema version {}; this build reads up to {}): "
          "upgrade warpscope or point --data-dir at another directory",
          path_, version, kSchemaVersion);
    }
    if (version < 1) {
      return base::InvalidArgument(
          "{} has no valid schema version; move it away or point --data-dir at another "
          "directory",
          path_);
    }
    if (version < 2) {
      WARPSCOPE_RETURN_IF_ERROR(writer_->Exec(kStagedSchema));
    }
    if (version < 3) {
      WARPSCOPE_RETURN_IF_ERROR(writer_->Exec(kStepsSchema));
    }
    if (version < 4) {
      // The samples table keeps its rows; Compact moves them into chunks span by span.
      WARPSCOPE_RETURN_IF_ERROR(writer_->Exec(ChunksSchema()));
    }
    if (version < 5) {
      // The samples table keeps its rows as an older head; reads merge it until Compact has
      // moved its spans into chunks.
      WARPSCOPE_RETURN_IF_ERROR(writer_->Exec(HeadSchema()));
    }
    if (version < 6) {
      // The minute rollups below the chunk watermark stay rows, read under the chunks, until
      // the first Compact's sweep below the watermark moves them.
      WARPSCOPE_RETURN_IF_ERROR(writer_->Exec(MinuteChunksSchema()));
    }
    if (version < kSchemaVersion) {
      WARPSCOPE_RETURN_IF_ERROR(SetMeta(kMetaSchemaVersion, kSchemaVersion));
    }
    return base::OkStatus();
  });
}

Status SqliteStorage::SetMeta(const char* key, int64_t value) {
  return writer_->Run("INSERT OR REPLACE INTO meta(key, value) VALUES(?1, ?2)", key, value);
}

Status SqliteStorage::LoadState() {
  hosts_.clear();
  agents_.clear();
  metrics_.clear();
  entities_.clear();
  std::unique_lock series_lock(series_mu_);
  series_.clear();
  ++series_generation_;
  active_series_.clear();
  staged_.clear();
  staged_count_ = 0;
  staged_last_id_ = 0;
  WARPSCOPE_ASSIGN_OR_RETURN(int64_t head_rows,
                             writer_->QueryInt("SELECT EXISTS(SELECT 1 FROM samples)", 0));
  head_rows_ = head_rows != 0;

  {
    WARPSCOPE_ASSIGN_OR_RETURN(MetaMarks marks, ReadMetaMarks(*writer_));
    first_window_ms_ = marks.first_window;
    minute_watermark_ = marks.minute_watermark;
    hour_watermark_ = marks.hour_watermark;
    raw_cutoff_ = marks.raw_cutoff;
    minute_cutoff_ = marks.minute_cutoff;
    hour_cutoff_ = marks.hour_cutoff;
    chunk_watermark_ = marks.chunk_watermark;
  }
  {
    WARPSCOPE_ASSIGN_OR_RETURN(Statement stmt,
                               writer_->Prepare("SELECT id, name, tags FROM hosts"));
    WARPSCOPE_RETURN_IF_ERROR(stmt.ForEachRow([&](const Statement& row) {
      hosts_[std::string(row.ColumnText(1))] =
          HostEntry{row.ColumnInt(0), std::string(row.ColumnText(2))};
    }));
  }
  {
    WARPSCOPE_ASSIGN_OR_RETURN(Statement stmt, writer_->Prepare("SELECT id, name FROM agents"));
    WARPSCOPE_RETURN_IF_ERROR(stmt.ForEachRow(
        [&](const Statement& row) { agents_[std::string(row.ColumnText(1))] = row.ColumnInt(0); }));
  }
  {
    WARPSCOPE_ASSIGN_OR_RETURN(Statement stmt, writer_->Prepare("SELECT key FROM metrics"));
    std::vector<std::string> keys;
    WARPSCOPE_RETURN_IF_ERROR(
        stmt.ForEachRow([&](const Statement& row) { keys.emplace_back(row.ColumnText(0)); }));
    for (const std::string& key : keys) {
      WARPSCOPE_ASSIGN_OR_RETURN(auto metric, ReadMetric(*writer_, key));
      metrics_[key] = MetricEntry{metric.first, std::move(metric.second)};
    }
  }
  {
    WARPSCOPE_ASSIGN_OR_RETURN(
        Statement stmt, writer_->Prepare("SELECT id, host_id, entity, kind, parent, attributes, "
                                         "first_seen_ms, last_seen_ms FROM entities"));
    WARPSCOPE_RETURN_IF_ERROR(stmt.ForEachRow([&](const Statement& row) {
      EntityEntry e;
      e.id = row.ColumnInt(0);
      e.kind = EntityKindOrHost(row.ColumnText(3));
      e.parent = std::string(row.ColumnText(4));
      e.attributes = std::string(row.ColumnText(5));
      e.first_seen = row.ColumnInt(6);
      e.last_seen = row.ColumnInt(7);
      entities_[EntityKey(row.ColumnInt(1), row.ColumnText(2))] = std::move(e);
    }));
  }
  {
    WARPSCOPE_ASSIGN_OR_RETURN(
        Statement stmt,
        writer_->Prepare("SELECT s.id, s.host_id, h.name, e.entity, m.key, s.labels, "
                         "s.last_seen_ms FROM series s JOIN hosts h ON h.id = s.host_id JOIN "
                         "entities e ON e.id = s.entity_id JOIN metrics m ON m.id = s.metric_id"));
    std::string key;
    WARPSCOPE_RETURN_IF_ERROR(stmt.ForEachRow([&](const Statement& row) {
      SeriesEntry s;
      s.id = row.ColumnInt(0);
      s.host_id = row.ColumnInt(1);
      s.persisted_last_seen = s.last_seen = row.ColumnInt(6);
      // Counted as active until the next Compact recounts with a clock.
      s.active = true;
      ++active_series_[s.host_id];
      key.clear();
      AppendSeriesKeyPrefix(key, row.ColumnText(2), row.ColumnText(3), row.ColumnText(4));
      key.append(row.ColumnText(5));
      series_[key] = s;
    }));
  }
  // No stored window ends after a series' last_seen, which is persisted whenever it moved
  // kLastSeenPersistMs: windows starting from the newest persisted value plus that are new.
  int64_t horizon = std::numeric_limits<int64_t>::min();
  for (const auto& [key, s] : series_) {
    horizon = std::max(horizon, s.persisted_last_seen + kLastSeenPersistMs);
  }
  recent_.Reset(options_.recent_max_rows == 0 ? std::numeric_limits<int64_t>::max() : horizon);
  return LoadStaged();
}

Status SqliteStorage::LoadStaged() {
  WARPSCOPE_ASSIGN_OR_RETURN(
      Statement stmt, writer_->Prepare("SELECT id, samples FROM staged_samples ORDER BY id"));
  WARPSCOPE_RETURN_IF_ERROR(stmt.ForEachRow([&](const Statement& row) -> Status {
    if (Status decoded = storage_internal::DecodeStaged(row.ColumnBlob(1), staged_);
        !decoded.ok()) {
      return base::Internal(
          "{}: staged_samples row {}: {}; the database is damaged: restore it from a backup or "
          "move it away",
          path_, row.ColumnInt(0), decoded.message());
    }
    staged_last_id_ = std::max(staged_last_id_, row.ColumnInt(0));
    return base::OkStatus();
  }));
  staged_count_ = staged_.size();
  return base::OkStatus();
}

}  // namespace warpscope::server

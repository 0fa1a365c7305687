// SPDX-License-Identifier: Apache-2.0
#include "server/storage/sqlite_storage.h"

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <map>
#include <span>
#include <tuple>
#include <unordered_set>
#include <utility>

#include "base/logging.h"
#include "server/storage/label_codec.h"
#include "server/storage/sqlite_db.h"

namespace warpscope::server {
namespace {

using base::Error;
using base::Result;
using base::Status;
using sqlite::Connection;
using sqlite::Statement;
using sqlite::Transaction;

constexpr char kDatabaseFile[] = "warpscope.db";

// series.last_seen_ms is written at most this often per series (an UPDATE per series per batch
// would double the write cost); readers allow twice this much slack when they use it.
constexpr int64_t kLastSeenPersistMs = 10 * kMinuteMs;
constexpr int64_t kLastSeenSlackMs = 2 * kLastSeenPersistMs;
// Compaction works on this many series per transaction, over slices of this many ms, so one
// chunk reads about 256 series x 60 rows and holds the write lock for a few milliseconds.
constexpr size_t kChunkSeries = 256;
constexpr int64_t kMinuteSliceMs = 10 * kMinuteMs;
constexpr int64_t kHourSliceMs = kHourMs;
// Retention runs when its cutoff has moved at least this far.
constexpr int64_t kRetentionStepMs = kHourMs;
// kRate needs the row before the first bucket; it is looked for this far back.
constexpr int64_t kRateSeedMs = 10 * kMinuteMs;
// Rows deleted per transaction by retention of events, profiles and the dedup table.
constexpr int kDeleteBatch = 5000;

constexpr char kMetaSchemaVersion[] = "schema_version";
constexpr char kMetaFirstWindow[] = "first_window_ms";
constexpr char kMetaMinuteWatermark[] = "minute_watermark_ms";
constexpr char kMetaHourWatermark[] = "hour_watermark_ms";
constexpr char kMetaRawCutoff[] = "raw_cutoff_ms";
constexpr char kMetaMinuteCutoff[] = "minute_cutoff_ms";
constexpr char kMetaHourCutoff[] = "hour_cutoff_ms";

// The time marks kept in the meta table, in ms; 0 when absent.
struct MetaMarks {
  int64_t first_window = 0;
  int64_t minute_watermark = 0;
  int64_t hour_watermark = 0;
  int64_t raw_cutoff = 0;
  int64_t minute_cutoff = 0;
  int64_t hour_cutoff = 0;
};

Result<MetaMarks> ReadMetaMarks(Connection& db) {
  WARPSCOPE_ASSIGN_OR_RETURN(Statement stmt, db.Prepare("SELECT key, value FROM meta"));
  MetaMarks m;
  const std::pair<std::string_view, int64_t*> fields[] = {
      {kMetaFirstWindow, &m.first_window},     {kMetaMinuteWatermark, &m.minute_watermark},
      {kMetaHourWatermark, &m.hour_watermark}, {kMetaRawCutoff, &m.raw_cutoff},
      {kMetaMinuteCutoff, &m.minute_cutoff},   {kMetaHourCutoff, &m.hour_cutoff}};
  while (true) {
    WARPSCOPE_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) {
      break;
    }
    std::string_view key = stmt.ColumnText(0);
    for (const auto& [name, out] : fields) {
      if (key == name) {
        *out = stmt.ColumnInt(1);
      }
    }
  }
  return m;
}

// Resolution keys of rollup_dirty: the bucket in seconds.
constexpr int64_t kDirtyMinute = 60;
constexpr int64_t kDirtyHour = 3600;

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

constexpr const char* kTables[] = {"samples",      "staged_samples", "rollup_1m", "rollup_1h",
                                   "series",       "entities",       "hosts",     "metrics",
                                   "events",       "profiles",       "ingested",  "agents",
                                   "rollup_dirty", "meta"};

int64_t ToMs(base::TimePoint t) { return base::ToUnixMillis(t); }
base::TimePoint FromMs(int64_t ms) { return base::FromUnixNanos(ms * 1'000'000); }
int64_t DurationMs(base::Duration d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

std::string_view MetricKindName(model::MetricKind kind) {
  return kind == model::MetricKind::kCounter ? "counter" : "gauge";
}
model::MetricKind ParseMetricKind(std::string_view name) {
  return name == "counter" ? model::MetricKind::kCounter : model::MetricKind::kGauge;
}
model::EntityKind EntityKindOrHost(std::string_view name) {
  auto kind = ParseEntityKind(name);
  return kind ? *kind : model::EntityKind::kHost;
}

std::string EntityKey(int64_t host_id, std::string_view entity) {
  return fmt::format("{}\x1f{}", host_id, entity);
}
std::string SeriesKey(int64_t entity_row, int64_t metric_id, std::string_view labels) {
  return fmt::format("{}\x1f{}\x1f{}", entity_row, metric_id, labels);
}

bool Finite(const IngestSeries& s) {
  return std::isfinite(s.avg) && std::isfinite(s.min) && std::isfinite(s.max) &&
         std::isfinite(s.last);
}

bool MatchesAll(const model::Labels& have, const model::Labels& want) {
  for (const auto& [key, value] : want) {
    if (!have.Has(key) || have.Get(key) != value) {
      return false;
    }
  }
  return true;
}

// The rows of one series in [?2, ?3) at resolution `r`. With `only` set, just the columns that
// aggregation needs are read (a chart over a day reads ~10^5 rows; fewer columns per row is the
// cheapest saving); otherwise all of them.
std::string RowsSql(Resolution r, std::optional<Aggregation> only) {
  const char* table = r == Resolution::kRaw      ? "samples"
                      : r == Resolution::kMinute ? "rollup_1m"
                                                 : "rollup_1h";
  const char* time = r == Resolution::kRaw ? "start_ms" : "bucket_ms";
  const char* columns = "avg, min, max, last, count";
  if (only.has_value()) {
    switch (*only) {
      case Aggregation::kAvg:
        columns = "avg, count";
        break;
      case Aggregation::kMin:
        columns = "min";
        break;
      case Aggregation::kMax:
        columns = "max";
        break;
      case Aggregation::kLast:
      case Aggregation::kRate:
        columns = "last";
        break;
    }
  }
  return fmt::format(
      "SELECT {1}, {2} FROM {0} WHERE series_id = ?1 AND {1} >= ?2 AND {1} < ?3 "
      "ORDER BY {1}",
      table, time, columns);
}

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

// Reads one metric row by key; NotFound names the key.
Result<std::pair<int64_t, MetricInfo>> ReadMetric(Connection& db, const std::string& key) {
  WARPSCOPE_ASSIGN_OR_RETURN(
      Statement stmt,
      db.Prepare("SELECT id, key, kind, unit, help, prom_name, prom_scale, otel_name, "
                 "entity_kind FROM metrics WHERE key = ?1"));
  stmt.BindText(1, key);
  WARPSCOPE_ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) {
    return Error(base::NotFound("metric \"{}\" is unknown: no agent has sent it", key));
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

}  // namespace

// ---------------------------------------------------------------------------------------------
// Reader pool
// ---------------------------------------------------------------------------------------------

struct SqliteStorage::MatchedSeries {
  int64_t id = 0;
  SeriesIdentity identity;
};

class SqliteStorage::ReaderLease {
 public:
  ReaderLease(SqliteStorage* owner, std::unique_ptr<Connection> db)
      : owner_(owner), db_(std::move(db)) {}
  ReaderLease(ReaderLease&& other) noexcept = default;
  ReaderLease& operator=(ReaderLease&&) = delete;
  ~ReaderLease() {
    if (db_ == nullptr) {
      return;
    }
    std::lock_guard lock(owner_->pool_mu_);
    if (owner_->idle_readers_.size() < owner_->options_.max_idle_readers) {
      owner_->idle_readers_.push_back(std::move(db_));
    }
  }
  Connection& db() { return *db_; }

 private:
  SqliteStorage* owner_;
  std::unique_ptr<Connection> db_;
};

Result<SqliteStorage::ReaderLease> SqliteStorage::AcquireReader() {
  {
    std::lock_guard lock(pool_mu_);
    if (!idle_readers_.empty()) {
      std::unique_ptr<Connection> db = std::move(idle_readers_.back());
      idle_readers_.pop_back();
      return ReaderLease(this, std::move(db));
    }
  }
  WARPSCOPE_ASSIGN_OR_RETURN(std::unique_ptr<Connection> db, Connection::Open(path_, false));
  WARPSCOPE_RETURN_IF_ERROR(db->Exec("PRAGMA query_only = ON; PRAGMA cache_size = -16000;"));
  return ReaderLease(this, std::move(db));
}

// ---------------------------------------------------------------------------------------------
// Open
// ---------------------------------------------------------------------------------------------

Result<std::unique_ptr<SqliteStorage>> SqliteStorage::Open(const SqliteStorageOptions& options) {
  WARPSCOPE_RETURN_IF_ERROR(options.storage.Validate());
  WARPSCOPE_RETURN_IF_ERROR(CheckDataDir(options.data_dir));
  std::string path = (std::filesystem::path(options.data_dir) / kDatabaseFile).string();
  auto writer = Connection::Open(path, true);
  if (!writer) {
    return Error(writer.error().WithContext(
        fmt::format("--data-dir {}: cannot open the database", options.data_dir)));
  }
  // The first statement reads the file header; a file that is not SQLite fails here.
  std::string journal_mode;
  // 8 KiB pages for a new database (an existing one keeps its size): ingest dirties about one
  // page per series and batch, and 8 KiB cost ~10 % less CPU per sample than 4 KiB under
  // bench/remote_write_vs_prometheus.sh (2 KiB and 1 KiB cost more, 16 KiB the same as 8).
  WARPSCOPE_RETURN_IF_ERROR((*writer)->Exec("PRAGMA page_size = 8192"));
  {
    auto mode = (*writer)->Prepare("PRAGMA journal_mode = WAL");
    base::Result<bool> row = mode ? mode->Step() : base::Result<bool>(base::Error(mode.error()));
    if (!row) {
      return Error(row.error().WithContext(
          fmt::format("{} is not a usable warpscope database; move it away or point --data-dir "
                      "at another directory",
                      path)));
    }
    journal_mode = std::string(mode->ColumnText(0));
  }
  if (journal_mode != "wal") {
    return Error(base::Unsupported(
        "{}: the file system does not support SQLite's WAL mode (journal mode is \"{}\"); put "
        "--data-dir on a local file system",
        path, journal_mode));
  }
  // See SqliteStorageOptions::sync_every_commit for what NORMAL and FULL survive. secure_delete
  // is on in Debian's build and would zero every page retention frees; our data is not secret
  // beyond the file's own permissions. Samples are clustered by series, so a batch of N series
  // dirties about N pages; checkpointing every 10,000 pages (40 MB of WAL) instead of SQLite's
  // 1,000 lets a page absorb several batches before it is copied into the database, which
  // roughly halved the wall time per batch in sqlite_storage_bench.
  WARPSCOPE_RETURN_IF_ERROR((*writer)->Exec(fmt::format(
      "PRAGMA synchronous = {}; PRAGMA secure_delete = OFF; PRAGMA cache_size = -65536; "
      "PRAGMA wal_autocheckpoint = 10000; PRAGMA journal_size_limit = 67108864; "
      "PRAGMA foreign_keys = OFF;",
      options.sync_every_commit ? "FULL" : "NORMAL")));

  std::unique_ptr<SqliteStorage> storage(new SqliteStorage(options, path, std::move(*writer)));
  std::lock_guard lock(storage->write_mu_);
  WARPSCOPE_RETURN_IF_ERROR(storage->InitSchema());
  WARPSCOPE_RETURN_IF_ERROR(storage->LoadState());
  return storage;
}

SqliteStorage::SqliteStorage(SqliteStorageOptions options, std::string path,
                             std::unique_ptr<Connection> writer)
    : options_(std::move(options)), path_(std::move(path)), writer_(std::move(writer)) {}

SqliteStorage::~SqliteStorage() {
  std::lock_guard lock(pool_mu_);
  idle_readers_.clear();
}

Status SqliteStorage::InitSchema() {
  WARPSCOPE_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(*writer_, true));
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
    WARPSCOPE_RETURN_IF_ERROR(SetMeta(kMetaSchemaVersion, kSchemaVersion));
    return tx.Commit();
  }
  WARPSCOPE_ASSIGN_OR_RETURN(
      int64_t version, writer_->QueryInt("SELECT value FROM meta WHERE key = 'schema_version'", 0));
  if (version > kSchemaVersion) {
    return base::Unsupported(
        "{} was written by a newer warpscope (schema version {}; this build reads up to {}): "
        "upgrade warpscope or point --data-dir at another directory",
        path_, version, kSchemaVersion);
  }
  if (version < 1) {
    return base::InvalidArgument(
        "{} has no valid schema version; move it away or point --data-dir at another directory",
        path_);
  }
  if (version < 2) {
    WARPSCOPE_RETURN_IF_ERROR(writer_->Exec(kStagedSchema));
    WARPSCOPE_RETURN_IF_ERROR(SetMeta(kMetaSchemaVersion, kSchemaVersion));
  }
  return tx.Commit();
}

Status SqliteStorage::SetMeta(const char* key, int64_t value) {
  WARPSCOPE_ASSIGN_OR_RETURN(
      Statement stmt, writer_->Prepare("INSERT OR REPLACE INTO meta(key, value) VALUES(?1, ?2)"));
  stmt.BindText(1, key).BindInt(2, value);
  return stmt.Run();
}

Status SqliteStorage::LoadState() {
  hosts_.clear();
  agents_.clear();
  metrics_.clear();
  entities_.clear();
  series_.clear();
  active_series_.clear();
  staged_.clear();
  staged_count_ = 0;
  staged_last_id_ = 0;

  {
    WARPSCOPE_ASSIGN_OR_RETURN(MetaMarks marks, ReadMetaMarks(*writer_));
    first_window_ms_ = marks.first_window;
    minute_watermark_ = marks.minute_watermark;
    hour_watermark_ = marks.hour_watermark;
    raw_cutoff_ = marks.raw_cutoff;
    minute_cutoff_ = marks.minute_cutoff;
    hour_cutoff_ = marks.hour_cutoff;
  }
  {
    WARPSCOPE_ASSIGN_OR_RETURN(Statement stmt,
                               writer_->Prepare("SELECT id, name, tags FROM hosts"));
    while (true) {
      WARPSCOPE_ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) {
        break;
      }
      hosts_[std::string(stmt.ColumnText(1))] =
          HostEntry{stmt.ColumnInt(0), std::string(stmt.ColumnText(2))};
    }
  }
  {
    WARPSCOPE_ASSIGN_OR_RETURN(Statement stmt, writer_->Prepare("SELECT id, name FROM agents"));
    while (true) {
      WARPSCOPE_ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) {
        break;
      }
      agents_[std::string(stmt.ColumnText(1))] = stmt.ColumnInt(0);
    }
  }
  {
    WARPSCOPE_ASSIGN_OR_RETURN(Statement stmt, writer_->Prepare("SELECT key FROM metrics"));
    std::vector<std::string> keys;
    while (true) {
      WARPSCOPE_ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) {
        break;
      }
      keys.emplace_back(stmt.ColumnText(0));
    }
    for (const std::string& key : keys) {
      WARPSCOPE_ASSIGN_OR_RETURN(auto metric, ReadMetric(*writer_, key));
      metrics_[key] = MetricEntry{metric.first, std::move(metric.second)};
    }
  }
  {
    WARPSCOPE_ASSIGN_OR_RETURN(
        Statement stmt, writer_->Prepare("SELECT id, host_id, entity, kind, parent, attributes, "
                                         "first_seen_ms, last_seen_ms FROM entities"));
    while (true) {
      WARPSCOPE_ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) {
        break;
      }
      EntityEntry e;
      e.id = stmt.ColumnInt(0);
      e.kind = EntityKindOrHost(stmt.ColumnText(3));
      e.parent = std::string(stmt.ColumnText(4));
      e.attributes = std::string(stmt.ColumnText(5));
      e.first_seen = stmt.ColumnInt(6);
      e.last_seen = stmt.ColumnInt(7);
      entities_[EntityKey(stmt.ColumnInt(1), stmt.ColumnText(2))] = std::move(e);
    }
  }
  {
    WARPSCOPE_ASSIGN_OR_RETURN(Statement stmt,
                               writer_->Prepare("SELECT id, host_id, entity_id, metric_id, labels, "
                                                "last_seen_ms FROM series"));
    while (true) {
      WARPSCOPE_ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) {
        break;
      }
      SeriesEntry s;
      s.id = stmt.ColumnInt(0);
      s.host_id = stmt.ColumnInt(1);
      s.persisted_last_seen = s.last_seen = stmt.ColumnInt(5);
      // Counted as active until the next Compact recounts with a clock.
      s.active = true;
      ++active_series_[s.host_id];
      series_[SeriesKey(stmt.ColumnInt(2), stmt.ColumnInt(3), stmt.ColumnText(4))] = s;
    }
  }
  {
    WARPSCOPE_ASSIGN_OR_RETURN(
        Statement stmt, writer_->Prepare("SELECT id, samples FROM staged_samples ORDER BY id"));
    while (true) {
      WARPSCOPE_ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) {
        break;
      }
      std::string_view blob = stmt.ColumnBlob(1);
      if (blob.size() % sizeof(StagedSample) != 0) {
        return base::Internal(
            "{}: staged_samples row {} holds {} bytes, not a whole number of samples; the "
            "database is damaged: restore it from a backup or move it away",
            path_, stmt.ColumnInt(0), blob.size());
      }
      staged_last_id_ = std::max(staged_last_id_, stmt.ColumnInt(0));
      size_t n = blob.size() / sizeof(StagedSample);
      size_t at = staged_.size();
      staged_.resize(at + n);
      std::memcpy(staged_.data() + at, blob.data(), blob.size());
    }
    staged_count_ = staged_.size();
  }
  return base::OkStatus();
}

// ---------------------------------------------------------------------------------------------
// Writes
// ---------------------------------------------------------------------------------------------

Result<WriteResult> SqliteStorage::WriteBatch(const IngestBatch& batch) {
  if (batch.agent_id.empty()) {
    return Error(base::InvalidArgument("batch: agent_id is empty: every agent needs an id"));
  }
  if (batch.host.empty()) {
    return Error(base::InvalidArgument("batch from agent {}: host is empty", batch.agent_id));
  }
  if (batch.end < batch.start) {
    return Error(base::InvalidArgument("batch {} from agent {}: window ends before it starts",
                                       batch.sequence, batch.agent_id));
  }
  std::unique_lock lock(write_mu_);
  if (raw_cutoff_ != 0 && ToMs(batch.start) < raw_cutoff_) {
    return Error(base::InvalidArgument(
        "batch {} from agent {}: window starts at {} ms, before the oldest raw data kept ({} "
        "ms, raw retention {}); it cannot be stored",
        batch.sequence, batch.agent_id, ToMs(batch.start), raw_cutoff_,
        base::FormatDuration(options_.storage.raw_retention)));
  }
  // Request errors are found before the transaction, so that only database failures (below)
  // need the caches reloaded.
  std::unordered_set<std::string_view> described;
  for (const MetricInfo& m : batch.metrics) {
    if (m.key.empty()) {
      return Error(base::InvalidArgument("batch {} from agent {}: a metric has an empty key",
                                         batch.sequence, batch.agent_id));
    }
    described.insert(m.key);
  }
  for (const model::Entity& e : batch.entities) {
    if (e.id.empty()) {
      return Error(base::InvalidArgument("batch {} from agent {}: an entity has an empty id",
                                         batch.sequence, batch.agent_id));
    }
  }
  for (const IngestSeries& s : batch.series) {
    if (described.count(s.metric) == 0 && metrics_.count(s.metric) == 0) {
      return Error(base::InvalidArgument(
          "batch {} from agent {}: series of metric \"{}\" but the metric is not described; "
          "send its description in the batch",
          batch.sequence, batch.agent_id, s.metric));
    }
    if (s.entity.empty()) {
      return Error(base::InvalidArgument(
          "batch {} from agent {}: a series of metric \"{}\" has an empty entity id",
          batch.sequence, batch.agent_id, s.metric));
    }
  }
  // Bounded memory: while a move runs, at most four times the threshold waits behind it.
  const size_t stage_max = std::max<size_t>(options_.staged_samples_max, 1);
  move_done_.wait(lock, [&] { return !moving_ || staged_.size() < 4 * stage_max; });
  auto result = WriteBatchLocked(batch);
  if (!result) {
    // The transaction rolled back; the caches may hold ids it created. A move in progress
    // finishes first, so the staged samples reloaded are exactly those still in the table.
    move_done_.wait(lock, [&] { return !moving_; });
    Status reload = LoadState();
    if (!reload.ok()) {
      WARPSCOPE_LOG(ERROR, "{}: reloading caches after a failed write: {}", path_,
                    reload.ToString());
    }
    return result;
  }
  if (staged_.size() >= stage_max && !moving_) {
    // The batch itself is committed; a failure here leaves the samples staged for the next try.
    if (Status moved = MoveStaged(lock); !moved.ok()) {
      WARPSCOPE_LOG_EVERY_N(ERROR, 100, "{}: moving staged samples: {}", path_, moved.ToString());
    }
  }
  return result;
}

void SqliteStorage::SortForInsert(std::vector<StagedSample>& rows) {
  // Sorted by (series, start), arrival order kept among equal keys so the latest write wins
  // (INSERT OR REPLACE), as it would have written directly: consecutive rows land on the same
  // B-tree page, so each page is written once per move instead of once per batch.
  std::stable_sort(rows.begin(), rows.end(), [](const StagedSample& x, const StagedSample& y) {
    return x.series_id != y.series_id ? x.series_id < y.series_id : x.start_ms < y.start_ms;
  });
}

Status SqliteStorage::MoveStaged(std::unique_lock<std::mutex>& lock) {
  moving_ = true;
  std::vector<StagedSample> rows;
  rows.swap(staged_);
  const int64_t last_id = staged_last_id_;
  lock.unlock();
  SortForInsert(rows);
  auto finish = [&](Status status) {
    if (!status.ok()) {
      // Nothing was deleted from staged_samples: keep every row, ahead of newer ones, for the
      // next move (rows already in samples are rewritten with the same values).
      staged_.insert(staged_.begin(), rows.begin(), rows.end());
    } else {
      staged_count_ -= rows.size();
    }
    moving_ = false;
    move_done_.notify_all();
    return status;
  };
  const size_t chunk_rows = std::max<size_t>(options_.staged_move_chunk, 1);
  for (size_t at = 0; at < rows.size(); at += chunk_rows) {
    lock.lock();
    Status chunk = [&]() -> Status {
      WARPSCOPE_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(*writer_, true));
      WARPSCOPE_RETURN_IF_ERROR(InsertSamples(
          std::span<const StagedSample>(rows).subspan(at, std::min(chunk_rows, rows.size() - at))));
      return tx.Commit();
    }();
    if (!chunk.ok()) {
      return finish(chunk);
    }
    lock.unlock();
  }
  lock.lock();
  Status deleted = [&]() -> Status {
    WARPSCOPE_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(*writer_, true));
    WARPSCOPE_ASSIGN_OR_RETURN(Statement stmt,
                               writer_->Prepare("DELETE FROM staged_samples WHERE id <= ?1"));
    stmt.BindInt(1, last_id);
    WARPSCOPE_RETURN_IF_ERROR(stmt.Run());
    return tx.Commit();
  }();
  return finish(deleted);
}

Status SqliteStorage::InsertSamples(std::span<const StagedSample> rows) {
  WARPSCOPE_ASSIGN_OR_RETURN(
      Statement stmt,
      writer_->Prepare("INSERT OR REPLACE INTO samples(series_id, start_ms, duration_ms, avg, "
                       "min, max, last, count) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"));
  for (const StagedSample& r : rows) {
    stmt.Reset();
    stmt.BindInt(1, r.series_id)
        .BindInt(2, r.start_ms)
        .BindInt(3, r.duration_ms)
        .BindDouble(4, r.avg)
        .BindDouble(5, r.min)
        .BindDouble(6, r.max)
        .BindDouble(7, r.last)
        .BindInt(8, r.count);
    WARPSCOPE_RETURN_IF_ERROR(stmt.Run());
  }
  return base::OkStatus();
}

Result<int64_t> SqliteStorage::InternAgent(const std::string& name) {
  auto it = agents_.find(name);
  if (it != agents_.end()) {
    return it->second;
  }
  WARPSCOPE_ASSIGN_OR_RETURN(Statement stmt,
                             writer_->Prepare("INSERT INTO agents(name) VALUES(?1)"));
  stmt.BindText(1, name);
  WARPSCOPE_RETURN_IF_ERROR(stmt.Run());
  int64_t id = writer_->last_insert_rowid();
  agents_[name] = id;
  return id;
}

Result<int64_t> SqliteStorage::InternHost(const std::string& name, const model::Labels& tags) {
  std::string encoded = EncodeLabels(tags);
  auto it = hosts_.find(name);
  if (it == hosts_.end()) {
    WARPSCOPE_ASSIGN_OR_RETURN(Statement stmt,
                               writer_->Prepare("INSERT INTO hosts(name, tags) VALUES(?1, ?2)"));
    stmt.BindText(1, name).BindText(2, encoded);
    WARPSCOPE_RETURN_IF_ERROR(stmt.Run());
    int64_t id = writer_->last_insert_rowid();
    hosts_[name] = HostEntry{id, encoded};
    return id;
  }
  if (it->second.tags != encoded) {
    WARPSCOPE_ASSIGN_OR_RETURN(Statement stmt,
                               writer_->Prepare("UPDATE hosts SET tags = ?2 WHERE id = ?1"));
    stmt.BindInt(1, it->second.id).BindText(2, encoded);
    WARPSCOPE_RETURN_IF_ERROR(stmt.Run());
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
  WARPSCOPE_ASSIGN_OR_RETURN(
      Statement stmt,
      writer_->Prepare("INSERT INTO metrics(key, kind, unit, help, prom_name, prom_scale, "
                       "otel_name, entity_kind) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) "
                       "ON CONFLICT(key) DO UPDATE SET kind = excluded.kind, unit = "
                       "excluded.unit, help = excluded.help, prom_name = excluded.prom_name, "
                       "prom_scale = excluded.prom_scale, otel_name = excluded.otel_name, "
                       "entity_kind = excluded.entity_kind"));
  stmt.BindText(1, info.key)
      .BindText(2, MetricKindName(info.kind))
      .BindText(3, info.unit)
      .BindText(4, info.help)
      .BindText(5, info.prom_name)
      .BindDouble(6, info.prom_scale)
      .BindText(7, info.otel_name)
      .BindText(8, model::EntityKindName(info.entity_kind));
  WARPSCOPE_RETURN_IF_ERROR(stmt.Run());
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
    WARPSCOPE_ASSIGN_OR_RETURN(
        Statement stmt,
        writer_->Prepare("INSERT INTO entities(host_id, entity, kind, parent, attributes, "
                         "first_seen_ms, last_seen_ms) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)"));
    stmt.BindInt(1, host_id)
        .BindText(2, entity.id)
        .BindText(3, model::EntityKindName(e.kind))
        .BindText(4, e.parent)
        .BindText(5, e.attributes)
        .BindInt(6, e.first_seen)
        .BindInt(7, e.last_seen);
    WARPSCOPE_RETURN_IF_ERROR(stmt.Run());
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
    WARPSCOPE_ASSIGN_OR_RETURN(
        Statement stmt,
        writer_->Prepare("UPDATE entities SET kind = ?2, parent = ?3, attributes = ?4, "
                         "first_seen_ms = ?5, last_seen_ms = ?6 WHERE id = ?1"));
    stmt.BindInt(1, e.id)
        .BindText(2, model::EntityKindName(e.kind))
        .BindText(3, e.parent)
        .BindText(4, e.attributes)
        .BindInt(5, e.first_seen)
        .BindInt(6, e.last_seen);
    WARPSCOPE_RETURN_IF_ERROR(stmt.Run());
  }
  return &e;
}

Result<WriteResult> SqliteStorage::WriteBatchLocked(const IngestBatch& batch) {
  const int64_t start_ms = ToMs(batch.start);
  const int64_t end_ms = ToMs(batch.end);
  WriteResult result;
  WARPSCOPE_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(*writer_, true));
  std::vector<StagedSample> rows;
  rows.reserve(batch.series.size());
  std::string key;

  // Dedup on (agent, sequence, window start).
  WARPSCOPE_ASSIGN_OR_RETURN(int64_t agent_id, InternAgent(batch.agent_id));
  {
    WARPSCOPE_ASSIGN_OR_RETURN(
        Statement stmt,
        writer_->Prepare("SELECT start_ms FROM ingested WHERE agent_id = ?1 AND sequence = ?2"));
    stmt.BindInt(1, agent_id).BindInt(2, static_cast<int64_t>(batch.sequence));
    WARPSCOPE_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (row && stmt.ColumnInt(0) == start_ms) {
      result.duplicate = true;
      return result;  // the transaction rolls back; it wrote nothing but maybe the agent
    }
  }

  WARPSCOPE_ASSIGN_OR_RETURN(int64_t host_id, InternHost(batch.host, batch.tags));
  for (const MetricInfo& info : batch.metrics) {
    WARPSCOPE_RETURN_IF_ERROR(UpsertMetric(info));
  }

  // Entities: the host (tags as attributes, its declared attributes winning), the declared
  // ones, then those only series refer to.
  std::unordered_map<std::string_view, EntityEntry*> touched;
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

  for (const IngestSeries& s : batch.series) {
    auto metric = metrics_.find(s.metric);
    if (metric == metrics_.end()) {  // checked in WriteBatch
      return Error(base::Internal("metric \"{}\" vanished from the cache", s.metric));
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
    // The series key (as SeriesKey builds it) in a buffer reused across series: most series
    // exist already, and the lookup then allocates nothing.
    key.clear();
    fmt::format_to(std::back_inserter(key), "{}\x1f{}\x1f", entity_it->second->id,
                   metric->second.id);
    const size_t labels_at = key.size();
    AppendEncodedLabels(key, s.labels);
    auto series_it = series_.find(key);
    if (series_it == series_.end()) {
      size_t& active = active_series_[host_id];
      if (active >= options_.storage.max_series_per_host) {
        ++result.dropped_series;
        continue;
      }
      WARPSCOPE_ASSIGN_OR_RETURN(
          Statement stmt,
          writer_->Prepare("INSERT INTO series(host_id, entity_id, metric_id, labels, "
                           "first_seen_ms, last_seen_ms) VALUES(?1, ?2, ?3, ?4, ?5, ?6)"));
      stmt.BindInt(1, host_id)
          .BindInt(2, entity_it->second->id)
          .BindInt(3, metric->second.id)
          .BindText(4, std::string_view(key).substr(labels_at))
          .BindInt(5, start_ms)
          .BindInt(6, end_ms);
      WARPSCOPE_RETURN_IF_ERROR(stmt.Run());
      SeriesEntry entry;
      entry.id = writer_->last_insert_rowid();
      entry.host_id = host_id;
      entry.persisted_last_seen = entry.last_seen = end_ms;
      entry.active = true;
      ++active;
      series_it = series_.emplace(key, entry).first;
    } else {
      SeriesEntry& entry = series_it->second;
      if (!entry.active) {
        entry.active = true;
        ++active_series_[host_id];
      }
      entry.last_seen = std::max(entry.last_seen, end_ms);
      if (entry.last_seen - entry.persisted_last_seen >= kLastSeenPersistMs) {
        WARPSCOPE_ASSIGN_OR_RETURN(
            Statement stmt, writer_->Prepare("UPDATE series SET last_seen_ms = ?2 WHERE id = ?1"));
        stmt.BindInt(1, entry.id).BindInt(2, entry.last_seen);
        WARPSCOPE_RETURN_IF_ERROR(stmt.Run());
        entry.persisted_last_seen = entry.last_seen;
      }
    }
    rows.push_back(StagedSample{series_it->second.id, start_ms, end_ms - start_ms, s.avg, s.min,
                                s.max, s.last, std::max<int64_t>(s.count, 1)});
    ++result.stored;
  }

  for (const model::Event& ev : batch.events) {
    WARPSCOPE_ASSIGN_OR_RETURN(
        Statement stmt,
        writer_->Prepare("INSERT INTO events(host_id, entity, time_ms, kind, code, message, "
                         "attributes) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)"));
    stmt.BindInt(1, host_id)
        .BindText(2, ev.entity)
        .BindInt(3, ToMs(ev.time))
        .BindText(4, ev.kind)
        .BindInt(5, ev.code)
        .BindText(6, ev.message)
        .BindText(7, EncodeLabels(ev.attributes));
    WARPSCOPE_RETURN_IF_ERROR(stmt.Run());
  }

  {
    WARPSCOPE_ASSIGN_OR_RETURN(
        Statement stmt, writer_->Prepare("INSERT OR REPLACE INTO ingested(agent_id, sequence, "
                                         "start_ms) VALUES(?1, ?2, ?3)"));
    stmt.BindInt(1, agent_id).BindInt(2, static_cast<int64_t>(batch.sequence)).BindInt(3, start_ms);
    WARPSCOPE_RETURN_IF_ERROR(stmt.Run());
  }
  // A window behind the minute rollups (or the slice being rolled up now): its minute is
  // rebuilt for this host at the next Compact.
  if (start_ms < std::max(minute_watermark_, minute_building_to_)) {
    WARPSCOPE_ASSIGN_OR_RETURN(
        Statement stmt,
        writer_->Prepare("INSERT INTO rollup_dirty(resolution, host_id, from_ms, generation) "
                         "VALUES(?1, ?2, ?3, 1) ON CONFLICT(resolution, host_id) DO UPDATE SET "
                         "from_ms = min(from_ms, excluded.from_ms), generation = generation + 1"));
    stmt.BindInt(1, kDirtyMinute).BindInt(2, host_id).BindInt(3, FloorTo(start_ms, kMinuteMs));
    WARPSCOPE_RETURN_IF_ERROR(stmt.Run());
  }
  if (first_window_ms_ == 0 || start_ms < first_window_ms_) {
    WARPSCOPE_RETURN_IF_ERROR(SetMeta(kMetaFirstWindow, start_ms));
    first_window_ms_ = start_ms;
  }
  // The samples: appended to staged_samples as one blob (a few sequential pages), moved into
  // the series-clustered samples table later in bulk.
  if (!rows.empty()) {
    WARPSCOPE_ASSIGN_OR_RETURN(Statement stmt,
                               writer_->Prepare("INSERT INTO staged_samples(samples) VALUES(?1)"));
    stmt.BindBlob(1, std::string_view(reinterpret_cast<const char*>(rows.data()),
                                      rows.size() * sizeof(StagedSample)));
    WARPSCOPE_RETURN_IF_ERROR(stmt.Run());
  }
  const int64_t staged_id = rows.empty() ? staged_last_id_ : writer_->last_insert_rowid();
  WARPSCOPE_RETURN_IF_ERROR(tx.Commit());
  staged_last_id_ = staged_id;
  staged_.insert(staged_.end(), rows.begin(), rows.end());
  staged_count_ += rows.size();
  return result;
}

Status SqliteStorage::ApplyStaged() {
  if (staged_count_.load() == 0) {
    return base::OkStatus();
  }
  std::unique_lock lock(write_mu_);
  return ApplyStagedLocked(lock);
}

Status SqliteStorage::ApplyStagedLocked(std::unique_lock<std::mutex>& lock) {
  static_assert(sizeof(StagedSample) == 64 && std::endian::native == std::endian::little,
                "staged_samples blobs are 64-byte little-endian images of StagedSample");
  move_done_.wait(lock, [&] { return !moving_; });
  if (staged_.empty()) {
    return base::OkStatus();
  }
  SortForInsert(staged_);
  WARPSCOPE_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(*writer_, true));
  WARPSCOPE_RETURN_IF_ERROR(InsertSamples(staged_));
  WARPSCOPE_RETURN_IF_ERROR(writer_->Exec("DELETE FROM staged_samples"));
  WARPSCOPE_RETURN_IF_ERROR(tx.Commit());
  staged_count_ -= staged_.size();
  staged_.clear();
  return base::OkStatus();
}

Result<int64_t> SqliteStorage::WriteProfile(const ProfileMeta& meta, std::string_view data) {
  if (meta.host.empty()) {
    return Error(base::InvalidArgument("profile: host is empty"));
  }
  if (meta.kind.empty()) {
    return Error(
        base::InvalidArgument("profile from {}: kind is empty (\"cpu\", \"gpu\")", meta.host));
  }
  if (meta.end < meta.start) {
    return Error(base::InvalidArgument("profile from {}: window ends before it starts", meta.host));
  }
  if (data.size() > options_.storage.max_profile_bytes) {
    return Error(base::InvalidArgument(
        "profile from {}: {} bytes exceeds the limit of {} bytes; profile a shorter window",
        meta.host, data.size(), options_.storage.max_profile_bytes));
  }
  std::lock_guard lock(write_mu_);
  auto write = [&]() -> Result<int64_t> {
    WARPSCOPE_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(*writer_, true));
    int64_t host_id = 0;
    auto host = hosts_.find(meta.host);
    if (host != hosts_.end()) {
      host_id = host->second.id;
    } else {
      WARPSCOPE_ASSIGN_OR_RETURN(host_id, InternHost(meta.host, {}));
    }
    WARPSCOPE_ASSIGN_OR_RETURN(
        Statement stmt,
        writer_->Prepare("INSERT INTO profiles(host_id, entity, pid, executable, kind, start_ms, "
                         "end_ms, labels, size, data) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, "
                         "?10)"));
    stmt.BindInt(1, host_id)
        .BindText(2, meta.entity)
        .BindInt(3, meta.pid)
        .BindText(4, meta.executable)
        .BindText(5, meta.kind)
        .BindInt(6, ToMs(meta.start))
        .BindInt(7, ToMs(meta.end))
        .BindText(8, EncodeLabels(meta.labels))
        .BindInt(9, static_cast<int64_t>(data.size()))
        .BindBlob(10, data);
    WARPSCOPE_RETURN_IF_ERROR(stmt.Run());
    int64_t id = writer_->last_insert_rowid();
    WARPSCOPE_RETURN_IF_ERROR(tx.Commit());
    return id;
  };
  auto id = write();
  if (!id) {
    Status reload = LoadState();
    if (!reload.ok()) {
      WARPSCOPE_LOG(ERROR, "{}: reloading caches after a failed write: {}", path_,
                    reload.ToString());
    }
  }
  return id;
}

// ---------------------------------------------------------------------------------------------
// Reads
// ---------------------------------------------------------------------------------------------

Result<std::vector<SqliteStorage::MatchedSeries>> SqliteStorage::MatchSeries(
    Connection& db, int64_t metric_id, const SeriesMatcher& match, int64_t start_ms,
    int64_t end_ms) {
  // Only the conditions that apply, so that SQLite can use series_by_metric(metric_id, host_id)
  // and the entities unique index. One cached statement per combination.
  std::string sql =
      "SELECT s.id, h.name, e.entity, e.kind, e.attributes, s.labels FROM series s "
      "JOIN hosts h ON h.id = s.host_id JOIN entities e ON e.id = s.entity_id "
      "WHERE s.metric_id = ?1 AND s.last_seen_ms >= ?2 AND s.first_seen_ms < ?3";
  if (!match.host.empty()) {
    sql += " AND h.name = ?4";
  }
  if (!match.entity.empty()) {
    sql += " AND e.entity = ?5";
  }
  if (match.entity_kind.has_value()) {
    sql += " AND e.kind = ?6";
  }
  WARPSCOPE_ASSIGN_OR_RETURN(Statement stmt, db.Prepare(sql));
  stmt.BindInt(1, metric_id).BindInt(2, start_ms - kLastSeenSlackMs).BindInt(3, end_ms);
  if (!match.host.empty()) {
    stmt.BindText(4, match.host);
  }
  if (!match.entity.empty()) {
    stmt.BindText(5, match.entity);
  }
  if (match.entity_kind.has_value()) {
    stmt.BindText(6, model::EntityKindName(*match.entity_kind));
  }
  std::vector<MatchedSeries> out;
  while (true) {
    WARPSCOPE_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) {
      break;
    }
    MatchedSeries m;
    m.id = stmt.ColumnInt(0);
    m.identity.host = std::string(stmt.ColumnText(1));
    m.identity.entity = std::string(stmt.ColumnText(2));
    m.identity.entity_kind = EntityKindOrHost(stmt.ColumnText(3));
    m.identity.entity_attributes = DecodeLabels(stmt.ColumnText(4));
    m.identity.labels = DecodeLabels(stmt.ColumnText(5));
    if (!MatchesAll(m.identity.labels, match.labels) ||
        !MatchesAll(m.identity.entity_attributes, match.entity_attributes)) {
      continue;
    }
    out.push_back(std::move(m));
  }
  std::sort(out.begin(), out.end(), [](const MatchedSeries& a, const MatchedSeries& b) {
    return std::tie(a.identity.host, a.identity.entity, a.identity.labels) <
           std::tie(b.identity.host, b.identity.entity, b.identity.labels);
  });
  return out;
}

Result<Availability> SqliteStorage::ReadAvailability(Connection& db) {
  WARPSCOPE_ASSIGN_OR_RETURN(MetaMarks marks, ReadMetaMarks(db));
  const int64_t raw_cutoff = marks.raw_cutoff, minute_cutoff = marks.minute_cutoff,
                hour_cutoff = marks.hour_cutoff, minute_wm = marks.minute_watermark,
                hour_wm = marks.hour_watermark;
  constexpr int64_t kAll = std::numeric_limits<int64_t>::min();
  Availability a;
  a.raw_from = raw_cutoff != 0 ? raw_cutoff : kAll;
  a.minute_from = minute_cutoff != 0 ? minute_cutoff : kAll;
  a.minute_to = minute_wm;
  a.hour_from = hour_cutoff != 0 ? hour_cutoff : kAll;
  a.hour_to = hour_wm;
  return a;
}

Status SqliteStorage::FoldSeries(Connection& db, int64_t series_id,
                                 const std::vector<Segment>& segments,
                                 std::optional<Aggregation> only, SeriesFolder& folder,
                                 bool used[3]) {
  for (const Segment& segment : segments) {
    WARPSCOPE_ASSIGN_OR_RETURN(Statement stmt, db.Prepare(RowsSql(segment.resolution, only)));
    stmt.BindInt(1, series_id).BindInt(2, segment.from).BindInt(3, segment.to);
    while (true) {
      WARPSCOPE_ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) {
        break;
      }
      // Fields not read stay at Row's defaults; the caller only asks for `only`.
      Row r;
      r.start = stmt.ColumnInt(0);
      if (!only.has_value()) {
        r.avg = stmt.ColumnDouble(1);
        r.min = stmt.ColumnDouble(2);
        r.max = stmt.ColumnDouble(3);
        r.last = stmt.ColumnDouble(4);
        r.count = stmt.ColumnInt(5);
      } else if (*only == Aggregation::kAvg) {
        r.avg = stmt.ColumnDouble(1);
        r.count = stmt.ColumnInt(2);
      } else if (*only == Aggregation::kMin) {
        r.min = stmt.ColumnDouble(1);
      } else if (*only == Aggregation::kMax) {
        r.max = stmt.ColumnDouble(1);
      } else {
        r.last = stmt.ColumnDouble(1);
      }
      folder.Add(r);
      used[static_cast<int>(segment.resolution)] = true;
    }
  }
  return base::OkStatus();
}

Result<RangeResult> SqliteStorage::QueryRange(const RangeQuery& query) {
  if (query.metric.empty()) {
    return Error(base::InvalidArgument("query: metric is required"));
  }
  const int64_t step_ms = DurationMs(query.step);
  if (step_ms <= 0) {
    return Error(base::InvalidArgument("query: step must be at least 1ms"));
  }
  WARPSCOPE_RETURN_IF_ERROR(ApplyStaged());
  const int64_t start_ms = ToMs(query.start);
  const int64_t end_ms = ToMs(query.end);
  if (end_ms <= start_ms) {
    return Error(base::InvalidArgument("query: end must be after start"));
  }
  const int64_t origin = FloorTo(start_ms, step_ms);
  const int64_t buckets = (end_ms - origin + step_ms - 1) / step_ms;
  if (static_cast<uint64_t>(buckets) > query.max_points) {
    return Error(base::InvalidArgument(
        "query: {} points per series exceeds the limit of {}; use a step of at least {}", buckets,
        query.max_points,
        base::FormatDuration(std::chrono::milliseconds(
            (end_ms - origin + static_cast<int64_t>(query.max_points) - 1) /
            static_cast<int64_t>(query.max_points)))));
  }

  WARPSCOPE_ASSIGN_OR_RETURN(ReaderLease reader, AcquireReader());
  Connection& db = reader.db();
  WARPSCOPE_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(db, false));
  WARPSCOPE_ASSIGN_OR_RETURN(auto metric, ReadMetric(db, query.metric));
  WARPSCOPE_ASSIGN_OR_RETURN(std::vector<MatchedSeries> matched,
                             MatchSeries(db, metric.first, query.match, start_ms, end_ms));
  if (matched.size() > query.max_series) {
    return Error(base::InvalidArgument(
        "query: {} series of {} match, more than the limit of {}; narrow the matchers (host, "
        "entity, labels)",
        matched.size(), query.metric, query.max_series));
  }
  WARPSCOPE_ASSIGN_OR_RETURN(Availability availability, ReadAvailability(db));
  const int64_t fetch_from =
      query.aggregation == Aggregation::kRate ? origin - std::max(step_ms, kRateSeedMs) : origin;
  std::vector<Segment> segments = PlanSegments(fetch_from, end_ms, step_ms, availability);

  RangeResult result;
  result.metric = std::move(metric.second);
  bool used[3] = {false, false, false};
  for (MatchedSeries& m : matched) {
    SeriesFolder folder(origin, step_ms, static_cast<size_t>(buckets));
    WARPSCOPE_RETURN_IF_ERROR(FoldSeries(db, m.id, segments, query.aggregation, folder, used));
    RangeSeries series;
    const auto& folded = folder.buckets();
    for (size_t i = 0; i < folded.size(); ++i) {
      std::optional<double> value = folded[i].Value(query.aggregation);
      if (value.has_value()) {
        series.points.push_back(Point{FromMs(origin + static_cast<int64_t>(i) * step_ms), *value});
      }
    }
    if (series.points.empty()) {
      continue;
    }
    series.series = std::move(m.identity);
    result.series.push_back(std::move(series));
  }
  for (Resolution r : {Resolution::kRaw, Resolution::kMinute, Resolution::kHour}) {
    if (used[static_cast<int>(r)]) {
      result.resolutions.push_back(r);
    }
  }
  return result;
}

Result<std::vector<TopEntry>> SqliteStorage::TopEntities(const TopQuery& query) {
  if (query.metric.empty()) {
    return Error(base::InvalidArgument("top entities: metric is required"));
  }
  const int64_t start_ms = ToMs(query.start);
  const int64_t end_ms = ToMs(query.end);
  if (end_ms <= start_ms) {
    return Error(base::InvalidArgument("top entities: end must be after start"));
  }
  WARPSCOPE_RETURN_IF_ERROR(ApplyStaged());
  const int64_t range_ms = end_ms - start_ms;

  WARPSCOPE_ASSIGN_OR_RETURN(ReaderLease reader, AcquireReader());
  Connection& db = reader.db();
  WARPSCOPE_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(db, false));
  WARPSCOPE_ASSIGN_OR_RETURN(auto metric, ReadMetric(db, query.metric));
  WARPSCOPE_ASSIGN_OR_RETURN(std::vector<MatchedSeries> matched,
                             MatchSeries(db, metric.first, query.match, start_ms, end_ms));
  WARPSCOPE_ASSIGN_OR_RETURN(Availability availability, ReadAvailability(db));
  const bool rate = query.aggregation == Aggregation::kRate;
  const int64_t fetch_from = rate ? start_ms - kRateSeedMs : start_ms;
  std::vector<Segment> segments = PlanSegments(fetch_from, end_ms, range_ms, availability);

  struct PerEntity {
    TopEntry entry;
    Bucket combined;
    double rate_sum = 0;
    bool has_rate = false;
  };
  std::map<std::pair<std::string, std::string>, PerEntity> entities;
  bool used[3] = {false, false, false};
  for (MatchedSeries& m : matched) {
    SeriesFolder folder(start_ms, range_ms, 1);
    // All columns: the entry also reports the latest value.
    WARPSCOPE_RETURN_IF_ERROR(FoldSeries(db, m.id, segments, std::nullopt, folder, used));
    const Bucket& b = folder.buckets()[0];
    if (b.empty()) {
      continue;
    }
    PerEntity& pe = entities[{m.identity.host, m.identity.entity}];
    if (pe.combined.empty()) {
      pe.entry.host = m.identity.host;
      pe.entry.entity = m.identity.entity;
      pe.entry.entity_kind = m.identity.entity_kind;
      pe.entry.entity_attributes = m.identity.entity_attributes;
    }
    Bucket& c = pe.combined;
    if (c.empty() || b.last_start >= c.last_start) {
      c.last = b.last;
      c.last_start = b.last_start;
    }
    c.count += b.count;
    c.weighted_sum += b.weighted_sum;
    c.min = std::min(c.min, b.min);
    c.max = std::max(c.max, b.max);
    if (std::optional<double> r = b.Value(Aggregation::kRate); r.has_value()) {
      pe.rate_sum += *r;
      pe.has_rate = true;
    }
  }
  std::vector<TopEntry> out;
  for (auto& [key, pe] : entities) {
    std::optional<double> value =
        rate ? (pe.has_rate ? std::optional<double>(pe.rate_sum) : std::nullopt)
             : pe.combined.Value(query.aggregation);
    if (!value.has_value()) {
      continue;
    }
    pe.entry.value = *value;
    pe.entry.latest = pe.combined.last;
    pe.entry.latest_time = FromMs(pe.combined.last_start);
    out.push_back(std::move(pe.entry));
  }
  std::stable_sort(out.begin(), out.end(), [&](const TopEntry& a, const TopEntry& b) {
    return query.ascending ? a.value < b.value : a.value > b.value;
  });
  if (out.size() > query.limit) {
    out.resize(query.limit);
  }
  return out;
}

Result<std::vector<EntityRecord>> SqliteStorage::ListEntities(const EntityQuery& query) {
  WARPSCOPE_ASSIGN_OR_RETURN(ReaderLease reader, AcquireReader());
  Connection& db = reader.db();
  WARPSCOPE_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(db, false));
  WARPSCOPE_ASSIGN_OR_RETURN(
      Statement stmt,
      db.Prepare("SELECT h.name, e.entity, e.kind, e.parent, e.attributes, e.first_seen_ms, "
                 "e.last_seen_ms FROM entities e JOIN hosts h ON h.id = e.host_id "
                 "WHERE (?1 = '' OR e.kind = ?1) AND (?2 = '' OR h.name = ?2) "
                 "AND (?3 = '' OR substr(e.entity, 1, length(?3)) = ?3) "
                 "AND (?4 = '' OR instr(e.entity, ?4) > 0) AND e.last_seen_ms >= ?5 "
                 "ORDER BY h.name, e.kind, e.entity"));
  stmt.BindText(1, query.kind.has_value() ? model::EntityKindName(*query.kind) : "")
      .BindText(2, query.host)
      .BindText(3, query.id_prefix)
      .BindText(4, query.id_contains)
      .BindInt(5, query.seen_since.has_value() ? ToMs(*query.seen_since)
                                               : std::numeric_limits<int64_t>::min());
  std::vector<EntityRecord> out;
  while (out.size() < query.limit) {
    WARPSCOPE_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) {
      break;
    }
    EntityRecord r;
    r.host = std::string(stmt.ColumnText(0));
    r.entity.id = std::string(stmt.ColumnText(1));
    r.entity.kind = EntityKindOrHost(stmt.ColumnText(2));
    r.entity.parent = std::string(stmt.ColumnText(3));
    r.entity.attributes = DecodeLabels(stmt.ColumnText(4));
    r.first_seen = FromMs(stmt.ColumnInt(5));
    r.last_seen = FromMs(stmt.ColumnInt(6));
    if (!MatchesAll(r.entity.attributes, query.attributes)) {
      continue;
    }
    out.push_back(std::move(r));
  }
  return out;
}

Result<std::vector<MetricInfo>> SqliteStorage::ListMetrics() {
  WARPSCOPE_ASSIGN_OR_RETURN(ReaderLease reader, AcquireReader());
  Connection& db = reader.db();
  WARPSCOPE_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(db, false));
  WARPSCOPE_ASSIGN_OR_RETURN(Statement stmt, db.Prepare("SELECT key FROM metrics ORDER BY key"));
  std::vector<std::string> keys;
  while (true) {
    WARPSCOPE_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) {
      break;
    }
    keys.emplace_back(stmt.ColumnText(0));
  }
  std::vector<MetricInfo> out;
  for (const std::string& key : keys) {
    WARPSCOPE_ASSIGN_OR_RETURN(auto metric, ReadMetric(db, key));
    out.push_back(std::move(metric.second));
  }
  return out;
}

Result<std::vector<EventRecord>> SqliteStorage::QueryEvents(const EventQuery& query) {
  WARPSCOPE_ASSIGN_OR_RETURN(ReaderLease reader, AcquireReader());
  Connection& db = reader.db();
  WARPSCOPE_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(db, false));
  WARPSCOPE_ASSIGN_OR_RETURN(
      Statement stmt,
      db.Prepare("SELECT h.name, ev.entity, ev.time_ms, ev.kind, ev.code, ev.message, "
                 "ev.attributes FROM events ev JOIN hosts h ON h.id = ev.host_id "
                 "WHERE ev.time_ms >= ?1 AND ev.time_ms < ?2 AND (?3 = '' OR h.name = ?3) "
                 "AND (?4 = '' OR ev.entity = ?4) AND (?5 = '' OR ev.kind = ?5) "
                 "ORDER BY ev.time_ms DESC, ev.id DESC LIMIT ?6"));
  stmt.BindInt(1, ToMs(query.start))
      .BindInt(2, ToMs(query.end))
      .BindText(3, query.host)
      .BindText(4, query.entity)
      .BindText(5, query.kind)
      .BindInt(6, static_cast<int64_t>(std::min<size_t>(query.limit, INT64_MAX)));
  std::vector<EventRecord> out;
  while (true) {
    WARPSCOPE_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) {
      break;
    }
    EventRecord r;
    r.host = std::string(stmt.ColumnText(0));
    r.event.entity = std::string(stmt.ColumnText(1));
    r.event.time = FromMs(stmt.ColumnInt(2));
    r.event.kind = std::string(stmt.ColumnText(3));
    r.event.code = stmt.ColumnInt(4);
    r.event.message = std::string(stmt.ColumnText(5));
    r.event.attributes = DecodeLabels(stmt.ColumnText(6));
    out.push_back(std::move(r));
  }
  return out;
}

namespace {

constexpr char kProfileColumns[] =
    "SELECT p.id, h.name, p.entity, p.pid, p.executable, p.kind, p.start_ms, p.end_ms, "
    "p.labels, p.size";

ProfileMeta ReadProfileMeta(const Statement& stmt) {
  ProfileMeta m;
  m.id = stmt.ColumnInt(0);
  m.host = std::string(stmt.ColumnText(1));
  m.entity = std::string(stmt.ColumnText(2));
  m.pid = stmt.ColumnInt(3);
  m.executable = std::string(stmt.ColumnText(4));
  m.kind = std::string(stmt.ColumnText(5));
  m.start = FromMs(stmt.ColumnInt(6));
  m.end = FromMs(stmt.ColumnInt(7));
  m.labels = DecodeLabels(stmt.ColumnText(8));
  m.size_bytes = static_cast<uint64_t>(stmt.ColumnInt(9));
  return m;
}

}  // namespace

Result<std::vector<ProfileMeta>> SqliteStorage::ListProfiles(const ProfileQuery& query) {
  WARPSCOPE_ASSIGN_OR_RETURN(ReaderLease reader, AcquireReader());
  Connection& db = reader.db();
  WARPSCOPE_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(db, false));
  WARPSCOPE_ASSIGN_OR_RETURN(
      Statement stmt,
      db.Prepare(std::string(kProfileColumns) +
                 " FROM profiles p JOIN hosts h ON h.id = p.host_id "
                 "WHERE p.start_ms < ?2 AND p.end_ms > ?1 AND (?3 = '' OR h.name = ?3) "
                 "AND (?4 = '' OR p.entity = ?4) AND (?5 = '' OR p.kind = ?5) "
                 "AND (?6 = 0 OR p.pid = ?6) ORDER BY p.start_ms DESC, p.id DESC LIMIT ?7"));
  stmt.BindInt(1, ToMs(query.start))
      .BindInt(2, ToMs(query.end))
      .BindText(3, query.host)
      .BindText(4, query.entity)
      .BindText(5, query.kind)
      .BindInt(6, query.pid)
      .BindInt(7, static_cast<int64_t>(std::min<size_t>(query.limit, INT64_MAX)));
  std::vector<ProfileMeta> out;
  while (true) {
    WARPSCOPE_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) {
      break;
    }
    out.push_back(ReadProfileMeta(stmt));
  }
  return out;
}

Result<Profile> SqliteStorage::ReadProfile(int64_t id) {
  WARPSCOPE_ASSIGN_OR_RETURN(ReaderLease reader, AcquireReader());
  Connection& db = reader.db();
  WARPSCOPE_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(db, false));
  WARPSCOPE_ASSIGN_OR_RETURN(Statement stmt,
                             db.Prepare(std::string(kProfileColumns) +
                                        ", p.data FROM profiles p JOIN hosts h ON h.id = p.host_id "
                                        "WHERE p.id = ?1"));
  stmt.BindInt(1, id);
  WARPSCOPE_ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) {
    return Error(base::NotFound("profile {} does not exist (or has expired)", id));
  }
  Profile p;
  p.meta = ReadProfileMeta(stmt);
  p.data = std::string(stmt.ColumnBlob(10));
  return p;
}

Result<StorageStats> SqliteStorage::Stats() {
  WARPSCOPE_RETURN_IF_ERROR(ApplyStaged());
  WARPSCOPE_ASSIGN_OR_RETURN(ReaderLease reader, AcquireReader());
  Connection& db = reader.db();
  WARPSCOPE_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(db, false));
  // B-tree name (table or index) -> its table.
  std::map<std::string, std::string> owner;
  {
    WARPSCOPE_ASSIGN_OR_RETURN(Statement stmt,
                               db.Prepare("SELECT name, tbl_name FROM sqlite_schema WHERE type IN "
                                          "('table', 'index')"));
    while (true) {
      WARPSCOPE_ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) {
        break;
      }
      owner[std::string(stmt.ColumnText(0))] = std::string(stmt.ColumnText(1));
    }
  }
  std::map<std::string, uint64_t> bytes;
  {
    WARPSCOPE_ASSIGN_OR_RETURN(Statement stmt,
                               db.Prepare("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name"));
    while (true) {
      WARPSCOPE_ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) {
        break;
      }
      auto it = owner.find(std::string(stmt.ColumnText(0)));
      if (it != owner.end()) {
        bytes[it->second] += static_cast<uint64_t>(stmt.ColumnInt(1));
      }
    }
  }
  StorageStats stats;
  for (const char* table : kTables) {
    WARPSCOPE_ASSIGN_OR_RETURN(int64_t rows,
                               db.QueryInt(fmt::format("SELECT COUNT(*) FROM {}", table), 0));
    stats.tables.push_back(TableStats{table, static_cast<uint64_t>(rows), bytes[table]});
  }
  WARPSCOPE_ASSIGN_OR_RETURN(int64_t pages, db.QueryInt("PRAGMA page_count", 0));
  WARPSCOPE_ASSIGN_OR_RETURN(int64_t page_size, db.QueryInt("PRAGMA page_size", 0));
  std::error_code ec;
  uintmax_t wal = std::filesystem::file_size(path_ + "-wal", ec);
  stats.total_bytes = static_cast<uint64_t>(pages * page_size) + (ec ? 0 : wal);
  return stats;
}

// ---------------------------------------------------------------------------------------------
// Compaction
// ---------------------------------------------------------------------------------------------

std::vector<std::pair<int64_t, int64_t>> SqliteStorage::SeriesChunks(int64_t host_id) {
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
  for (size_t i = 0; i < ids.size(); i += kChunkSeries) {
    chunks.emplace_back(ids[i], ids[std::min(i + kChunkSeries, ids.size()) - 1]);
  }
  return chunks;
}

Result<uint64_t> SqliteStorage::RollUpChunk(Resolution target, int64_t host_id, int64_t id_lo,
                                            int64_t id_hi, int64_t from_ms, int64_t to_ms) {
  const bool minute = target == Resolution::kMinute;
  const int64_t bucket_ms = minute ? kMinuteMs : kHourMs;
  std::unique_lock lock(write_mu_);
  if (minute) {
    WARPSCOPE_RETURN_IF_ERROR(ApplyStagedLocked(lock));
  }
  WARPSCOPE_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(*writer_, true));
  struct Out {
    int64_t series_id;
    int64_t bucket;
    Bucket b;
  };
  std::vector<Out> out;
  {
    WARPSCOPE_ASSIGN_OR_RETURN(
        Statement stmt,
        writer_->Prepare(
            minute ? "SELECT x.series_id, x.start_ms, x.avg, x.min, x.max, x.last, x.count "
                     "FROM samples x WHERE x.series_id IN (SELECT id FROM series WHERE id "
                     "BETWEEN ?1 AND ?2 AND (?5 = 0 OR host_id = ?5)) AND x.start_ms >= ?3 AND "
                     "x.start_ms < ?4 ORDER BY x.series_id, x.start_ms"
                   : "SELECT x.series_id, x.bucket_ms, x.avg, x.min, x.max, x.last, x.count "
                     "FROM rollup_1m x WHERE x.series_id IN (SELECT id FROM series WHERE id "
                     "BETWEEN ?1 AND ?2 AND (?5 = 0 OR host_id = ?5)) AND x.bucket_ms >= ?3 AND "
                     "x.bucket_ms < ?4 ORDER BY x.series_id, x.bucket_ms"));
    stmt.BindInt(1, id_lo)
        .BindInt(2, id_hi)
        .BindInt(3, from_ms)
        .BindInt(4, to_ms)
        .BindInt(5, host_id);
    while (true) {
      WARPSCOPE_ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) {
        break;
      }
      int64_t series_id = stmt.ColumnInt(0);
      int64_t start = stmt.ColumnInt(1);
      int64_t bucket = FloorTo(start, bucket_ms);
      if (out.empty() || out.back().series_id != series_id || out.back().bucket != bucket) {
        out.push_back(Out{series_id, bucket, Bucket{}});
      }
      Bucket& b = out.back().b;
      int64_t count = std::max<int64_t>(stmt.ColumnInt(6), 1);
      b.count += count;
      b.weighted_sum += stmt.ColumnDouble(2) * static_cast<double>(count);
      b.min = std::min(b.min, stmt.ColumnDouble(3));
      b.max = std::max(b.max, stmt.ColumnDouble(4));
      b.last = stmt.ColumnDouble(5);  // rows come in time order
      b.last_start = start;
    }
  }
  WARPSCOPE_ASSIGN_OR_RETURN(
      Statement insert,
      writer_->Prepare(minute ? "INSERT OR REPLACE INTO rollup_1m(series_id, bucket_ms, avg, "
                                "min, max, last, count) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)"
                              : "INSERT OR REPLACE INTO rollup_1h(series_id, bucket_ms, avg, "
                                "min, max, last, count) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)"));
  for (const Out& o : out) {
    insert.BindInt(1, o.series_id)
        .BindInt(2, o.bucket)
        .BindDouble(3, o.b.weighted_sum / static_cast<double>(o.b.count))
        .BindDouble(4, o.b.min)
        .BindDouble(5, o.b.max)
        .BindDouble(6, o.b.last)
        .BindInt(7, o.b.count);
    WARPSCOPE_RETURN_IF_ERROR(insert.Run());
    insert.Reset();
  }
  WARPSCOPE_RETURN_IF_ERROR(tx.Commit());
  return static_cast<uint64_t>(out.size());
}

Status SqliteStorage::RollUpRange(Resolution target, int64_t host_id, int64_t from_ms,
                                  int64_t to_ms, CompactResult& result) {
  const int64_t slice_ms = target == Resolution::kMinute ? kMinuteSliceMs : kHourSliceMs;
  std::vector<std::pair<int64_t, int64_t>> chunks = SeriesChunks(host_id);
  for (int64_t from = from_ms; from < to_ms; from += slice_ms) {
    int64_t to = std::min(to_ms, from + slice_ms);
    for (const auto& [lo, hi] : chunks) {
      WARPSCOPE_ASSIGN_OR_RETURN(uint64_t rows, RollUpChunk(target, host_id, lo, hi, from, to));
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
      WARPSCOPE_ASSIGN_OR_RETURN(uint64_t rows, RollUpChunk(target, 0, lo, hi, from, to));
      (minute ? result.minute_rows : result.hour_rows) += rows;
    }
    {
      std::lock_guard lock(write_mu_);
      WARPSCOPE_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(*writer_, true));
      WARPSCOPE_RETURN_IF_ERROR(SetMeta(minute ? kMetaMinuteWatermark : kMetaHourWatermark, to));
      WARPSCOPE_RETURN_IF_ERROR(tx.Commit());
      (minute ? minute_watermark_ : hour_watermark_) = to;
    }
    from = to;
  }
  return base::OkStatus();
}

Status SqliteStorage::RollUpDirty(Resolution target, CompactResult& result) {
  const bool minute = target == Resolution::kMinute;
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
    stmt.BindInt(1, minute ? kDirtyMinute : kDirtyHour);
    while (true) {
      WARPSCOPE_ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) {
        break;
      }
      dirty.push_back(Dirty{stmt.ColumnInt(0), stmt.ColumnInt(1), stmt.ColumnInt(2)});
    }
  }
  const int64_t bucket_ms = minute ? kMinuteMs : kHourMs;
  for (const Dirty& d : dirty) {
    int64_t from = FloorTo(std::max(d.from_ms, lower), bucket_ms);
    WARPSCOPE_RETURN_IF_ERROR(RollUpRange(target, d.host_id, from, watermark, result));
    std::lock_guard lock(write_mu_);
    WARPSCOPE_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(*writer_, true));
    if (minute && from < hour_watermark_) {
      // The rebuilt minutes feed hours that are already built.
      WARPSCOPE_ASSIGN_OR_RETURN(
          Statement stmt,
          writer_->Prepare("INSERT INTO rollup_dirty(resolution, host_id, from_ms, generation) "
                           "VALUES(?1, ?2, ?3, 1) ON CONFLICT(resolution, host_id) DO UPDATE SET "
                           "from_ms = min(from_ms, excluded.from_ms), generation = generation "
                           "+ 1"));
      stmt.BindInt(1, kDirtyHour).BindInt(2, d.host_id).BindInt(3, FloorTo(from, kHourMs));
      WARPSCOPE_RETURN_IF_ERROR(stmt.Run());
    }
    {
      // Only if no window arrived for this host meanwhile (it would have bumped generation).
      WARPSCOPE_ASSIGN_OR_RETURN(
          Statement stmt, writer_->Prepare("DELETE FROM rollup_dirty WHERE resolution = ?1 AND "
                                           "host_id = ?2 AND generation = ?3"));
      stmt.BindInt(1, minute ? kDirtyMinute : kDirtyHour)
          .BindInt(2, d.host_id)
          .BindInt(3, d.generation);
      WARPSCOPE_RETURN_IF_ERROR(stmt.Run());
    }
    WARPSCOPE_RETURN_IF_ERROR(tx.Commit());
  }
  return base::OkStatus();
}

Status SqliteStorage::DeleteSeriesRows(const char* table, const char* time_column,
                                       int64_t before_ms, CompactResult& result) {
  std::string sql = fmt::format(
      "DELETE FROM {} WHERE series_id IN (SELECT id FROM series WHERE id BETWEEN ?1 AND ?2) "
      "AND {} < ?3",
      table, time_column);
  for (const auto& [lo, hi] : SeriesChunks(0)) {
    std::unique_lock lock(write_mu_);
    if (std::string_view(table) == "samples") {
      WARPSCOPE_RETURN_IF_ERROR(ApplyStagedLocked(lock));
    }
    WARPSCOPE_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(*writer_, true));
    WARPSCOPE_ASSIGN_OR_RETURN(Statement stmt, writer_->Prepare(sql));
    stmt.BindInt(1, lo).BindInt(2, hi).BindInt(3, before_ms);
    WARPSCOPE_RETURN_IF_ERROR(stmt.Run());
    result.deleted_rows += static_cast<uint64_t>(writer_->changes());
    WARPSCOPE_RETURN_IF_ERROR(tx.Commit());
  }
  return base::OkStatus();
}

Status SqliteStorage::DeleteInChunks(const std::string& sql, int64_t before_ms,
                                     CompactResult& result) {
  while (true) {
    std::lock_guard lock(write_mu_);
    WARPSCOPE_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(*writer_, true));
    WARPSCOPE_ASSIGN_OR_RETURN(Statement stmt, writer_->Prepare(sql));
    stmt.BindInt(1, before_ms).BindInt(2, kDeleteBatch);
    WARPSCOPE_RETURN_IF_ERROR(stmt.Run());
    int64_t deleted = writer_->changes();
    result.deleted_rows += static_cast<uint64_t>(deleted);
    WARPSCOPE_RETURN_IF_ERROR(tx.Commit());
    if (deleted < kDeleteBatch) {
      return base::OkStatus();
    }
  }
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
  // Moves a cutoff: first the meta row (readers stop planning on the data), then the rows.
  bool advanced = false;
  auto advance = [&](const char* key, int64_t& mirror, int64_t value) -> Status {
    advanced = true;
    std::lock_guard lock(write_mu_);
    WARPSCOPE_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(*writer_, true));
    WARPSCOPE_RETURN_IF_ERROR(SetMeta(key, value));
    WARPSCOPE_RETURN_IF_ERROR(tx.Commit());
    mirror = value;
    return base::OkStatus();
  };

  // Never delete what the next resolution has not absorbed yet: cutoffs stay at or below the
  // watermark of the next resolution. 1m cutoffs are whole hours so an hour rebuilt from late
  // data always finds all its minutes.
  if (minute_wm != 0) {
    int64_t target = std::min(FloorTo(now_ms - DurationMs(o.raw_retention), kMinuteMs), minute_wm);
    if (target >= raw_cutoff + kRetentionStepMs) {
      WARPSCOPE_RETURN_IF_ERROR(advance(kMetaRawCutoff, raw_cutoff_, target));
      WARPSCOPE_RETURN_IF_ERROR(DeleteSeriesRows("samples", "start_ms", target, result));
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
      WARPSCOPE_RETURN_IF_ERROR(advance(kMetaMinuteCutoff, minute_cutoff_, target));
      WARPSCOPE_RETURN_IF_ERROR(DeleteSeriesRows("rollup_1m", "bucket_ms", target, result));
    }
  }
  {
    int64_t target = FloorTo(now_ms - DurationMs(o.hour_retention), kHourMs);
    if (target >= hour_cutoff + kRetentionStepMs) {
      WARPSCOPE_RETURN_IF_ERROR(advance(kMetaHourCutoff, hour_cutoff_, target));
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
    // behind; the slack keeps series whose last windows may still have rollup rows. Ids are
    // AUTOINCREMENT, so rows of a forgotten series can never attach to a new one.
    forget_before -= kLastSeenSlackMs;
    while (true) {
      std::lock_guard lock(write_mu_);
      std::vector<std::string> keys;
      for (const auto& [key, s] : series_) {
        if (s.last_seen < forget_before) {
          keys.push_back(key);
          if (keys.size() >= static_cast<size_t>(kDeleteBatch)) {
            break;
          }
        }
      }
      if (keys.empty()) {
        break;
      }
      WARPSCOPE_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(*writer_, true));
      WARPSCOPE_ASSIGN_OR_RETURN(Statement stmt,
                                 writer_->Prepare("DELETE FROM series WHERE id = ?1"));
      for (const std::string& key : keys) {
        stmt.BindInt(1, series_[key].id);
        WARPSCOPE_RETURN_IF_ERROR(stmt.Run());
        stmt.Reset();
      }
      WARPSCOPE_RETURN_IF_ERROR(tx.Commit());
      for (const std::string& key : keys) {
        series_.erase(key);
      }
      result.deleted_rows += keys.size();
    }
    {
      // Entities not seen since, that no series refers to any more.
      std::lock_guard lock(write_mu_);
      WARPSCOPE_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(*writer_, true));
      std::vector<std::pair<int64_t, std::string>> gone;  // row id, cache key
      {
        WARPSCOPE_ASSIGN_OR_RETURN(
            Statement stmt,
            writer_->Prepare("SELECT id, host_id, entity FROM entities WHERE last_seen_ms < ?1 "
                             "AND id NOT IN (SELECT entity_id FROM series)"));
        stmt.BindInt(1, forget_before);
        while (true) {
          WARPSCOPE_ASSIGN_OR_RETURN(bool row, stmt.Step());
          if (!row) {
            break;
          }
          gone.emplace_back(stmt.ColumnInt(0), EntityKey(stmt.ColumnInt(1), stmt.ColumnText(2)));
        }
      }
      WARPSCOPE_ASSIGN_OR_RETURN(Statement stmt,
                                 writer_->Prepare("DELETE FROM entities WHERE id = ?1"));
      for (const auto& [id, key] : gone) {
        stmt.BindInt(1, id);
        WARPSCOPE_RETURN_IF_ERROR(stmt.Run());
        stmt.Reset();
      }
      WARPSCOPE_RETURN_IF_ERROR(tx.Commit());
      for (const auto& [id, key] : gone) {
        entities_.erase(key);
      }
      result.deleted_rows += gone.size();
    }
  }
  // Events and profiles by their own retention; checked at most every kRetentionStepMs.
  if (now_ms >= other_retention_ms_ + kRetentionStepMs) {
    WARPSCOPE_RETURN_IF_ERROR(DeleteInChunks(
        "DELETE FROM events WHERE id IN (SELECT id FROM events WHERE time_ms < ?1 LIMIT ?2)",
        now_ms - DurationMs(o.event_retention), result));
    WARPSCOPE_RETURN_IF_ERROR(DeleteInChunks(
        "DELETE FROM profiles WHERE id IN (SELECT id FROM profiles WHERE end_ms < ?1 LIMIT ?2)",
        now_ms - DurationMs(o.profile_retention), result));
    other_retention_ms_ = now_ms;
  }
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
  WARPSCOPE_RETURN_IF_ERROR(ApplyRetention(now_ms, result));
  {
    std::lock_guard lock(write_mu_);
    RecountActiveSeries(now_ms);
  }
  return result;
}

}  // namespace warpscope::server

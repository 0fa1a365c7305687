// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_SERVER_STORAGE_SQLITE_STORAGE_H_
#define WARPSCOPE_SERVER_STORAGE_SQLITE_STORAGE_H_

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "server/storage/query_plan.h"
#include "server/storage/recent_samples.h"
#include "server/storage/sample_chunk.h"
#include "server/storage/staged_codec.h"
#include "server/storage/storage.h"

namespace warpscope::server {

namespace sqlite {
class Connection;
class ReaderPool;
}  // namespace sqlite

struct SqliteStorageOptions {
  std::string data_dir;  // --data-dir; created if missing; the database is <data_dir>/warpscope.db
  StorageOptions storage;
  // false: WAL with synchronous=NORMAL. A committed batch survives a crash of the server
  // process (kill -9, OOM kill); the last commits can be lost if the machine itself loses power.
  // true: synchronous=FULL, an fsync per commit, so commits also survive power loss.
  bool sync_every_commit = false;
  size_t max_idle_readers = 8;  // read connections kept open for reuse
  // Samples are staged (appended in arrival order, durable) and moved into the head's
  // compressed per-series chunks once this many are waiting, or before anything reads them. 0
  // moves each batch's samples at once. See "Staged samples" in docs/design/storage.md.
  size_t staged_samples_max = 400000;  // 25.6 MB
  // Samples per transaction when a full stage is moved; write_mu_ is released between them.
  size_t staged_move_chunk = 20000;
  // A full stage is moved by the storage's own thread, so that no write waits for it. false:
  // by the write that filled it, before it returns (tests that count head chunks after a
  // write). With staged_samples_max 0 every write moves its own samples.
  bool move_in_background = true;
  // Groups are written by the storage's own writer thread, at normal priority, rather than by
  // the first caller (a request thread).
  bool write_thread = true;
  // The newest raw windows of every series are also kept in memory (RecentSamples), so that
  // range reads of the last few minutes fold them without touching the database: at most
  // `recent_keep_ms` behind the newest window and `recent_max_rows` windows (48 bytes each).
  // 0 rows keeps none. See "Recent samples" in docs/design/storage.md.
  int64_t recent_keep_ms = 5 * kMinuteMs;
  size_t recent_max_rows = 1'000'000;
  // Called by Compact after each transaction that moved a group of series' windows into
  // sample_chunks (the crash test stops there to be killed mid-compaction).
  std::function<void()> after_chunk_group_for_testing;
};

// Storage in one SQLite database (WAL mode) under --data-dir. Schema and reasoning:
// docs/design/storage.md.
//
// One write connection, guarded by a mutex, serves WriteBatch/WriteProfile and Compact's
// chunks; it keeps in-memory id caches (hosts, agents, metrics, entities, series) that mirror
// the database and are reloaded if a write transaction fails. Reads use a pool of separate
// connections, each read in one transaction (a consistent snapshot); WAL lets them run while
// the writer commits.
//
// The implementation is split by job: sqlite_storage.cc (opening: pragmas, schema and its
// migrations, loading the caches), sqlite_storage_write.cc (WriteBatch, WriteProfile),
// sqlite_storage_staged.cc (staged samples and their moves), sqlite_storage_read.cc (queries),
// sqlite_storage_steps.cc (training steps' reads), sqlite_storage_rollup.cc (Compact's rollups)
// and sqlite_storage_retention.cc; what they share is in sqlite_storage_internal.h.
class SqliteStorage : public Storage {
 public:
  // 2 added the staged_samples table, 3 the training_steps table, 4 the sample_chunks table, 5
  // the head_chunks table, 6 the rollup_1m_chunks table; an older database is upgraded when
  // opened.
  static constexpr int kSchemaVersion = 6;

  // Opens or creates the store. Errors name the path and the remedy: a data dir that cannot be
  // created or written, a file that is not a warpscope database, or one written by a newer
  // warpscope (schema version above kSchemaVersion).
  [[nodiscard]] static base::Result<std::unique_ptr<SqliteStorage>> Open(
      const SqliteStorageOptions& options);
  ~SqliteStorage() override;

  // Waits until the mover thread has nothing to do (no move running, the stage below its
  // threshold) or `timeout` passed; false on timeout. For tests: nothing else needs to know.
  bool WaitForMoves(std::chrono::milliseconds timeout);

  base::Result<WriteResult> WriteBatch(const IngestBatch& batch) override;
  // Group commit: the batches of every caller waiting while a write runs go into the next
  // transaction together (see "Group commit" in docs/design/storage.md).
  BatchesWritten WriteBatches(std::span<const IngestBatch> batches) override;
  base::Result<std::vector<EntityRecord>> ListEntities(const EntityQuery& query) override;
  base::Result<std::vector<MetricInfo>> ListMetrics() override;
  base::Result<RangeResult> QueryRange(const RangeQuery& query) override;
  base::Result<std::vector<TopEntry>> TopEntities(const TopQuery& query) override;
  base::Result<std::vector<EventRecord>> QueryEvents(const EventQuery& query) override;
  base::Result<int64_t> WriteProfile(const ProfileMeta& meta, std::string_view data) override;
  base::Result<std::vector<ProfileMeta>> ListProfiles(const ProfileQuery& query) override;
  base::Result<Profile> ReadProfile(int64_t id) override;
  base::Result<std::vector<StoredStep>> QuerySteps(const StepQuery& query) override;
  base::Result<std::vector<JobRecord>> ListJobs(const JobQuery& query) override;
  base::Result<CompactResult> Compact(base::TimePoint now) override;
  base::Result<StorageStats> Stats() override;

  const std::string& path() const { return path_; }

 private:
  struct HostEntry {
    int64_t id = 0;
    std::string tags;  // encoded
  };
  struct MetricEntry {
    int64_t id = 0;
    MetricInfo info;
  };
  struct EntityEntry {
    int64_t id = 0;
    model::EntityKind kind = model::EntityKind::kHost;
    std::string parent;
    std::string attributes;  // encoded
    int64_t first_seen = 0;
    int64_t last_seen = 0;
  };
  struct SeriesEntry {
    int64_t id = 0;
    int64_t host_id = 0;
    int64_t persisted_last_seen = 0;  // series.last_seen_ms, refreshed every kLastSeenPersist
    int64_t last_seen = 0;            // end of the latest window written
    bool active = true;               // counted in active_series_ for the cardinality cap
  };
  // One sample waiting in staged_samples (see ApplyStagedLocked). Its byte image, 64 bytes in
  // this order, little-endian, is what the staged_samples blobs hold.
  using StagedSample = storage_internal::StagedSample;  // staged_codec.h
  struct MatchedSeries;
  struct StagedBatch;
  struct PendingWrite;

  SqliteStorage(SqliteStorageOptions options, std::string path,
                std::unique_ptr<sqlite::Connection> writer);

  // Opening (sqlite_storage.cc); write_mu_ held.
  [[nodiscard]] base::Status InitSchema();
  [[nodiscard]] base::Status LoadState();   // caches and compaction state; resets recent_
  [[nodiscard]] base::Status LoadStaged();  // staged_ from staged_samples, after LoadState's clear
  [[nodiscard]] base::Status SetMeta(const char* key, int64_t value);

  // Writes (sqlite_storage_write.cc), all with write_mu_ held unless said otherwise.
  // Reloads the caches after a failed write transaction (they may hold ids it created); a
  // failure to reload is logged.
  void ReloadAfterFailedWrite();
  // The group commit's leader, without write_mu_: takes write_mu_, writes every pending
  // caller's batches (WriteGroup), marks them done, then moves staged samples if due.
  void LeadGroup();
  // One transaction for the group; if a database error rolls it back, each batch again in its
  // own transaction, so that only a failing batch fails.
  void WriteGroup(const std::vector<PendingWrite*>& group, std::unique_lock<std::mutex>& lock);
  // One write transaction for `members`' batches, in order; a member stops at its first batch
  // that fails its checks. On commit each member gets its results and the staged samples join
  // staged_; on a database error nothing is kept, the caches are reloaded and the error returned.
  [[nodiscard]] base::Status WriteMembers(std::span<PendingWrite* const> members,
                                          std::unique_lock<std::mutex>& lock);
  // A batch's request checks (InvalidArgument), before anything of it is written.
  [[nodiscard]] base::Status CheckBatch(const IngestBatch& batch);
  // The pieces below run inside the transaction. One batch: dedup, then its rows.
  // `resolved`: the batch's series entries found by ResolveSeries (nullptr: none).
  [[nodiscard]] base::Status StageBatch(const IngestBatch& batch,
                                        const std::vector<SeriesEntry*>* resolved,
                                        WriteResult& result, StagedBatch& staged);
  [[nodiscard]] base::Status WriteBatchRows(const IngestBatch& batch,
                                            const std::vector<SeriesEntry*>* resolved,
                                            int64_t agent_id, WriteResult& result,
                                            StagedBatch& staged);
  // Before the group commit, on the caller's thread (series_mu_ shared, no write_mu_): the
  // entries of the series that exist already, per batch and series (nullptr for new ones), so
  // that the writer does not look them up. Used only while series_generation_ is unchanged.
  void ResolveSeries(PendingWrite& write);
  [[nodiscard]] base::Result<bool> IsDuplicate(int64_t agent_id, const IngestBatch& batch);
  [[nodiscard]] base::Result<int64_t> InternAgent(const std::string& name);
  [[nodiscard]] base::Result<int64_t> InternHost(const std::string& name,
                                                 const model::Labels& tags);
  [[nodiscard]] base::Status UpsertMetric(const MetricInfo& info);
  [[nodiscard]] base::Result<EntityEntry*> TouchEntity(int64_t host_id, const model::Entity& entity,
                                                       bool declared, int64_t start_ms,
                                                       int64_t end_ms);
  // The host and the batch's declared entities, by id.
  [[nodiscard]] base::Status TouchDeclaredEntities(
      const IngestBatch& batch, int64_t host_id, int64_t start_ms, int64_t end_ms,
      std::unordered_map<std::string_view, EntityEntry*>& touched);
  // The series entry for `s` of the batch's `host`, created when new; nullptr when the
  // cardinality cap drops it.
  [[nodiscard]] base::Result<SeriesEntry*> InternSeries(const IngestSeries& s,
                                                        std::string_view host, int64_t host_id,
                                                        int64_t entity_row, int64_t metric_id,
                                                        int64_t start_ms, int64_t end_ms,
                                                        std::string& key);
  // An existing series written again: active again, last seen moved (and persisted when due).
  [[nodiscard]] base::Status TouchSeries(SeriesEntry& entry, int64_t end_ms);
  [[nodiscard]] base::Status WriteEvents(const IngestBatch& batch, int64_t host_id);
  [[nodiscard]] base::Status WriteSteps(const IngestBatch& batch, int64_t host_id);
  // rollup_dirty: the bucket of `from_ms` at `resolution` (kDirtyMinute/Hour) for the host.
  [[nodiscard]] base::Status MarkDirty(int64_t resolution, int64_t host_id, int64_t from_ms);

  // Staged samples (sqlite_storage_staged.cc).
  // Waits for a MoveStaged in progress, then moves every staged sample into head_chunks,
  // sorted by (series, start), in one transaction that also empties staged_samples; on failure
  // nothing moves (retried later). `lock` holds write_mu_.
  [[nodiscard]] base::Status ApplyStagedLocked(std::unique_lock<std::mutex>& lock);
  // ApplyStagedLocked under write_mu_ when anything is staged or moving; what every reader of
  // the head calls first, so reads see every acknowledged batch.
  [[nodiscard]] base::Status ApplyStaged();
  // The write path's move, once staged_samples_max samples wait: takes them out of staged_,
  // sorts them without the lock, and inserts them in chunks of staged_move_chunk, releasing
  // write_mu_ between chunks so that batches keep being written; then deletes the staged rows it
  // moved. `lock` holds write_mu_ on entry and on return.
  [[nodiscard]] base::Status MoveStaged(std::unique_lock<std::mutex>& lock);
  // Orders staged samples for InsertHeadChunks: by (series, start), arrival order kept.
  static void SortForInsert(std::vector<StagedSample>& rows);
  // A head_chunks row, encoded.
  using HeadChunk = EncodedChunk;
  // `rows` (sorted by SortForInsert) as head chunks: one per run of a series' windows inside
  // one span, cut at about kChunkTargetBytes; of equal (series, start) the last row is kept.
  // Pure: moves encode without write_mu_.
  static std::vector<HeadChunk> EncodeHeadChunks(std::span<const StagedSample> rows);
  // Inserts `chunks` into head_chunks, inside the caller's transaction.
  [[nodiscard]] base::Status InsertHeadChunks(const std::vector<HeadChunk>& chunks);
  // Staged samples that make the stage full (staged_samples_max, at least 1).
  size_t StageMax() const { return std::max<size_t>(options_.staged_samples_max, 1); }
  // The mover thread (options_.move_in_background): moves the stage whenever it is full.
  void MoveLoop();
  // The writer thread (options_.write_thread): writes each group queued.
  void WriteLoop();

  // Reads (sqlite_storage_read.cc), each inside one read transaction on `db`.
  [[nodiscard]] base::Result<std::vector<MatchedSeries>> MatchSeries(sqlite::Connection& db,
                                                                     int64_t metric_id,
                                                                     const SeriesMatcher& match,
                                                                     int64_t start_ms,
                                                                     int64_t end_ms);
  [[nodiscard]] base::Result<Availability> ReadAvailability(sqlite::Connection& db);
  // Feeds the rows of one series in `segments` to `folder`; marks the resolutions that had rows.
  // With `only` set, reads just the columns that aggregation needs.
  // Raw segments that start at or after recent_'s horizon are read from memory. With
  // `memory_missed` (a read that did not move the staged samples), a raw segment memory no longer
  // covers sets it and stops, instead of reading a head that may lack staged windows.
  [[nodiscard]] base::Status FoldSeries(sqlite::Connection& db, int64_t series_id,
                                        const std::vector<Segment>& segments,
                                        std::optional<Aggregation> only, SeriesFolder& folder,
                                        bool used[3], bool* memory_missed = nullptr);

  // Rollups (sqlite_storage_rollup.cc); compact_mu_ held, write_mu_ taken per chunk.
  [[nodiscard]] base::Status RollUpNew(Resolution target, int64_t until_ms, CompactResult& result);
  [[nodiscard]] base::Status RollUpDirty(Resolution target, CompactResult& result);
  [[nodiscard]] base::Status RollUpRange(Resolution target, int64_t host_id, int64_t from_ms,
                                         int64_t to_ms, CompactResult& result);
  // Rolls up [from_ms, to_ms) of series [id_lo, id_hi] (of the host, unless 0): new minutes
  // as rollup_1m_chunks rows, minutes rebuilt (`rebuild`) and hours as rollup rows.
  [[nodiscard]] base::Result<uint64_t> RollUpChunk(Resolution target, int64_t host_id,
                                                   int64_t id_lo, int64_t id_hi, int64_t from_ms,
                                                   int64_t to_ms, bool rebuild);
  // Series ids (of one host, or all with host_id 0) cut into chunks of at most `per_chunk`
  // (kChunkSeries by default), as inclusive [lo, hi] id ranges. Takes write_mu_.
  std::vector<std::pair<int64_t, int64_t>> SeriesChunks(int64_t host_id, size_t per_chunk = 0);

  // Sample chunks (sqlite_storage_chunks.cc); compact_mu_ held, write_mu_ taken per group.
  // Moves the raw windows of every closed span (up to the minute watermark, in whole
  // kChunkSpanMs) from the head into sample_chunks and its minute rollups from rollup_1m into
  // rollup_1m_chunks, advancing chunk_watermark_ span by span; then, if windows arrived (or
  // minutes were rebuilt) below it since the last time, merges them into their chunks.
  [[nodiscard]] base::Status ChunkClosedSpans(int64_t now_ms, CompactResult& result);
  // ChunkSeriesGroup over every series, group by group.
  [[nodiscard]] base::Status ChunkAllSeries(int64_t end_ms, bool closing, CompactResult& result);
  // One transaction: the head's windows and the rollup_1m rows of series [lo, hi] before
  // `end_ms` (late windows and rebuilt minutes of spans chunked before included) merged into
  // the chunks of their spans; when `closing`, also the minute chunks of the span ending at
  // `end_ms` (one per slice rolled up) merged into that span's. Returns the raw windows moved
  // and the minute buckets written.
  [[nodiscard]] base::Result<std::pair<uint64_t, uint64_t>> ChunkSeriesGroup(int64_t id_lo,
                                                                             int64_t id_hi,
                                                                             int64_t end_ms,
                                                                             bool closing);

  // Merges, per series, the newest run of small head chunks (each under half of
  // kChunkTargetBytes and holding no more windows than the newer ones of the run, two or more)
  // into chunks of up to kChunkTargetBytes, group by group: a
  // fleet of many series moves about one window per series per stage, so its head would
  // otherwise hold a chunk per window until the span closes.
  [[nodiscard]] base::Status MergeSmallHeadChunks(CompactResult& result);
  [[nodiscard]] base::Result<uint64_t> MergeHeadGroup(int64_t id_lo, int64_t id_hi);

  // Retention (sqlite_storage_retention.cc); compact_mu_ held, write_mu_ taken per chunk.
  [[nodiscard]] base::Status ApplyRetention(int64_t now_ms, CompactResult& result);
  // Moves a cutoff: first the meta row (readers stop planning on the data), then its mirror.
  [[nodiscard]] base::Status AdvanceCutoff(const char* key, int64_t& mirror, int64_t value);
  // Forgets series and entities with no data left before `before_ms` in any resolution.
  [[nodiscard]] base::Status ForgetSeries(int64_t before_ms, CompactResult& result);
  [[nodiscard]] base::Status ForgetEntities(int64_t before_ms, CompactResult& result);
  [[nodiscard]] base::Status DeleteSeriesRows(const char* table, const char* time_column,
                                              int64_t before_ms, CompactResult& result);
  // Runs `sql` (?1: `before`, in the unit of its time column; ?2: kDeleteBatch) until it
  // deletes fewer than kDeleteBatch rows, one transaction each.
  [[nodiscard]] base::Status DeleteInChunks(const std::string& sql, int64_t before,
                                            CompactResult& result);
  void RecountActiveSeries(int64_t now_ms);  // write_mu_ held

  const SqliteStorageOptions options_;
  const std::string path_;

  std::mutex compact_mu_;  // one Compact at a time

  // The group commit's queue: callers waiting for the next transaction, and whether one of
  // them leads it. Taken after write_mu_, never before.
  std::mutex queue_mu_;
  std::condition_variable queue_cv_;
  std::vector<PendingWrite*> pending_;
  bool leading_ = false;
  std::condition_variable write_wanted_;  // pending_ is not empty, or stopping_writes_
  bool stopping_writes_ = false;
  std::thread write_thread_;  // writes every group (options_.write_thread); else callers lead

  std::mutex write_mu_;  // guards everything below up to readers_
  std::unique_ptr<sqlite::Connection> writer_;
  std::unordered_map<std::string, HostEntry> hosts_;
  std::unordered_map<std::string, int64_t> agents_;
  std::unordered_map<std::string, MetricEntry> metrics_;
  std::unordered_map<std::string, EntityEntry> entities_;  // key: host_id '\x1f' entity id
  // Key: AppendSeriesKey (sqlite_storage_internal.h). Changed only with write_mu_ and series_mu_
  // both held, so the writer reads it freely and ResolveSeries with series_mu_ shared;
  // series_generation_ moves whenever an entry is erased (pointers to it would dangle).
  std::unordered_map<std::string, SeriesEntry> series_;
  std::shared_mutex series_mu_;
  std::atomic<uint64_t> series_generation_{0};
  std::unordered_map<int64_t, size_t> active_series_;      // host_id -> active series
  // Samples in staged_samples not taken by a move, in arrival order.
  std::vector<StagedSample> staged_;
  int64_t staged_last_id_ = 0;  // rowid of the newest staged_samples row
  bool moving_ = false;         // a MoveStaged is inserting (with write_mu_ released)
  std::condition_variable move_done_;
  std::condition_variable move_wanted_;  // the stage is full, or stopping_
  bool stopping_ = false;
  std::thread mover_;  // joined by the destructor; empty without move_in_background
  // Samples acknowledged but not yet in the head (staged_ plus a move in progress);
  // readable without write_mu_.
  std::atomic<size_t> staged_count_{0};
  // Compaction state (mirrors of the meta table) plus the end of the slice being rolled up, so
  // that WriteBatch can flag windows that land behind a rollup in progress.
  int64_t first_window_ms_ = 0;  // 0: nothing written yet
  int64_t minute_watermark_ = 0;
  int64_t hour_watermark_ = 0;
  int64_t minute_building_to_ = 0;
  int64_t raw_cutoff_ = 0;  // 0: nothing deleted yet
  int64_t minute_cutoff_ = 0;
  int64_t hour_cutoff_ = 0;
  // Spans before it are in sample_chunks and their minute rollups in rollup_1m_chunks (late
  // windows and rebuilt minutes aside).
  int64_t chunk_watermark_ = 0;
  int64_t chunk_building_to_ = 0;  // the end of the span Compact is moving now, else 0
  // The samples table (the head before schema 5) may hold rows: reads and rollups merge it.
  bool head_rows_ = true;
  // A window was written below chunk_watermark_ (or the span being moved), or a minute rebuilt
  // there, since the last sweep; true after opening, so that rows left there by a crash (or by
  // a database before schema 6) are swept once.
  bool late_chunked_ = true;
  int64_t other_retention_ms_ = 0;  // last time events/profiles/steps were trimmed

  std::unique_ptr<sqlite::ReaderPool> readers_;  // thread-safe itself
  // Every committed raw window from its horizon on (thread-safe itself; written with write_mu_
  // held, after the window's transaction committed).
  RecentSamples recent_;
};

}  // namespace warpscope::server

#endif  // WARPSCOPE_SERVER_STORAGE_SQLITE_STORAGE_H_

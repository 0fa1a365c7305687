// SPDX-License-Identifier: Apache-2.0
// Storage in ClickHouse, over its HTTP interface: the scale-out backend, shared by any number of
// stateless warpscope servers. Schema, idempotence and outage behaviour: the "ClickHouse"
// section of docs/design/storage.md.
#ifndef WARPSCOPE_SERVER_STORAGE_CLICKHOUSE_CLICKHOUSE_STORAGE_H_
#define WARPSCOPE_SERVER_STORAGE_CLICKHOUSE_CLICKHOUSE_STORAGE_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "server/storage/clickhouse/clickhouse_client.h"
#include "server/storage/query_plan.h"
#include "server/storage/storage.h"

namespace warpscope::server {

struct ClickHouseStorageOptions {
  std::string url;  // --storage: clickhouse://HOST[:PORT]/DATABASE
  std::string user = "default";
  std::string password;  // from --storage-password-file; "" sends none
  StorageOptions storage;
  std::chrono::milliseconds timeout = std::chrono::seconds(30);  // per HTTP request
};

// The implementation is split by job: clickhouse_storage.cc (opening, schema, writes),
// clickhouse_storage_read.cc (queries) and clickhouse_storage_compact.cc (rollups, retention,
// Stats).
class ClickHouseStorage : public Storage {
 public:
  // Connects, creates the database and its tables if missing. Errors name the URL and the fix:
  // a bad URL (InvalidArgument), an unreachable server (Unavailable), refused credentials
  // (PermissionDenied).
  [[nodiscard]] static base::Result<std::unique_ptr<ClickHouseStorage>> Open(
      const ClickHouseStorageOptions& options);
  ~ClickHouseStorage() override = default;

  [[nodiscard]] base::Result<WriteResult> WriteBatch(const IngestBatch& batch) override;
  [[nodiscard]] base::Result<std::vector<EntityRecord>> ListEntities(
      const EntityQuery& query) override;
  [[nodiscard]] base::Result<std::vector<MetricInfo>> ListMetrics() override;
  [[nodiscard]] base::Result<RangeResult> QueryRange(const RangeQuery& query) override;
  [[nodiscard]] base::Result<std::vector<TopEntry>> TopEntities(const TopQuery& query) override;
  [[nodiscard]] base::Result<std::vector<EventRecord>> QueryEvents(
      const EventQuery& query) override;
  [[nodiscard]] base::Result<int64_t> WriteProfile(const ProfileMeta& meta,
                                                   std::string_view data) override;
  [[nodiscard]] base::Result<std::vector<ProfileMeta>> ListProfiles(
      const ProfileQuery& query) override;
  [[nodiscard]] base::Result<Profile> ReadProfile(int64_t id) override;
  [[nodiscard]] base::Result<std::vector<StoredStep>> QuerySteps(const StepQuery& query) override;
  [[nodiscard]] base::Result<std::vector<JobRecord>> ListJobs(const JobQuery& query) override;
  [[nodiscard]] base::Result<CompactResult> Compact(base::TimePoint now) override;
  [[nodiscard]] base::Result<StorageStats> Stats() override;

  // Batches acknowledged and the group commits that stored them (each group is one INSERT per
  // table, however many batches it holds).
  struct WriteCounters {
    uint64_t batches = 0;
    uint64_t groups = 0;
  };
  WriteCounters write_counters() const;

 private:
  // The rows of one or more batches, one JSONEachRow text per table (samples: RowBinary).
  struct Rows {
    std::string metrics, entities, samples, events, steps, dirty, batches;
    void Append(const Rows& other);
  };
  // Batches waiting to be written together; the first writer to find no flush running writes
  // them all (the leader), the others wait for its outcome.
  struct Group {
    Rows rows;
    size_t batches = 0;
    bool done = false;
    base::Status status;
  };

  // Progress marks kept in the `marks` table (latest value wins), in Unix ms.
  struct Marks {
    int64_t minute_watermark = 0;  // 1-minute rollups exist for buckets before this
    int64_t hour_watermark = 0;
    int64_t minute_building_to = 0;  // a Compact is rolling up minutes before this
    int64_t raw_cutoff = 0;          // retention: data before these is gone (0: none removed yet)
    int64_t minute_cutoff = 0;
    int64_t hour_cutoff = 0;
    int64_t event_cutoff = 0;
    int64_t profile_cutoff = 0;
    int64_t step_cutoff = 0;
    int64_t dirty_done = 0;     // dirty-bucket rows up to this version have been rebuilt
    int64_t forget_before = 0;  // series and entities last seen before this are gone
    int64_t batch_stored = 0;   // ReadMarks(batch): > 0 when that batch was stored before
  };
  struct MatchedSeries {
    uint64_t id = 0;
    SeriesIdentity identity;
  };
  // Per host: the series and when each was last written, for the cardinality cap.
  struct HostSeries {
    bool loaded = false;
    std::unordered_map<uint64_t, int64_t> last_seen;
    size_t active = 0;
  };

  ClickHouseStorage(const ClickHouseStorageOptions& options, clickhouse::Client client);

  base::Status CreateSchema();
  // The rows of `batch` (not a duplicate), in `rows`; counts into `result`.
  base::Status BatchRows(const IngestBatch& batch, const Marks& marks, WriteResult& result,
                         Rows& rows, std::vector<MetricInfo>& described);
  // Writes `rows` with the other batches waiting, one INSERT per table, `batches` last; returns
  // when ClickHouse acknowledged them all (or one failed: then every batch of the group fails).
  base::Status Commit(const Rows& rows);
  base::Status Flush(const Rows& rows);
  // Whether series `id` of `host` may be stored under the cap; counts it as active if so.
  base::Result<bool> AdmitSeries(const std::string& host, uint64_t id, int64_t end_ms);
  base::Status Insert(std::string_view table, const std::string& rows,
                      std::string_view format = "JSONEachRow");
  // The marks; with `batch`, also whether it was stored before (Marks::batch_stored).
  base::Result<Marks> ReadMarks(const IngestBatch* batch = nullptr);
  base::Status SetMark(std::string_view name, int64_t value);
  base::Result<std::map<std::string, MetricInfo>> ReadMetrics();
  base::Result<std::vector<MatchedSeries>> MatchSeries(const std::string& metric,
                                                       const SeriesMatcher& match,
                                                       int64_t seen_since);
  base::Result<Availability> ReadAvailability(const Marks& marks);
  // Folds the rows of `series` in `segments` into one folder per series (same order), whose
  // buckets are `step` ms from `origin`. Unless `by_row` (kRate, which needs each row), ClickHouse
  // combines each bucket's rows and sends one row per series and bucket.
  base::Status FoldSegments(const std::string& metric, const std::vector<MatchedSeries>& series,
                            const std::vector<Segment>& segments, int64_t origin, int64_t step,
                            bool by_row, std::vector<SeriesFolder>& folders, bool used[3]);
  base::Result<uint64_t> RollUp(Resolution target, int64_t from, int64_t to,
                                const std::vector<int64_t>* buckets);
  base::Status RebuildDirty(Marks& marks, CompactResult& result);
  base::Result<uint64_t> ApplyRetention(std::string_view table, std::string_view time_column,
                                        int64_t old_cutoff, int64_t new_cutoff, int64_t time_scale);

  ClickHouseStorageOptions options_;
  clickhouse::Client client_;
  std::mutex write_mu_;    // the caches below, while a batch's rows are built
  std::mutex compact_mu_;  // one Compact at a time
  std::unordered_map<std::string, HostSeries> host_series_;
  std::map<std::string, MetricInfo> metrics_;  // descriptions, as last read or written

  mutable std::mutex group_mu_;  // the group commit
  std::condition_variable group_cv_;
  std::shared_ptr<Group> open_group_;  // collecting batches; null when none waits
  bool flushing_ = false;
  WriteCounters counters_;
};

}  // namespace warpscope::server

#endif  // WARPSCOPE_SERVER_STORAGE_CLICKHOUSE_CLICKHOUSE_STORAGE_H_

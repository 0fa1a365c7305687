// SPDX-License-Identifier: Apache-2.0
// The server's storage interface: what ingest writes and what the query API reads. Backends:
// SqliteStorage (embedded, the default; sqlite_storage.h) and later ClickHouse. Every backend
// passes the conformance suite in testing/storage_conformance.h. Design: docs/design/storage.md.
#ifndef WARPSCOPE_SERVER_STORAGE_STORAGE_H_
#define WARPSCOPE_SERVER_STORAGE_STORAGE_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "base/time.h"
#include "model/entity.h"
#include "model/frame.h"
#include "model/labels.h"
#include "model/metric.h"

namespace warpscope::server {

// ---------------------------------------------------------------------------------------------
// Write side
// ---------------------------------------------------------------------------------------------

// A metric as the server knows it, from the descriptions agents send with their batches. The
// latest description written for a key wins.
struct MetricInfo {
  std::string key;  // canonical dotted name, "gpu.utilization"
  model::MetricKind kind = model::MetricKind::kGauge;
  std::string unit;  // base unit, UCUM-style ("1", "By", "W")
  std::string help;
  std::string prom_name;
  double prom_scale = 1.0;
  std::string otel_name;
  model::EntityKind entity_kind = model::EntityKind::kHost;

  bool operator==(const MetricInfo&) const = default;
};

// One series over one window. Counters carry their cumulative value in every field.
struct IngestSeries {
  std::string metric;  // MetricInfo::key, described in the batch or in an earlier one
  std::string entity;  // entity id on the batch's host
  model::Labels labels;
  double avg = 0;
  double min = 0;
  double max = 0;
  double last = 0;
  uint32_t count = 1;  // samples aggregated in the window; 0 is stored as 1
};

// One export window of one agent, independent of the wire format it arrived in (native
// protobuf/JSON, OTLP, remote write are all converted to this).
struct IngestBatch {
  std::string agent_id;   // required
  uint64_t sequence = 0;  // per agent, +1 per window, kept on retries
  base::TimePoint start;  // window [start, end); stored at millisecond precision
  base::TimePoint end;
  std::string host;  // the host entity id; required
  // Agent tags (--tags). Stored as attributes of the host entity; the host entity's own
  // attributes win on a conflicting key.
  model::Labels tags;
  // Entities seen in the window. Entities that series refer to but that are not listed here
  // are created with the kind of the series' metric and no attributes; the host entity always
  // exists.
  std::vector<model::Entity> entities;
  std::vector<MetricInfo> metrics;
  std::vector<IngestSeries> series;
  std::vector<model::Event> events;  // Event::entity is an entity id on `host`
  std::vector<model::TrainingStep> steps;  // TrainingStep::entity is an entity id on `host`
};

struct WriteResult {
  uint64_t stored = 0;           // series windows written
  bool duplicate = false;        // the batch was stored before; nothing was written again
  uint64_t dropped_series = 0;   // new series refused by the per-host cardinality cap
  uint64_t invalid_series = 0;   // series with a NaN or infinite value, not stored
};

// What Storage::WriteBatches did: the batches before the first failure were stored.
struct BatchesWritten {
  std::vector<WriteResult> results;  // one per batch stored, in order
  base::Status status;  // OK, or the error of batch results.size(); those after it were not tried
};

// ---------------------------------------------------------------------------------------------
// Read side
// ---------------------------------------------------------------------------------------------

// Selects series of one metric. Empty/unset fields match everything; set fields must all match.
struct SeriesMatcher {
  std::string host;    // host entity id
  std::string entity;  // entity id
  std::optional<model::EntityKind> entity_kind;
  model::Labels labels;             // every pair must equal the series' label
  model::Labels entity_attributes;  // every pair must equal the entity's attribute
};

// How the windows that fall in one step are combined. For counters kRate is the usual choice.
enum class Aggregation : uint8_t {
  kAvg,   // count-weighted mean of the window averages
  kMin,   // smallest window minimum
  kMax,   // largest window maximum (a spike shorter than a window survives)
  kLast,  // `last` of the latest window
  kRate,  // per-second increase of `last` (counters; a decrease counts as a reset to 0)
};
std::string_view AggregationName(Aggregation a);  // "avg", "min", "max", "last", "rate"
[[nodiscard]] base::Result<Aggregation> ParseAggregation(std::string_view name);

// "gpu" -> EntityKind::kGpu (the names of model::EntityKindName); InvalidArgument otherwise.
[[nodiscard]] base::Result<model::EntityKind> ParseEntityKind(std::string_view name);

// The data a point was computed from. Raw windows are as the agents sent them (typically
// 10 s to 1 min); rollups have fixed buckets aligned to the Unix epoch.
enum class Resolution : uint8_t { kRaw, kMinute, kHour };
std::string_view ResolutionName(Resolution r);  // "raw", "1m", "1h"

// A range query: the series of `metric` selected by `match`, bucketed by `step`.
//
// Buckets are aligned to multiples of `step` since the Unix epoch (so a refreshing chart gets
// stable points): bucket k covers [t_k, t_k + step) with t_0 = floor(start / step) * step and
// t_k < end. A window (or rollup bucket) belongs to the step bucket that holds its start time.
// Windows whose start lies in [t_0, end) are used. Empty buckets have no point (absent, never 0).
//
// Resolution: the coarsest of raw/1m/1h whose bucket is <= step is preferred; where it has no
// data yet (rollups not built) or any more (retention), finer data is used, and where neither
// has data, coarser. So a 24 h chart with a 2 min step reads 1-minute rollups plus the raw
// windows of the last minutes.
struct RangeQuery {
  std::string metric;  // MetricInfo::key
  SeriesMatcher match;
  base::TimePoint start;
  base::TimePoint end;
  base::Duration step = std::chrono::seconds(60);  // > 0
  Aggregation aggregation = Aggregation::kAvg;
  // Limits. More matching series, or more than `max_points` buckets per series, is an
  // InvalidArgument error that names the limit (narrow the matcher or raise the step).
  size_t max_series = 10000;
  size_t max_points = 11000;
};

struct SeriesIdentity {
  std::string host;
  std::string entity;
  model::EntityKind entity_kind = model::EntityKind::kHost;
  model::Labels labels;
  model::Labels entity_attributes;  // the entity's current attributes, for display
};

struct Point {
  base::TimePoint time;  // start of the step bucket
  double value = 0;
  // With Aggregation::kAvg, the agent samples the value averages (the windows' counts summed), so
  // that readers can weigh series that covered different parts of a bucket; 0 otherwise.
  uint64_t samples = 0;
};

struct RangeSeries {
  SeriesIdentity series;
  std::vector<Point> points;  // ascending time
};

struct RangeResult {
  MetricInfo metric;
  std::vector<RangeSeries> series;  // ordered by (host, entity, labels)
  std::vector<Resolution> resolutions;  // those that supplied data, each once, finest first
};

// Entities, by kind/host/id and attributes. Strings are matched exactly and case-sensitively.
struct EntityQuery {
  std::optional<model::EntityKind> kind;
  std::string host;
  std::string id_prefix;
  std::string id_contains;
  model::Labels attributes;  // every pair must equal
  std::optional<base::TimePoint> seen_since;  // last_seen >= this (entities still alive)
  size_t limit = 1000;
};

struct EntityRecord {
  std::string host;
  model::Entity entity;  // for hosts, attributes include the agent tags
  base::TimePoint first_seen;  // start of the first window that had it
  base::TimePoint last_seen;   // end of the latest window that had it
};

// Entities ranked by one metric over a range ("top GPUs by utilization"). All series of an
// entity for the metric (e.g. one per NVLink link) are combined as one.
struct TopQuery {
  std::string metric;
  SeriesMatcher match;  // usually entity_kind and host
  base::TimePoint start;
  base::TimePoint end;
  Aggregation aggregation = Aggregation::kAvg;
  size_t limit = 10;
  bool ascending = false;  // false: largest first
};

struct TopEntry {
  std::string host;
  std::string entity;
  model::EntityKind entity_kind = model::EntityKind::kHost;
  model::Labels entity_attributes;
  double value = 0;   // the aggregate over [start, end)
  double latest = 0;  // `last` of the latest window in [start, end)
  base::TimePoint latest_time;  // start of that window (or rollup bucket)
};

struct EventQuery {
  std::string host;
  std::string entity;
  std::string kind;  // "xid", ...
  base::TimePoint start;  // events with time in [start, end)
  base::TimePoint end;
  size_t limit = 1000;  // the newest `limit` events
};

struct EventRecord {
  std::string host;
  model::Event event;
};

// A stored profile (pprof bytes, not parsed here), attached to a host, optionally an entity
// (process, executable) and a window.
struct ProfileMeta {
  int64_t id = 0;  // assigned by WriteProfile; > 0
  std::string host;
  std::string entity;  // entity id, "" for host-wide profiles
  int64_t pid = 0;
  std::string executable;
  std::string kind;  // "cpu", "gpu", ...
  base::TimePoint start;
  base::TimePoint end;
  model::Labels labels;
  uint64_t size_bytes = 0;  // set by storage
};

// Profiles whose window overlaps [start, end). Empty strings and pid 0 match everything.
struct ProfileQuery {
  std::string host;
  std::string entity;
  std::string kind;
  int64_t pid = 0;
  std::vector<int64_t> exclude_pids;  // none of these processes' profiles (a chart's "others")
  base::TimePoint start;
  base::TimePoint end;
  size_t limit = 100;  // the newest `limit` (by window start)
};

// Training steps (proto TrainingStep) of one job whose end lies in [start, end), ordered by
// (step, rank, host), at most `limit` (the newest steps are kept when there are more).
struct StepQuery {
  std::string job;
  base::TimePoint start;
  base::TimePoint end;
  size_t limit = 100000;
};
struct StoredStep {
  std::string host;  // the host entity id of the batch that carried it
  model::TrainingStep step;
};
// The jobs with steps ending in [start, end), newest last step first.
struct JobQuery {
  base::TimePoint start;
  base::TimePoint end;
  size_t limit = 1000;
};
struct JobRecord {
  std::string job;
  uint32_t world_size = 0;  // the largest reported
  size_t ranks = 0;         // distinct ranks with steps in the range
  size_t steps = 0;         // step records in the range (all ranks)
  int64_t first_step = 0;
  int64_t last_step = 0;
  base::TimePoint first;  // the earliest step start in the range
  base::TimePoint last;   // the latest step end in the range
  std::vector<std::string> hosts;  // sorted
};

struct Profile {
  ProfileMeta meta;
  std::string data;  // as written
};

// ---------------------------------------------------------------------------------------------
// Maintenance
// ---------------------------------------------------------------------------------------------

// Options every backend honours. Validate() checks them; backends call it when they open.
struct StorageOptions {
  // Cardinality cap: at most this many *active* series per host (written within
  // `series_active_window`). New series beyond it are dropped and counted in
  // WriteResult::dropped_series; series that already exist keep being stored. Series that go
  // idle stop counting at the next Compact().
  size_t max_series_per_host = 50000;
  base::Duration series_active_window = std::chrono::hours(1);

  // Retention per resolution. Raw <= 1m <= 1h is required. Data is never deleted before it has
  // been rolled up into the next resolution.
  base::Duration raw_retention = std::chrono::hours(24 * 7);
  base::Duration minute_retention = std::chrono::hours(24 * 30);
  base::Duration hour_retention = std::chrono::hours(24 * 400);
  base::Duration event_retention = std::chrono::hours(24 * 400);
  base::Duration profile_retention = std::chrono::hours(24 * 30);
  base::Duration step_retention = std::chrono::hours(24 * 30);

  // Rollups are built for buckets that ended at least this long before Compact(now), so that
  // windows still in flight from agents usually land before their minute is rolled up. Later
  // windows are handled too (their buckets are rebuilt at the next Compact), only costlier.
  base::Duration rollup_delay = std::chrono::minutes(2);

  size_t max_profile_bytes = 64u << 20;

  [[nodiscard]] base::Status Validate() const;
};

struct CompactResult {
  uint64_t minute_rows = 0;   // 1-minute rollup rows written
  uint64_t hour_rows = 0;     // 1-hour rollup rows written
  uint64_t deleted_rows = 0;  // rows removed by retention (all tables)
  uint64_t chunked_windows = 0;  // raw windows moved into compressed chunks
  uint64_t chunked_minutes = 0;  // 1-minute rollup buckets written into closed spans' chunks
  uint64_t merged_head_chunks = 0;  // small head chunks merged into larger ones
};

struct TableStats {
  std::string name;
  uint64_t rows = 0;
  uint64_t bytes = 0;  // on disk, including indexes of the table
};

struct StorageStats {
  std::vector<TableStats> tables;
  uint64_t total_bytes = 0;  // everything the backend keeps on disk (SQLite: db + WAL)
  uint64_t raw_windows = 0;  // raw windows stored, however they are kept
};

// ---------------------------------------------------------------------------------------------
// The interface
// ---------------------------------------------------------------------------------------------

// What every backend checks before it stores a batch: metrics have keys and entities ids, each
// series' metric is described in the batch or `known_metric(key)` says the store has it, steps
// have a job and an entity and do not end before they start. InvalidArgument naming the batch,
// its agent and what is wrong.
[[nodiscard]] base::Status CheckIngestBatch(
    const IngestBatch& batch, const std::function<bool(const std::string&)>& known_metric);

// The checks every backend makes of a profile before storing it: host and kind set, the window
// not ending before it starts, at most `max_bytes` of data. InvalidArgument naming the profile's
// host and what is wrong.
[[nodiscard]] base::Status CheckProfile(const ProfileMeta& meta, std::string_view data,
                                        size_t max_bytes);

// Where the server keeps metrics, events and profiles.
//
// Threads: writes (WriteBatch, WriteProfile, Compact) are meant to come from one writer
// sequence, but every method is safe to call from any thread: writes serialise on an internal
// lock, and Compact takes that lock only for short chunks so that ingest on another thread does
// not stall while it runs (at most one Compact runs at a time). Reads may run concurrently with
// each other and with writes; each read sees one consistent committed snapshot.
//
// Errors: InvalidArgument for bad requests (the message names the field), NotFound for unknown
// ids, Internal/Unavailable for backend failures. A failed write stores nothing of its batch.
class Storage {
 public:
  virtual ~Storage() = default;
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  // Stores one window. Durable when it returns OK (survives a kill -9 of the server).
  // Idempotent: a batch whose (agent_id, sequence, start) was stored before is not stored again
  // and returns duplicate = true. The same (agent_id, sequence) with a different start is an
  // agent that restarted and counts from 1 again; it is stored. A batch that starts before the
  // oldest raw data kept (raw retention) is refused with InvalidArgument.
  [[nodiscard]] virtual base::Result<WriteResult> WriteBatch(const IngestBatch& batch) = 0;
  // Stores several windows as WriteBatch would, one after the other, and stops at the first
  // that fails. A backend may store them in one transaction, with other callers' batches (the
  // default calls WriteBatch for each).
  [[nodiscard]] virtual BatchesWritten WriteBatches(std::span<const IngestBatch> batches);

  // Entities matching `query`, ordered by (host, kind, id), at most query.limit.
  [[nodiscard]] virtual base::Result<std::vector<EntityRecord>> ListEntities(
      const EntityQuery& query) = 0;

  // Every metric ever described, ordered by key.
  [[nodiscard]] virtual base::Result<std::vector<MetricInfo>> ListMetrics() = 0;

  // See RangeQuery. An unknown metric is NotFound.
  [[nodiscard]] virtual base::Result<RangeResult> QueryRange(const RangeQuery& query) = 0;

  // Entities with data for query.metric in [start, end), ranked by their aggregate, at most
  // query.limit. Entities whose aggregate is undefined (kRate with a single window) are left
  // out. An unknown metric is NotFound.
  [[nodiscard]] virtual base::Result<std::vector<TopEntry>> TopEntities(const TopQuery& query) = 0;

  // Events matching `query`, newest first.
  [[nodiscard]] virtual base::Result<std::vector<EventRecord>> QueryEvents(
      const EventQuery& query) = 0;

  // Stores a profile blob and returns its id. meta.id and meta.size_bytes are ignored. Profiles
  // larger than StorageOptions::max_profile_bytes are refused (InvalidArgument).
  [[nodiscard]] virtual base::Result<int64_t> WriteProfile(const ProfileMeta& meta,
                                                           std::string_view data) = 0;
  // Matching profiles without their data, newest window first.
  [[nodiscard]] virtual base::Result<std::vector<ProfileMeta>> ListProfiles(
      const ProfileQuery& query) = 0;
  // NotFound for an unknown (or expired) id.
  [[nodiscard]] virtual base::Result<Profile> ReadProfile(int64_t id) = 0;

  // Training steps and the jobs they belong to. Steps are kept for
  // StorageOptions::step_retention. (Default bodies: Unsupported, for backends without steps.)
  [[nodiscard]] virtual base::Result<std::vector<StoredStep>> QuerySteps(const StepQuery& query);
  [[nodiscard]] virtual base::Result<std::vector<JobRecord>> ListJobs(const JobQuery& query);

  // Builds 1-minute rollups from raw windows and 1-hour rollups from 1-minute rollups for
  // buckets that ended before now - rollup_delay, rebuilds buckets that received late windows,
  // applies retention per resolution and forgets idle series for the cardinality cap. Works in
  // small chunks; call it periodically (every minute) from one maintenance thread. Safe to
  // interrupt (a kill -9 mid-way leaves consistent data; the next call finishes the job).
  [[nodiscard]] virtual base::Result<CompactResult> Compact(base::TimePoint now) = 0;

  // Rows and bytes per table. Walks the whole store: call it at most every minute or so.
  [[nodiscard]] virtual base::Result<StorageStats> Stats() = 0;

 protected:
  Storage() = default;
};

}  // namespace warpscope::server

#endif  // WARPSCOPE_SERVER_STORAGE_STORAGE_H_

// SPDX-License-Identifier: Apache-2.0
// ClickHouseStorage: opening (schema), marks, and the write side (WriteBatch, WriteProfile).
#include "server/storage/clickhouse/clickhouse_storage.h"

#include <atomic>
#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <unordered_set>

#include "server/storage/clickhouse/clickhouse_internal.h"
#include "server/storage/label_codec.h"

namespace warpscope::server {
namespace clickhouse_internal {

int64_t ParseInt(std::string_view s) {
  int64_t v = 0;
  std::from_chars(s.data(), s.data() + s.size(), v);
  return v;
}
uint64_t ParseUint(std::string_view s) {
  uint64_t v = 0;
  std::from_chars(s.data(), s.data() + s.size(), v);
  return v;
}
double ParseDouble(std::string_view s) {
  double v = 0;
  std::from_chars(s.data(), s.data() + s.size(), v);
  return v;
}

int64_t BlockOf(std::string_view table) {
  return table == "samples" ? kSampleBlockMs : table == "rollup_1m" ? kMinuteBlockMs : 0;
}

std::string StartRange(std::string_view table, int64_t from, int64_t to) {
  const int64_t block = BlockOf(table);
  std::string out = fmt::format("start >= {} AND start < {}", from, to);
  if (block > 0) {
    out += fmt::format(" AND intDiv(start, {0}) >= {1} AND intDiv(start, {0}) <= {2}", block,
                       FloorTo(from, block) / block, FloorTo(to - 1, block) / block);
  }
  return out;
}

uint64_t NextVersion() {
  static std::atomic<uint64_t> last{0};
  const auto now = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                             std::chrono::system_clock::now().time_since_epoch())
                                             .count());
  uint64_t prev = last.load();
  uint64_t next = 0;
  do {
    next = std::max(now, prev + 1);
  } while (!last.compare_exchange_weak(prev, next));
  return next;
}

uint64_t SeriesId(std::string_view host, std::string_view entity, std::string_view labels) {
  uint64_t h = 1469598103934665603ULL;
  auto mix = [&](std::string_view s) {
    for (unsigned char c : s) {
      h ^= c;
      h *= 1099511628211ULL;
    }
    h ^= 0x1f;
    h *= 1099511628211ULL;
  };
  mix(host);
  mix(entity);
  mix(labels);
  return h;
}

}  // namespace clickhouse_internal

namespace {

using base::Error;
using base::Result;
using base::Status;
using nlohmann::json;
using namespace clickhouse_internal;  // NOLINT(google-build-using-namespace)

// The name under which ReadMarks(batch) answers the batch's dedup check.
constexpr char kDuplicateRow[] = "__batch_stored";

// Day partitions of a millisecond column: retention drops whole days.
#define WS_DAY(col) "toYYYYMMDD(toDateTime(intDiv(" col ", 1000)))"

// The tables. Every statement works on ClickHouse 18.16 and current releases: plain String and
// numeric columns (no Map, LowCardinality, codecs or TTL), (Replacing)MergeTree engines.
// `samples` and `rollup_1m` lead their sort keys with a time block (kSampleBlockMs,
// kMinuteBlockMs), which reads name through StartRange: a rollup of the last minutes reads those
// blocks, not the day, and a range query reads its range's blocks.
constexpr const char* kSchema[] = {
    "CREATE TABLE IF NOT EXISTS batches (agent String, sequence UInt64, start Int64, ver UInt64) "
    "ENGINE = ReplacingMergeTree(ver) PARTITION BY " WS_DAY(
        "start") " ORDER BY (agent, sequence, start)",
    "CREATE TABLE IF NOT EXISTS samples (metric String, series UInt64, host String, entity String, "
    "labels String, start Int64, duration Int64, v_avg Float64, v_min Float64, v_max Float64, "
    "v_last Float64, v_count UInt64, ver UInt64) ENGINE = ReplacingMergeTree(ver) PARTITION "
    "BY " WS_DAY("start") " ORDER BY (intDiv(start, 600000), metric, series, start)",
    "CREATE TABLE IF NOT EXISTS rollup_1m (metric String, series UInt64, host String, "
    "entity String, labels String, start Int64, v_avg Float64, v_min Float64, v_max Float64, "
    "v_last Float64, v_count UInt64, ver UInt64) ENGINE = ReplacingMergeTree(ver) PARTITION "
    "BY " WS_DAY("start") " ORDER BY (intDiv(start, 3600000), metric, series, start)",
    "CREATE TABLE IF NOT EXISTS rollup_1h (metric String, series UInt64, host String, "
    "entity String, labels String, start Int64, v_avg Float64, v_min Float64, v_max Float64, "
    "v_last Float64, v_count UInt64, ver UInt64) ENGINE = ReplacingMergeTree(ver) PARTITION BY "
    "toYYYYMM(toDateTime(intDiv(start, 1000))) ORDER BY (metric, series, start)",
    // One row per series once merged (the latest last_seen).
    "CREATE TABLE IF NOT EXISTS series (metric String, series UInt64, host String, entity String, "
    "labels String, last_seen Int64) ENGINE = ReplacingMergeTree(last_seen) "
    "ORDER BY (metric, series)",
    // Every stored window keeps its series' last_seen, in the same INSERT as the window.
    "CREATE MATERIALIZED VIEW IF NOT EXISTS series_seen TO series AS SELECT metric, series, "
    "host, entity, labels, start + duration AS last_seen FROM samples",
    "CREATE TABLE IF NOT EXISTS metrics (key String, kind String, unit String, help String, "
    "prom_name String, prom_scale Float64, otel_name String, entity_kind String, ver UInt64) "
    "ENGINE = ReplacingMergeTree(ver) ORDER BY key",
    // An entity's latest description, declared and implied (merges keep the latest written)...
    "CREATE TABLE IF NOT EXISTS entities (host String, id String, kind String, parent String, "
    "attributes String, declared UInt8, first_seen Int64, last_seen Int64, ver UInt64) "
    "ENGINE = ReplacingMergeTree(ver) ORDER BY (host, id, declared)",
    // ... and its first and last seen: edge 0 keeps the smallest first_seen, edge 1 the largest
    // last_seen (a ReplacingMergeTree keeps the row with the largest `keep`).
    "CREATE TABLE IF NOT EXISTS entity_span (host String, id String, edge UInt8, t Int64, "
    "keep UInt64) ENGINE = ReplacingMergeTree(keep) ORDER BY (host, id, edge)",
    "CREATE MATERIALIZED VIEW IF NOT EXISTS entity_span_of TO entity_span AS SELECT host, id, "
    "edge, if(edge = 0, first_seen, last_seen) AS t, toUInt64(if(edge = 0, "
    "9223372036854775807 - first_seen, last_seen)) AS keep FROM entities ARRAY JOIN [0, 1] AS "
    "edge",
    "CREATE TABLE IF NOT EXISTS events (host String, entity String, kind String, code Int64, "
    "message String, attributes String, time Int64, ver UInt64, idx UInt32) ENGINE = "
    "ReplacingMergeTree(ver) PARTITION BY " WS_DAY(
        "time") " ORDER BY (host, time, entity, kind, code, message, attributes)",
    "CREATE TABLE IF NOT EXISTS profiles (id Int64, host String, entity String, pid Int64, "
    "executable String, kind String, start Int64, stop Int64, labels String, size UInt64, "
    "data String) ENGINE = MergeTree PARTITION BY " WS_DAY("start") " ORDER BY (host, start, id)",
    "CREATE TABLE IF NOT EXISTS training_steps (job String, host String, entity String, comm "
    "String, "
    "rank UInt32, world_size UInt32, step Int64, start_ns Int64, end_ns Int64, compute_ns Int64, "
    "comm_ns Int64, overlap_ns Int64, last_collective_offset_ns Int64, nccl_ns Int64, "
    "collectives UInt32, bus_bytes UInt64, source String, end_ms Int64) "
    "ENGINE = ReplacingMergeTree PARTITION BY " WS_DAY(
        "end_ms") " ORDER BY (job, end_ns, step, rank, host, entity)",
    "CREATE TABLE IF NOT EXISTS dirty (bucket Int64, ver UInt64) ENGINE = MergeTree "
    "ORDER BY ver",
    "CREATE TABLE IF NOT EXISTS marks (name String, value Int64, ver UInt64) "
    "ENGINE = ReplacingMergeTree(ver) ORDER BY name",
};
#undef WS_DAY

bool Finite(const IngestSeries& s) {
  return std::isfinite(s.avg) && std::isfinite(s.min) && std::isfinite(s.max) &&
         std::isfinite(s.last);
}

void AppendRow(std::string& out, const json& row) {
  out += row.dump(-1, ' ', false, json::error_handler_t::replace);
  out += '\n';
}

}  // namespace

ClickHouseStorage::ClickHouseStorage(const ClickHouseStorageOptions& options,
                                     clickhouse::Client client)
    : options_(options), client_(std::move(client)) {}

Result<std::unique_ptr<ClickHouseStorage>> ClickHouseStorage::Open(
    const ClickHouseStorageOptions& options) {
  WARPSCOPE_RETURN_IF_ERROR(options.storage.Validate());
  WARPSCOPE_ASSIGN_OR_RETURN(clickhouse::Endpoint endpoint, clickhouse::ParseUrl(options.url));
  endpoint.user = options.user.empty() ? "default" : options.user;
  endpoint.password = options.password;
  clickhouse::Client client(endpoint, options.timeout);
  auto storage = std::unique_ptr<ClickHouseStorage>(new ClickHouseStorage(options, client));
  WARPSCOPE_RETURN_IF_ERROR(storage->CreateSchema());
  return storage;
}

Status ClickHouseStorage::CreateSchema() {
  auto created = client_.Exec("CREATE DATABASE IF NOT EXISTS " + client_.endpoint().database, {},
                              /*in_database=*/false);
  if (!created.ok()) {
    return base::ErrStatus(created.code(), "opening --storage {}: {}", options_.url,
                           created.message());
  }
  for (const char* sql : kSchema) {
    WARPSCOPE_RETURN_IF_ERROR(client_.Exec(sql));
  }
  return base::OkStatus();
}

Status ClickHouseStorage::Insert(std::string_view table, const std::string& rows,
                                 std::string_view format) {
  if (rows.empty()) return base::OkStatus();
  return client_.Exec(fmt::format("INSERT INTO {} FORMAT {}", table, format), rows);
}

Result<ClickHouseStorage::Marks> ClickHouseStorage::ReadMarks(const IngestBatch* batch) {
  std::string sql = "SELECT name, argMax(value, ver) FROM marks GROUP BY name";
  if (batch != nullptr) {
    // The batch's dedup check rides along: one round trip for both.
    sql += fmt::format(
        " UNION ALL SELECT '{}', toInt64(count()) FROM batches WHERE agent = {} AND sequence = "
        "{} AND start = {}",
        kDuplicateRow, clickhouse::Quote(batch->agent_id), batch->sequence, ToMs(batch->start));
  }
  WARPSCOPE_ASSIGN_OR_RETURN(auto rows, client_.Select(sql + " FORMAT TSV"));
  Marks m;
  const std::pair<const char*, int64_t*> fields[] = {{"minute_watermark", &m.minute_watermark},
                                                     {"hour_watermark", &m.hour_watermark},
                                                     {"minute_building_to", &m.minute_building_to},
                                                     {"raw_cutoff", &m.raw_cutoff},
                                                     {"minute_cutoff", &m.minute_cutoff},
                                                     {"hour_cutoff", &m.hour_cutoff},
                                                     {"event_cutoff", &m.event_cutoff},
                                                     {"profile_cutoff", &m.profile_cutoff},
                                                     {"step_cutoff", &m.step_cutoff},
                                                     {"dirty_done", &m.dirty_done},
                                                     {"forget_before", &m.forget_before},
                                                     {kDuplicateRow, &m.batch_stored}};
  for (const auto& row : rows) {
    if (row.size() < 2) continue;
    for (const auto& [name, field] : fields) {
      if (row[0] == name) *field = ParseInt(row[1]);
    }
  }
  return m;
}

Status ClickHouseStorage::SetMark(std::string_view name, int64_t value) {
  std::string row;
  AppendRow(row, json{{"name", name}, {"value", value}, {"ver", NextVersion()}});
  return Insert("marks", row);
}

Result<std::map<std::string, MetricInfo>> ClickHouseStorage::ReadMetrics() {
  WARPSCOPE_ASSIGN_OR_RETURN(
      auto rows,
      client_.Select("SELECT key, argMax(kind, ver), argMax(unit, ver), argMax(help, ver), "
                     "argMax(prom_name, ver), argMax(prom_scale, ver), argMax(otel_name, ver), "
                     "argMax(entity_kind, ver) FROM metrics GROUP BY key ORDER BY key FORMAT TSV"));
  std::map<std::string, MetricInfo> out;
  for (auto& row : rows) {
    if (row.size() < 8) continue;
    MetricInfo m;
    m.key = row[0];
    m.kind = ParseMetricKind(row[1]);
    m.unit = row[2];
    m.help = row[3];
    m.prom_name = row[4];
    m.prom_scale = ParseDouble(row[5]);
    m.otel_name = row[6];
    m.entity_kind = EntityKindOrHost(row[7]);
    out.emplace(m.key, std::move(m));
  }
  return out;
}

Result<WriteResult> ClickHouseStorage::WriteBatch(const IngestBatch& batch) {
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
  WARPSCOPE_ASSIGN_OR_RETURN(Marks marks, ReadMarks(&batch));
  if (marks.raw_cutoff != 0 && ToMs(batch.start) < marks.raw_cutoff) {
    return Error(base::InvalidArgument(
        "batch {} from agent {}: window starts at {} ms, before the oldest raw data kept ({} "
        "ms, raw retention {}); it cannot be stored",
        batch.sequence, batch.agent_id, ToMs(batch.start), marks.raw_cutoff,
        base::FormatDuration(options_.storage.raw_retention)));
  }
  WriteResult result;
  Rows rows;
  std::vector<MetricInfo> described;
  {
    std::lock_guard lock(write_mu_);
    // Descriptions are cached; an unknown key reloads them (another server may have added it).
    for (const IngestSeries& s : batch.series) {
      if (metrics_.count(s.metric) != 0) continue;
      WARPSCOPE_ASSIGN_OR_RETURN(metrics_, ReadMetrics());
      break;
    }
    WARPSCOPE_RETURN_IF_ERROR(CheckIngestBatch(
        batch, [this](const std::string& key) { return metrics_.count(key) > 0; }));
    result.duplicate = marks.batch_stored > 0;
    if (result.duplicate) {
      return result;
    }
    WARPSCOPE_RETURN_IF_ERROR(BatchRows(batch, marks, result, rows, described));
  }
  // Acknowledged only when Commit returns OK: every row is in ClickHouse then. A failure leaves
  // rows that the agent's retry writes again with the same keys (replaced, not added).
  WARPSCOPE_RETURN_IF_ERROR(Commit(rows));
  if (!described.empty()) {
    std::lock_guard lock(write_mu_);
    for (MetricInfo& m : described) metrics_[m.key] = std::move(m);  // stored: the cache follows
  }
  return result;
}

void ClickHouseStorage::Rows::Append(const Rows& o) {
  metrics += o.metrics;
  entities += o.entities;
  samples += o.samples;
  events += o.events;
  steps += o.steps;
  dirty += o.dirty;
  batches += o.batches;
}

Status ClickHouseStorage::Commit(const Rows& rows) {
  std::unique_lock lock(group_mu_);
  if (open_group_ == nullptr) open_group_ = std::make_shared<Group>();
  std::shared_ptr<Group> group = open_group_;
  group->rows.Append(rows);
  ++group->batches;
  group_cv_.wait(lock, [&] { return group->done || !flushing_; });
  if (group->done) {
    return group->status;
  }
  // No flush runs and this group is still open: lead it. Batches arriving meanwhile gather in
  // the next group.
  flushing_ = true;
  open_group_.reset();
  lock.unlock();
  Status status = Flush(group->rows);
  lock.lock();
  group->status = status;
  group->done = true;
  flushing_ = false;
  if (status.ok()) {
    counters_.batches += group->batches;
    ++counters_.groups;
  }
  group_cv_.notify_all();
  return status;
}

Status ClickHouseStorage::Flush(const Rows& rows) {
  WARPSCOPE_RETURN_IF_ERROR(Insert("metrics", rows.metrics));
  WARPSCOPE_RETURN_IF_ERROR(Insert("entities", rows.entities));
  WARPSCOPE_RETURN_IF_ERROR(Insert("samples", rows.samples, "RowBinary"));
  WARPSCOPE_RETURN_IF_ERROR(Insert("events", rows.events));
  WARPSCOPE_RETURN_IF_ERROR(Insert("training_steps", rows.steps));
  WARPSCOPE_RETURN_IF_ERROR(Insert("dirty", rows.dirty));
  return Insert("batches", rows.batches);  // last: these batches now count as stored
}

ClickHouseStorage::WriteCounters ClickHouseStorage::write_counters() const {
  std::lock_guard lock(group_mu_);
  return counters_;
}

Result<bool> ClickHouseStorage::AdmitSeries(const std::string& host, uint64_t id, int64_t end_ms) {
  HostSeries& hs = host_series_[host];
  const int64_t window = DurationMs(options_.storage.series_active_window);
  if (!hs.loaded) {
    WARPSCOPE_ASSIGN_OR_RETURN(
        auto rows, client_.Select(fmt::format("SELECT series, max(last_seen) FROM series WHERE "
                                              "host = {} GROUP BY series FORMAT TSV",
                                              clickhouse::Quote(host))));
    int64_t newest = 0;
    for (const auto& row : rows) {
      if (row.size() < 2) continue;
      const int64_t seen = ParseInt(row[1]);
      hs.last_seen[ParseUint(row[0])] = seen;
      newest = std::max(newest, seen);
    }
    hs.active = 0;
    for (const auto& [sid, seen] : hs.last_seen) {
      if (seen >= newest - window) ++hs.active;
    }
    hs.loaded = true;
  }
  auto it = hs.last_seen.find(id);
  if (it == hs.last_seen.end()) {
    if (hs.active >= options_.storage.max_series_per_host) return false;
    hs.last_seen.emplace(id, end_ms);
    ++hs.active;
    return true;
  }
  if (it->second < 0) {  // idle (forgotten by Compact): counts again
    ++hs.active;
    it->second = end_ms;
  }
  it->second = std::max(it->second, end_ms);
  return true;
}

Status ClickHouseStorage::BatchRows(const IngestBatch& batch, const Marks& marks,
                                    WriteResult& result, Rows& rows,
                                    std::vector<MetricInfo>& described) {
  const int64_t start_ms = ToMs(batch.start);
  const int64_t end_ms = ToMs(batch.end);
  const uint64_t ver = NextVersion();
  for (const MetricInfo& m : batch.metrics) {
    auto it = metrics_.find(m.key);
    if (it != metrics_.end() && it->second == m) continue;
    AppendRow(rows.metrics, json{{"key", m.key},
                                 {"kind", MetricKindName(m.kind)},
                                 {"unit", m.unit},
                                 {"help", m.help},
                                 {"prom_name", m.prom_name},
                                 {"prom_scale", m.prom_scale},
                                 {"otel_name", m.otel_name},
                                 {"entity_kind", model::EntityKindName(m.entity_kind)},
                                 {"ver", ver}});
    described.push_back(m);
  }
  // Entities: the host (tags as attributes, its declared attributes winning), the declared ones,
  // then those only series refer to (kind of their metric, no attributes, not "declared").
  std::set<std::string> seen;
  auto add_entity = [&](const model::Entity& e, bool declared) {
    AppendRow(rows.entities, json{{"host", batch.host},
                                  {"id", e.id},
                                  {"kind", model::EntityKindName(e.kind)},
                                  {"parent", e.parent},
                                  {"attributes", EncodeLabels(e.attributes)},
                                  {"declared", declared ? 1 : 0},
                                  {"first_seen", start_ms},
                                  {"last_seen", end_ms},
                                  {"ver", ver}});
    seen.insert(e.id);
  };
  model::Entity host_entity{model::EntityKind::kHost, batch.host, "", batch.tags};
  for (const model::Entity& e : batch.entities) {
    if (e.id == batch.host) {
      host_entity.kind = e.kind;
      host_entity.parent = e.parent;
      for (const auto& [k, v] : e.attributes) host_entity.attributes.Set(k, v);
    }
  }
  add_entity(host_entity, true);
  for (const model::Entity& e : batch.entities) {
    if (seen.count(e.id) == 0) add_entity(e, true);
  }
  auto metric_of = [&](const std::string& key) -> const MetricInfo& {
    for (const MetricInfo& m : batch.metrics) {
      if (m.key == key) return m;
    }
    return metrics_.at(key);  // CheckIngestBatch: described here or before
  };
  for (const IngestSeries& s : batch.series) {
    if (!Finite(s)) {
      ++result.invalid_series;
      continue;
    }
    const MetricInfo& info = metric_of(s.metric);
    if (seen.count(s.entity) == 0) {
      add_entity(model::Entity{info.entity_kind, s.entity, "", {}}, false);
    }
    const std::string labels = EncodeLabels(s.labels);
    const uint64_t id = SeriesId(batch.host, s.entity, labels);
    WARPSCOPE_ASSIGN_OR_RETURN(bool admitted, AdmitSeries(batch.host, id, end_ms));
    if (!admitted) {
      ++result.dropped_series;
      continue;
    }
    // samples: metric, series, host, entity, labels, start, duration, v_avg, v_min, v_max,
    // v_last, v_count, ver (RowBinary, in the table's column order).
    std::string& out = rows.samples;
    AppendRowBinary(out, std::string_view(s.metric));
    AppendRowBinary(out, id);
    AppendRowBinary(out, std::string_view(batch.host));
    AppendRowBinary(out, std::string_view(s.entity));
    AppendRowBinary(out, std::string_view(labels));
    AppendRowBinary(out, start_ms);
    AppendRowBinary(out, end_ms - start_ms);
    for (double v : {s.avg, s.min, s.max, s.last}) {
      AppendRowBinary(out, v);
    }
    AppendRowBinary(out, static_cast<uint64_t>(std::max<uint32_t>(s.count, 1)));
    AppendRowBinary(out, ver);
    ++result.stored;
  }
  for (size_t i = 0; i < batch.events.size(); ++i) {
    const model::Event& e = batch.events[i];
    AppendRow(rows.events, json{{"host", batch.host},
                                {"entity", e.entity},
                                {"kind", e.kind},
                                {"code", e.code},
                                {"message", e.message},
                                {"attributes", EncodeLabels(e.attributes)},
                                {"time", ToMs(e.time)},
                                {"ver", ver},
                                {"idx", i}});
  }
  for (const model::TrainingStep& s : batch.steps) {
    AppendRow(rows.steps, json{{"job", s.job},
                               {"host", batch.host},
                               {"entity", s.entity},
                               {"comm", s.comm},
                               {"rank", s.rank},
                               {"world_size", s.world_size},
                               {"step", s.step},
                               {"start_ns", base::ToUnixNanos(s.start)},
                               {"end_ns", base::ToUnixNanos(s.end)},
                               {"compute_ns", s.compute_ns},
                               {"comm_ns", s.comm_ns},
                               {"overlap_ns", s.overlap_ns},
                               {"last_collective_offset_ns", s.last_collective_offset_ns},
                               {"nccl_ns", s.nccl_ns},
                               {"collectives", s.collectives},
                               {"bus_bytes", s.bus_bytes},
                               {"source", s.source},
                               {"end_ms", ToMs(s.end)}});
  }
  // A window behind the minute rollups (or the slice being rolled up now): its minute is
  // rebuilt at the next Compact, and reads take that range from raw data until then.
  if (result.stored > 0 && start_ms < std::max(marks.minute_watermark, marks.minute_building_to)) {
    AppendRow(rows.dirty, json{{"bucket", FloorTo(start_ms, kMinuteMs)}, {"ver", ver}});
  }
  AppendRow(rows.batches, json{{"agent", batch.agent_id},
                               {"sequence", batch.sequence},
                               {"start", start_ms},
                               {"ver", ver}});
  return base::OkStatus();
}

Result<int64_t> ClickHouseStorage::WriteProfile(const ProfileMeta& meta, std::string_view data) {
  WARPSCOPE_RETURN_IF_ERROR(CheckProfile(meta, data, options_.storage.max_profile_bytes));
  // Ids unique across servers without coordination: the write time in ms above 20 random bits.
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  const int64_t ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
  const int64_t id = (ms << 20) | static_cast<int64_t>(rng() & 0xFFFFF);
  // Profile bytes are binary: they travel as one TabSeparated row (JSON strings would have to
  // be UTF-8), escaped as that format wants.
  std::string row = fmt::format(
      "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t", id, clickhouse::EscapeTsv(meta.host),
      clickhouse::EscapeTsv(meta.entity), meta.pid, clickhouse::EscapeTsv(meta.executable),
      clickhouse::EscapeTsv(meta.kind), ToMs(meta.start), ToMs(meta.end),
      clickhouse::EscapeTsv(EncodeLabels(meta.labels)), data.size());
  row += clickhouse::EscapeTsv(data);
  row += '\n';
  WARPSCOPE_RETURN_IF_ERROR(
      client_.Exec("INSERT INTO profiles (id, host, entity, pid, executable, kind, start, stop, "
                   "labels, size, data) FORMAT TabSeparated",
                   row));
  return id;
}

}  // namespace warpscope::server

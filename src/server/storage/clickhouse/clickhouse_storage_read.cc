// SPDX-License-Identifier: Apache-2.0
// ClickHouseStorage's read queries: range, top entities, entities, metrics, events, profiles.
// Rows are read with FINAL (the replaced copies of retried writes merged away) and folded into
// step buckets here, by the same SeriesFolder as the SQLite backend.
#include <algorithm>
#include <limits>
#include <map>
#include <tuple>

#include "server/storage/clickhouse/clickhouse_internal.h"
#include "server/storage/clickhouse/clickhouse_storage.h"
#include "server/storage/label_codec.h"

namespace warpscope::server {
namespace {

using base::Error;
using base::Result;
using base::Status;
using clickhouse::Quote;
using clickhouse::TsvRow;
using namespace clickhouse_internal;  // NOLINT(google-build-using-namespace)

// Series ids per range query (20 characters each; ClickHouse parses at most 256 KiB of query).
constexpr size_t kSeriesPerQuery = 2000;

const char* TableOf(Resolution r) {
  return r == Resolution::kRaw ? "samples" : r == Resolution::kMinute ? "rollup_1m" : "rollup_1h";
}

// An entity's kind and attributes from its `entities` rows grouped by (host, id): the latest
// declared ones (an entity only series referred to keeps its implied kind).
constexpr char kEntityKind[] =
    "if(countIf(declared = 1) > 0, argMaxIf(kind, ver, declared = 1), argMax(kind, ver))";
constexpr char kEntityAttributes[] = "argMaxIf(attributes, ver, declared = 1)";

// The entities' current state, one row per (host, id): kind, parent and attributes as declared
// last (kEntityKind), first and last seen. `where` filters both tables (by host).
std::string EntitiesSql(const std::string& where) {
  return fmt::format(
      "SELECT host, id, kind_, parent_, attributes_, first_, last_ FROM (SELECT host, id, {1} AS "
      "kind_, argMaxIf(parent, ver, declared = 1) AS parent_, {2} AS attributes_ FROM entities "
      "{0} GROUP BY host, id) ANY INNER JOIN (SELECT host, id, minIf(t, edge = 0) AS first_, "
      "maxIf(t, edge = 1) AS last_ FROM entity_span {0} GROUP BY host, id) USING (host, id)",
      where, kEntityKind, kEntityAttributes);
}

// The kind and attributes of the entities the series matching `series_where` belong to: host,
// id, kind, attributes.
std::string EntityKindsSql(const std::string& series_where) {
  return fmt::format(
      "SELECT host, id, {1}, {2} FROM entities WHERE (host, id) IN (SELECT host, entity FROM "
      "series WHERE {0}) GROUP BY host, id FORMAT TSV",
      series_where, kEntityKind, kEntityAttributes);
}

EntityRecord EntityFromRow(const TsvRow& row) {
  EntityRecord r;
  r.host = row[0];
  r.entity.id = row[1];
  r.entity.kind = EntityKindOrHost(row[2]);
  r.entity.parent = row[3];
  r.entity.attributes = DecodeLabels(row[4]);
  r.first_seen = FromMs(ParseInt(row[5]));
  r.last_seen = FromMs(ParseInt(row[6]));
  return r;
}

constexpr char kProfileColumns[] =
    "SELECT id, host, entity, pid, executable, kind, start, stop, labels, size";

ProfileMeta ProfileFromRow(const TsvRow& row) {
  ProfileMeta m;
  m.id = ParseInt(row[0]);
  m.host = row[1];
  m.entity = row[2];
  m.pid = ParseInt(row[3]);
  m.executable = row[4];
  m.kind = row[5];
  m.start = FromMs(ParseInt(row[6]));
  m.end = FromMs(ParseInt(row[7]));
  m.labels = DecodeLabels(row[8]);
  m.size_bytes = ParseUint(row[9]);
  return m;
}

}  // namespace

Result<std::vector<ClickHouseStorage::MatchedSeries>> ClickHouseStorage::MatchSeries(
    const std::string& metric, const SeriesMatcher& match, int64_t seen_since) {
  std::string where = fmt::format("metric = {} AND last_seen >= {}", Quote(metric), seen_since);
  if (!match.host.empty()) where += " AND host = " + Quote(match.host);
  if (!match.entity.empty()) where += " AND entity = " + Quote(match.entity);
  WARPSCOPE_ASSIGN_OR_RETURN(
      auto rows, client_.Select(fmt::format("SELECT series, any(host), any(entity), any(labels) "
                                            "FROM series WHERE {} GROUP BY series FORMAT TSV",
                                            where)));
  std::vector<MatchedSeries> out;
  if (rows.empty()) return out;
  // The kind and attributes of the matched series' entities, and of no others: a fleet holds
  // tens of thousands of entities, a metric's series name a fraction of them.
  WARPSCOPE_ASSIGN_OR_RETURN(auto entity_rows, client_.Select(EntityKindsSql(where)));
  std::map<std::pair<std::string, std::string>, std::pair<model::EntityKind, model::Labels>>
      entities;
  for (const auto& row : entity_rows) {
    if (row.size() < 4) continue;
    entities.emplace(std::make_pair(row[0], row[1]),
                     std::make_pair(EntityKindOrHost(row[2]), DecodeLabels(row[3])));
  }
  for (const auto& row : rows) {
    if (row.size() < 4) continue;
    MatchedSeries m;
    m.id = ParseUint(row[0]);
    m.identity.host = row[1];
    m.identity.entity = row[2];
    m.identity.labels = DecodeLabels(row[3]);
    auto it = entities.find({m.identity.host, m.identity.entity});
    if (it != entities.end()) {
      m.identity.entity_kind = it->second.first;
      m.identity.entity_attributes = it->second.second;
    }
    if (match.entity_kind.has_value() && m.identity.entity_kind != *match.entity_kind) continue;
    if (MatchesAll(m.identity.labels, match.labels) &&
        MatchesAll(m.identity.entity_attributes, match.entity_attributes)) {
      out.push_back(std::move(m));
    }
  }
  std::sort(out.begin(), out.end(), [](const MatchedSeries& a, const MatchedSeries& b) {
    return std::tie(a.identity.host, a.identity.entity, a.identity.labels) <
           std::tie(b.identity.host, b.identity.entity, b.identity.labels);
  });
  return out;
}

Result<Availability> ClickHouseStorage::ReadAvailability(const Marks& marks) {
  constexpr int64_t kAll = std::numeric_limits<int64_t>::min();
  Availability a;
  a.raw_from = marks.raw_cutoff != 0 ? marks.raw_cutoff : kAll;
  a.minute_from = marks.minute_cutoff != 0 ? marks.minute_cutoff : kAll;
  a.minute_to = marks.minute_watermark;
  a.hour_from = marks.hour_cutoff != 0 ? marks.hour_cutoff : kAll;
  a.hour_to = marks.hour_watermark;
  // Rollups that a late window made stale (rebuilt at the next Compact) are not read: from the
  // earliest stale minute on, finer data serves the range (as in SqliteStorage).
  WARPSCOPE_ASSIGN_OR_RETURN(
      auto rows,
      client_.Select(fmt::format("SELECT count(), min(bucket) FROM dirty WHERE ver > {} FORMAT TSV",
                                 static_cast<uint64_t>(marks.dirty_done))));
  if (!rows.empty() && rows[0].size() >= 2 && ParseInt(rows[0][0]) > 0) {
    const int64_t stale = ParseInt(rows[0][1]);
    a.minute_to = std::min(a.minute_to, std::max(FloorTo(stale, kMinuteMs), a.raw_from));
    const int64_t finer_from = std::min(a.raw_from, a.minute_from);
    a.hour_to = std::min(a.hour_to, std::max(FloorTo(stale, kHourMs), finer_from));
  }
  return a;
}

Status ClickHouseStorage::FoldSegments(const std::string& metric,
                                       const std::vector<MatchedSeries>& series,
                                       const std::vector<Segment>& segments, int64_t origin,
                                       int64_t step, bool by_row,
                                       std::vector<SeriesFolder>& folders, bool used[3]) {
  if (series.empty()) return base::OkStatus();
  std::unordered_map<uint64_t, size_t> index;
  for (size_t i = 0; i < series.size(); ++i) index.emplace(series[i].id, i);
  // By row: each window or rollup row. Otherwise each bucket's rows combined as SeriesFolder
  // would (counts of at least 1, averages weighted by them, the last value by time), a row per
  // series and bucket instead of one per window: a fleet's top-N over an hour reads thousands
  // of rows instead of hundreds of thousands.
  const std::string columns =
      by_row ? "series, start, v_avg, v_min, v_max, v_last, v_count"
             : "series, max(start), sum(greatest(v_count, 1)), sum(v_avg * greatest(v_count, 1)), "
               "min(v_min), max(v_max), argMax(v_last, start)";
  const std::string tail =
      by_row ? " ORDER BY series, start FORMAT TSV"
             : fmt::format(" GROUP BY series, intDiv(start - {}, {}) FORMAT TSV", origin, step);
  for (const Segment& segment : segments) {
    const int64_t from = by_row ? segment.from : std::max(segment.from, origin);
    if (from >= segment.to) continue;
    // At most kSeriesPerQuery ids per query, to stay well inside ClickHouse's max_query_size.
    for (size_t first = 0; first < series.size(); first += kSeriesPerQuery) {
      std::string ids;
      for (size_t i = first; i < std::min(series.size(), first + kSeriesPerQuery); ++i) {
        if (!ids.empty()) ids += ',';
        ids += std::to_string(series[i].id);
      }
      WARPSCOPE_ASSIGN_OR_RETURN(
          auto rows, client_.Select(fmt::format(
                         "SELECT {} FROM {} FINAL WHERE metric = {} AND series IN ({}) AND {}{}",
                         columns, TableOf(segment.resolution), Quote(metric), ids,
                         StartRange(TableOf(segment.resolution), from, segment.to), tail)));
      for (const auto& row : rows) {
        if (row.size() < 7) continue;
        auto it = index.find(ParseUint(row[0]));
        if (it == index.end()) continue;
        used[static_cast<int>(segment.resolution)] = true;
        if (by_row) {
          Row r;
          r.start = ParseInt(row[1]);
          r.avg = ParseDouble(row[2]);
          r.min = ParseDouble(row[3]);
          r.max = ParseDouble(row[4]);
          r.last = ParseDouble(row[5]);
          r.count = ParseInt(row[6]);
          folders[it->second].Add(r);
          continue;
        }
        Bucket b;
        b.last_start = ParseInt(row[1]);
        b.count = ParseInt(row[2]);
        b.weighted_sum = ParseDouble(row[3]);
        b.min = ParseDouble(row[4]);
        b.max = ParseDouble(row[5]);
        b.last = ParseDouble(row[6]);
        folders[it->second].AddBucket(b);
      }
    }
  }
  return base::OkStatus();
}

Result<RangeResult> ClickHouseStorage::QueryRange(const RangeQuery& query) {
  WARPSCOPE_ASSIGN_OR_RETURN(const RangeFrame frame, FrameRange(query));
  // Plain variables, not bindings: lambdas below capture them (clang before 16 cannot).
  const int64_t step_ms = frame.step_ms;
  const int64_t start_ms = frame.start_ms;
  const int64_t end_ms = frame.end_ms;
  const int64_t origin = frame.origin;
  const int64_t buckets = frame.buckets;
  const int64_t fetch_from = frame.fetch_from;
  WARPSCOPE_ASSIGN_OR_RETURN(auto metrics, ReadMetrics());
  auto metric = metrics.find(query.metric);
  if (metric == metrics.end()) {
    return Error(base::NotFound("metric \"{}\" is unknown", query.metric));
  }
  WARPSCOPE_ASSIGN_OR_RETURN(Marks marks, ReadMarks());
  WARPSCOPE_ASSIGN_OR_RETURN(
      std::vector<MatchedSeries> matched,
      MatchSeries(query.metric, query.match,
                  std::max(start_ms - kLastSeenSlackMs, marks.forget_before)));
  if (matched.size() > query.max_series) {
    return Error(base::InvalidArgument(
        "query: {} series of {} match, more than the limit of {}; narrow the matchers (host, "
        "entity, labels)",
        matched.size(), query.metric, query.max_series));
  }
  WARPSCOPE_ASSIGN_OR_RETURN(Availability availability, ReadAvailability(marks));
  std::vector<Segment> segments = PlanSegments(fetch_from, end_ms, step_ms, availability);
  std::vector<SeriesFolder> folders(matched.size(),
                                    SeriesFolder(origin, step_ms, static_cast<size_t>(buckets)));
  bool used[3] = {false, false, false};
  WARPSCOPE_RETURN_IF_ERROR(FoldSegments(query.metric, matched, segments, origin, step_ms,
                                         query.aggregation == Aggregation::kRate, folders, used));
  RangeResult result;
  result.metric = metric->second;
  for (size_t i = 0; i < matched.size(); ++i) {
    RangeSeries series;
    series.points = BucketPoints(folders[i], query.aggregation, origin, step_ms);
    if (series.points.empty()) continue;
    series.series = std::move(matched[i].identity);
    result.series.push_back(std::move(series));
  }
  result.resolutions = UsedResolutions(used);
  return result;
}

Result<std::vector<TopEntry>> ClickHouseStorage::TopEntities(const TopQuery& query) {
  if (query.metric.empty()) {
    return Error(base::InvalidArgument("top entities: metric is required"));
  }
  const int64_t start_ms = ToMs(query.start);
  const int64_t end_ms = ToMs(query.end);
  if (end_ms <= start_ms) {
    return Error(base::InvalidArgument("top entities: end must be after start"));
  }
  WARPSCOPE_ASSIGN_OR_RETURN(auto metrics, ReadMetrics());
  if (metrics.count(query.metric) == 0) {
    return Error(base::NotFound("metric \"{}\" is unknown", query.metric));
  }
  const int64_t range_ms = end_ms - start_ms;
  WARPSCOPE_ASSIGN_OR_RETURN(Marks marks, ReadMarks());
  WARPSCOPE_ASSIGN_OR_RETURN(
      std::vector<MatchedSeries> matched,
      MatchSeries(query.metric, query.match,
                  std::max(start_ms - kLastSeenSlackMs, marks.forget_before)));
  WARPSCOPE_ASSIGN_OR_RETURN(Availability availability, ReadAvailability(marks));
  const int64_t fetch_from =
      query.aggregation == Aggregation::kRate ? start_ms - kRateSeedMs : start_ms;
  std::vector<Segment> segments = PlanSegments(fetch_from, end_ms, range_ms, availability);
  std::vector<SeriesFolder> folders(matched.size(), SeriesFolder(start_ms, range_ms, 1));
  bool used[3] = {false, false, false};
  WARPSCOPE_RETURN_IF_ERROR(FoldSegments(query.metric, matched, segments, start_ms, range_ms,
                                         query.aggregation == Aggregation::kRate, folders, used));
  std::map<std::pair<std::string, std::string>, PerEntity> entities;
  for (size_t i = 0; i < matched.size(); ++i) {
    const Bucket& b = folders[i].buckets()[0];
    if (b.empty()) continue;
    const SeriesIdentity& id = matched[i].identity;
    entities[{id.host, id.entity}].Add(id, b);
  }
  return RankTop(query, entities);
}

Result<std::vector<EntityRecord>> ClickHouseStorage::ListEntities(const EntityQuery& query) {
  std::vector<EntityRecord> out;
  if (query.limit == 0) return out;
  WARPSCOPE_ASSIGN_OR_RETURN(Marks marks, ReadMarks());
  std::string inner = query.host.empty() ? std::string() : "WHERE host = " + Quote(query.host);
  std::string sql = EntitiesSql(inner) + fmt::format(" WHERE last_ >= {}", marks.forget_before);
  if (query.kind.has_value()) sql += " AND kind_ = " + Quote(model::EntityKindName(*query.kind));
  if (!query.id_prefix.empty()) {
    sql += fmt::format(" AND substring(id, 1, {}) = {}", query.id_prefix.size(),
                       Quote(query.id_prefix));
  }
  if (!query.id_contains.empty()) sql += " AND position(id, " + Quote(query.id_contains) + ") > 0";
  if (query.seen_since.has_value()) sql += fmt::format(" AND last_ >= {}", ToMs(*query.seen_since));
  sql += " ORDER BY host, kind_, id";
  if (query.attributes.empty()) sql += fmt::format(" LIMIT {}", query.limit);
  WARPSCOPE_ASSIGN_OR_RETURN(auto rows, client_.Select(sql + " FORMAT TSV"));
  for (const auto& row : rows) {
    if (row.size() < 7) continue;
    EntityRecord r = EntityFromRow(row);
    if (!MatchesAll(r.entity.attributes, query.attributes)) continue;
    out.push_back(std::move(r));
    if (out.size() >= query.limit) break;
  }
  return out;
}

Result<std::vector<MetricInfo>> ClickHouseStorage::ListMetrics() {
  WARPSCOPE_ASSIGN_OR_RETURN(auto metrics, ReadMetrics());
  std::vector<MetricInfo> out;
  out.reserve(metrics.size());
  for (auto& [key, info] : metrics) out.push_back(std::move(info));
  return out;
}

Result<std::vector<EventRecord>> ClickHouseStorage::QueryEvents(const EventQuery& query) {
  WARPSCOPE_ASSIGN_OR_RETURN(Marks marks, ReadMarks());
  const int64_t from = std::max(ToMs(query.start), marks.event_cutoff);
  std::string sql = fmt::format(
      "SELECT host, entity, time, kind, code, message, attributes FROM events FINAL WHERE "
      "time >= {} AND time < {}",
      from, ToMs(query.end));
  if (!query.host.empty()) sql += " AND host = " + Quote(query.host);
  if (!query.entity.empty()) sql += " AND entity = " + Quote(query.entity);
  if (!query.kind.empty()) sql += " AND kind = " + Quote(query.kind);
  sql += fmt::format(" ORDER BY time DESC, ver DESC, idx DESC LIMIT {} FORMAT TSV",
                     std::min<size_t>(query.limit, INT64_MAX));
  WARPSCOPE_ASSIGN_OR_RETURN(auto rows, client_.Select(sql));
  std::vector<EventRecord> out;
  for (const auto& row : rows) {
    if (row.size() < 7) continue;
    EventRecord r;
    r.host = row[0];
    r.event.entity = row[1];
    r.event.time = FromMs(ParseInt(row[2]));
    r.event.kind = row[3];
    r.event.code = ParseInt(row[4]);
    r.event.message = row[5];
    r.event.attributes = DecodeLabels(row[6]);
    out.push_back(std::move(r));
  }
  return out;
}

Result<std::vector<ProfileMeta>> ClickHouseStorage::ListProfiles(const ProfileQuery& query) {
  WARPSCOPE_ASSIGN_OR_RETURN(Marks marks, ReadMarks());
  std::string sql =
      fmt::format("{} FROM profiles WHERE start < {} AND stop > {} AND start >= {}",
                  kProfileColumns, ToMs(query.end), ToMs(query.start), marks.profile_cutoff);
  if (!query.host.empty()) sql += " AND host = " + Quote(query.host);
  if (!query.entity.empty()) sql += " AND entity = " + Quote(query.entity);
  if (!query.kind.empty()) sql += " AND kind = " + Quote(query.kind);
  if (query.pid != 0) sql += fmt::format(" AND pid = {}", query.pid);
  if (!query.exclude_pids.empty()) {
    sql += fmt::format(" AND pid NOT IN ({})", fmt::join(query.exclude_pids, ","));
  }
  sql += fmt::format(" ORDER BY start DESC, id DESC LIMIT {} FORMAT TSV",
                     std::min<size_t>(query.limit, INT64_MAX));
  WARPSCOPE_ASSIGN_OR_RETURN(auto rows, client_.Select(sql));
  std::vector<ProfileMeta> out;
  for (const auto& row : rows) {
    if (row.size() >= 10) out.push_back(ProfileFromRow(row));
  }
  return out;
}

Result<Profile> ClickHouseStorage::ReadProfile(int64_t id) {
  WARPSCOPE_ASSIGN_OR_RETURN(Marks marks, ReadMarks());
  WARPSCOPE_ASSIGN_OR_RETURN(
      auto rows, client_.Select(fmt::format("{}, data FROM profiles WHERE id = {} AND start >= {} "
                                            "LIMIT 1 FORMAT TSV",
                                            kProfileColumns, id, marks.profile_cutoff)));
  if (rows.empty() || rows[0].size() < 11) {
    return Error(base::NotFound("profile {} does not exist (or has expired)", id));
  }
  Profile p;
  p.meta = ProfileFromRow(rows[0]);
  p.data = std::move(rows[0][10]);
  return p;
}

}  // namespace warpscope::server

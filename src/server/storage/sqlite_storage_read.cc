// SPDX-License-Identifier: Apache-2.0
// SqliteStorage's read queries: range, top entities, entities, metrics, events, profiles and
// Stats, each in one read transaction on a pooled connection.
#include <algorithm>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <tuple>

#include "server/storage/label_codec.h"
#include "server/storage/sqlite_db.h"
#include "server/storage/sqlite_storage.h"
#include "server/storage/sqlite_storage_internal.h"

namespace warpscope::server {

namespace storage_internal {

std::string RowsSql(Resolution r, std::optional<Aggregation> only) {
  const char* table = r == Resolution::kMinute ? "rollup_1m" : "rollup_1h";
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
      "SELECT bucket_ms, {1} FROM {0} WHERE series_id = ?1 AND bucket_ms >= ?2 AND bucket_ms < "
      "?3 ORDER BY bucket_ms",
      table, columns);
}

Row ReadRow(const sqlite::Statement& stmt, std::optional<Aggregation> only) {
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
  return r;
}

}  // namespace storage_internal

namespace {

using base::Error;
using base::Result;
using base::Status;
using sqlite::Connection;
using sqlite::Statement;
using storage_internal::DurationMs;
using storage_internal::EntityKindOrHost;
using storage_internal::FromMs;
using storage_internal::kDirtyMinute;
using storage_internal::kLastSeenSlackMs;
using storage_internal::kTables;
using storage_internal::MetaMarks;
using storage_internal::ReadMetaMarks;
using storage_internal::ReadMetric;
using storage_internal::ReadRow;
using storage_internal::RowsSql;
using storage_internal::ToMs;

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

// The bytes of each table, indexes included, from the dbstat virtual table.
Result<std::map<std::string, uint64_t>> TableBytes(Connection& db) {
  // B-tree name (table or index) -> its table.
  std::map<std::string, std::string> owner;
  {
    WARPSCOPE_ASSIGN_OR_RETURN(Statement stmt,
                               db.Prepare("SELECT name, tbl_name FROM sqlite_schema WHERE type IN "
                                          "('table', 'index')"));
    WARPSCOPE_RETURN_IF_ERROR(stmt.ForEachRow([&](const Statement& row) {
      owner[std::string(row.ColumnText(0))] = std::string(row.ColumnText(1));
    }));
  }
  std::map<std::string, uint64_t> bytes;
  WARPSCOPE_ASSIGN_OR_RETURN(Statement stmt,
                             db.Prepare("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name"));
  WARPSCOPE_RETURN_IF_ERROR(stmt.ForEachRow([&](const Statement& row) {
    auto it = owner.find(std::string(row.ColumnText(0)));
    if (it != owner.end()) {
      bytes[it->second] += static_cast<uint64_t>(row.ColumnInt(1));
    }
  }));
  return bytes;
}

}  // namespace

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
  stmt.Bind(metric_id, start_ms - kLastSeenSlackMs, end_ms);
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
  WARPSCOPE_RETURN_IF_ERROR(stmt.ForEachRow([&](const Statement& row) {
    MatchedSeries m;
    m.id = row.ColumnInt(0);
    m.identity.host = std::string(row.ColumnText(1));
    m.identity.entity = std::string(row.ColumnText(2));
    m.identity.entity_kind = EntityKindOrHost(row.ColumnText(3));
    m.identity.entity_attributes = DecodeLabels(row.ColumnText(4));
    m.identity.labels = DecodeLabels(row.ColumnText(5));
    if (MatchesAll(m.identity.labels, match.labels) &&
        MatchesAll(m.identity.entity_attributes, match.entity_attributes)) {
      out.push_back(std::move(m));
    }
  }));
  std::sort(out.begin(), out.end(), [](const MatchedSeries& a, const MatchedSeries& b) {
    return std::tie(a.identity.host, a.identity.entity, a.identity.labels) <
           std::tie(b.identity.host, b.identity.entity, b.identity.labels);
  });
  return out;
}

Result<Availability> SqliteStorage::ReadAvailability(Connection& db) {
  WARPSCOPE_ASSIGN_OR_RETURN(MetaMarks marks, ReadMetaMarks(db));
  constexpr int64_t kAll = std::numeric_limits<int64_t>::min();
  Availability a;
  a.raw_from = marks.raw_cutoff != 0 ? marks.raw_cutoff : kAll;
  a.minute_from = marks.minute_cutoff != 0 ? marks.minute_cutoff : kAll;
  a.minute_to = marks.minute_watermark;
  a.hour_from = marks.hour_cutoff != 0 ? marks.hour_cutoff : kAll;
  a.hour_to = marks.hour_watermark;
  // Rollups that a late window made stale (rebuilt at the next Compact) are not read: the range
  // from the earliest stale bucket on comes from finer data, so a read sees every stored window
  // (an agent's backlog after an outage, say) at once. Below the raw cutoff no finer data is
  // left: the stale rollup is the best there is, and no Compact rebuilds it.
  WARPSCOPE_ASSIGN_OR_RETURN(
      Statement stmt,
      db.Prepare("SELECT resolution, min(from_ms) FROM rollup_dirty GROUP BY resolution"));
  std::optional<int64_t> stale_minute;
  std::optional<int64_t> stale_hour;
  WARPSCOPE_RETURN_IF_ERROR(stmt.ForEachRow([&](const Statement& row) {
    (row.ColumnInt(0) == kDirtyMinute ? stale_minute : stale_hour) = row.ColumnInt(1);
  }));
  if (stale_minute) {
    a.minute_to = std::min(a.minute_to, std::max(FloorTo(*stale_minute, kMinuteMs), a.raw_from));
  }
  // A stale minute is also stale in its hour (marked dirty only once the minute is rebuilt).
  std::optional<int64_t> stale_for_hours = stale_minute;
  if (stale_hour) stale_for_hours = std::min(stale_for_hours.value_or(*stale_hour), *stale_hour);
  if (stale_for_hours) {
    const int64_t finer_from = std::min(a.raw_from, a.minute_from);
    a.hour_to = std::min(a.hour_to, std::max(FloorTo(*stale_for_hours, kHourMs), finer_from));
  }
  return a;
}

Status SqliteStorage::FoldSeries(Connection& db, int64_t series_id,
                                 const std::vector<Segment>& segments,
                                 std::optional<Aggregation> only, SeriesFolder& folder,
                                 bool used[3], bool* memory_missed) {
  for (const Segment& segment : segments) {
    if (segment.resolution == Resolution::kRaw &&
        recent_.Fold(series_id, segment.from, segment.to, [&](const Row& row) {
          folder.Add(row);
          used[static_cast<int>(Resolution::kRaw)] = true;
        })) {
      continue;
    }
    if (segment.resolution == Resolution::kRaw && memory_missed != nullptr) {
      *memory_missed = true;  // the horizon moved past it: the caller reads again
      return base::OkStatus();
    }
    if (segment.resolution == Resolution::kRaw) {
      WARPSCOPE_RETURN_IF_ERROR(storage_internal::ForEachRawRow(
          db, series_id, segment.from, segment.to, [&](const Row& row) {
            folder.Add(row);
            used[static_cast<int>(Resolution::kRaw)] = true;
          }));
      continue;
    }
    if (segment.resolution == Resolution::kMinute) {
      WARPSCOPE_RETURN_IF_ERROR(storage_internal::ForEachMinuteRow(
          db, series_id, segment.from, segment.to, only, [&](const Row& row) {
            folder.Add(row);
            used[static_cast<int>(Resolution::kMinute)] = true;
          }));
      continue;
    }
    WARPSCOPE_ASSIGN_OR_RETURN(Statement stmt, db.Prepare(RowsSql(segment.resolution, only)));
    stmt.Bind(series_id, segment.from, segment.to);
    WARPSCOPE_RETURN_IF_ERROR(stmt.ForEachRow([&](const Statement& row) {
      folder.Add(ReadRow(row, only));
      used[static_cast<int>(segment.resolution)] = true;
    }));
  }
  return base::OkStatus();
}

Result<RangeResult> SqliteStorage::QueryRange(const RangeQuery& query) {
  WARPSCOPE_ASSIGN_OR_RETURN(const RangeFrame frame, FrameRange(query));
  // Plain variables, not bindings: lambdas below capture them (clang before 16 cannot).
  const int64_t step_ms = frame.step_ms;
  const int64_t start_ms = frame.start_ms;
  const int64_t end_ms = frame.end_ms;
  const int64_t origin = frame.origin;
  const int64_t buckets = frame.buckets;
  const int64_t fetch_from = frame.fetch_from;
  // A range within the recent windows is folded from memory, staged samples included; any other
  // reads the samples table, which must hold every staged sample first. (Rollup segments do not
  // depend on staged samples: Compact moves them before it rolls up.) Should the horizon pass the
  // range while it is read (a write moved it), the read starts again with the staged samples
  // moved.
  bool from_memory = fetch_from >= recent_.horizon();
  if (!from_memory) {
    WARPSCOPE_RETURN_IF_ERROR(ApplyStaged());
  }
  bool memory_missed = false;
  auto read = [&](Connection& db) -> Result<RangeResult> {
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
    std::vector<Segment> segments = PlanSegments(fetch_from, end_ms, step_ms, availability);

    RangeResult result;
    result.metric = std::move(metric.second);
    bool used[3] = {false, false, false};
    for (MatchedSeries& m : matched) {
      SeriesFolder folder(origin, step_ms, static_cast<size_t>(buckets));
      WARPSCOPE_RETURN_IF_ERROR(FoldSeries(db, m.id, segments, query.aggregation, folder, used,
                                           from_memory ? &memory_missed : nullptr));
      if (memory_missed) {
        return RangeResult{};
      }
      RangeSeries series;
      series.points = BucketPoints(folder, query.aggregation, origin, step_ms);
      if (series.points.empty()) {
        continue;
      }
      series.series = std::move(m.identity);
      result.series.push_back(std::move(series));
    }
    result.resolutions = UsedResolutions(used);
    return result;
  };
  Result<RangeResult> result = sqlite::InReadTransaction(*readers_, read);
  if (result && memory_missed) {
    from_memory = false;
    memory_missed = false;
    WARPSCOPE_RETURN_IF_ERROR(ApplyStaged());
    result = sqlite::InReadTransaction(*readers_, read);
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

  return sqlite::InReadTransaction(*readers_, [&](Connection& db) -> Result<std::vector<TopEntry>> {
    WARPSCOPE_ASSIGN_OR_RETURN(auto metric, ReadMetric(db, query.metric));
    WARPSCOPE_ASSIGN_OR_RETURN(std::vector<MatchedSeries> matched,
                               MatchSeries(db, metric.first, query.match, start_ms, end_ms));
    WARPSCOPE_ASSIGN_OR_RETURN(Availability availability, ReadAvailability(db));
    const int64_t fetch_from =
        query.aggregation == Aggregation::kRate ? start_ms - kRateSeedMs : start_ms;
    std::vector<Segment> segments = PlanSegments(fetch_from, end_ms, range_ms, availability);

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
      entities[{m.identity.host, m.identity.entity}].Add(m.identity, b);
    }
    return RankTop(query, entities);
  });
}

Result<std::vector<EntityRecord>> SqliteStorage::ListEntities(const EntityQuery& query) {
  return sqlite::InReadTransaction(
      *readers_, [&](Connection& db) -> Result<std::vector<EntityRecord>> {
        WARPSCOPE_ASSIGN_OR_RETURN(
            Statement stmt,
            db.Prepare("SELECT h.name, e.entity, e.kind, e.parent, e.attributes, "
                       "e.first_seen_ms, e.last_seen_ms FROM entities e JOIN hosts h ON h.id = "
                       "e.host_id WHERE (?1 = '' OR e.kind = ?1) AND (?2 = '' OR h.name = ?2) "
                       "AND (?3 = '' OR substr(e.entity, 1, length(?3)) = ?3) "
                       "AND (?4 = '' OR instr(e.entity, ?4) > 0) AND e.last_seen_ms >= ?5 "
                       "ORDER BY h.name, e.kind, e.entity"));
        stmt.Bind(query.kind.has_value() ? model::EntityKindName(*query.kind) : "", query.host,
                  query.id_prefix, query.id_contains,
                  query.seen_since.has_value() ? ToMs(*query.seen_since)
                                               : std::numeric_limits<int64_t>::min());
        std::vector<EntityRecord> out;
        if (query.limit == 0) {
          return out;
        }
        WARPSCOPE_RETURN_IF_ERROR(stmt.ForEachRow([&](const Statement& row) {
          EntityRecord r;
          r.host = std::string(row.ColumnText(0));
          r.entity.id = std::string(row.ColumnText(1));
          r.entity.kind = EntityKindOrHost(row.ColumnText(2));
          r.entity.parent = std::string(row.ColumnText(3));
          r.entity.attributes = DecodeLabels(row.ColumnText(4));
          r.first_seen = FromMs(row.ColumnInt(5));
          r.last_seen = FromMs(row.ColumnInt(6));
          if (MatchesAll(r.entity.attributes, query.attributes)) {
            out.push_back(std::move(r));
          }
          return out.size() < query.limit;
        }));
        return out;
      });
}

Result<std::vector<MetricInfo>> SqliteStorage::ListMetrics() {
  return sqlite::InReadTransaction(
      *readers_, [&](Connection& db) -> Result<std::vector<MetricInfo>> {
        WARPSCOPE_ASSIGN_OR_RETURN(Statement stmt,
                                   db.Prepare("SELECT key FROM metrics ORDER BY key"));
        std::vector<std::string> keys;
        WARPSCOPE_RETURN_IF_ERROR(
            stmt.ForEachRow([&](const Statement& row) { keys.emplace_back(row.ColumnText(0)); }));
        std::vector<MetricInfo> out;
        for (const std::string& key : keys) {
          WARPSCOPE_ASSIGN_OR_RETURN(auto metric, ReadMetric(db, key));
          out.push_back(std::move(metric.second));
        }
        return out;
      });
}

Result<std::vector<EventRecord>> SqliteStorage::QueryEvents(const EventQuery& query) {
  return sqlite::InReadTransaction(
      *readers_, [&](Connection& db) -> Result<std::vector<EventRecord>> {
        WARPSCOPE_ASSIGN_OR_RETURN(
            Statement stmt,
            db.Prepare("SELECT h.name, ev.entity, ev.time_ms, ev.kind, ev.code, ev.message, "
                       "ev.attributes FROM events ev JOIN hosts h ON h.id = ev.host_id "
                       "WHERE ev.time_ms >= ?1 AND ev.time_ms < ?2 AND (?3 = '' OR h.name = ?3) "
                       "AND (?4 = '' OR ev.entity = ?4) AND (?5 = '' OR ev.kind = ?5) "
                       "ORDER BY ev.time_ms DESC, ev.id DESC LIMIT ?6"));
        stmt.Bind(ToMs(query.start), ToMs(query.end), query.host, query.entity, query.kind,
                  static_cast<int64_t>(std::min<size_t>(query.limit, INT64_MAX)));
        std::vector<EventRecord> out;
        WARPSCOPE_RETURN_IF_ERROR(stmt.ForEachRow([&](const Statement& row) {
          EventRecord r;
          r.host = std::string(row.ColumnText(0));
          r.event.entity = std::string(row.ColumnText(1));
          r.event.time = FromMs(row.ColumnInt(2));
          r.event.kind = std::string(row.ColumnText(3));
          r.event.code = row.ColumnInt(4);
          r.event.message = std::string(row.ColumnText(5));
          r.event.attributes = DecodeLabels(row.ColumnText(6));
          out.push_back(std::move(r));
        }));
        return out;
      });
}

Result<std::vector<ProfileMeta>> SqliteStorage::ListProfiles(const ProfileQuery& query) {
  return sqlite::InReadTransaction(
      *readers_, [&](Connection& db) -> Result<std::vector<ProfileMeta>> {
        WARPSCOPE_ASSIGN_OR_RETURN(
            Statement stmt,
            db.Prepare(std::string(kProfileColumns) +
                       " FROM profiles p JOIN hosts h ON h.id = p.host_id "
                       "WHERE p.start_ms < ?2 AND p.end_ms > ?1 AND (?3 = '' OR h.name = ?3) "
                       "AND (?4 = '' OR p.entity = ?4) AND (?5 = '' OR p.kind = ?5) "
                       "AND (?6 = 0 OR p.pid = ?6) "
                       "AND (?8 = '' OR instr(?8, ',' || p.pid || ',') = 0) "
                       "ORDER BY p.start_ms DESC, p.id DESC LIMIT ?7"));
        // The excluded pids as ",1,2,3,": a pid is excluded when ",<pid>," occurs in it.
        std::string excluded;
        for (int64_t pid : query.exclude_pids) {
          excluded += (excluded.empty() ? "," : "") + std::to_string(pid) + ",";
        }
        stmt.Bind(ToMs(query.start), ToMs(query.end), query.host, query.entity, query.kind,
                  query.pid, static_cast<int64_t>(std::min<size_t>(query.limit, INT64_MAX)),
                  excluded);
        std::vector<ProfileMeta> out;
        WARPSCOPE_RETURN_IF_ERROR(
            stmt.ForEachRow([&](const Statement& row) { out.push_back(ReadProfileMeta(row)); }));
        return out;
      });
}

Result<Profile> SqliteStorage::ReadProfile(int64_t id) {
  return sqlite::InReadTransaction(*readers_, [&](Connection& db) -> Result<Profile> {
    WARPSCOPE_ASSIGN_OR_RETURN(
        Statement stmt,
        db.Prepare(std::string(kProfileColumns) +
                   ", p.data FROM profiles p JOIN hosts h ON h.id = p.host_id WHERE p.id = ?1"));
    stmt.Bind(id);
    WARPSCOPE_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) {
      return Error(base::NotFound("profile {} does not exist (or has expired)", id));
    }
    Profile p;
    p.meta = ReadProfileMeta(stmt);
    p.data = std::string(stmt.ColumnBlob(10));
    return p;
  });
}

Result<StorageStats> SqliteStorage::Stats() {
  WARPSCOPE_RETURN_IF_ERROR(ApplyStaged());
  return sqlite::InReadTransaction(*readers_, [&](Connection& db) -> Result<StorageStats> {
    WARPSCOPE_ASSIGN_OR_RETURN(auto bytes, TableBytes(db));
    StorageStats stats;
    for (const char* table : kTables) {
      WARPSCOPE_ASSIGN_OR_RETURN(int64_t rows,
                                 db.QueryInt(fmt::format("SELECT COUNT(*) FROM {}", table), 0));
      stats.tables.push_back(TableStats{table, static_cast<uint64_t>(rows), bytes[table]});
      if (std::string_view(table) == "samples") {
        stats.raw_windows += static_cast<uint64_t>(rows);
      }
    }
    // Head chunks may repeat a rewritten window until Compact merges them: a close count.
    WARPSCOPE_ASSIGN_OR_RETURN(
        int64_t chunked,
        db.QueryInt("SELECT (SELECT COALESCE(SUM(count), 0) FROM sample_chunks) + (SELECT "
                    "COALESCE(SUM(count), 0) FROM head_chunks)",
                    0));
    stats.raw_windows += static_cast<uint64_t>(chunked);
    WARPSCOPE_ASSIGN_OR_RETURN(int64_t pages, db.QueryInt("PRAGMA page_count", 0));
    WARPSCOPE_ASSIGN_OR_RETURN(int64_t page_size, db.QueryInt("PRAGMA page_size", 0));
    std::error_code ec;
    uintmax_t wal = std::filesystem::file_size(path_ + "-wal", ec);
    stats.total_bytes = static_cast<uint64_t>(pages * page_size) + (ec ? 0 : wal);
    return stats;
  });
}

}  // namespace warpscope::server

// SPDX-License-Identifier: Apache-2.0
// ClickHouseStorage's maintenance: Compact (rollups, late windows, retention, the cardinality
// cap's idle series), Stats, and the training steps' reads.
#include <algorithm>
#include <map>
#include <set>

#include "server/storage/clickhouse/clickhouse_internal.h"
#include "server/storage/clickhouse/clickhouse_storage.h"

namespace warpscope::server {
namespace {

using base::Error;
using base::Result;
using base::Status;
using clickhouse::Quote;
using namespace clickhouse_internal;  // NOLINT(google-build-using-namespace)

// Retention moves a cutoff by at least this much (as SqliteStorage): fewer, larger deletes.
constexpr int64_t kRetentionStepMs = kHourMs;

std::string JoinInts(const std::vector<int64_t>& v) { return fmt::format("{}", fmt::join(v, ",")); }

}  // namespace

// Rolls [from, to) of the next finer table up into `target`'s buckets (only those listed in
// `buckets`, when given). Rebuilt buckets replace the old ones: a higher `ver` wins at merges
// and under FINAL. Returns the buckets written.
Result<uint64_t> ClickHouseStorage::RollUp(Resolution target, int64_t from, int64_t to,
                                           const std::vector<int64_t>* buckets) {
  const bool minute = target == Resolution::kMinute;
  const int64_t bucket_ms = minute ? kMinuteMs : kHourMs;
  const char* source = minute ? "samples" : "rollup_1m";
  const char* into = minute ? "rollup_1m" : "rollup_1h";
  std::string where = StartRange(source, from, to);
  if (buckets != nullptr) {
    if (buckets->empty()) return 0;
    where += fmt::format(" AND intDiv(start, {0}) * {0} IN ({1})", bucket_ms, JoinInts(*buckets));
  }
  const uint64_t ver = NextVersion();
  WARPSCOPE_RETURN_IF_ERROR(client_.Exec(fmt::format(
      "INSERT INTO {0} (metric, series, host, entity, labels, start, v_avg, v_min, v_max, v_last, "
      "v_count, ver) SELECT metric, series, any(host), any(entity), any(labels), intDiv(start, "
      "{1}) * {1} AS bucket, sum(v_avg * v_count) / sum(v_count), min(v_min), max(v_max), "
      "argMax(v_last, start), sum(v_count), {2} FROM {3} FINAL WHERE {4} GROUP BY metric, "
      "series, bucket",
      into, bucket_ms, ver, source, where)));
  // The rows this INSERT wrote carry its version: counted there, not by running its SELECT twice.
  WARPSCOPE_ASSIGN_OR_RETURN(
      auto count, client_.Select(fmt::format("SELECT count() FROM {} WHERE {} AND ver = {} FORMAT "
                                             "TSV",
                                             into, StartRange(into, from, to), ver)));
  return count.empty() || count[0].empty() ? 0 : ParseUint(count[0][0]);
}

Status ClickHouseStorage::RebuildDirty(Marks& marks, CompactResult& result) {
  WARPSCOPE_ASSIGN_OR_RETURN(
      auto rows, client_.Select(fmt::format("SELECT bucket, max(ver) FROM dirty WHERE ver > {} "
                                            "GROUP BY bucket ORDER BY bucket FORMAT TSV",
                                            static_cast<uint64_t>(marks.dirty_done))));
  if (rows.empty()) return base::OkStatus();
  std::vector<int64_t> minutes;
  std::set<int64_t> hours;
  uint64_t done = static_cast<uint64_t>(marks.dirty_done);
  for (const auto& row : rows) {
    if (row.size() < 2) continue;
    const int64_t bucket = ParseInt(row[0]);
    done = std::max(done, ParseUint(row[1]));
    // Below the raw cutoff there is nothing left to rebuild from; at or past the watermark the
    // minute is built new anyway.
    if (bucket >= marks.minute_watermark || bucket < marks.raw_cutoff) continue;
    minutes.push_back(bucket);
    if (FloorTo(bucket, kHourMs) < marks.hour_watermark) hours.insert(FloorTo(bucket, kHourMs));
  }
  // One statement per block of the source table, as for new minutes (Compact).
  auto rebuild = [&](Resolution target, const std::vector<int64_t>& buckets, int64_t bucket_ms,
                     int64_t block_ms, uint64_t& rows_out) -> Status {
    for (size_t first = 0; first < buckets.size();) {
      const int64_t block = FloorTo(buckets[first], block_ms);
      size_t end = first;
      while (end < buckets.size() && FloorTo(buckets[end], block_ms) == block) ++end;
      const std::vector<int64_t> these(buckets.begin() + first, buckets.begin() + end);
      WARPSCOPE_ASSIGN_OR_RETURN(uint64_t n,
                                 RollUp(target, these.front(), these.back() + bucket_ms, &these));
      rows_out += n;
      first = end;
    }
    return base::OkStatus();
  };
  WARPSCOPE_RETURN_IF_ERROR(
      rebuild(Resolution::kMinute, minutes, kMinuteMs, kSampleBlockMs, result.minute_rows));
  WARPSCOPE_RETURN_IF_ERROR(rebuild(Resolution::kHour, {hours.begin(), hours.end()}, kHourMs,
                                    kMinuteBlockMs, result.hour_rows));
  marks.dirty_done = static_cast<int64_t>(done);
  return SetMark("dirty_done", marks.dirty_done);
}

// Counts `table`'s rows in [old_cutoff, new_cutoff) of `time_column` (those before old_cutoff
// were counted when it was set) and removes the partitions that hold nothing newer than
// new_cutoff: whole days (months for `rollup_1h`), dropped at once, without mutations. Reads
// filter by the cutoff mark, set before, so rows in the partly expired partition stay invisible
// until it goes too. `time_scale` is the column's units per ms.
Result<uint64_t> ClickHouseStorage::ApplyRetention(std::string_view table,
                                                   std::string_view time_column, int64_t old_cutoff,
                                                   int64_t new_cutoff, int64_t time_scale) {
  WARPSCOPE_ASSIGN_OR_RETURN(
      auto rows, client_.Select(fmt::format("SELECT count() FROM {} WHERE {} >= {} AND {} < {} "
                                            "FORMAT TSV",
                                            table, time_column, old_cutoff * time_scale,
                                            time_column, new_cutoff * time_scale)));
  const uint64_t n = rows.empty() || rows[0].empty() ? 0 : ParseUint(rows[0][0]);
  const char* period = table == "rollup_1h" ? "toYYYYMM" : "toYYYYMMDD";
  // Profiles are partitioned by their start but expire by their end: a day later.
  const int64_t drop_before = table == "profiles" ? new_cutoff - 24 * kHourMs : new_cutoff;
  WARPSCOPE_ASSIGN_OR_RETURN(
      auto parts,
      client_.Select(fmt::format(
          "SELECT DISTINCT partition FROM system.parts WHERE database = {} AND table = {} AND "
          "active AND toUInt32OrZero(partition) < {}(toDateTime(intDiv({}, 1000))) FORMAT TSV",
          Quote(client_.endpoint().database), Quote(table), period, drop_before)));
  for (const auto& part : parts) {
    if (part.empty() || part[0].empty()) continue;
    const uint64_t id = ParseUint(part[0]);
    if (id == 0) continue;  // not a day or month partition
    WARPSCOPE_RETURN_IF_ERROR(
        client_.Exec(fmt::format("ALTER TABLE {} DROP PARTITION {}", table, id)));
  }
  return n;
}

Result<CompactResult> ClickHouseStorage::Compact(base::TimePoint now) {
  std::lock_guard compact_lock(compact_mu_);
  const StorageOptions& o = options_.storage;
  const int64_t now_ms = ToMs(now);
  CompactResult result;
  WARPSCOPE_ASSIGN_OR_RETURN(Marks marks, ReadMarks());
  WARPSCOPE_RETURN_IF_ERROR(RebuildDirty(marks, result));

  // New minutes, then the hours they complete.
  const int64_t minute_until = FloorTo(now_ms - DurationMs(o.rollup_delay), kMinuteMs);
  int64_t from = marks.minute_watermark;
  if (from == 0) {
    WARPSCOPE_ASSIGN_OR_RETURN(
        auto first, client_.Select("SELECT count(), min(start) FROM samples FORMAT TSV"));
    from = !first.empty() && first[0].size() >= 2 && ParseInt(first[0][0]) > 0
               ? FloorTo(ParseInt(first[0][1]), kMinuteMs)
               : minute_until;
  }
  // A block of samples at a time: each INSERT reads one block's rows, so that catching up after
  // an outage (or a replayed backlog) is many bounded statements, each well inside the request
  // timeout, and each moves the watermark.
  while (minute_until > from) {
    const int64_t to = std::min(minute_until, FloorTo(from, kSampleBlockMs) + kSampleBlockMs);
    // Windows written from here on into [from, to) mark their minute dirty.
    WARPSCOPE_RETURN_IF_ERROR(SetMark("minute_building_to", to));
    WARPSCOPE_ASSIGN_OR_RETURN(uint64_t n, RollUp(Resolution::kMinute, from, to, nullptr));
    result.minute_rows += n;
    WARPSCOPE_RETURN_IF_ERROR(SetMark("minute_watermark", to));
    marks.minute_watermark = to;
    from = to;
  }
  const int64_t hour_until = FloorTo(marks.minute_watermark, kHourMs);
  int64_t hour_from = marks.hour_watermark;
  if (hour_from == 0 && marks.minute_watermark != 0) {
    WARPSCOPE_ASSIGN_OR_RETURN(
        auto first, client_.Select("SELECT count(), min(start) FROM rollup_1m FORMAT TSV"));
    hour_from = !first.empty() && first[0].size() >= 2 && ParseInt(first[0][0]) > 0
                    ? FloorTo(ParseInt(first[0][1]), kHourMs)
                    : hour_until;
  }
  // An hour (a block of rollup_1m) at a time, as the minutes above.
  while (marks.minute_watermark != 0 && hour_until > hour_from) {
    const int64_t to = hour_from + kHourMs;
    WARPSCOPE_ASSIGN_OR_RETURN(uint64_t n, RollUp(Resolution::kHour, hour_from, to, nullptr));
    result.hour_rows += n;
    WARPSCOPE_RETURN_IF_ERROR(SetMark("hour_watermark", to));
    marks.hour_watermark = to;
    hour_from = to;
  }

  // Retention, per resolution (never past what the next coarser one holds), as in SqliteStorage.
  struct Cut {
    const char* mark;
    const char* table;
    const char* column;
    int64_t old_cutoff;
    int64_t target;
    int64_t scale;  // column units per ms
  };
  std::vector<Cut> cuts;
  if (marks.minute_watermark != 0) {
    cuts.push_back(
        {"raw_cutoff", "samples", "start", marks.raw_cutoff,
         std::min(FloorTo(now_ms - DurationMs(o.raw_retention), kMinuteMs), marks.minute_watermark),
         1});
  }
  if (marks.hour_watermark != 0) {
    cuts.push_back(
        {"minute_cutoff", "rollup_1m", "start", marks.minute_cutoff,
         std::min(FloorTo(now_ms - DurationMs(o.minute_retention), kHourMs), marks.hour_watermark),
         1});
  }
  cuts.push_back({"hour_cutoff", "rollup_1h", "start", marks.hour_cutoff,
                  FloorTo(now_ms - DurationMs(o.hour_retention), kHourMs), 1});
  cuts.push_back({"event_cutoff", "events", "time", marks.event_cutoff,
                  now_ms - DurationMs(o.event_retention), 1});
  cuts.push_back({"profile_cutoff", "profiles", "stop", marks.profile_cutoff,
                  now_ms - DurationMs(o.profile_retention), 1});
  cuts.push_back({"step_cutoff", "training_steps", "end_ns", marks.step_cutoff,
                  now_ms - DurationMs(o.step_retention), 1'000'000});
  bool advanced = false;
  for (const Cut& c : cuts) {
    if (c.target < c.old_cutoff + kRetentionStepMs) continue;
    WARPSCOPE_RETURN_IF_ERROR(SetMark(c.mark, c.target));
    WARPSCOPE_ASSIGN_OR_RETURN(uint64_t n,
                               ApplyRetention(c.table, c.column, c.old_cutoff, c.target, c.scale));
    result.deleted_rows += n;
    if (std::string_view(c.mark) == "raw_cutoff") {
      WARPSCOPE_ASSIGN_OR_RETURN(uint64_t b,
                                 ApplyRetention("batches", "start", c.old_cutoff, c.target, 1));
      (void)b;  // the dedup table is bookkeeping, not data
    }
    advanced = true;
  }
  if (advanced) {
    WARPSCOPE_ASSIGN_OR_RETURN(Marks now_marks, ReadMarks());
    if (now_marks.raw_cutoff != 0 && now_marks.minute_cutoff != 0 && now_marks.hour_cutoff != 0) {
      // Series and entities with no data left at any resolution are forgotten.
      const int64_t before =
          std::min({now_marks.raw_cutoff, now_marks.minute_cutoff, now_marks.hour_cutoff}) -
          kLastSeenSlackMs;
      if (before > marks.forget_before) {
        WARPSCOPE_RETURN_IF_ERROR(SetMark("forget_before", before));
        WARPSCOPE_ASSIGN_OR_RETURN(
            auto gone, client_.Select(fmt::format(
                           "SELECT count() FROM (SELECT series FROM series GROUP BY series "
                           "HAVING max(last_seen) >= {} AND max(last_seen) < {}) FORMAT TSV",
                           marks.forget_before, before)));
        result.deleted_rows += gone.empty() || gone[0].empty() ? 0 : ParseUint(gone[0][0]);
        // Reads filter by forget_before at once; the rows go by mutations (small tables).
        WARPSCOPE_RETURN_IF_ERROR(client_.Exec(fmt::format(
            "ALTER TABLE series DELETE WHERE series IN (SELECT series FROM series GROUP BY "
            "series HAVING max(last_seen) < {})",
            before)));
        for (const char* table : {"entities", "entity_span"}) {
          WARPSCOPE_RETURN_IF_ERROR(client_.Exec(fmt::format(
              "ALTER TABLE {} DELETE WHERE (host, id) IN (SELECT host, id FROM entity_span "
              "GROUP BY host, id HAVING maxIf(t, edge = 1) < {})",
              table, before)));
        }
      }
    }
  }
  // Series idle for the active window stop counting towards the cap.
  std::lock_guard lock(write_mu_);
  const int64_t active_since = now_ms - DurationMs(o.series_active_window);
  for (auto& [host, hs] : host_series_) {
    hs.active = 0;
    for (auto& [id, seen] : hs.last_seen) {
      if (seen >= 0 && seen < active_since) seen = -seen;  // idle: negative until written again
      if (seen >= 0) ++hs.active;
    }
  }
  return result;
}

Result<StorageStats> ClickHouseStorage::Stats() {
  WARPSCOPE_ASSIGN_OR_RETURN(Marks marks, ReadMarks());
  WARPSCOPE_ASSIGN_OR_RETURN(
      auto parts, client_.Select(fmt::format("SELECT table, sum(bytes_on_disk) FROM system.parts "
                                             "WHERE database = {} AND active GROUP BY table "
                                             "FORMAT TSV",
                                             Quote(client_.endpoint().database))));
  std::map<std::string, uint64_t> bytes;
  for (const auto& row : parts) {
    if (row.size() >= 2) bytes[row[0]] = ParseUint(row[1]);
  }
  // Live rows: those a read can see (retention filters by the cutoffs before the background
  // deletes finish; FINAL folds the copies of retried writes).
  const std::pair<const char*, std::string> tables[] = {
      {"samples", fmt::format("samples FINAL WHERE start >= {}", marks.raw_cutoff)},
      {"rollup_1m", fmt::format("rollup_1m FINAL WHERE start >= {}", marks.minute_cutoff)},
      {"rollup_1h", fmt::format("rollup_1h FINAL WHERE start >= {}", marks.hour_cutoff)},
      {"series", fmt::format("(SELECT series FROM series GROUP BY series HAVING max(last_seen) "
                             ">= {})",
                             marks.forget_before)},
      {"entities", fmt::format("(SELECT host, id FROM entity_span GROUP BY host, id HAVING "
                               "maxIf(t, edge = 1) >= {})",
                               marks.forget_before)},
      {"metrics", "metrics FINAL"},
      {"events", fmt::format("events FINAL WHERE time >= {}", marks.event_cutoff)},
      {"profiles", fmt::format("profiles WHERE stop >= {}", marks.profile_cutoff)},
      {"training_steps",
       fmt::format("training_steps FINAL WHERE end_ns >= {}", marks.step_cutoff * 1'000'000)},
      {"batches", "batches FINAL"},
  };
  StorageStats stats;
  for (const auto& [table, from] : tables) {
    WARPSCOPE_ASSIGN_OR_RETURN(
        auto rows, client_.Select(fmt::format("SELECT count() FROM {} FORMAT TSV", from)));
    TableStats t{table, rows.empty() || rows[0].empty() ? 0 : ParseUint(rows[0][0]), bytes[table]};
    if (t.name == "samples") stats.raw_windows = t.rows;
    stats.tables.push_back(std::move(t));
  }
  for (const auto& [table, b] : bytes) stats.total_bytes += b;
  return stats;
}

}  // namespace warpscope::server

// SPDX-License-Identifier: Apache-2.0
// Sample chunks in SqliteStorage: Compact moves closed spans into sample_chunks and their minute
// rollups into rollup_1m_chunks, reads see chunks and head rows as one sequence, late windows,
// retention and the upgrades from schemas 3 and 5.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "base/testing/temp_dir.h"
#include "server/storage/sqlite_storage.h"

namespace warpscope::server {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

// Aligned to the 2 h chunk spans.
constexpr int64_t kT0s = 1'699'999'200;
const base::TimePoint kT0 = base::FromUnixNanos(kT0s * 1'000'000'000);
constexpr int kSeries = 3;

double Value(int series, int64_t w) { return 50 + 20 * std::sin(0.01 * w + series) + series; }

// Window `w` (10 s each from kT0) of kSeries series, distinct avg/min/max/last.
IngestBatch Window(uint64_t sequence, int64_t w, double offset = 0) {
  IngestBatch b;
  b.agent_id = "agent";
  b.host = "h";
  b.sequence = sequence;
  b.start = kT0 + seconds(10) * w;
  b.end = b.start + seconds(10);
  b.metrics.push_back(MetricInfo{.key = "m"});
  for (int s = 0; s < kSeries; ++s) {
    double v = Value(s, w) + offset;
    b.series.push_back(IngestSeries{.metric = "m",
                                    .entity = "h",
                                    .labels = {{"s", std::to_string(s)}},
                                    .avg = v,
                                    .min = v - 1,
                                    .max = v + 2,
                                    .last = v + 0.5,
                                    .count = 10});
  }
  return b;
}

// A read point, comparable.
struct P {
  int64_t time_ns = 0;
  double value = 0;
  uint64_t samples = 0;
  bool operator==(const P&) const = default;
};

class SqliteChunksTest : public ::testing::Test {
 protected:
  std::unique_ptr<SqliteStorage> Open(StorageOptions storage = {}) {
    SqliteStorageOptions o;
    o.data_dir = tmp_.path();
    o.storage = storage;
    o.recent_max_rows = 0;  // every read from the database
    auto s = SqliteStorage::Open(o);
    EXPECT_TRUE(s.has_value()) << s.error().ToString();
    return s ? std::move(*s) : nullptr;
  }
  // Writes windows [from, to), compacting every simulated 10 minutes as the server would.
  void Write(SqliteStorage& store, int64_t from, int64_t to) {
    for (int64_t w = from; w < to; ++w) {
      ASSERT_TRUE(store.WriteBatch(Window(static_cast<uint64_t>(w + 1), w)).has_value());
      if (w % 60 == 59) {
        ASSERT_TRUE(store.Compact(kT0 + seconds(10) * (w + 1)).has_value());
      }
    }
  }
  // Every point of series `s` at `step` in [from, to) windows and the resolutions that answered.
  std::pair<std::vector<P>, std::vector<Resolution>> ReadStep(Storage& store, Aggregation a,
                                                              int64_t from, int64_t to,
                                                              base::Duration step, int s = 0) {
    RangeQuery q;
    q.metric = "m";
    q.match.labels = {{"s", std::to_string(s)}};
    q.start = kT0 + seconds(10) * from;
    q.end = kT0 + seconds(10) * to;
    q.step = step;
    q.aggregation = a;
    auto r = store.QueryRange(q);
    EXPECT_TRUE(r.has_value()) << r.error().ToString();
    if (!r || r->series.size() != 1) {
      ADD_FAILURE() << "series: " << (r ? r->series.size() : 0);
      return {};
    }
    std::vector<P> out;
    for (const Point& p : r->series[0].points) {
      out.push_back(P{base::ToUnixNanos(p.time), p.value, p.samples});
    }
    return {out, r->resolutions};
  }
  // Every point of series `s` at 10 s steps in [from, to) windows, for `aggregation`.
  std::vector<P> Read(Storage& store, Aggregation aggregation, int64_t from, int64_t to,
                      int s = 0) {
    return ReadStep(store, aggregation, from, to, seconds(10), s).first;
  }
  int64_t Count(const std::string& from_where) {
    return Scalar("SELECT COUNT(*) FROM " + from_where);
  }
  // Raw windows in the head: head chunks' windows (and samples rows, the head before schema 5)
  // that start before `before_ms` (all without).
  int64_t Head(int64_t before_ms = INT64_MAX) {
    const std::string before = std::to_string(before_ms);
    return Scalar("SELECT (SELECT COALESCE(SUM(count), 0) FROM head_chunks WHERE start_ms < " +
                  before + ") + (SELECT COUNT(*) FROM samples WHERE start_ms < " + before + ")");
  }
  int64_t Scalar(const std::string& sql) {
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open((tmp_.path() + "/warpscope.db").c_str(), &db), SQLITE_OK);
    sqlite3_stmt* stmt = nullptr;
    int64_t n = -1;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW) {
      n = sqlite3_column_int64(stmt, 0);
    }
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    return n;
  }
  void Sql(const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((tmp_.path() + "/warpscope.db").c_str(), &db), SQLITE_OK);
    char* error = nullptr;
    EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK)
        << (error != nullptr ? error : "");
    sqlite3_free(error);
    sqlite3_close(db);
  }
  static int64_t Ms(int64_t w) { return (kT0s + 10 * w) * 1000; }
  // Runs `sql` (its ?1 the series' labels) in one transaction for rows [0, rows) of every
  // series, `bind(stmt, s, i)` binding the rest for row i of series s.
  void InsertPerSeries(const char* sql, int64_t rows,
                       const std::function<void(sqlite3_stmt*, int, int64_t)>& bind) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((tmp_.path() + "/warpscope.db").c_str(), &db), SQLITE_OK);
    sqlite3_stmt* stmt = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr), SQLITE_OK);
    sqlite3_exec(db, "BEGIN", nullptr, nullptr, nullptr);
    for (int s = 0; s < kSeries; ++s) {
      const std::string labels = "s=" + std::to_string(s);
      for (int64_t i = 0; i < rows; ++i) {
        sqlite3_bind_text(stmt, 1, labels.c_str(), -1, SQLITE_TRANSIENT);
        bind(stmt, s, i);
        EXPECT_EQ(sqlite3_step(stmt), SQLITE_DONE);
        sqlite3_reset(stmt);
      }
    }
    sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr);
    sqlite3_finalize(stmt);
    sqlite3_close(db);
  }
  // The samples rows of windows [0, windows) of every series, as Window() writes them.
  void InsertSamplesRows(int64_t windows) {
    InsertPerSeries(
        "INSERT INTO samples(series_id, start_ms, duration_ms, avg, min, max, last, count) "
        "SELECT id, ?2, 10000, ?3, ?3 - 1, ?3 + 2, ?3 + 0.5, 10 FROM series WHERE labels = ?1",
        windows, [](sqlite3_stmt* stmt, int s, int64_t w) {
          sqlite3_bind_int64(stmt, 2, Ms(w));
          sqlite3_bind_double(stmt, 3, Value(s, w));
        });
  }
  // The rollup_1m rows of minutes [0, minutes) of every series, as the minute rollup computes
  // them from Window()'s windows (six per minute, count 10 each).
  void InsertMinuteRows(int64_t minutes) {
    InsertPerSeries(
        "INSERT INTO rollup_1m(series_id, bucket_ms, avg, min, max, last, count) SELECT id, ?2, "
        "?3, ?4, ?5, ?6, 60 FROM series WHERE labels = ?1",
        minutes, [](sqlite3_stmt* stmt, int s, int64_t m) {
          double sum = 0, min = INFINITY, max = -INFINITY, last = 0;
          for (int64_t w = 6 * m; w < 6 * m + 6; ++w) {
            const double v = Value(s, w);
            sum += v * 10.0;
            min = std::min(min, v - 1);
            max = std::max(max, v + 2);
            last = v + 0.5;
          }
          sqlite3_bind_int64(stmt, 2, Ms(6 * m));
          sqlite3_bind_double(stmt, 3, sum / 60.0);
          sqlite3_bind_double(stmt, 4, min);
          sqlite3_bind_double(stmt, 5, max);
          sqlite3_bind_double(stmt, 6, last);
        });
  }

  base::TempDir tmp_;
};

constexpr Aggregation kAll[] = {Aggregation::kAvg, Aggregation::kMin, Aggregation::kMax,
                                Aggregation::kLast, Aggregation::kRate};

TEST_F(SqliteChunksTest, CompactMovesClosedSpansIntoChunksAndReadsAreUnchanged) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  constexpr int64_t kWindows = 3 * 360;  // 3 h
  Write(*store, 0, kWindows);
  std::vector<std::vector<P>> before;
  for (Aggregation a : kAll) {
    before.push_back(Read(*store, a, 0, kWindows));
  }
  ASSERT_EQ(before[0].size(), static_cast<size_t>(kWindows));

  auto c = store->Compact(kT0 + hours(3) + minutes(5));

  ASSERT_TRUE(c.has_value()) << c.error().ToString();
  // The first 2 h span is chunked; the third hour is still head rows.
  EXPECT_EQ(Head(Ms(720)), 0);
  EXPECT_EQ(Head(), 360 * kSeries);
  EXPECT_GT(Count("sample_chunks"), 0);
  EXPECT_EQ(Count("sample_chunks WHERE start_ms < " + std::to_string(Ms(0)) + " OR end_ms > " +
                  std::to_string(Ms(720))),
            0);
  for (size_t i = 0; i < std::size(kAll); ++i) {
    EXPECT_EQ(Read(*store, kAll[i], 0, kWindows), before[i]) << "aggregation " << i;
  }
  // A range that starts and ends inside chunks, and one across the chunk/head boundary.
  auto all = Read(*store, Aggregation::kMax, 0, kWindows, 2);
  auto part = Read(*store, Aggregation::kMax, 100, 700, 2);
  ASSERT_EQ(part.size(), 600u);
  EXPECT_EQ(part.front(), all[100]);
  EXPECT_EQ(part.back(), all[699]);
  EXPECT_EQ(Read(*store, Aggregation::kMax, 715, 725, 2).size(), 10u);
  auto stats = store->Stats();
  ASSERT_TRUE(stats.has_value());
  EXPECT_EQ(stats->raw_windows, static_cast<uint64_t>(kWindows * kSeries));
  // Reopened, the chunks are still read.
  store.reset();
  store = Open();
  EXPECT_EQ(Read(*store, Aggregation::kLast, 0, kWindows), before[3]);
}

TEST_F(SqliteChunksTest, LateWindowsOfAChunkedSpanAreReadAtOnceAndMergedAtTheNextCompact) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  Write(*store, 0, 3 * 360);
  ASSERT_TRUE(store->Compact(kT0 + hours(3) + minutes(5)).has_value());
  ASSERT_EQ(Head(Ms(720)), 0);

  // A second sender rewrites window 100 (inside the chunked span) with values 1000 higher.
  IngestBatch late = Window(1, 100, 1000);
  late.agent_id = "backfill";
  ASSERT_TRUE(store->WriteBatch(late).has_value());

  auto points = Read(*store, Aggregation::kMax, 99, 102);
  ASSERT_EQ(points.size(), 3u);
  EXPECT_EQ(points[1].value, Value(0, 100) + 1002);
  EXPECT_EQ(points[0].value, Value(0, 99) + 2);
  // The next Compact merges the late row into its chunk and rebuilds the minute rollup from
  // the chunk.
  ASSERT_TRUE(store->Compact(kT0 + hours(3) + minutes(10)).has_value());
  EXPECT_EQ(Head(Ms(720)), 0);
  points = Read(*store, Aggregation::kMax, 99, 102);
  ASSERT_EQ(points.size(), 3u);
  EXPECT_EQ(points[1].value, Value(0, 100) + 1002);
  RangeQuery q;
  q.metric = "m";
  q.match.labels = {{"s", "0"}};
  q.start = kT0 + seconds(960);
  q.end = kT0 + seconds(1020);
  q.step = seconds(60);
  q.aggregation = Aggregation::kMax;
  auto minute = store->QueryRange(q);
  ASSERT_TRUE(minute.has_value());
  ASSERT_EQ(minute->series.size(), 1u);
  EXPECT_EQ(minute->series[0].points[0].value, Value(0, 100) + 1002);
  // The rebuilt minute was written as a rollup_1m row under the span's minute chunks and merged
  // into them by the same Compact; the hour rebuilt from them has the late value too.
  EXPECT_EQ(Count("rollup_1m WHERE bucket_ms < " + std::to_string(Ms(720))), 0);
  EXPECT_EQ(minute->resolutions, std::vector<Resolution>{Resolution::kMinute});
  auto [hour, used] = ReadStep(*store, Aggregation::kMax, 0, 360, hours(1));
  ASSERT_EQ(hour.size(), 1u);
  EXPECT_EQ(hour[0].value, Value(0, 100) + 1002);
  EXPECT_EQ(used, std::vector<Resolution>{Resolution::kHour});

  // Chunking the next span leaves it as it is.
  Write(*store, 3 * 360, 5 * 360);
  ASSERT_TRUE(store->Compact(kT0 + hours(5) + minutes(5)).has_value());
  EXPECT_EQ(Head(Ms(1440)), 0);
  points = Read(*store, Aggregation::kMax, 0, 5 * 360);
  ASSERT_EQ(points.size(), 5u * 360);
  EXPECT_EQ(points[100].value, Value(0, 100) + 1002);
  EXPECT_EQ(points[101].value, Value(0, 101) + 2);
}

TEST_F(SqliteChunksTest, RetentionDropsWholeChunksAndKeepsOneTheCutoffCrosses) {
  StorageOptions o;
  o.raw_retention = hours(3);
  auto store = Open(o);
  ASSERT_NE(store, nullptr);
  Write(*store, 0, 5 * 360);
  // Retention moves the raw cutoff in steps of an hour: 0:10 at 3:10, 1:10 at 4:10, and here
  // 2:15.
  ASSERT_TRUE(store->Compact(kT0 + hours(5) + minutes(15)).has_value());

  const int64_t cutoff_w = 2 * 360 + 90;
  // The first span's chunks are gone; a chunk of the second that the cutoff crosses is kept.
  EXPECT_EQ(Count("sample_chunks WHERE start_ms < " + std::to_string(Ms(720))), 0);
  EXPECT_GT(Count("sample_chunks WHERE start_ms < " + std::to_string(Ms(cutoff_w)) +
                  " AND end_ms > " + std::to_string(Ms(cutoff_w))),
            0);
  // Raw reads start at the cutoff.
  auto points = Read(*store, Aggregation::kLast, cutoff_w, 5 * 360);
  ASSERT_EQ(points.size(), static_cast<size_t>(5 * 360 - cutoff_w));
  EXPECT_EQ(points.front().value, Value(0, cutoff_w) + 0.5);
}

TEST_F(SqliteChunksTest, MinuteRollupsOfAClosedSpanMoveIntoChunksAndReadTheSame) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  Write(*store, 0, 720);  // the last Compact at 2:00 rolls minutes up to 1:58
  std::vector<std::vector<P>> before;
  for (Aggregation a : kAll) {
    auto [points, used] = ReadStep(*store, a, 0, 660, seconds(60));
    EXPECT_EQ(used, std::vector<Resolution>{Resolution::kMinute});
    before.push_back(points);
  }
  ASSERT_EQ(before[0].size(), 110u);
  const auto hour_before = ReadStep(*store, Aggregation::kAvg, 0, 360, hours(1));
  // New minutes are written as a chunk per series and 10-minute slice, no rows.
  EXPECT_EQ(Count("rollup_1m"), 0);
  EXPECT_EQ(Count("rollup_1m_chunks"), 12 * kSeries);
  EXPECT_EQ(Scalar("SELECT SUM(count) FROM rollup_1m_chunks"), 118 * kSeries);

  Write(*store, 720, 800);  // at 2:10 the minutes pass 2:00: the first span closes

  // Its slices' chunks are merged into chunks of about kChunkTargetBytes.
  const std::string in_span = " WHERE start_ms < " + std::to_string(Ms(720));
  EXPECT_LE(Count("rollup_1m_chunks" + in_span), 4 * kSeries);
  EXPECT_EQ(Scalar("SELECT SUM(count) FROM rollup_1m_chunks" + in_span), 120 * kSeries);
  EXPECT_EQ(Count("rollup_1m_chunks" + in_span + " AND end_ms > " + std::to_string(Ms(720))), 0);
  EXPECT_EQ(Scalar("SELECT SUM(count) FROM rollup_1m_chunks"), 128 * kSeries);  // to 2:08
  EXPECT_EQ(Count("rollup_1m"), 0);
  auto check = [&] {
    for (size_t i = 0; i < std::size(kAll); ++i) {
      auto [points, used] = ReadStep(*store, kAll[i], 0, 660, seconds(60));
      EXPECT_EQ(points, before[i]) << "aggregation " << i;
      EXPECT_EQ(used, std::vector<Resolution>{Resolution::kMinute});
    }
    EXPECT_EQ(ReadStep(*store, Aggregation::kAvg, 0, 360, hours(1)), hour_before);
    // Across the chunks and the rows after them, and a rate whose first point needs the
    // bucket before the range.
    auto [across, used] = ReadStep(*store, Aggregation::kLast, 600, 768, seconds(60));
    ASSERT_EQ(across.size(), 28u);
    EXPECT_EQ(across.front().value, Value(0, 605) + 0.5);
    EXPECT_EQ(across.back().value, Value(0, 767) + 0.5);
    EXPECT_EQ(used, std::vector<Resolution>{Resolution::kMinute});
    EXPECT_EQ(ReadStep(*store, Aggregation::kRate, 720, 768, seconds(60)).first.size(), 8u);
  };
  check();
  // Reopened, the chunks are still read.
  store.reset();
  store = Open();
  ASSERT_NE(store, nullptr);
  check();
}

TEST_F(SqliteChunksTest, MinuteRetentionDropsWholeRollupChunks) {
  StorageOptions o;
  o.raw_retention = hours(1);
  o.minute_retention = hours(3);
  auto store = Open(o);
  ASSERT_NE(store, nullptr);
  Write(*store, 0, 5 * 360);
  ASSERT_TRUE(store->Compact(kT0 + hours(5) + minutes(15)).has_value());

  // The 1m cutoff is at 2:00: the first span's minute chunks are gone, the second's are kept.
  EXPECT_EQ(Count("rollup_1m_chunks WHERE start_ms < " + std::to_string(Ms(720))), 0);
  EXPECT_GE(Count("rollup_1m_chunks WHERE start_ms >= " + std::to_string(Ms(720))), kSeries);
  auto [points, used] = ReadStep(*store, Aggregation::kMax, 0, 1440, seconds(60));
  // Before 2:00 only the hour rollups are left (a point per hour); from 2:00 the minutes.
  ASSERT_EQ(points.size(), 2u + 120u);
  EXPECT_EQ(points[1].time_ns, base::ToUnixNanos(kT0 + hours(1)));
  EXPECT_EQ(points[2].time_ns, base::ToUnixNanos(kT0 + hours(2)));
  double want = Value(0, 720) + 2;
  for (int64_t w = 721; w < 726; ++w) {
    want = std::max(want, Value(0, w) + 2);
  }
  EXPECT_EQ(points[2].value, want);
  EXPECT_EQ(used, (std::vector<Resolution>{Resolution::kMinute, Resolution::kHour}));
}

TEST_F(SqliteChunksTest, Version5DatabaseIsUpgradedAndItsMinuteRowsMoveWithTheirSpan) {
  std::vector<std::vector<P>> before;
  {
    auto store = Open();
    ASSERT_NE(store, nullptr);
    Write(*store, 0, 720);  // minutes rolled up to 1:58
    for (Aggregation a : kAll) {
      before.push_back(ReadStep(*store, a, 0, 660, seconds(60)).first);
    }
  }
  ASSERT_EQ(before[0].size(), 110u);
  // As a schema 5 database holds them: every minute a rollup_1m row, no minute chunks.
  Sql("DROP TABLE rollup_1m_chunks; UPDATE meta SET value = 5 WHERE key = 'schema_version';");
  InsertMinuteRows(118);

  auto store = Open();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(Count("meta WHERE key = 'schema_version' AND value = " +
                  std::to_string(SqliteStorage::kSchemaVersion)),
            1);
  auto check = [&] {
    for (size_t i = 0; i < std::size(kAll); ++i) {
      EXPECT_EQ(ReadStep(*store, kAll[i], 0, 660, seconds(60)).first, before[i]) << i;
    }
  };
  check();
  Write(*store, 720, 800);  // the span closes: its rows become its chunks
  EXPECT_EQ(Count("rollup_1m"), 0);
  EXPECT_EQ(
      Scalar("SELECT SUM(count) FROM rollup_1m_chunks WHERE start_ms < " + std::to_string(Ms(720))),
      120 * kSeries);
  check();
}

TEST_F(SqliteChunksTest, Version3DatabaseIsUpgradedAndItsSamplesRowsReadAndChunked) {
  constexpr int64_t kWindows = 3 * 360;
  std::vector<P> before;
  {
    auto store = Open();
    ASSERT_NE(store, nullptr);
    for (int64_t w = 0; w < kWindows; ++w) {
      ASSERT_TRUE(store->WriteBatch(Window(static_cast<uint64_t>(w + 1), w)).has_value());
    }
    before = Read(*store, Aggregation::kAvg, 0, kWindows);
  }
  ASSERT_EQ(before.size(), static_cast<size_t>(kWindows));
  // As a schema 3 database holds them: every window a samples row, no chunk tables.
  InsertSamplesRows(kWindows);
  Sql("DROP TABLE sample_chunks; DROP TABLE head_chunks; DROP TABLE rollup_1m_chunks; UPDATE "
      "meta SET value = 3 WHERE key = 'schema_version';");

  auto store = Open();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(Count("meta WHERE key = 'schema_version' AND value = " +
                  std::to_string(SqliteStorage::kSchemaVersion)),
            1);
  EXPECT_EQ(Read(*store, Aggregation::kAvg, 0, kWindows), before);
  ASSERT_TRUE(store->Compact(kT0 + hours(3) + minutes(5)).has_value());
  EXPECT_GT(Count("sample_chunks"), 0);
  EXPECT_EQ(Count("samples"), 360 * kSeries);  // the open span's rows stay until it closes
  EXPECT_EQ(Read(*store, Aggregation::kAvg, 0, kWindows), before);

  // A window written again over a samples row: the head chunk wins, in reads and in chunks.
  IngestBatch again = Window(1, 1000, 1000);
  again.agent_id = "backfill";
  ASSERT_TRUE(store->WriteBatch(again).has_value());
  EXPECT_EQ(Read(*store, Aggregation::kAvg, 1000, 1001)[0].value, Value(0, 1000) + 1000);
  ASSERT_TRUE(store->Compact(kT0 + hours(4) + minutes(5)).has_value());
  EXPECT_EQ(Count("samples"), 0);
  EXPECT_EQ(Count("head_chunks"), 0);
  EXPECT_EQ(Read(*store, Aggregation::kAvg, 1000, 1001)[0].value, Value(0, 1000) + 1000);
  EXPECT_EQ(Read(*store, Aggregation::kAvg, 999, 1000), std::vector<P>{before[999]});
}

// A full stage is moved by the storage's thread: the writes that fill it return without
// moving, and the head then holds every window, read back unchanged.
TEST_F(SqliteChunksTest, AFullStageIsMovedByTheStoragesOwnThread) {
  SqliteStorageOptions o;
  o.data_dir = tmp_.path();
  o.recent_max_rows = 0;      // every read from the database
  o.staged_samples_max = 12;  // four windows of kSeries series
  o.staged_move_chunk = 5;    // the lock taken and released several times per move
  auto opened = SqliteStorage::Open(o);
  ASSERT_TRUE(opened.has_value()) << opened.error().ToString();
  SqliteStorage& store = **opened;
  for (int64_t w = 0; w < 40; ++w) {
    ASSERT_TRUE(store.WriteBatch(Window(static_cast<uint64_t>(w + 1), w)).has_value());
  }
  ASSERT_TRUE(store.WaitForMoves(std::chrono::seconds(30)));
  EXPECT_GE(Head(), 40 * kSeries - 11) << "at most a stage's worth left staged";
  EXPECT_LT(Count("staged_samples"), 40);
  std::vector<P> want;
  for (int64_t w = 0; w < 40; ++w) {
    want.push_back(P{base::ToUnixNanos(kT0 + seconds(10) * w), Value(1, w), 10});
  }
  EXPECT_EQ(Read(store, Aggregation::kAvg, 0, 40, 1), want);
}

TEST_F(SqliteChunksTest, AWindowWrittenAgainInALaterMoveReplacesTheEarlierOne) {
  SqliteStorageOptions o;
  o.data_dir = tmp_.path();
  o.recent_max_rows = 0;     // every read from the database
  o.staged_samples_max = 1;  // every batch moved into the head at once: one move each
  o.move_in_background = false;
  auto opened = SqliteStorage::Open(o);
  ASSERT_TRUE(opened.has_value()) << opened.error().ToString();
  SqliteStorage& store = **opened;
  for (int64_t w = 0; w < 10; ++w) {
    ASSERT_TRUE(store.WriteBatch(Window(static_cast<uint64_t>(w + 1), w)).has_value());
  }
  for (double offset : {100.0, 200.0}) {
    IngestBatch again = Window(1, 5, offset);
    again.agent_id = "backfill-" + std::to_string(static_cast<int>(offset));
    ASSERT_TRUE(store.WriteBatch(again).has_value());
  }
  EXPECT_EQ(Count("head_chunks WHERE start_ms = " + std::to_string(Ms(5))), 3 * kSeries);
  auto expect_values = [&] {
    std::vector<P> points = Read(store, Aggregation::kAvg, 0, 10);
    ASSERT_EQ(points.size(), 10u);
    for (int64_t w = 0; w < 10; ++w) {
      EXPECT_DOUBLE_EQ(points[w].value, Value(0, w) + (w == 5 ? 200 : 0)) << w;
    }
  };
  expect_values();
  // The span closed: its head chunks become one chunk per series, the latest write kept.
  ASSERT_TRUE(store.Compact(kT0 + hours(3)).has_value());
  EXPECT_EQ(Count("head_chunks"), 0);
  EXPECT_EQ(Count("sample_chunks"), kSeries);
  expect_values();
  auto stats = store.Stats();
  ASSERT_TRUE(stats.has_value());
  EXPECT_EQ(stats->raw_windows, 10u * kSeries);
}

// A fleet of many series moves about one window per series per stage: Compact merges each
// series' newest run of small head chunks, and a window written again still reads as its latest
// write, before and after each merge.
TEST_F(SqliteChunksTest, SmallHeadChunksAreMergedAndTheLatestWriteStillWins) {
  SqliteStorageOptions o;
  o.data_dir = tmp_.path();
  o.recent_max_rows = 0;     // every read from the database
  o.staged_samples_max = 1;  // every batch moved into the head at once: a chunk per window
  o.move_in_background = false;
  auto opened = SqliteStorage::Open(o);
  ASSERT_TRUE(opened.has_value()) << opened.error().ToString();
  SqliteStorage& store = **opened;
  for (int64_t w = 0; w < 60; ++w) {
    ASSERT_TRUE(store.WriteBatch(Window(static_cast<uint64_t>(w + 1), w)).has_value());
  }
  auto write_again = [&](int64_t w, double offset) {
    IngestBatch again = Window(1, w, offset);
    again.agent_id = "backfill-" + std::to_string(w);
    ASSERT_TRUE(store.WriteBatch(again).has_value());
  };
  write_again(5, 100);
  EXPECT_EQ(Count("head_chunks"), 61 * kSeries);
  std::map<int64_t, double> offsets = {{5, 100}};
  auto expect_values = [&] {
    for (int s = 0; s < kSeries; ++s) {
      std::vector<P> points = Read(store, Aggregation::kAvg, 0, 60, s);
      ASSERT_EQ(points.size(), 60u);
      for (int64_t w = 0; w < 60; ++w) {
        EXPECT_DOUBLE_EQ(points[w].value, Value(s, w) + (offsets.count(w) ? offsets[w] : 0)) << w;
      }
    }
  };
  expect_values();

  auto c = store.Compact(kT0 + minutes(12));
  ASSERT_TRUE(c.has_value()) << c.error().ToString();
  EXPECT_EQ(c->merged_head_chunks, 61u * kSeries);
  EXPECT_LE(Count("head_chunks"), 2 * kSeries);  // ≈ 25 bytes a window, cut at 1,000
  EXPECT_EQ(Head(), 60 * kSeries);               // the repeated window is one now
  expect_values();

  // Later writes over merged windows win, and still do once merged in turn (over the large
  // chunks, which are not merged again: their windows 7 and 8 stay in the head until the span
  // closes, read under the newer ones).
  write_again(7, 200);
  write_again(8, 300);
  offsets[7] = 200;
  offsets[8] = 300;
  expect_values();
  c = store.Compact(kT0 + minutes(13));
  ASSERT_TRUE(c.has_value()) << c.error().ToString();
  EXPECT_GE(c->merged_head_chunks, 2u * kSeries);
  expect_values();
  EXPECT_EQ(Head(), 62 * kSeries);
  // The span closes: one run of chunks per series, each window once.
  ASSERT_TRUE(store.Compact(kT0 + hours(3)).has_value());
  EXPECT_EQ(Count("head_chunks"), 0);
  EXPECT_EQ(Scalar("SELECT SUM(count) FROM sample_chunks"), 60 * kSeries);
  expect_values();
}

// A damaged chunk fails the read that needs it, naming its table and row: raw windows at a
// 10 s step, minute rollups at 60 s (which then read no raw chunk).
TEST_F(SqliteChunksTest, DamagedChunkIsAnErrorNamingTheRow) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  Write(*store, 0, 3 * 360);
  ASSERT_TRUE(store->Compact(kT0 + hours(3) + minutes(5)).has_value());
  auto read = [&](base::Duration step) {
    RangeQuery q;
    q.metric = "m";
    q.start = kT0;
    q.end = kT0 + hours(1);
    q.step = step;
    return store->QueryRange(q);
  };
  for (const auto& [table, step] :
       {std::pair{"sample_chunks", seconds(10)}, std::pair{"rollup_1m_chunks", seconds(60)}}) {
    ASSERT_TRUE(read(seconds(60)).has_value()) << table;
    Sql(std::string("UPDATE ") + table + " SET data = x'0105ff';");
    auto r = read(step);
    ASSERT_FALSE(r.has_value()) << table;
    EXPECT_NE(r.error().message().find(std::string(table) + " row"), std::string::npos)
        << r.error().ToString();
  }
}

}  // namespace
}  // namespace warpscope::server

// SPDX-License-Identifier: Apache-2.0
#include "server/storage/recent_samples.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "base/testing/temp_dir.h"
#include "server/storage/sqlite_storage.h"

namespace warpscope::server {
namespace {

Row At(int64_t start, double v) { return Row{start, v, v, v, v, 1}; }

std::vector<int64_t> Starts(const RecentSamples& recent, int64_t series, int64_t from,
                            int64_t to) {
  std::vector<int64_t> out;
  EXPECT_TRUE(recent.Fold(series, from, to, [&](const Row& r) { out.push_back(r.start); }));
  return out;
}

TEST(RecentSamplesTest, CoversNothingBeforeItsFirstReset) {
  RecentSamples recent({});
  recent.Add(1, At(1000, 1));
  EXPECT_FALSE(recent.Fold(1, 0, 2000, [](const Row&) { ADD_FAILURE(); }));
  EXPECT_EQ(recent.rows(), 0u);
}

TEST(RecentSamplesTest, FoldsInStartOrderWithTheLaterWriteOfAWindowWinning) {
  RecentSamples recent({});
  recent.Reset(0);
  recent.Add(1, At(20'000, 2));
  recent.Add(1, At(0, 0));       // out of order: inserted in place
  recent.Add(1, At(10'000, 1));
  recent.Add(1, At(10'000, 9));  // rewritten
  recent.Add(2, At(10'000, 5));

  EXPECT_EQ(Starts(recent, 1, 0, 30'000), (std::vector<int64_t>{0, 10'000, 20'000}));
  EXPECT_EQ(Starts(recent, 1, 10'000, 20'000), (std::vector<int64_t>{10'000}));
  double v = 0;
  ASSERT_TRUE(recent.Fold(1, 10'000, 10'001, [&](const Row& r) { v = r.avg; }));
  EXPECT_EQ(v, 9);
  EXPECT_EQ(recent.rows(), 4u);
  EXPECT_TRUE(Starts(recent, 3, 0, 30'000).empty());  // a series never written: covered, empty
}

TEST(RecentSamplesTest, RangesBeforeTheHorizonAreNotCoveredAndTheirWritesIgnored) {
  RecentSamples recent({});
  recent.Reset(50'000);
  recent.Add(1, At(40'000, 1));
  recent.Add(1, At(50'000, 2));

  EXPECT_FALSE(recent.Fold(1, 40'000, 60'000, [](const Row&) {}));
  EXPECT_EQ(Starts(recent, 1, 50'000, 60'000), (std::vector<int64_t>{50'000}));
  EXPECT_EQ(recent.rows(), 1u);
}

TEST(RecentSamplesTest, TheHorizonFollowsTheNewestWindowByTheKeepTime) {
  RecentSamples recent({.keep_ms = 60'000, .max_rows = 1000});
  recent.Reset(0);
  for (int64_t t = 0; t <= 300'000; t += 10'000) recent.Add(1, At(t, 1));

  // Never more than keep plus a quarter behind the newest, never less than keep.
  EXPECT_GE(recent.horizon(), 300'000 - 60'000 - 15'000);
  EXPECT_LE(recent.horizon(), 300'000 - 60'000);
  EXPECT_TRUE(recent.Fold(1, 240'000, 310'000, [](const Row&) {}));
  EXPECT_FALSE(recent.Fold(1, 200'000, 310'000, [](const Row&) {}));
  EXPECT_LE(recent.rows(), 9u);
}

TEST(RecentSamplesTest, TheRowBudgetMovesTheHorizonAndDropsTheOldest) {
  RecentSamples recent({.keep_ms = 3'600'000, .max_rows = 100});
  recent.Reset(0);
  for (int64_t t = 0; t < 60; ++t) {
    for (int64_t s = 0; s < 10; ++s) recent.Add(s, At(t * 10'000, 1));
  }
  EXPECT_LE(recent.rows(), 100u);
  EXPECT_GT(recent.rows(), 40u);
  // What is kept is everything from the horizon on, for every series.
  const int64_t h = recent.horizon();
  for (int64_t s = 0; s < 10; ++s) {
    EXPECT_EQ(Starts(recent, s, h, 600'000).size(), static_cast<size_t>((590'000 - h) / 10'000 + 1));
  }
}

// The storage reads the last minutes from memory; the same queries on the database alone (the
// store reopened, so that nothing is in memory) give the same answers.
class RecentReadsTest : public ::testing::Test {
 protected:
  base::Result<std::unique_ptr<SqliteStorage>> Open(size_t recent_rows, size_t staged = 100000) {
    SqliteStorageOptions o;
    o.data_dir = tmp_.path();
    o.staged_samples_max = staged;
    o.recent_max_rows = recent_rows;
    return SqliteStorage::Open(o);
  }
  int64_t CountStaged() {
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open((tmp_.path() + "/warpscope.db").c_str(), &db), SQLITE_OK);
    sqlite3_stmt* stmt = nullptr;
    int64_t n = -1;
    if (sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM staged_samples", -1, &stmt, nullptr) ==
            SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW) {
      n = sqlite3_column_int64(stmt, 0);
    }
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    return n;
  }
  base::TempDir tmp_;
};

constexpr int64_t kT0 = 1'750'000'000'000;  // ms

IngestBatch Window(const std::string& agent, uint64_t seq, int64_t start_ms, std::mt19937& rng,
                   int hosts_entities) {
  IngestBatch b;
  b.agent_id = agent;
  b.host = "h-" + agent;
  b.sequence = seq;
  b.start = base::FromUnixNanos(start_ms * 1'000'000);
  b.end = b.start + std::chrono::seconds(10);
  b.metrics.push_back(MetricInfo{.key = "gpu.utilization", .entity_kind = model::EntityKind::kGpu});
  b.metrics.push_back(MetricInfo{.key = "gpu.power.usage", .entity_kind = model::EntityKind::kGpu});
  std::uniform_real_distribution<double> v(0, 100);
  for (int g = 0; g < hosts_entities; ++g) {
    for (const char* m : {"gpu.utilization", "gpu.power.usage"}) {
      double a = v(rng), lo = a - v(rng) / 10, hi = a + v(rng) / 10;
      b.series.push_back(IngestSeries{.metric = m, .entity = "gpu-" + std::to_string(g),
                                      .avg = a, .min = lo, .max = hi, .last = v(rng),
                                      .count = 1 + static_cast<uint32_t>(rng() % 5)});
    }
  }
  return b;
}

std::string Dump(Storage& storage, const std::string& metric, Aggregation aggregation,
                 int64_t from_ms, int64_t to_ms, int64_t step_ms) {
  RangeQuery q;
  q.metric = metric;
  q.aggregation = aggregation;
  q.start = base::FromUnixNanos(from_ms * 1'000'000);
  q.end = base::FromUnixNanos(to_ms * 1'000'000);
  q.step = std::chrono::milliseconds(step_ms);
  auto r = storage.QueryRange(q);
  if (!r) return "error: " + r.error().ToString();
  std::string out;
  for (const RangeSeries& s : r->series) {
    out += s.series.host + "/" + s.series.entity + ":";
    for (const Point& p : s.points) {
      out += " " + std::to_string(base::ToUnixNanos(p.time) / 1'000'000) + "=" +
             std::to_string(p.value) + "#" + std::to_string(p.samples);
    }
    out += "\n";
  }
  return out;
}

TEST_F(RecentReadsTest, RecentRangesReadFromMemoryAnswerAsTheDatabaseDoes) {
  std::mt19937 rng(7);
  std::vector<std::string> warm;
  {
    auto storage = Open(1'000'000);
    ASSERT_TRUE(storage.has_value()) << storage.error().ToString();
    // 20 minutes of 10 s windows from two agents; some windows rewritten by a later batch, some
    // arriving late (but within the recent minutes).
    uint64_t seq = 0;
    for (int w = 0; w < 120; ++w) {
      const int64_t start = kT0 + w * 10'000;
      for (const char* agent : {"a", "b"}) {
        ASSERT_TRUE((*storage)->WriteBatch(Window(agent, ++seq, start, rng, 3)));
      }
      if (w % 7 == 3) {
        ASSERT_TRUE((*storage)->WriteBatch(Window("a", ++seq, start, rng, 3)));
      }
      if (w > 5 && w % 11 == 0) {
        ASSERT_TRUE((*storage)->WriteBatch(Window("b", ++seq, start - 30'000, rng, 3)));
      }
    }
    const int64_t end = kT0 + 120 * 10'000;
    for (Aggregation a : {Aggregation::kAvg, Aggregation::kMin, Aggregation::kMax,
                          Aggregation::kLast}) {
      for (int64_t step : {10'000, 30'000, 60'000}) {
        for (const char* m : {"gpu.utilization", "gpu.power.usage"}) {
          warm.push_back(Dump(**storage, m, a, end - 4 * kMinuteMs, end, step));
        }
      }
    }
    // Read from memory: nothing was moved out of the staged samples for it.
    EXPECT_GT(CountStaged(), 0);
  }
  auto storage = Open(1'000'000);  // reopened: the recent minutes are no longer in memory
  ASSERT_TRUE(storage.has_value());
  const int64_t end = kT0 + 120 * 10'000;
  size_t i = 0;
  for (Aggregation a : {Aggregation::kAvg, Aggregation::kMin, Aggregation::kMax,
                        Aggregation::kLast}) {
    for (int64_t step : {10'000, 30'000, 60'000}) {
      for (const char* m : {"gpu.utilization", "gpu.power.usage"}) {
        const std::string cold = Dump(**storage, m, a, end - 4 * kMinuteMs, end, step);
        EXPECT_NE(cold.find("gpu-2"), std::string::npos);
        EXPECT_EQ(warm[i++], cold) << m << " step " << step;
      }
    }
  }
  EXPECT_EQ(CountStaged(), 0);  // read from the database: the staged samples moved first
}

TEST_F(RecentReadsTest, AReopenedStoreKeepsTheWindowsPastItsHorizonInMemory) {
  std::mt19937 rng(3);
  {
    auto storage = Open(1'000'000);
    ASSERT_TRUE(storage.has_value());
    for (int w = 0; w < 6; ++w) {
      ASSERT_TRUE((*storage)->WriteBatch(Window("a", w + 1, kT0 + w * 10'000, rng, 1)));
    }
  }
  // Reopened: windows from the last persisted one plus ten minutes on are kept in memory.
  const int64_t later = kT0 + 11 * kMinuteMs;
  std::string warm;
  {
    auto storage = Open(1'000'000);
    ASSERT_TRUE(storage.has_value());
    for (int w = 0; w < 6; ++w) {
      ASSERT_TRUE((*storage)->WriteBatch(Window("a", 100 + w, later + w * 10'000, rng, 1)));
    }
    warm = Dump(**storage, "gpu.utilization", Aggregation::kAvg, later, later + kMinuteMs, 10'000);
    EXPECT_GT(CountStaged(), 0);  // from memory
    // A range reaching back before the horizon is read from the database.
    const std::string whole =
        Dump(**storage, "gpu.utilization", Aggregation::kAvg, kT0, later + kMinuteMs, 10'000);
    EXPECT_EQ(CountStaged(), 0);
    EXPECT_EQ(std::count(whole.begin(), whole.end(), '='), 12);
  }
  auto storage = Open(1'000'000);
  ASSERT_TRUE(storage.has_value());
  EXPECT_EQ(std::count(warm.begin(), warm.end(), '='), 6);
  EXPECT_EQ(warm, Dump(**storage, "gpu.utilization", Aggregation::kAvg, later, later + kMinuteMs,
                       10'000));
}

TEST_F(RecentReadsTest, WithoutRecentRowsEveryReadGoesToTheDatabase) {
  std::mt19937 rng(5);
  auto storage = Open(0);
  ASSERT_TRUE(storage.has_value());
  for (int w = 0; w < 6; ++w) {
    ASSERT_TRUE((*storage)->WriteBatch(Window("a", w + 1, kT0 + w * 10'000, rng, 1)));
  }
  const std::string read =
      Dump(**storage, "gpu.utilization", Aggregation::kAvg, kT0, kT0 + kMinuteMs, 10'000);
  EXPECT_EQ(std::count(read.begin(), read.end(), '='), 6);
  EXPECT_EQ(CountStaged(), 0);
}

}  // namespace
}  // namespace warpscope::server

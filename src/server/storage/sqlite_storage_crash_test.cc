// SPDX-License-Identifier: Apache-2.0
// A child process writes batches and reports each acknowledged sequence on a pipe; the parent
// kills it with SIGKILL mid-stream and checks that every acknowledged batch (its samples and its
// training step) is in the store. A second child also compacts, and is killed in the middle of
// a compaction that moves samples into chunks.
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

#include "server/storage/sqlite_storage.h"
#include "server/storage/sqlite_storage_internal.h"

namespace warpscope::server {
namespace {

const base::TimePoint kT0 = base::FromUnixNanos(1'699'999'200'000'000'000);

IngestBatch MakeBatch(uint64_t sequence) {
  IngestBatch b;
  b.agent_id = "agent";
  b.host = "h1";
  b.sequence = sequence;
  b.start = kT0 + std::chrono::seconds(10) * static_cast<int64_t>(sequence);
  b.end = b.start + std::chrono::seconds(10);
  b.metrics.push_back(MetricInfo{.key = "gpu.utilization", .entity_kind = model::EntityKind::kGpu});
  for (int gpu = 0; gpu < 8; ++gpu) {
    b.series.push_back(IngestSeries{.metric = "gpu.utilization",
                                    .entity = "GPU-" + std::to_string(gpu),
                                    .avg = 0.5,
                                    .min = 0.5,
                                    .max = 0.5,
                                    .last = 0.5});
  }
  // One training step per batch, committed with it: step number = sequence.
  model::TrainingStep step;
  step.entity = "h1";
  step.job = "job";
  step.step = static_cast<int64_t>(sequence);
  step.start = b.start;
  step.end = b.start + std::chrono::seconds(5);
  step.source = "collectives";
  b.steps.push_back(step);
  return b;
}

// Runs in the child: writes until killed, acknowledging each stored sequence.
[[noreturn]] void WriteUntilKilled(const std::string& dir, int ack_fd) {
  SqliteStorageOptions o;
  o.data_dir = dir;
  auto storage = SqliteStorage::Open(o);
  if (!storage) {
    _exit(2);
  }
  for (uint64_t seq = 1;; ++seq) {
    auto r = (*storage)->WriteBatch(MakeBatch(seq));
    if (!r || r->stored != 8) {
      _exit(3);
    }
    if (write(ack_fd, &seq, sizeof(seq)) != sizeof(seq)) {
      _exit(4);
    }
  }
}

TEST(SqliteStorageCrashTest, AcknowledgedBatchesSurviveKill9) {
  std::string dir = (std::filesystem::path(::testing::TempDir()) / "warpscope-crash-XXXXXX");
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(fds[0]);
    WriteUntilKilled(dir, fds[1]);
  }
  close(fds[1]);
  uint64_t acknowledged = 0;
  while (acknowledged < 200) {
    uint64_t seq = 0;
    ASSERT_EQ(read(fds[0], &seq, sizeof(seq)), static_cast<ssize_t>(sizeof(seq)))
        << "the writer died before it was killed";
    acknowledged = seq;
  }
  ASSERT_EQ(kill(child, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));
  // Acknowledgements already in the pipe count too.
  uint64_t seq = 0;
  while (read(fds[0], &seq, sizeof(seq)) == static_cast<ssize_t>(sizeof(seq))) {
    acknowledged = seq;
  }
  close(fds[0]);

  SqliteStorageOptions o;
  o.data_dir = dir;
  auto storage = SqliteStorage::Open(o);
  ASSERT_TRUE(storage.has_value()) << storage.error().ToString();
  RangeQuery q;
  q.metric = "gpu.utilization";
  q.match.entity = "GPU-7";
  q.start = kT0;
  q.end = kT0 + std::chrono::seconds(10) * static_cast<int64_t>(acknowledged + 1);
  q.step = std::chrono::seconds(10);
  auto r = (*storage)->QueryRange(q);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  ASSERT_EQ(r->series.size(), 1u);
  EXPECT_EQ(r->series[0].points.size(), acknowledged);
  auto steps = (*storage)->QuerySteps({.job = "job", .start = q.start, .end = q.end});
  ASSERT_TRUE(steps.has_value()) << steps.error().ToString();
  ASSERT_EQ(steps->size(), acknowledged);
  for (uint64_t s = 1; s <= acknowledged; ++s) {
    ASSERT_EQ((*steps)[s - 1].step.step, static_cast<int64_t>(s));
  }
  for (uint64_t s = 1; s <= acknowledged; ++s) {
    auto again = (*storage)->WriteBatch(MakeBatch(s));
    ASSERT_TRUE(again.has_value());
    ASSERT_TRUE(again->duplicate) << "sequence " << s;
  }
  storage->reset();
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

// Windows of kCompactSeries series, each with its own value per window (series i, window w:
// i + w / 8).
constexpr int kCompactSeries = 64;
constexpr uint64_t kChunkedMarker = 0;  // sent when the first group of series is in chunks

IngestBatch MakeWideBatch(uint64_t sequence) {
  IngestBatch b;
  b.agent_id = "agent";
  b.host = "h1";
  b.sequence = sequence;
  b.start = kT0 + std::chrono::seconds(10) * static_cast<int64_t>(sequence);
  b.end = b.start + std::chrono::seconds(10);
  b.metrics.push_back(MetricInfo{.key = "m"});
  for (int i = 0; i < kCompactSeries; ++i) {
    double v = i + static_cast<double>(sequence) / 8;
    b.series.push_back(IngestSeries{.metric = "m",
                                    .entity = "h1",
                                    .labels = {{"i", std::to_string(i)}},
                                    .avg = v,
                                    .min = v - 1,
                                    .max = v + 1,
                                    .last = v,
                                    .count = 10});
  }
  return b;
}

// Runs in the child: writes and compacts every simulated 10 minutes. Once the second 2 h span
// has closed, the Compact that moves it into chunks stops after its first group of series,
// says so and waits to be killed: the span is half moved and the chunk watermark still behind.
[[noreturn]] void WriteAndCompactUntilKilled(const std::string& dir, int ack_fd) {
  SqliteStorageOptions o;
  o.data_dir = dir;
  uint64_t written = 0;
  o.after_chunk_group_for_testing = [&] {
    if (written < 4 * 360 + 60) {
      return;
    }
    if (write(ack_fd, &kChunkedMarker, sizeof(kChunkedMarker)) != sizeof(kChunkedMarker)) {
      _exit(6);
    }
    while (true) {
      pause();
    }
  };
  auto storage = SqliteStorage::Open(o);
  if (!storage) {
    _exit(2);
  }
  for (uint64_t seq = 1;; ++seq) {
    IngestBatch b = MakeWideBatch(seq);
    auto r = (*storage)->WriteBatch(b);
    if (!r || r->stored != kCompactSeries) {
      _exit(3);
    }
    if (write(ack_fd, &seq, sizeof(seq)) != sizeof(seq)) {
      _exit(4);
    }
    written = seq;
    if (seq % 60 == 0 && !(*storage)->Compact(b.end)) {
      _exit(5);
    }
  }
}

// Every acknowledged window of every series, read back with its value.
void ExpectAllWindows(SqliteStorage& storage, uint64_t acknowledged) {
  RangeQuery q;
  q.metric = "m";
  q.start = kT0;
  q.end = kT0 + std::chrono::seconds(10) * static_cast<int64_t>(acknowledged + 1);
  q.step = std::chrono::seconds(10);
  q.aggregation = Aggregation::kMax;
  auto r = storage.QueryRange(q);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  ASSERT_EQ(r->series.size(), static_cast<size_t>(kCompactSeries));
  for (const RangeSeries& s : r->series) {
    const int i = std::stoi(std::string(s.series.labels.Get("i")));
    ASSERT_EQ(s.points.size(), acknowledged) << "series " << i;
    for (uint64_t seq = 1; seq <= acknowledged; ++seq) {
      ASSERT_EQ(s.points[seq - 1].value, i + static_cast<double>(seq) / 8 + 1)
          << "series " << i << ", sequence " << seq;
    }
  }
}

// Windows per series in `table` that start in [from_ms, to_ms).
std::map<int64_t, int64_t> WindowsPerSeries(sqlite3* db, const std::string& table, int64_t from_ms,
                                            int64_t to_ms) {
  std::map<int64_t, int64_t> out;
  sqlite3_stmt* stmt = nullptr;
  const std::string sql = "SELECT series_id, SUM(count) FROM " + table +
                          " WHERE start_ms >= ?1 AND start_ms < ?2 GROUP BY series_id";
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr), SQLITE_OK);
  sqlite3_bind_int64(stmt, 1, from_ms);
  sqlite3_bind_int64(stmt, 2, to_ms);
  while (sqlite3_step(stmt) == SQLITE_ROW) {
    out[sqlite3_column_int64(stmt, 0)] = sqlite3_column_int64(stmt, 1);
  }
  sqlite3_finalize(stmt);
  return out;
}

// The span the killed Compact was moving starts at the chunk watermark: each series' 720
// windows of it are all in closed chunks (the group it moved) or all still in the head, and
// both places hold some series.
void ExpectEachSeriesOfTheHalfMovedSpanInOnePlace(const std::string& dir) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2((dir + "/warpscope.db").c_str(), &db, SQLITE_OPEN_READONLY, nullptr),
            SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  int64_t watermark = 0;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'chunk_watermark_ms'", -1,
                               &stmt, nullptr),
            SQLITE_OK);
  if (sqlite3_step(stmt) == SQLITE_ROW) {
    watermark = sqlite3_column_int64(stmt, 0);
  }
  sqlite3_finalize(stmt);
  ASSERT_GT(watermark, 0) << "the first span was chunked before the kill";
  const int64_t span_end = watermark + storage_internal::kChunkSpanMs;
  const auto closed = WindowsPerSeries(db, "sample_chunks", watermark, span_end);
  const auto head = WindowsPerSeries(db, "head_chunks", watermark, span_end);
  sqlite3_close(db);
  constexpr int64_t kSpanWindows = storage_internal::kChunkSpanMs / 10'000;
  EXPECT_FALSE(closed.empty());
  EXPECT_FALSE(head.empty());
  EXPECT_EQ(closed.size() + head.size(), static_cast<size_t>(kCompactSeries));
  for (const auto& [series, windows] : closed) {
    EXPECT_EQ(windows, kSpanWindows) << "series " << series << " in sample_chunks";
    EXPECT_EQ(head.count(series), 0u) << "series " << series << " in both";
  }
  for (const auto& [series, windows] : head) {
    EXPECT_EQ(windows, kSpanWindows) << "series " << series << " in head_chunks";
  }
}

TEST(SqliteStorageCrashTest, AcknowledgedWindowsSurviveKill9DuringCompaction) {
  std::string dir = (std::filesystem::path(::testing::TempDir()) / "warpscope-crash-XXXXXX");
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(fds[0]);
    WriteAndCompactUntilKilled(dir, fds[1]);
  }
  close(fds[1]);
  uint64_t acknowledged = 0;
  while (true) {
    uint64_t seq = 0;
    ASSERT_EQ(read(fds[0], &seq, sizeof(seq)), static_cast<ssize_t>(sizeof(seq)))
        << "the writer died before it was killed";
    if (seq == kChunkedMarker) {
      break;
    }
    acknowledged = seq;
  }
  ASSERT_EQ(kill(child, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));
  close(fds[0]);

  SqliteStorageOptions o;
  o.data_dir = dir;
  o.recent_max_rows = 0;  // every read from the database
  auto storage = SqliteStorage::Open(o);
  ASSERT_TRUE(storage.has_value()) << storage.error().ToString();
  ExpectAllWindows(**storage, acknowledged);
  // Half of the span moved: 32 series' windows of it are in chunks, the others' still rows.
  auto before = (*storage)->Stats();
  ASSERT_TRUE(before.has_value());
  EXPECT_EQ(before->raw_windows, acknowledged * kCompactSeries);
  uint64_t head_chunks = 0;
  uint64_t closed_chunks = 0;
  for (const TableStats& t : before->tables) {
    if (t.name == "head_chunks") {
      head_chunks = t.rows;
    } else if (t.name == "sample_chunks") {
      closed_chunks = t.rows;
    }
  }
  EXPECT_GT(head_chunks, 0u);
  EXPECT_GT(closed_chunks, 0u);
  ExpectEachSeriesOfTheHalfMovedSpanInOnePlace(dir);
  // A late copy of window 800 (in the half-moved span) from another sender, for every series:
  // the next Compact merges it into the chunks the killed one wrote for half the series.
  IngestBatch late = MakeWideBatch(800);
  late.agent_id = "backfill";
  ASSERT_TRUE((*storage)->WriteBatch(late).has_value());
  // The next Compact finishes the move; nothing is lost or doubled.
  const base::TimePoint end = kT0 + std::chrono::seconds(10) * static_cast<int64_t>(acknowledged);
  ASSERT_TRUE((*storage)->Compact(end + std::chrono::minutes(5)).has_value());
  ExpectAllWindows(**storage, acknowledged);
  auto stats = (*storage)->Stats();
  ASSERT_TRUE(stats.has_value());
  EXPECT_EQ(stats->raw_windows, acknowledged * kCompactSeries);
  storage->reset();
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

}  // namespace
}  // namespace warpscope::server

// SPDX-License-Identifier: Apache-2.0
#include "server/storage/sqlite_storage.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "base/testing/temp_dir.h"
#include "server/storage/testing/storage_conformance.h"

namespace warpscope::server {
namespace {

using ::testing::HasSubstr;

base::Result<std::unique_ptr<Storage>> OpenSqlite(const std::string& dir,
                                                  const StorageOptions& options) {
  SqliteStorageOptions o;
  o.data_dir = dir;
  o.storage = options;
  auto opened = SqliteStorage::Open(o);
  if (!opened) {
    return base::Error(opened.error());
  }
  return std::unique_ptr<Storage>(std::move(*opened));
}

// Staged samples moved after every second batch, so that moves happen between writes as well
// as before reads.
base::Result<std::unique_ptr<Storage>> OpenSqliteSmallStage(const std::string& dir,
                                                            const StorageOptions& options) {
  SqliteStorageOptions o;
  o.data_dir = dir;
  o.storage = options;
  o.staged_samples_max = 2;
  auto opened = SqliteStorage::Open(o);
  if (!opened) {
    return base::Error(opened.error());
  }
  return std::unique_ptr<Storage>(std::move(*opened));
}

// Every range read from the database: no recent windows kept in memory.
base::Result<std::unique_ptr<Storage>> OpenSqliteNoRecent(const std::string& dir,
                                                          const StorageOptions& options) {
  SqliteStorageOptions o;
  o.data_dir = dir;
  o.storage = options;
  o.recent_max_rows = 0;
  auto opened = SqliteStorage::Open(o);
  if (!opened) {
    return base::Error(opened.error());
  }
  return std::unique_ptr<Storage>(std::move(*opened));
}

INSTANTIATE_TEST_SUITE_P(Sqlite, StorageConformanceTest,
                         ::testing::Values(StorageBackend{"sqlite", OpenSqlite},
                                           StorageBackend{"sqlite_small_stage",
                                                          OpenSqliteSmallStage},
                                           StorageBackend{"sqlite_no_recent",
                                                          OpenSqliteNoRecent}),
                         StorageBackendName);

class SqliteStorageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(tmp_.path().empty());
    dir_ = tmp_.path();
  }
  void TearDown() override {
    chmod(dir_.c_str(), 0700);
  }
  base::Result<std::unique_ptr<SqliteStorage>> Open(const std::string& dir) {
    SqliteStorageOptions o;
    o.data_dir = dir;
    return SqliteStorage::Open(o);
  }
  // Runs SQL on the database file directly, as another program would.
  void Sql(const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((dir_ + "/warpscope.db").c_str(), &db), SQLITE_OK);
    char* error = nullptr;
    EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK)
        << (error != nullptr ? error : "");
    sqlite3_free(error);
    sqlite3_close(db);
  }

  // COUNT(*) of `table`, read directly from the database file.
  int64_t Count(const std::string& table) { return Scalar("SELECT COUNT(*) FROM " + table); }
  // Raw windows in the head's chunks.
  int64_t HeadWindows() { return Scalar("SELECT COALESCE(SUM(count), 0) FROM head_chunks"); }
  int64_t Scalar(const std::string& sql) {
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open((dir_ + "/warpscope.db").c_str(), &db), SQLITE_OK);
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

  base::TempDir tmp_;  // removed after everything below
  std::string dir_;
};

TEST_F(SqliteStorageTest, CreatesTheDataDirAndADatabaseInWalMode) {
  std::string nested = dir_ + "/a/b";

  auto storage = Open(nested);

  ASSERT_TRUE(storage.has_value()) << storage.error().ToString();
  EXPECT_EQ((*storage)->path(), nested + "/warpscope.db");
  EXPECT_TRUE(std::filesystem::exists(nested + "/warpscope.db"));
  EXPECT_TRUE(std::filesystem::exists(nested + "/warpscope.db-wal"));
}

// The error of opening storage in `dir`; as root (who may write anywhere) in a child process
// that runs as the unprivileged user 65534. "" when the open succeeded.
std::string OpenErrorAsUnprivilegedUser(const std::string& dir) {
  auto open = [&dir]() -> std::string {
    SqliteStorageOptions o;
    o.data_dir = dir;
    auto storage = SqliteStorage::Open(o);
    return storage ? "" : storage.error().message();
  };
  if (geteuid() != 0) {
    return open();
  }
  int fds[2];
  if (pipe(fds) != 0) {
    return "pipe failed";
  }
  pid_t child = fork();
  if (child == 0) {
    close(fds[0]);
    std::string message = "could not become user 65534";
    if (setgid(65534) == 0 && setuid(65534) == 0) {
      message = open();
    }
    ssize_t ignored = write(fds[1], message.data(), message.size());
    (void)ignored;
    _exit(0);
  }
  close(fds[1]);
  std::string message;
  char buf[512];
  for (ssize_t n; (n = read(fds[0], buf, sizeof(buf))) > 0;) {
    message.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  waitpid(child, &status, 0);
  return message;
}

TEST_F(SqliteStorageTest, UnwritableDataDirNamesThePathAndTheRemedy) {
  ASSERT_EQ(chmod(dir_.c_str(), 0555), 0);  // readable and searchable, not writable, by anyone

  const std::string message = OpenErrorAsUnprivilegedUser(dir_);

  EXPECT_THAT(message, HasSubstr("--data-dir " + dir_ + " is not writable"));
  EXPECT_THAT(message, HasSubstr("permissions"));
}

TEST_F(SqliteStorageTest, DataDirThatIsAFileIsRefused) {
  std::string file = dir_ + "/file";
  std::ofstream(file) << "x";

  auto storage = Open(file);

  ASSERT_FALSE(storage.has_value());
  EXPECT_THAT(storage.error().message(), HasSubstr(file));
}

TEST_F(SqliteStorageTest, EmptyDataDirIsRefused) {
  auto storage = Open("");

  ASSERT_FALSE(storage.has_value());
  EXPECT_THAT(storage.error().message(), HasSubstr("--data-dir"));
}

TEST_F(SqliteStorageTest, FileThatIsNotADatabaseIsRefused) {
  std::ofstream(dir_ + "/warpscope.db") << std::string(4096, 'x');

  auto storage = Open(dir_);

  ASSERT_FALSE(storage.has_value());
  EXPECT_THAT(storage.error().message(), HasSubstr(dir_ + "/warpscope.db"));
  EXPECT_THAT(storage.error().message(), HasSubstr("not a usable warpscope database"));
}

TEST_F(SqliteStorageTest, OtherSqliteDatabaseIsRefused) {
  Sql("CREATE TABLE something_else(x INTEGER);");

  auto storage = Open(dir_);

  ASSERT_FALSE(storage.has_value());
  EXPECT_THAT(storage.error().message(), HasSubstr("not a warpscope one"));
}

TEST_F(SqliteStorageTest, NewerSchemaVersionIsRefusedWithTheRemedy) {
  ASSERT_TRUE(Open(dir_).has_value());
  Sql("UPDATE meta SET value = 99 WHERE key = 'schema_version';");

  auto storage = Open(dir_);

  ASSERT_FALSE(storage.has_value());
  EXPECT_EQ(storage.error().code(), base::StatusCode::kUnsupported);
  EXPECT_THAT(storage.error().message(), HasSubstr("newer warpscope (schema version 99"));
  EXPECT_THAT(storage.error().message(), HasSubstr("upgrade warpscope"));
}

TEST_F(SqliteStorageTest, InvalidOptionsAreRefused) {
  SqliteStorageOptions o;
  o.data_dir = dir_;
  o.storage.raw_retention = std::chrono::hours(24 * 60);  // longer than the 1m retention

  auto storage = SqliteStorage::Open(o);

  ASSERT_FALSE(storage.has_value());
  EXPECT_THAT(storage.error().message(), HasSubstr("retention"));
}

TEST_F(SqliteStorageTest, SyncEveryCommitStillWorks) {
  SqliteStorageOptions o;
  o.data_dir = dir_;
  o.sync_every_commit = true;
  auto storage = SqliteStorage::Open(o);
  ASSERT_TRUE(storage.has_value());
  IngestBatch b;
  b.agent_id = "a";
  b.host = "h";
  b.sequence = 1;
  b.start = base::FromUnixNanos(1'699'999'200'000'000'000);
  b.end = b.start + std::chrono::seconds(10);
  b.metrics.push_back(MetricInfo{.key = "m"});
  b.series.push_back(IngestSeries{.metric = "m", .entity = "h", .avg = 1, .last = 1});

  auto r = (*storage)->WriteBatch(b);

  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->stored, 1u);
}

IngestBatch OneSeriesBatch(uint64_t sequence, int64_t start_s, double value) {
  IngestBatch b;
  b.agent_id = "a";
  b.host = "h";
  b.sequence = sequence;
  b.start = base::FromUnixNanos(start_s * 1'000'000'000);
  b.end = b.start + std::chrono::seconds(10);
  b.metrics.push_back(MetricInfo{.key = "m"});
  b.series.push_back(
      IngestSeries{.metric = "m", .entity = "h", .avg = value, .min = value, .max = value,
                   .last = value, .count = 1});
  return b;
}

std::vector<double> ReadValues(Storage& storage, int64_t from_s, int64_t to_s) {
  RangeQuery q;
  q.metric = "m";
  q.start = base::FromUnixNanos(from_s * 1'000'000'000);
  q.end = base::FromUnixNanos(to_s * 1'000'000'000);
  q.step = std::chrono::seconds(10);
  auto r = storage.QueryRange(q);
  std::vector<double> values;
  if (!r.has_value() || r->series.size() != 1) {
    ADD_FAILURE() << (r.has_value() ? "series: " + std::to_string(r->series.size())
                                    : r.error().ToString());
    return values;
  }
  for (const Point& p : r->series[0].points) {
    values.push_back(p.value);
  }
  return values;
}

TEST_F(SqliteStorageTest, StagedSamplesSurviveAReopenAndAreRead) {
  constexpr int64_t kStart = 1'700'000'000;
  {
    SqliteStorageOptions o;
    o.data_dir = dir_;
    o.staged_samples_max = 1000;
    auto storage = SqliteStorage::Open(o);
    ASSERT_TRUE(storage.has_value());
    for (int i = 0; i < 3; ++i) {
      ASSERT_TRUE((*storage)->WriteBatch(OneSeriesBatch(i + 1, kStart + 10 * i, i + 1.5)));
    }
    // Closed without a read: the samples are still staged, and only there.
  }
  EXPECT_EQ(Count("staged_samples"), 3);
  EXPECT_EQ(Count("head_chunks"), 0);
  auto storage = Open(dir_);
  ASSERT_TRUE(storage.has_value()) << storage.error().ToString();

  EXPECT_EQ(ReadValues(**storage, kStart, kStart + 30), (std::vector<double>{1.5, 2.5, 3.5}));

  auto stats = (*storage)->Stats();
  ASSERT_TRUE(stats.has_value());
  for (const TableStats& t : stats->tables) {
    if (t.name == "head_chunks") {
      EXPECT_EQ(t.rows, 1u);  // the series' three windows, moved together
    }
    if (t.name == "staged_samples") {
      EXPECT_EQ(t.rows, 0u);
    }
  }
}

TEST_F(SqliteStorageTest, LaterWriteOfTheSameWindowWinsWhenStaged) {
  SqliteStorageOptions o;
  o.data_dir = dir_;
  o.staged_samples_max = 1000;
  auto storage = SqliteStorage::Open(o);
  ASSERT_TRUE(storage.has_value());
  constexpr int64_t kStart = 1'700'000'000;
  // Two agents' batches for the same series and window: the second one written wins, as it
  // would without staging.
  IngestBatch first = OneSeriesBatch(1, kStart, 1.0);
  IngestBatch second = OneSeriesBatch(1, kStart, 7.0);
  second.agent_id = "b";
  ASSERT_TRUE((*storage)->WriteBatch(first));
  ASSERT_TRUE((*storage)->WriteBatch(second));

  EXPECT_EQ(ReadValues(**storage, kStart, kStart + 10), (std::vector<double>{7.0}));
}

TEST_F(SqliteStorageTest, ADatabaseErrorInAGroupFailsOnlyItsBatch) {
  constexpr int64_t kStart = 1'700'000'000;
  auto storage = Open(dir_);
  ASSERT_TRUE(storage.has_value()) << storage.error().ToString();
  ASSERT_TRUE((*storage)->WriteBatch(OneSeriesBatch(1, kStart, 1.0)));
  // Another program makes the database refuse one batch's dedup row: the group's shared
  // transaction fails, and the batches are written again one transaction each.
  Sql("CREATE TRIGGER refuse_one BEFORE INSERT ON ingested WHEN NEW.sequence = 3 BEGIN "
      "SELECT RAISE(ABORT, 'refused by a trigger'); END;");
  std::vector<IngestBatch> batches = {OneSeriesBatch(2, kStart + 10, 2.0),
                                      OneSeriesBatch(3, kStart + 20, 3.0),
                                      OneSeriesBatch(4, kStart + 30, 4.0)};

  BatchesWritten written = (*storage)->WriteBatches(batches);

  // The batch before the refused one is stored; the refused one reports the database's error
  // and stops its caller's batches, as one WriteBatch after another would.
  ASSERT_FALSE(written.status.ok());
  EXPECT_THAT(written.status.ToString(), ::testing::HasSubstr("refused by a trigger"));
  ASSERT_EQ(written.results.size(), 1u);
  EXPECT_EQ(written.results[0].stored, 1u);
  EXPECT_EQ(ReadValues(**storage, kStart, kStart + 40), (std::vector<double>{1.0, 2.0}));
  // The caches were reloaded from the database: the next writes see what it holds.
  Sql("DROP TRIGGER refuse_one;");
  written = (*storage)->WriteBatches(std::span<const IngestBatch>(batches).subspan(1));
  ASSERT_TRUE(written.status.ok()) << written.status.ToString();
  EXPECT_EQ(ReadValues(**storage, kStart, kStart + 40),
            (std::vector<double>{1.0, 2.0, 3.0, 4.0}));
  EXPECT_EQ(Count("series"), 1);
}

// Writers, a reader and moves at once; `storage_threads`: the storage's writer and mover
// threads (the default), else the callers lead the group commits and move the stage.
void ConcurrentWritersAndReaders(const std::string& dir, bool storage_threads) {
  SqliteStorageOptions o;
  o.data_dir = dir;
  o.write_thread = storage_threads;
  o.move_in_background = storage_threads;
  o.staged_samples_max = 40;  // a move every few batches
  o.staged_move_chunk = 7;    // many chunks, the lock released between them
  o.recent_max_rows = 0;      // every read moves the staged samples and reads the table
  auto opened = SqliteStorage::Open(o);
  ASSERT_TRUE(opened.has_value());
  SqliteStorage& storage = **opened;
  constexpr int64_t kStart = 1'700'000'000;
  constexpr int kWriters = 4;
  constexpr int kWindows = 30;
  constexpr int kSeries = 5;
  std::atomic<bool> writing{true};
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      for (int i = 0; i < kWindows; ++i) {
        IngestBatch b;
        b.agent_id = "agent-" + std::to_string(w);
        b.host = "host-" + std::to_string(w);
        b.sequence = static_cast<uint64_t>(i + 1);
        b.start = base::FromUnixNanos((kStart + 10 * i) * 1'000'000'000);
        b.end = b.start + std::chrono::seconds(10);
        b.metrics.push_back(MetricInfo{.key = "m"});
        for (int k = 0; k < kSeries; ++k) {
          double v = w * 1000 + i * 10 + k;
          b.series.push_back(IngestSeries{.metric = "m",
                                          .entity = b.host,
                                          .labels = model::Labels{{"k", std::to_string(k)}},
                                          .avg = v, .min = v, .max = v, .last = v, .count = 1});
        }
        auto r = storage.WriteBatch(b);
        EXPECT_TRUE(r.has_value()) << r.error().ToString();
      }
    });
  }
  std::thread reader([&] {
    while (writing.load()) {
      RangeQuery q;
      q.metric = "m";
      q.start = base::FromUnixNanos(kStart * 1'000'000'000);
      q.end = q.start + std::chrono::seconds(10 * kWindows);
      q.step = std::chrono::seconds(10);
      auto r = storage.QueryRange(q);
      EXPECT_TRUE(r.has_value() || r.error().code() == base::StatusCode::kNotFound);
    }
  });
  for (std::thread& t : threads) t.join();
  writing = false;
  reader.join();

  RangeQuery q;
  q.metric = "m";
  q.start = base::FromUnixNanos(kStart * 1'000'000'000);
  q.end = q.start + std::chrono::seconds(10 * kWindows);
  q.step = std::chrono::seconds(10);
  auto r = storage.QueryRange(q);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  ASSERT_EQ(r->series.size(), static_cast<size_t>(kWriters * kSeries));
  for (const RangeSeries& series : r->series) {
    int w = series.series.host.back() - '0';
    int k = std::stoi(std::string(series.series.labels.Get("k")));
    ASSERT_EQ(series.points.size(), static_cast<size_t>(kWindows)) << series.series.host;
    for (int i = 0; i < kWindows; ++i) {
      EXPECT_EQ(series.points[i].value, w * 1000 + i * 10 + k);
    }
  }
}

// The last read moved every staged sample: kWriters * kWindows * kSeries windows in the head.
TEST_F(SqliteStorageTest, ConcurrentWritersAndReadersDuringChunkedMoves) {
  ConcurrentWritersAndReaders(dir_, /*storage_threads=*/true);
  EXPECT_EQ(Count("staged_samples"), 0);
  EXPECT_EQ(HeadWindows(), 4 * 30 * 5);
}

TEST_F(SqliteStorageTest, ConcurrentWritersAndReadersWhenCallersLeadAndMove) {
  ConcurrentWritersAndReaders(dir_, /*storage_threads=*/false);
  EXPECT_EQ(Count("staged_samples"), 0);
  EXPECT_EQ(HeadWindows(), 4 * 30 * 5);
}

TEST_F(SqliteStorageTest, Version1DatabaseIsUpgradedAndKeepsItsData) {
  constexpr int64_t kStart = 1'700'000'000;
  {
    SqliteStorageOptions o;
    o.data_dir = dir_;
    o.staged_samples_max = 0;  // in the samples table at once, as version 1 wrote them
    auto storage = SqliteStorage::Open(o);
    ASSERT_TRUE(storage.has_value());
    ASSERT_TRUE((*storage)->WriteBatch(OneSeriesBatch(1, kStart, 4.0)));
    EXPECT_EQ(ReadValues(**storage, kStart, kStart + 10), (std::vector<double>{4.0}));
  }
  EXPECT_EQ(Count("staged_samples"), 0);
  Sql("DROP TABLE staged_samples; UPDATE meta SET value = 1 WHERE key = 'schema_version';");

  auto storage = Open(dir_);

  ASSERT_TRUE(storage.has_value()) << storage.error().ToString();
  ASSERT_TRUE((*storage)->WriteBatch(OneSeriesBatch(2, kStart + 10, 5.0)));
  EXPECT_EQ(ReadValues(**storage, kStart, kStart + 20), (std::vector<double>{4.0, 5.0}));
}

TEST_F(SqliteStorageTest, Version2DatabaseGainsTheTrainingStepsTable) {
  ASSERT_TRUE(Open(dir_).has_value());
  Sql("DROP TABLE training_steps; UPDATE meta SET value = 2 WHERE key = 'schema_version';");

  auto storage = Open(dir_);

  ASSERT_TRUE(storage.has_value()) << storage.error().ToString();
  EXPECT_EQ(Count("training_steps"), 0);
  IngestBatch b;
  b.agent_id = "agent";
  b.host = "h1";
  b.start = base::FromUnixNanos(1'700'000'000'000'000'000);
  b.end = b.start + std::chrono::minutes(1);
  model::TrainingStep step;
  step.entity = "h1";
  step.job = "job";
  step.start = b.start;
  step.end = b.start + std::chrono::seconds(1);
  step.source = "nvtx";
  b.steps = {step};
  ASSERT_TRUE((*storage)->WriteBatch(b).has_value());
  auto steps = (*storage)->QuerySteps({.job = "job", .start = b.start, .end = b.end});
  ASSERT_TRUE(steps.has_value()) << steps.error().ToString();
  ASSERT_EQ(steps->size(), 1u);
  EXPECT_EQ((*steps)[0].step, step);
  EXPECT_EQ(Count("meta WHERE key = 'schema_version' AND value = " +
                  std::to_string(SqliteStorage::kSchemaVersion)),
            1);
}

TEST(StorageTypesTest, StepRetentionMustBePositive) {
  StorageOptions o;
  o.step_retention = base::Duration::zero();

  base::Status st = o.Validate();

  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("step retention"));
}

TEST(StorageTypesTest, ParsesAggregationNames) {
  EXPECT_EQ(ParseAggregation("max").value(), Aggregation::kMax);
  EXPECT_EQ(AggregationName(Aggregation::kRate), "rate");
  auto bad = ParseAggregation("median");
  ASSERT_FALSE(bad.has_value());
  EXPECT_THAT(bad.error().message(), HasSubstr("avg, min, max, last, rate"));
}

TEST(StorageTypesTest, ParsesEntityKindNames) {
  EXPECT_EQ(ParseEntityKind("mig").value(), model::EntityKind::kMigInstance);
  EXPECT_FALSE(ParseEntityKind("gpus").has_value());
}

TEST(StorageTypesTest, DefaultOptionsAreValid) { EXPECT_TRUE(StorageOptions{}.Validate().ok()); }

}  // namespace
}  // namespace warpscope::server

// SPDX-License-Identifier: Apache-2.0
#include "server/storage/sqlite_storage.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "server/storage/storage_conformance.h"

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

INSTANTIATE_TEST_SUITE_P(Sqlite, StorageConformanceTest,
                         ::testing::Values(StorageBackend{"sqlite", OpenSqlite}),
                         StorageBackendName);

class SqliteStorageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::path(::testing::TempDir()) / "warpscope-sqlite-XXXXXX");
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    chmod(dir_.c_str(), 0700);
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
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

TEST_F(SqliteStorageTest, UnwritableDataDirNamesThePathAndTheRemedy) {
  if (geteuid() == 0) {
    GTEST_SKIP() << "root can write anywhere";
  }
  ASSERT_EQ(chmod(dir_.c_str(), 0500), 0);

  auto storage = Open(dir_);

  ASSERT_FALSE(storage.has_value());
  EXPECT_THAT(storage.error().message(), HasSubstr("--data-dir " + dir_ + " is not writable"));
  EXPECT_THAT(storage.error().message(), HasSubstr("permissions"));
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

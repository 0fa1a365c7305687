// SPDX-License-Identifier: Apache-2.0
// ClickHouseStorage against a real clickhouse-server, started by the test on loopback: the
// conformance suite, errors that name their fix, two stores sharing one database, and an outage.
#include "server/storage/clickhouse/clickhouse_storage.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "server/storage/clickhouse/testing/clickhouse_server.h"
#include "server/storage/testing/storage_conformance.h"

namespace warpscope::server {
namespace {

using clickhouse::TestServer;
using ::testing::HasSubstr;
using ::testing::SizeIs;

bool InCi() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && (std::string(ci) == "true" || std::string(ci) == "1");
}

// The server the conformance tests of this process share (each test its own database); null
// with the reason in `error` when it cannot start.
TestServer* SharedServer(base::Status* error) {
  static std::mutex mu;
  static std::unique_ptr<TestServer> server;
  static base::Status start_error;
  std::lock_guard lock(mu);
  if (server == nullptr && start_error.ok()) {
    auto started = TestServer::Start();
    if (started) {
      server = std::move(*started);
    } else {
      start_error = started.error();
    }
  }
  if (error != nullptr) *error = start_error;
  return server.get();
}

// A database per test directory, so that reopening the directory finds the same data.
std::string DatabaseFor(const std::string& dir) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : dir) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return fmt::format("t_{:016x}", h);
}

base::Result<std::unique_ptr<Storage>> OpenClickHouse(const std::string& dir,
                                                      const StorageOptions& options) {
  base::Status error;
  TestServer* server = SharedServer(&error);
  if (server == nullptr) {
    return base::Error(error);
  }
  ClickHouseStorageOptions o;
  o.url = server->Url(DatabaseFor(dir));
  o.storage = options;
  auto opened = ClickHouseStorage::Open(o);
  if (!opened) return base::Error(opened.error());
  return std::unique_ptr<Storage>(std::move(*opened));
}

// Outside CI a machine without clickhouse-server skips; in CI the tests run and fail with the
// setup step in their message (SharedServer's error).
std::string SkipReason(const std::string& /*test*/) {
  if (!InCi() && TestServer::FindBinary().empty()) return clickhouse::kSetupHint;
  return "";
}

INSTANTIATE_TEST_SUITE_P(ClickHouse, StorageConformanceTest,
                         ::testing::Values(StorageBackend{"clickhouse", OpenClickHouse,
                                                          SkipReason}),
                         StorageBackendName);

// --- Backend-specific behaviour ---------------------------------------------------------------

const base::TimePoint kT0 = base::FromUnixNanos(1'699'999'200'000'000'000);

// Window `sequence` (10 s, starting at kT0 + 10 s * sequence) of agent "a1" on host "h1": one
// gauge series of GPU-0 with value `value`.
IngestBatch Window(uint64_t sequence, double value) {
  IngestBatch b;
  b.agent_id = "a1";
  b.sequence = sequence;
  b.start = kT0 + std::chrono::seconds(10 * sequence);
  b.end = b.start + std::chrono::seconds(10);
  b.host = "h1";
  b.metrics.push_back(
      MetricInfo{.key = "gpu.utilization", .unit = "1", .entity_kind = model::EntityKind::kGpu});
  b.series.push_back(IngestSeries{.metric = "gpu.utilization",
                                  .entity = "GPU-0",
                                  .avg = value,
                                  .min = value,
                                  .max = value,
                                  .last = value});
  return b;
}

RangeQuery Utilization() {
  RangeQuery q;
  q.metric = "gpu.utilization";
  q.start = kT0;
  q.end = kT0 + std::chrono::minutes(10);
  q.step = std::chrono::seconds(10);
  return q;
}

class ClickHouseStorageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!InCi() && TestServer::FindBinary().empty()) GTEST_SKIP() << clickhouse::kSetupHint;
  }
  // A store on database `db` of `server`.
  static std::unique_ptr<ClickHouseStorage> OpenOn(const TestServer& server, const std::string& db,
                                                   const std::string& password = "") {
    ClickHouseStorageOptions o;
    o.url = server.Url(db);
    o.password = password;
    o.timeout = std::chrono::seconds(5);
    auto opened = ClickHouseStorage::Open(o);
    EXPECT_TRUE(opened.has_value()) << opened.error().ToString();
    return opened ? std::move(*opened) : nullptr;
  }
};

TEST_F(ClickHouseStorageTest, ABadUrlNamesTheExpectedForm) {
  for (const char* url : {"http://localhost:8123/db", "clickhouse://localhost:8123",
                          "clickhouse://localhost:http/db", "clickhouse://localhost/db;drop"}) {
    ClickHouseStorageOptions o;
    o.url = url;
    auto opened = ClickHouseStorage::Open(o);
    ASSERT_FALSE(opened.has_value()) << url;
    EXPECT_EQ(opened.error().code(), base::StatusCode::kInvalidArgument) << url;
    EXPECT_THAT(opened.error().message(), HasSubstr("clickhouse://HOST[:PORT]/DATABASE")) << url;
  }
}

TEST_F(ClickHouseStorageTest, AnUnreachableServerIsUnavailableAndSaysSo) {
  ClickHouseStorageOptions o;
  o.url = "clickhouse://127.0.0.1:1/warpscope";  // port 1: nothing listens there
  auto opened = ClickHouseStorage::Open(o);
  ASSERT_FALSE(opened.has_value());
  EXPECT_EQ(opened.error().code(), base::StatusCode::kUnavailable);
  EXPECT_THAT(opened.error().message(), HasSubstr("cannot be reached"));
  EXPECT_THAT(opened.error().message(), HasSubstr("--storage"));
}

TEST_F(ClickHouseStorageTest, RefusedCredentialsArePermissionDeniedNamingThePasswordFile) {
  auto server = TestServer::Start("right-password");
  ASSERT_TRUE(server.has_value()) << server.error().ToString();
  ClickHouseStorageOptions o;
  o.url = (*server)->Url("warpscope");
  o.password = "wrong-password";
  auto opened = ClickHouseStorage::Open(o);
  ASSERT_FALSE(opened.has_value());
  EXPECT_EQ(opened.error().code(), base::StatusCode::kPermissionDenied);
  EXPECT_THAT(opened.error().message(), HasSubstr("--storage-password-file"));
  // The right one opens.
  EXPECT_NE(OpenOn(**server, "warpscope", "right-password"), nullptr);
}

// Two servers over one database: a batch retried through the other one is a duplicate, and
// both answer a query the same.
TEST_F(ClickHouseStorageTest, TwoStoresOverOneDatabaseShareDedupAndAnswers) {
  base::Status error;
  TestServer* server = SharedServer(&error);
  ASSERT_NE(server, nullptr) << error.ToString();
  auto a = OpenOn(*server, "shared_two_stores");
  auto b = OpenOn(*server, "shared_two_stores");
  ASSERT_TRUE(a && b);
  for (uint64_t seq = 1; seq <= 6; ++seq) {
    Storage& writer = seq % 2 == 0 ? static_cast<Storage&>(*a) : *b;
    auto written = writer.WriteBatch(Window(seq, 0.1 * static_cast<double>(seq)));
    ASSERT_TRUE(written.has_value()) << written.error().ToString();
    EXPECT_FALSE(written->duplicate);
  }
  // The agent's retry of window 3 (first sent to b) lands on a.
  auto retried = a->WriteBatch(Window(3, 0.3));
  ASSERT_TRUE(retried.has_value()) << retried.error().ToString();
  EXPECT_TRUE(retried->duplicate);

  auto from_a = a->QueryRange(Utilization());
  auto from_b = b->QueryRange(Utilization());
  ASSERT_TRUE(from_a.has_value()) << from_a.error().ToString();
  ASSERT_TRUE(from_b.has_value()) << from_b.error().ToString();
  ASSERT_THAT(from_a->series, SizeIs(1));
  ASSERT_THAT(from_b->series, SizeIs(1));
  ASSERT_THAT(from_a->series[0].points, SizeIs(6));
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_DOUBLE_EQ(from_a->series[0].points[i].value, 0.1 * static_cast<double>(i + 1));
    EXPECT_EQ(from_a->series[0].points[i].time, from_b->series[0].points[i].time);
    EXPECT_EQ(from_a->series[0].points[i].value, from_b->series[0].points[i].value);
    EXPECT_EQ(from_a->series[0].points[i].samples, 1u);  // stored once, not twice
  }
}

// Batches written at once from many threads are grouped: fewer INSERTs than batches, and every
// batch stored exactly once.
TEST_F(ClickHouseStorageTest, ConcurrentBatchesShareInserts) {
  base::Status error;
  TestServer* server = SharedServer(&error);
  ASSERT_NE(server, nullptr) << error.ToString();
  auto store = OpenOn(*server, "group_commit");
  ASSERT_NE(store, nullptr);
  constexpr int kThreads = 8;
  constexpr int kPerThread = 6;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        IngestBatch b = Window(static_cast<uint64_t>(i + 1), 0.5);
        b.agent_id = fmt::format("agent-{}", t);
        b.host = fmt::format("h{}", t);
        if (!store->WriteBatch(b).has_value()) ++failures;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  ClickHouseStorage::WriteCounters counters = store->write_counters();
  EXPECT_EQ(counters.batches, static_cast<uint64_t>(kThreads * kPerThread));
  EXPECT_LT(counters.groups, counters.batches);
  auto range = store->QueryRange(Utilization());
  ASSERT_TRUE(range.has_value()) << range.error().ToString();
  ASSERT_THAT(range->series, SizeIs(kThreads));
  for (const RangeSeries& series : range->series) {
    ASSERT_THAT(series.points, SizeIs(kPerThread));
    for (const Point& p : series.points) EXPECT_EQ(p.samples, 1u);
  }
}

// ClickHouse down: writes fail with Unavailable (the API answers 503, the agent keeps the batch
// and retries); back up: the retry is stored, and every batch acknowledged before is there.
TEST_F(ClickHouseStorageTest, AnOutageIsUnavailableAndLosesNothingAcknowledged) {
  auto server = TestServer::Start();
  ASSERT_TRUE(server.has_value()) << server.error().ToString();
  auto store = OpenOn(**server, "outage");
  ASSERT_NE(store, nullptr);
  for (uint64_t seq = 1; seq <= 3; ++seq) {
    ASSERT_TRUE(store->WriteBatch(Window(seq, 0.5)).has_value());
  }

  (*server)->Stop();
  auto during = store->WriteBatch(Window(4, 0.5));
  ASSERT_FALSE(during.has_value());
  EXPECT_EQ(during.error().code(), base::StatusCode::kUnavailable) << during.error().ToString();
  auto read_during = store->QueryRange(Utilization());
  ASSERT_FALSE(read_during.has_value());
  EXPECT_EQ(read_during.error().code(), base::StatusCode::kUnavailable);

  base::Status restarted = (*server)->Restart();
  ASSERT_TRUE(restarted.ok()) << restarted.ToString();
  auto retried = store->WriteBatch(Window(4, 0.5));
  ASSERT_TRUE(retried.has_value()) << retried.error().ToString();
  EXPECT_FALSE(retried->duplicate);
  auto range = store->QueryRange(Utilization());
  ASSERT_TRUE(range.has_value()) << range.error().ToString();
  ASSERT_THAT(range->series, SizeIs(1));
  EXPECT_THAT(range->series[0].points, SizeIs(4));
}

}  // namespace
}  // namespace warpscope::server

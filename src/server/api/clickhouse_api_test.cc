// SPDX-License-Identifier: Apache-2.0
// Two warpscope servers (ApiServer + ClickHouseStorage each) over one ClickHouse database, on a
// clickhouse-server the test starts on loopback: a batch retried through the other server is a
// duplicate, both answer a query alike, and ingest answers 503 while ClickHouse is down.
#include <gtest/gtest.h>
#include <httplib.h>

#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "base/time.h"
#include "server/api/api_server.h"
#include "server/storage/clickhouse/clickhouse_storage.h"
#include "server/storage/clickhouse/testing/clickhouse_server.h"
#include "warpscope/v1/batch.pb.h"

namespace warpscope::server {
namespace {

using nlohmann::json;
const int64_t kT0 = 1'700'000'000'000'000'000;  // ns

warpscope::v1::Batch MakeBatch(uint64_t sequence, double util) {
  const int64_t start_ns = kT0 + static_cast<int64_t>(sequence - 1) * 10'000'000'000;
  warpscope::v1::Batch b;
  b.set_version(1);
  b.set_agent_id("agent-1");
  b.set_sequence(sequence);
  b.set_start_unix_nano(start_ns);
  b.set_end_unix_nano(start_ns + 10'000'000'000);
  b.set_host("node1");
  auto* gpu = b.add_entities();
  gpu->set_kind(warpscope::v1::ENTITY_KIND_GPU);
  gpu->set_id("GPU-a");
  auto* m = b.add_metrics();
  m->set_key("gpu.utilization");
  m->set_kind(warpscope::v1::METRIC_KIND_GAUGE);
  m->set_unit("1");
  m->set_entity_kind(warpscope::v1::ENTITY_KIND_GPU);
  auto* s = b.add_series();
  s->set_metric(0);
  s->set_entity("GPU-a");
  s->set_avg(util);
  s->set_min(util);
  s->set_max(util);
  s->set_last(util);
  s->set_count(10);
  return b;
}

bool InCi() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && (std::string(ci) == "true" || std::string(ci) == "1");
}

// One stateless warpscope server: its store and its HTTP front.
struct Server {
  std::unique_ptr<ClickHouseStorage> storage;
  std::unique_ptr<ApiServer> api;
  std::unique_ptr<httplib::Client> client;
};

class ClickHouseApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!InCi() && clickhouse::TestServer::FindBinary().empty()) {
      GTEST_SKIP() << clickhouse::kSetupHint;
    }
    auto started = clickhouse::TestServer::Start();
    ASSERT_TRUE(started.has_value()) << started.error().ToString();
    clickhouse_ = std::move(*started);
    for (Server& s : servers_) {
      ClickHouseStorageOptions o;
      o.url = clickhouse_->Url("fleet");
      o.timeout = std::chrono::seconds(5);
      auto storage = ClickHouseStorage::Open(o);
      ASSERT_TRUE(storage.has_value()) << storage.error().ToString();
      s.storage = std::move(*storage);
      ApiServer::Options opts;
      opts.listen_address = "127.0.0.1:0";
      opts.serve_ui = false;
      s.api = std::make_unique<ApiServer>(opts, *s.storage, clock_);
      auto port = s.api->Start();
      ASSERT_TRUE(port.has_value()) << port.error().ToString();
      s.client = std::make_unique<httplib::Client>("127.0.0.1", *port);
    }
  }
  void TearDown() override {
    for (Server& s : servers_) {
      s.api.reset();
      s.storage.reset();
    }
  }

  static httplib::Result Post(Server& s, const warpscope::v1::Batch& batch) {
    return s.client->Post("/api/v1/ingest/batch", batch.SerializeAsString(),
                          "application/x-protobuf");
  }

  base::FakeClock clock_{base::FromUnixNanos(kT0 + 3'600'000'000'000)};
  std::unique_ptr<clickhouse::TestServer> clickhouse_;
  Server servers_[2];
};

TEST_F(ClickHouseApiTest, TwoServersShareDedupAndAnswerTheSameQuery) {
  for (uint64_t seq = 1; seq <= 4; ++seq) {
    auto res = Post(servers_[seq % 2], MakeBatch(seq, 0.25 * static_cast<double>(seq)));
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200) << res->body;
  }
  // The agent retries batch 2 (first stored by server 0) through server 1.
  auto again = Post(servers_[1], MakeBatch(2, 0.5));
  ASSERT_TRUE(again);
  ASSERT_EQ(again->status, 200) << again->body;
  warpscope::v1::BatchResponse reply;
  ASSERT_TRUE(reply.ParseFromString(again->body));
  EXPECT_TRUE(reply.duplicate());

  const std::string query =
      "/api/v1/query_range?metric=gpu.utilization&start=1700000000&end=1700000040&step=10s";
  auto a = servers_[0].client->Get(query);
  auto b = servers_[1].client->Get(query);
  ASSERT_TRUE(a && b);
  ASSERT_EQ(a->status, 200) << a->body;
  ASSERT_EQ(b->status, 200) << b->body;
  json ja = json::parse(a->body);
  json jb = json::parse(b->body);
  ASSERT_EQ(ja["series"].size(), 1u) << a->body;
  EXPECT_EQ(ja["series"], jb["series"]);
  ASSERT_EQ(ja["series"][0]["points"].size(), 4u) << a->body;
  EXPECT_DOUBLE_EQ(ja["series"][0]["points"][1][1].get<double>(), 0.5);
}

TEST_F(ClickHouseApiTest, IngestAnswers503WhileClickHouseIsDownAndStoresTheRetry) {
  auto first = Post(servers_[0], MakeBatch(1, 0.5));
  ASSERT_TRUE(first);
  ASSERT_EQ(first->status, 200) << first->body;

  clickhouse_->Stop();
  auto down = Post(servers_[0], MakeBatch(2, 0.5));
  ASSERT_TRUE(down);
  EXPECT_EQ(down->status, 503) << down->body;

  ASSERT_TRUE(clickhouse_->Restart().ok());
  auto retry = Post(servers_[1], MakeBatch(2, 0.5));
  ASSERT_TRUE(retry);
  ASSERT_EQ(retry->status, 200) << retry->body;
  auto range = servers_[0].client->Get(
      "/api/v1/query_range?metric=gpu.utilization&start=1700000000&end=1700000040&step=10s");
  ASSERT_TRUE(range);
  ASSERT_EQ(range->status, 200) << range->body;
  json r = json::parse(range->body);
  ASSERT_EQ(r["series"].size(), 1u);
  EXPECT_EQ(r["series"][0]["points"].size(), 2u) << range->body;
}

}  // namespace
}  // namespace warpscope::server

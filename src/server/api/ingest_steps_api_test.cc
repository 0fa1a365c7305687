// SPDX-License-Identifier: Apache-2.0
// POST /api/v1/ingest/batch with training steps: a JSON batch's steps reach the storage (read
// back with QuerySteps and ListJobs), a retried batch adds none, and an invalid step is a 400
// that stores nothing.
#include <gtest/gtest.h>
#include <httplib.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "base/testing/temp_dir.h"
#include "base/time.h"
#include "server/api/api_server.h"
#include "server/storage/sqlite_storage.h"

namespace warpscope::server {
namespace {

using nlohmann::json;
constexpr char kToken[] = "s3cret-token";
constexpr int64_t kT0 = 1'700'000'000'000'000'000;  // ns

// A JSON batch from node1 with rank 0 of job "llama" (a process) and rank 1 (on the host
// entity), two steps each; `source` is the first step's source.
std::string StepBatchJson(uint64_t sequence, const std::string& source = "nvtx") {
  json steps = json::array();
  for (int64_t step = 100; step <= 101; ++step) {
    for (int rank = 0; rank <= 1; ++rank) {
      const int64_t end = kT0 + (step - 99) * 1'000'000'000 + rank;
      steps.push_back({{"entity", rank == 0 ? "pid/42/100" : "node1"},
                       {"job", "llama"},
                       {"comm", "0123456789abcdef"},
                       {"rank", rank},
                       {"worldSize", 2},
                       {"step", std::to_string(step)},
                       {"startUnixNano", std::to_string(end - 900'000'000)},
                       {"endUnixNano", std::to_string(end)},
                       {"computeNs", "600000000"},
                       {"commNs", "200000000"},
                       {"overlapNs", "50000000"},
                       {"lastCollectiveOffsetNs", "850000000"},
                       {"ncclNs", "250000000"},
                       {"collectives", 4},
                       {"busBytes", "8000000000"},
                       {"source", "nvtx"}});
    }
  }
  steps[0]["source"] = source;
  json batch = {{"version", 1},
                {"agentId", "agent-1"},
                {"sequence", std::to_string(sequence)},
                {"startUnixNano", std::to_string(kT0)},
                {"endUnixNano", std::to_string(kT0 + 60'000'000'000)},
                {"host", "node1"},
                {"entities", {{{"kind", "ENTITY_KIND_PROCESS"}, {"id", "pid/42/100"}}}},
                {"steps", steps}};
  return batch.dump();
}

class IngestStepsApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(tmp_.path().empty());
    SqliteStorageOptions so;
    so.data_dir = tmp_.path();
    auto storage = SqliteStorage::Open(so);
    ASSERT_TRUE(storage) << storage.error().message();
    storage_ = std::move(*storage);
    ApiServer::Options opts;
    opts.listen_address = "127.0.0.1:0";
    opts.auth_token = kToken;
    api_ = std::make_unique<ApiServer>(opts, *storage_, clock_);
    auto port = api_->Start();
    ASSERT_TRUE(port) << port.error().message();
    client_ = std::make_unique<httplib::Client>("127.0.0.1", *port);
  }
  void TearDown() override {
    api_.reset();
    storage_.reset();
  }

  httplib::Result PostJson(const std::string& body) {
    return client_->Post("/api/v1/ingest/batch",
                         {{"Authorization", std::string("Bearer ") + kToken}}, body,
                         "application/json");
  }
  std::vector<StoredStep> Steps() {
    auto r = storage_->QuerySteps({.job = "llama",
                                   .start = base::FromUnixNanos(kT0),
                                   .end = base::FromUnixNanos(kT0 + 3'600'000'000'000)});
    EXPECT_TRUE(r.has_value()) << r.error().ToString();
    return r.value_or(std::vector<StoredStep>{});
  }

  base::FakeClock clock_{base::FromUnixNanos(kT0 + 3'600'000'000'000)};
  base::TempDir tmp_;  // removed after everything below
  std::unique_ptr<SqliteStorage> storage_;
  std::unique_ptr<ApiServer> api_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(IngestStepsApiTest, JsonBatchStepsAreStoredOnceAndReadBack) {
  auto res = PostJson(StepBatchJson(5));
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  auto again = PostJson(StepBatchJson(5));
  ASSERT_TRUE(again);
  ASSERT_EQ(again->status, 200) << again->body;
  EXPECT_EQ(json::parse(again->body)["duplicate"], true);

  std::vector<StoredStep> steps = Steps();

  ASSERT_EQ(steps.size(), 4u);
  const model::TrainingStep& first = steps[0].step;
  EXPECT_EQ(steps[0].host, "node1");
  EXPECT_EQ(first.entity, "pid/42/100");
  EXPECT_EQ(first.rank, 0u);
  EXPECT_EQ(first.world_size, 2u);
  EXPECT_EQ(first.step, 100);
  EXPECT_EQ(base::ToUnixNanos(first.end), kT0 + 1'000'000'000);
  EXPECT_EQ(base::ToUnixNanos(first.start), kT0 + 100'000'000);
  EXPECT_EQ(first.compute_ns, 600'000'000);
  EXPECT_EQ(first.last_collective_offset_ns, 850'000'000);
  EXPECT_EQ(first.bus_bytes, 8'000'000'000u);
  EXPECT_EQ(steps[1].step.entity, "node1");
  EXPECT_EQ(steps[1].step.rank, 1u);
  EXPECT_EQ(steps[3].step.step, 101);
  auto jobs = storage_->ListJobs(
      {.start = base::FromUnixNanos(kT0), .end = base::FromUnixNanos(kT0 + 3'600'000'000'000)});
  ASSERT_TRUE(jobs.has_value()) << jobs.error().ToString();
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_EQ((*jobs)[0].job, "llama");
  EXPECT_EQ((*jobs)[0].ranks, 2u);
  EXPECT_EQ((*jobs)[0].steps, 4u);
  EXPECT_EQ((*jobs)[0].hosts, std::vector<std::string>{"node1"});
}

TEST_F(IngestStepsApiTest, InvalidStepIs400AndStoresNothing) {
  auto res = PostJson(StepBatchJson(6, "guess"));
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 400) << res->body;
  EXPECT_NE(json::parse(res->body)["error"].get<std::string>().find("step 0 of job \"llama\""),
            std::string::npos)
      << res->body;
  EXPECT_TRUE(Steps().empty());
}

}  // namespace
}  // namespace warpscope::server

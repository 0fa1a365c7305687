// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>

#include "base/time.h"
#include "server/api/api_server.h"
#include "server/insights/insight_engine.h"
#include "server/query/testing/query_fixture.h"
#include "server/training/testing/job_builder.h"

namespace warpscope::server {
namespace {

using nlohmann::json;
using query::At;
using query::kT0;
using training::testing::JobSpec;
using training::testing::MakeJob;
using training::testing::RankEntity;
using training::testing::StepStorage;

class TrainingApiTest : public query::QueryFixture {
 protected:
  void SetUp() override {
    QueryFixture::SetUp();
    steps_ = std::make_unique<StepStorage>(*storage_);
  }
  void TearDown() override {
    api_.reset();
    engine_.reset();
    steps_.reset();
    QueryFixture::TearDown();
  }

  // Job "job/1" (8 ranks on node-a and node-b, rank 5 late by 40 ms) with steps from kT0 + 100 s
  // for 50 s; the ranks' processes, their GPUs and NCCL counters in windows from kT0 + 100 s.
  void AddJob() {
    JobSpec spec;
    spec.job = "job/1";
    spec.start = At(kT0 + 100);
    spec.late_rank = 5;
    spec.lag_ms = 40;
    steps_->Add(MakeJob(spec));
    for (int w = 0; w < 6; ++w) {
      for (const std::string host : {"node-a", "node-b"}) {
        IngestBatch b = Window(host, 100 + w * 10);
        const uint32_t first = host == "node-a" ? 0 : 4;
        for (uint32_t r = first; r < first + 4; ++r) {
          const std::string entity = RankEntity(r);
          b.entities.push_back(
              model::Entity{model::EntityKind::kProcess, entity, "",
                            model::Labels{{"process.pid", std::to_string(1000 + r)},
                                          {"process.executable.name", "python3"}}});
          AddGauge(b, "gpu.process.memory.used", model::EntityKind::kProcess, entity, 1e10,
                   model::Labels{{"gpu.uuid", "GPU-" + std::to_string(r)}});
          const model::Labels op{{"comm", "00000000000000aa"},
                                 {"comm_name", "dp"},
                                 {"rank", std::to_string(r)},
                                 {"nranks", "8"},
                                 {"collective", "AllReduce"}};
          // 10 all-reduces of 15 ms each per 10 s window, 1 GiB of bus bytes each.
          AddCounter(b, "nccl.collectives", entity, 10.0 * (w + 1), op);
          AddCounter(b, "nccl.collective.gpu_time", entity, 0.15 * (w + 1), op);
          AddCounter(b, "nccl.collective.bus_bytes", entity, 10.0 * (1 << 30) * (w + 1), op);
        }
        Write(b);
      }
    }
  }

  static void AddCounter(IngestBatch& b, const std::string& metric, const std::string& entity,
                         double value, model::Labels labels) {
    AddGauge(b, metric, model::EntityKind::kProcess, entity, value, std::move(labels));
    for (MetricInfo& m : b.metrics) {
      if (m.key == metric) m.kind = model::MetricKind::kCounter;
    }
  }

  void Serve() {
    auto engine = insights::InsightEngine::Create(*steps_, insights::EngineOptions{});
    ASSERT_TRUE(engine) << engine.error().message();
    engine_ = std::move(*engine);
    ASSERT_TRUE(engine_->Evaluate(At(kT0 + 160)).ok());
    clock_.Advance(At(kT0 + 600) - clock_.Now());
    ApiServer::Options opts;
    opts.listen_address = "127.0.0.1:0";
    opts.serve_ui = false;
    opts.insight_engine = engine_.get();
    api_ = std::make_unique<ApiServer>(opts, *steps_, clock_);
    auto port = api_->Start();
    ASSERT_TRUE(port) << port.error().message();
    client_ = std::make_unique<httplib::Client>("127.0.0.1", *port);
  }

  json Get(const std::string& path, int expect_status = 200) {
    auto r = client_->Get(path);
    EXPECT_TRUE(r);
    if (!r) return json();
    EXPECT_EQ(r->status, expect_status) << path << ": " << r->body;
    EXPECT_EQ(r->get_header_value("Content-Type"), "application/json");
    return json::parse(r->body, nullptr, false);
  }

  base::FakeClock clock_{At(kT0)};
  std::unique_ptr<StepStorage> steps_;
  std::unique_ptr<insights::InsightEngine> engine_;
  std::unique_ptr<ApiServer> api_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(TrainingApiTest, ListsJobsWithTheirStragglerAndFindings) {
  AddJob();
  Serve();
  json j = Get("/api/v1/jobs");  // the last hour
  ASSERT_EQ(j["jobs"].size(), 1u) << j.dump();
  const json& job = j["jobs"][0];
  EXPECT_EQ(job["job"], "job/1");
  EXPECT_EQ(job["world_size"], 8);
  EXPECT_EQ(job["ranks"], 8);
  EXPECT_EQ(job["steps"], 400);
  EXPECT_EQ(job["first_step"], 100);
  EXPECT_EQ(job["last_step"], 149);
  EXPECT_EQ(job["first"], (kT0 + 100) * 1000);
  EXPECT_EQ(job["last"], (kT0 + 150) * 1000);
  EXPECT_EQ(job["hosts"], json({"node-a", "node-b"}));
  EXPECT_DOUBLE_EQ(job["step_time_p50_s"].get<double>(), 1.0);
  EXPECT_NEAR(job["comm_share"].get<double>(), (7 * 0.14 + 0.10) / 8, 1e-9);
  EXPECT_EQ(job["straggler"], json({{"rank", 5}, {"host", "node-b"}, {"entity", "pid/1005/1"}}));
  EXPECT_EQ(job["findings"], 1);  // training_straggler, pending

  // A range without steps.
  j = Get("/api/v1/jobs?start=" + std::to_string(kT0 + 300) + "&end=" + std::to_string(kT0 + 400));
  EXPECT_TRUE(j["jobs"].empty());
  Get("/api/v1/jobs?start=bogus", 400);
}

TEST_F(TrainingApiTest, AnswersOneJobWithRanksStepsCollectivesAndFindings) {
  AddJob();
  Serve();
  json j =
      Get("/api/v1/jobs/job%2F1?from=" + std::to_string(kT0) + "&to=" + std::to_string(kT0 + 300));
  EXPECT_EQ(j["job"], "job/1");
  EXPECT_EQ(j["world_size"], 8);
  EXPECT_EQ(j["from"], kT0 * 1000);
  EXPECT_EQ(j["to"], (kT0 + 300) * 1000);
  EXPECT_EQ(j["complete_steps"], 50);
  EXPECT_NEAR(j["gpu_hours"].get<double>(), 8 * 50.0 / 3600, 1e-3);
  ASSERT_EQ(j["ranks"].size(), 8u);
  const json& r5 = j["ranks"][5];
  EXPECT_EQ(r5["rank"], 5);
  EXPECT_EQ(r5["host"], "node-b");
  EXPECT_EQ(r5["entity"], "pid/1005/1");
  EXPECT_EQ(r5["pid"], 1005);
  EXPECT_EQ(r5["gpus"], json({"GPU-5"}));
  EXPECT_EQ(r5["straggler"], true);
  EXPECT_EQ(r5["slow_interconnect"], false);
  EXPECT_GT(r5["late_fraction"].get<double>(), 0.9);
  ASSERT_EQ(j["steps"].size(), 50u);
  EXPECT_EQ(j["steps"][0]["step"], 100);
  EXPECT_EQ(j["steps"][0]["start"], (kT0 + 100) * 1000);
  EXPECT_EQ(j["steps"][0]["duration_s"].size(), 8u);
  EXPECT_EQ(j["steps"][0]["last_rank"], 5);
  EXPECT_EQ(j["straggler"]["rank"], 5);
  EXPECT_EQ(j["straggler"]["reason"], "late_collective");
  EXPECT_NEAR(j["straggler"]["lag_s"].get<double>(), 0.040, 0.005);
  EXPECT_TRUE(j["slow_interconnect_ranks"].empty());
  EXPECT_TRUE(j["slow_steps"].empty());
  ASSERT_EQ(j["collectives"].size(), 1u) << j["collectives"].dump();
  const json& c = j["collectives"][0];
  EXPECT_EQ(c["collective"], "AllReduce");
  EXPECT_EQ(c["comm"], "00000000000000aa");
  EXPECT_EQ(c["comm_name"], "dp");
  ASSERT_EQ(c["per_rank"].size(), 8u);
  for (const json& p : c["per_rank"]) {
    EXPECT_GT(p["count"].get<int64_t>(), 0) << p.dump();
    EXPECT_NEAR(p["mean_time_s"].get<double>(), 0.015, 1e-6) << p.dump();
    EXPECT_NEAR(p["bus_bandwidth_bytes_per_second"].get<double>(), (1 << 30) / 0.015, 1e3);
  }
  ASSERT_EQ(j["findings"].size(), 1u);
  EXPECT_EQ(j["findings"][0]["rule"], "training_straggler");

  // Fewer steps kept.
  j = Get("/api/v1/jobs/job%2F1?steps=5&start=" + std::to_string(kT0));
  ASSERT_EQ(j["steps"].size(), 5u);
  EXPECT_EQ(j["steps"][0]["step"], 145);
}

TEST_F(TrainingApiTest, UnknownJobIsNotFound) {
  AddJob();
  Serve();
  json j = Get("/api/v1/jobs/nope", 404);
  EXPECT_NE(j["error"].get<std::string>().find("nope"), std::string::npos);
}

TEST_F(TrainingApiTest, AStorageWithoutStepsHasNoJobs) {
  auto engine = insights::InsightEngine::Create(*storage_, insights::EngineOptions{});
  ASSERT_TRUE(engine);
  ApiServer::Options opts;
  opts.listen_address = "127.0.0.1:0";
  opts.serve_ui = false;
  api_ = std::make_unique<ApiServer>(opts, *storage_, clock_);
  auto port = api_->Start();
  ASSERT_TRUE(port);
  client_ = std::make_unique<httplib::Client>("127.0.0.1", *port);
  EXPECT_TRUE(Get("/api/v1/jobs")["jobs"].empty());
  Get("/api/v1/jobs/job-1", 404);
}

}  // namespace
}  // namespace warpscope::server

// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>

#include "base/time.h"
#include "server/api/api_server.h"
#include "server/insights/insight_engine.h"
#include "server/query/testing/query_fixture.h"

namespace warpscope::server {
namespace {

using nlohmann::json;
using query::At;
using query::kT0;

class InsightsApiTest : public query::QueryFixture {
 protected:
  void SetUp() override {
    QueryFixture::SetUp();
    auto engine = insights::InsightEngine::Create(*storage_, insights::EngineOptions{});
    ASSERT_TRUE(engine) << engine.error().message();
    engine_ = std::move(*engine);
  }
  void TearDown() override {
    api_.reset();
    engine_.reset();
    QueryFixture::TearDown();
  }

  void Serve(bool with_insights) {
    ApiServer::Options opts;
    opts.listen_address = "127.0.0.1:0";
    opts.serve_ui = false;
    opts.insight_engine = with_insights ? engine_.get() : nullptr;
    api_ = std::make_unique<ApiServer>(opts, *storage_, clock_);
    auto port = api_->Start();
    ASSERT_TRUE(port) << port.error().message();
    client_ = std::make_unique<httplib::Client>("127.0.0.1", *port);
  }

  // Four busy GPUs on node-1; GPU-3 holds 40 GiB and does nothing; GPU-1 has an XID 79 at
  // window 50. Evaluated after every window.
  void RunNode(int windows) {
    for (int w = 0; w < windows; ++w) {
      IngestBatch b = Window("node-1", w * 10);
      for (int i = 0; i < 4; ++i) {
        std::string uuid = "GPU-" + std::to_string(i);
        AddGpu(b, uuid, std::to_string(i));
        AddGauge(b, "gpu.utilization", model::EntityKind::kGpu, uuid, i == 3 ? 0.0 : 0.9);
        AddGauge(b, "gpu.memory.used", model::EntityKind::kGpu, uuid, 40.0 * (1 << 30));
        AddGauge(b, "gpu.temperature", model::EntityKind::kGpu, uuid, 60);
        AddGauge(b, "gpu.power.usage", model::EntityKind::kGpu, uuid, i == 3 ? 70 : 600);
      }
      if (w == 50) AddEvent(b, "GPU-1", "xid", 79);
      Write(b);
      ASSERT_TRUE(engine_->Evaluate(At(kT0 + (w + 1) * 10)).ok());
    }
    clock_.Advance(At(kT0 + windows * 10) - clock_.Now());
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
  std::unique_ptr<insights::InsightEngine> engine_;
  std::unique_ptr<ApiServer> api_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(InsightsApiTest, ListsFindingsWithTotalsAndRulesAndFiltersThem) {
  RunNode(66);  // 11 minutes: past the idle window
  Serve(true);
  json all = Get("/api/v1/insights");
  ASSERT_TRUE(all["insights"].is_array());
  ASSERT_EQ(all["insights"].size(), 2u) << all.dump(2);
  std::set<std::string> rules;
  for (const json& f : all["insights"]) {
    rules.insert(f["rule"].get<std::string>());
    EXPECT_FALSE(f["evidence"].contains("series")) << "the list leaves the series out";
    EXPECT_EQ(f["host"], "node-1");
  }
  EXPECT_EQ(rules, (std::set<std::string>{"hardware_errors", "idle_allocated"}));
  EXPECT_EQ(all["totals"]["firing"], 2);
  EXPECT_GT(all["totals"]["gpu_hours"].get<double>(), 0) << "idle time is lost GPU time";
  EXPECT_GE(all["rules"].size(), 6u);

  json paged = Get("/api/v1/insights?severity=page");
  ASSERT_EQ(paged["insights"].size(), 1u);
  const json& xid = paged["insights"][0];
  EXPECT_EQ(xid["rule"], "hardware_errors");
  EXPECT_EQ(xid["entity"], "GPU-1");
  EXPECT_EQ(xid["attributes"]["gpu.index"], "1");
  EXPECT_EQ(Get("/api/v1/insights?rule=idle_allocated&entity=GPU-3")["insights"].size(), 1u);
  EXPECT_EQ(Get("/api/v1/insights?host=node-2")["insights"].size(), 0u);
  EXPECT_EQ(Get("/api/v1/insights?state=resolved")["insights"].size(), 0u);
  // Before the findings began.
  EXPECT_EQ(Get("/api/v1/insights?start=" + std::to_string(kT0 - 3600) +
                "&end=" + std::to_string(kT0))["insights"]
                .size(),
            0u);

  json one = Get("/api/v1/insights/" + xid["id"].get<std::string>());
  EXPECT_EQ(one["id"], xid["id"]);
  EXPECT_TRUE(one["evidence"].contains("series")) << "one finding has its full evidence";
  EXPECT_NE(one["summary"].get<std::string>().find("XID 79"), std::string::npos);
}

TEST_F(InsightsApiTest, BadFiltersAndUnknownIdsGetJsonErrorsNamingTheFix) {
  Serve(true);
  EXPECT_NE(Get("/api/v1/insights?severity=urgent", 400)["error"].get<std::string>().find(
                "page, ticket or info"),
            std::string::npos);
  EXPECT_NE(Get("/api/v1/insights?state=open", 400)["error"].get<std::string>().find(
                "pending, firing or resolved"),
            std::string::npos);
  EXPECT_NE(Get("/api/v1/insights?rule=overheating", 400)["error"].get<std::string>().find(
                "unknown rule"),
            std::string::npos);
  EXPECT_FALSE(Get("/api/v1/insights?limit=-3", 400)["error"].get<std::string>().empty());
  EXPECT_FALSE(Get("/api/v1/insights?start=yesterday", 400)["error"].get<std::string>().empty());
  EXPECT_NE(Get("/api/v1/insights/f0000000000000000", 404)["error"].get<std::string>().find(
                "GET /api/v1/insights"),
            std::string::npos);
}

TEST_F(InsightsApiTest, AServerWithInsightsOffSaysHowToTurnThemOn) {
  Serve(false);
  EXPECT_NE(Get("/api/v1/insights", 404)["error"].get<std::string>().find("--insights-interval"),
            std::string::npos);
}

}  // namespace
}  // namespace warpscope::server

// SPDX-License-Identifier: Apache-2.0
#include "server/insights/insight_engine.h"

#include <gtest/gtest.h>

#include "server/insights/testing/memory_finding_store.h"
#include "server/query/testing/query_fixture.h"

namespace warpscope::server::insights {
namespace {

using query::At;
using query::kT0;

class InsightEngineTest : public query::QueryFixture {
 protected:
  // Window `w` (10 s each) of node-1: eight busy GPUs; GPU-2's cooling fails at window 30 and
  // it heats by 2 °C per window (12 °C/min) up to 88 °C, then holds there.
  void WriteWindow(int w, bool cooling_fails) {
    IngestBatch b = Window("node-1", w * 10);
    for (int i = 0; i < 8; ++i) {
      std::string uuid = "GPU-" + std::to_string(i);
      AddGpu(b, uuid, std::to_string(i));
      double t = 63;
      if (cooling_fails && i == 2 && w >= 30) t = std::min(88.0, 63.0 + 2 * (w - 29));
      AddGauge(b, "gpu.temperature", model::EntityKind::kGpu, uuid, t);
      AddGauge(b, "gpu.power.usage", model::EntityKind::kGpu, uuid, 650);
      AddGauge(b, "gpu.utilization", model::EntityKind::kGpu, uuid, 0.97);
    }
    Write(b);
  }
};

TEST_F(InsightEngineTest, ACoolingFailureFiresWithinAMinuteNamesItsGpuAndResolvesWhenCool) {
  auto engine = InsightEngine::Create(*storage_, EngineOptions{});
  ASSERT_TRUE(engine) << engine.error().message();
  std::optional<int> fired_at;
  for (int w = 0; w < 40; ++w) {
    WriteWindow(w, /*cooling_fails=*/true);
    ASSERT_TRUE((*engine)->Evaluate(At(kT0 + (w + 1) * 10)).ok());
    for (const Finding& f : (*engine)->Findings()) {
      if (f.rule == "cooling_failure" && f.state == FindingState::kFiring && !fired_at) {
        fired_at = w;
        EXPECT_EQ(f.entity, "GPU-2");
        EXPECT_EQ(f.severity, Severity::kPage);
        EXPECT_EQ(f.attributes.Get("gpu.index"), "2");
        EXPECT_FALSE(f.evidence["series"].empty());
      }
    }
  }
  ASSERT_TRUE(fired_at);
  EXPECT_LE(*fired_at - 30, 6) << "fired " << (*fired_at - 30) * 10 << " s after the fault";
  // The temperature holds at 88 °C: the climb is over, so after clear_after it resolves; the
  // GPU stays a thermal outlier against its seven peers.
  for (int w = 40; w < 80; ++w) {
    WriteWindow(w, true);
    ASSERT_TRUE((*engine)->Evaluate(At(kT0 + (w + 1) * 10)).ok());
  }
  bool resolved = false, outlier = false;
  for (const Finding& f : (*engine)->Findings()) {
    resolved = resolved || (f.rule == "cooling_failure" && f.state == FindingState::kResolved);
    outlier = outlier || (f.rule == "thermal_outlier" && f.entity == "GPU-2" &&
                          f.state == FindingState::kFiring);
  }
  EXPECT_TRUE(resolved);
  EXPECT_TRUE(outlier);
}

TEST_F(InsightEngineTest, AHealthyNodeRaisesNothing) {
  auto engine = InsightEngine::Create(*storage_, EngineOptions{});
  ASSERT_TRUE(engine);
  for (int w = 0; w < 90; ++w) {
    WriteWindow(w, /*cooling_fails=*/false);
    ASSERT_TRUE((*engine)->Evaluate(At(kT0 + (w + 1) * 10)).ok());
  }
  EXPECT_TRUE((*engine)->Findings().empty());
}

TEST_F(InsightEngineTest, FindingsSurviveARestartWithTheirIdStartAndWaste) {
  testing::MemoryFindingStore store;
  EngineOptions options;
  options.config.gpu_hour_price = 3;
  {
    auto engine = InsightEngine::Create(*storage_, options, &store);
    ASSERT_TRUE(engine);
    for (int w = 0; w < 36; ++w) {
      WriteWindow(w, true);
      ASSERT_TRUE((*engine)->Evaluate(At(kT0 + (w + 1) * 10)).ok());
    }
  }
  ASSERT_FALSE(store.saved.empty());
  const Finding before = store.saved[0];
  EXPECT_EQ(before.rule, "cooling_failure");
  auto engine = InsightEngine::Create(*storage_, options, &store);
  ASSERT_TRUE(engine);
  std::optional<Finding> again = (*engine)->FindingById(before.id);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->start, before.start);
  EXPECT_EQ(again->state, FindingState::kFiring);
  WriteWindow(36, true);
  ASSERT_TRUE((*engine)->Evaluate(At(kT0 + 370)).ok());
  std::vector<Finding> open = (*engine)->Findings({.rule = "cooling_failure"});
  ASSERT_EQ(open.size(), 1u);
  EXPECT_EQ(open[0].id, before.id) << "the same finding continues, not a new one";
  EXPECT_EQ(open[0].end, At(kT0 + 370));
}

TEST_F(InsightEngineTest, AStoreThatFailsIsReportedAndTheFindingsStayInMemory) {
  testing::MemoryFindingStore store;
  store.load_error = base::Unavailable("disk gone");
  auto engine = InsightEngine::Create(*storage_, EngineOptions{}, &store);
  ASSERT_TRUE(engine) << "a store that cannot be read starts the engine empty";
  store.save_error = base::Unavailable("disk full");
  base::Status last;
  for (int w = 0; w < 36; ++w) {
    WriteWindow(w, true);
    last = (*engine)->Evaluate(At(kT0 + (w + 1) * 10));
  }
  EXPECT_FALSE(last.ok());
  EXPECT_NE(last.message().find("disk full"), std::string::npos);
  EXPECT_FALSE((*engine)->Findings().empty());
  // A server without findings never writes a file.
  testing::MemoryFindingStore quiet;
  auto healthy = InsightEngine::Create(*storage_, EngineOptions{}, &quiet);
  ASSERT_TRUE(healthy);
  ASSERT_TRUE((*healthy)->Evaluate(At(kT0)).ok());
  EXPECT_EQ(quiet.saves, 0);
}

TEST_F(InsightEngineTest, BadSettingsAreRefusedNamingTheSetting) {
  EngineOptions options;
  options.config.thermal_outlier_c = -1;
  auto engine = InsightEngine::Create(*storage_, options);
  ASSERT_FALSE(engine);
  EXPECT_NE(engine.error().message().find("thermal-outlier-c"), std::string::npos);
  options = EngineOptions{};
  options.step = std::chrono::milliseconds(10);
  EXPECT_FALSE(InsightEngine::Create(*storage_, options));
}

}  // namespace
}  // namespace warpscope::server::insights

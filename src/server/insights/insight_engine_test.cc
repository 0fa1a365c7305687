// SPDX-License-Identifier: Apache-2.0
#include "server/insights/insight_engine.h"

#include <gtest/gtest.h>

#include "server/insights/rule.h"
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

  // Adds to `b`: a vLLM process serving "llama" on four GPUs at ~12 % utilization, its batches
  // at 10 % of max_num_seqs (5 % of max_num_batched_tokens), its p95 time to first token 90 ms
  // (p99 900 ms); and a TGI process serving "falcon" on GPU-4 (busy, no TTFT histogram).
  static void AddServing(IngestBatch& b, double efficiency = 0.10) {
    using model::EntityKind;
    for (int i = 0; i < 5; ++i) {
      std::string uuid = "GPU-" + std::to_string(i);
      AddGpu(b, uuid, std::to_string(i));
      AddGauge(b, "gpu.utilization", EntityKind::kGpu, uuid, i < 4 ? 0.12 : 0.9);
    }
    b.entities.push_back(
        model::Entity{EntityKind::kProcess, "pid/4242/7", b.host,
                      model::Labels{{"process.pid", "4242"},
                                    {"inference.engine", "vllm"},
                                    {"inference.gpu.uuids", "GPU-0,GPU-1,GPU-2,GPU-3"}}});
    b.entities.push_back(model::Entity{EntityKind::kProcess, "pid/5000/7", b.host,
                                       model::Labels{{"process.pid", "5000"},
                                                     {"inference.engine", "tgi"},
                                                     {"inference.gpu.uuids", "GPU-4"}}});
    auto gauge = [&](const std::string& metric, const std::string& entity, double v,
                     model::Labels labels) {
      AddGauge(b, metric, EntityKind::kProcess, entity, v, std::move(labels));
    };
    gauge("inference.batch.efficiency", "pid/4242/7", efficiency,
          {{"model", "llama"}, {"basis", "sequences"}});
    gauge("inference.batch.efficiency", "pid/4242/7", efficiency / 2,
          {{"model", "llama"}, {"basis", "tokens"}});
    gauge("inference.request.rate", "pid/4242/7", 2.1, {{"model", "llama"}});
    gauge("inference.requests.waiting", "pid/4242/7", 0, {{"model", "llama"}});
    gauge("inference.time_to_first_token", "pid/4242/7", 0.09,
          {{"model", "llama"}, {"quantile", "0.95"}});
    gauge("inference.time_to_first_token", "pid/4242/7", 0.9,
          {{"model", "llama"}, {"quantile", "0.99"}});
    gauge("inference.batch.efficiency", "pid/5000/7", 0.7,
          {{"model", "falcon"}, {"basis", "sequences"}});
    gauge("inference.requests.waiting", "pid/5000/7", 0, {{"model", "falcon"}});
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

TEST_F(InsightEngineTest, ReconfigureAppliesNewThresholdsAndRefusesBadOnes) {
  auto engine = InsightEngine::Create(*storage_, EngineOptions{});
  ASSERT_TRUE(engine) << engine.error().message();
  EngineOptions bad;
  bad.lookback = bad.step * 2;
  base::Status refused = (*engine)->Reconfigure(bad);
  EXPECT_EQ(refused.code(), base::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("lookback"), std::string::npos) << refused.message();
  // A cooling rate no GPU reaches: the failure that fires with the defaults stays quiet.
  EngineOptions calm;
  calm.config.cooling_rate_c_per_min = 1000;
  ASSERT_TRUE((*engine)->Reconfigure(calm).ok());
  for (int w = 0; w < 40; ++w) {
    WriteWindow(w, /*cooling_fails=*/true);
    ASSERT_TRUE((*engine)->Evaluate(At(kT0 + (w + 1) * 10)).ok());
  }
  for (const Finding& f : (*engine)->Findings()) EXPECT_NE(f.rule, "cooling_failure");
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

TEST_F(InsightEngineTest, AnOverprovisionedServingPoolFiresWithTheGpuHoursItCouldFree) {
  EngineOptions options;
  options.config.gpu_hour_price = 2;
  auto engine = InsightEngine::Create(*storage_, options);
  ASSERT_TRUE(engine) << engine.error().message();
  for (int w = 0; w < 70; ++w) {
    IngestBatch b = Window("node-2", w * 10);
    AddServing(b);
    Write(b);
    ASSERT_TRUE((*engine)->Evaluate(At(kT0 + (w + 1) * 10)).ok());
  }
  std::vector<Finding> found = (*engine)->Findings();
  ASSERT_EQ(found.size(), 1u);
  const Finding f = found[0];
  EXPECT_EQ(f.rule, "inference_overprovisioned");
  EXPECT_EQ(f.state, FindingState::kFiring);
  EXPECT_EQ(f.host, "node-2");
  EXPECT_EQ(f.entity, "pid/4242/7");
  EXPECT_EQ(f.kind, model::EntityKind::kProcess);
  EXPECT_EQ(f.attributes.Get("model"), "llama");
  EXPECT_EQ(f.attributes.Get("inference.engine"), "vllm");
  // The sequences basis (10 %), the limit the engine is closest to, is the efficiency judged.
  EXPECT_NEAR(f.evidence["batch_efficiency"].get<double>(), 0.1, 1e-6);
  EXPECT_NEAR(f.evidence["gpu_utilization"].get<double>(), 0.12, 1e-6);
  EXPECT_EQ(f.evidence["pool"]["gpus_freeable"], 3);
  // Three GPUs freeable, charged for every evaluation after the first sighting.
  EXPECT_GT(f.waste.gpu_hours, 0);
  EXPECT_NEAR(f.waste.cost, f.waste.gpu_hours * 2, 1e-9);
  EXPECT_EQ(AlertName(f.rule), "InferenceOverprovisioned");

  // The load grows to 70 % of the batch limit: once most of the window is busy and the rule's
  // clear duration has passed, the finding resolves with the waste it had run up.
  const double charged = f.waste.gpu_hours;
  for (int w = 70; w < 120; ++w) {
    IngestBatch b = Window("node-2", w * 10);
    AddServing(b, 0.7);
    Write(b);
    ASSERT_TRUE((*engine)->Evaluate(At(kT0 + (w + 1) * 10)).ok());
  }
  found = (*engine)->Findings({.rule = "inference_overprovisioned"});
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].id, f.id);
  EXPECT_EQ(found[0].state, FindingState::kResolved);
  EXPECT_GT(found[0].waste.gpu_hours, charged);
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

// SPDX-License-Identifier: Apache-2.0
#include "agent/agent.h"

#include <gtest/gtest.h>

#include "agent/sources/testing/fake_source.h"
#include "base/testing/fake_task_runner.h"
#include "exporters/testing/in_memory_exporter.h"

namespace warpscope::agent {
namespace {

using model::EntityKind;
using model::MetricDesc;
using model::MetricKind;
using std::chrono::seconds;

constexpr MetricDesc kTemp{"gpu.temperature", EntityKind::kGpu, MetricKind::kGauge, "Cel", "t",
                           "DCGM_FI_DEV_GPU_TEMP", 1, "hw.temperature"};

class AgentTest : public ::testing::Test {
 protected:
  AgentTest() : runner_(clock_) {}

  std::unique_ptr<Agent> MakeAgent(base::Duration collect, base::Duration exp) {
    Agent::Options opts{collect, exp,
                        model::Entity{EntityKind::kHost, "node1", "", {{"host.name", "node1"}}},
                        "test"};
    auto agent = std::make_unique<Agent>(opts, runner_, clock_);
    auto cycle = std::make_unique<exporters::InMemoryExporter>("cycle");
    auto window = std::make_unique<exporters::InMemoryExporter>("window");
    cycle_ = cycle.get();
    window_ = window.get();
    agent->AddCycleExporter(std::move(cycle));
    agent->AddWindowExporter(std::move(window));
    return agent;
  }

  base::FakeClock clock_;
  base::FakeTaskRunner runner_;
  exporters::InMemoryExporter* cycle_ = nullptr;
  exporters::InMemoryExporter* window_ = nullptr;
};

TEST_F(AgentTest, CollectsEveryIntervalAndExportsEveryWindow) {
  auto agent = MakeAgent(seconds(10), seconds(30));
  double temp = 50;
  auto src = std::make_unique<FakeSource>("fake", [&](base::TimePoint, model::SampleSink& out) {
    out.AddEntity(model::Entity{EntityKind::kGpu, "GPU-a", "", {}});
    out.AddValue(kTemp, "GPU-a", temp);
    temp += 10;
  });
  FakeSource* fake = src.get();
  agent->AddSource({std::move(src), nullptr});
  agent->Start();
  runner_.RunUntilIdle();
  EXPECT_EQ(fake->polls, 1);
  runner_.AdvanceTimeAndRun(seconds(30));  // cycles at 10, 20, 30; window closes at 30
  EXPECT_EQ(fake->polls, 4);
  EXPECT_EQ(cycle_->frames().size(), 4u);
  ASSERT_EQ(window_->frames().size(), 1u);
  const model::Frame& w = window_->frames()[0];
  const model::SeriesPoint* temp_point = nullptr;
  for (const auto& p : w.series) {
    if (p.metric == &kTemp) temp_point = &p;
  }
  ASSERT_NE(temp_point, nullptr);
  EXPECT_EQ(temp_point->count, 4u);
  EXPECT_DOUBLE_EQ(temp_point->min, 50);
  EXPECT_DOUBLE_EQ(temp_point->max, 80);
  EXPECT_DOUBLE_EQ(temp_point->avg, 65);
}

TEST_F(AgentTest, FailingSourceIsSkippedAndReported) {
  auto agent = MakeAgent(seconds(1), seconds(1));
  auto bad = std::make_unique<FakeSource>("nvml", nullptr,
                                          base::Unavailable("NVML library not found"));
  FakeSource* bad_ptr = bad.get();
  auto good = std::make_unique<FakeSource>("procfs", nullptr);
  FakeSource* good_ptr = good.get();
  agent->AddSource({std::move(bad), nullptr});
  agent->AddSource({std::move(good), nullptr});
  agent->Start();
  runner_.RunUntilIdle();
  EXPECT_EQ(bad_ptr->polls, 0);
  EXPECT_EQ(good_ptr->polls, 1);
  EXPECT_EQ(agent->self_stats().errors("nvml", "start_failed"), 1u);
  bool saw_down = false;
  for (const auto& p : cycle_->frames().back().series) {
    if (p.metric->key == "agent.source.up" && p.labels.Get("source") == "nvml") {
      saw_down = p.last == 0;
    }
  }
  EXPECT_TRUE(saw_down);
}

TEST_F(AgentTest, BeforePollSeesEarlierSources) {
  auto agent = MakeAgent(seconds(1), seconds(1));
  agent->AddSource({std::make_unique<FakeSource>("gpu",
                                                 [](base::TimePoint, model::SampleSink& out) {
                                                   out.AddEntity(model::Entity{
                                                       EntityKind::kProcess, "pid/7/1", "", {}});
                                                 }),
                    nullptr});
  size_t seen = 0;
  agent->AddSource({std::make_unique<FakeSource>("host", nullptr),
                    [&](const Aggregator& agg) { seen = agg.cycle_entities().size(); }});
  agent->Start();
  runner_.RunUntilIdle();
  EXPECT_EQ(seen, 2u);  // the host entity and the process
}

TEST_F(AgentTest, StopFlushesAFinalWindowAndStopsSources) {
  auto agent = MakeAgent(seconds(10), seconds(60));
  auto src = std::make_unique<FakeSource>("fake", nullptr);
  FakeSource* fake = src.get();
  agent->AddSource({std::move(src), nullptr});
  agent->Start();
  runner_.AdvanceTimeAndRun(seconds(20));
  EXPECT_TRUE(window_->frames().empty());
  agent->Stop();
  EXPECT_EQ(window_->frames().size(), 1u);
  EXPECT_TRUE(fake->stopped);
  EXPECT_TRUE(window_->shut_down());
  int polls = fake->polls;
  runner_.AdvanceTimeAndRun(seconds(60));
  EXPECT_EQ(fake->polls, polls);
}

}  // namespace
}  // namespace warpscope::agent

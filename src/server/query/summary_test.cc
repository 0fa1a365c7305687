// SPDX-License-Identifier: Apache-2.0
#include "server/query/summary.h"

#include <gtest/gtest.h>

#include "server/query/testing/query_fixture.h"

namespace warpscope::server::query {
namespace {

using model::EntityKind;
using nlohmann::json;

class SummaryTest : public QueryFixture {
 protected:
  // node1: GPU-a at 0.9 then 0.5, host memory, and the CPU per mode (idle 0.25 then 0.35);
  // node2: GPU-z.
  void WriteHosts() {
    for (int64_t offset : {0, 10}) {
      IngestBatch b = Window("node1", offset);
      AddGpu(b, "GPU-a", "0");
      AddGauge(b, "gpu.utilization", EntityKind::kGpu, "GPU-a", offset == 0 ? 0.9 : 0.5);
      AddGauge(b, "host.memory.used", EntityKind::kHost, "node1", 8e9);
      AddGauge(b, "host.cpu.utilization", EntityKind::kHost, "node1", offset == 0 ? 0.25 : 0.35,
               model::Labels{{"mode", "idle"}});
      AddGauge(b, "host.cpu.utilization", EntityKind::kHost, "node1", 0.6,
               model::Labels{{"mode", "user"}});
      Write(b);
    }
    IngestBatch b = Window("node2", 0);
    AddGpu(b, "GPU-z", "0");
    AddGauge(b, "gpu.utilization", EntityKind::kGpu, "GPU-z", 0.1);
    Write(b);
  }
};

TEST_F(SummaryTest, GivesAvgMaxAndLatestPerGpu) {
  WriteHosts();
  auto s = SummarizeHost(*storage_, "node1", At(kT0), At(kT0 + 60));
  ASSERT_TRUE(s) << s.error().message();
  EXPECT_EQ(s->host, "node1");
  ASSERT_EQ(s->gpus.size(), 1u);
  const EntitySummary& gpu = s->gpus.at("GPU-a");
  EXPECT_EQ(gpu.attributes.Get("gpu.index"), "0");
  const MetricSummary& util = gpu.metrics.at("gpu.utilization");
  EXPECT_NEAR(util.avg.value_or(-1), 0.7, 1e-9);
  EXPECT_NEAR(util.max.value_or(-1), 1.0, 1e-9);
  EXPECT_NEAR(util.latest.value_or(-1), 0.5, 1e-9);
  // Metrics never sent (GPM, temperatures) are absent, not zero.
  EXPECT_EQ(gpu.metrics.count("gpu.sm.active"), 0u);
  EXPECT_EQ(gpu.metrics.size(), 1u);
}

TEST_F(SummaryTest, ReportsTheCpuAsTheComplementOfIdle) {
  WriteHosts();
  auto s = SummarizeHost(*storage_, "node1", At(kT0), At(kT0 + 60));
  ASSERT_TRUE(s) << s.error().message();
  EXPECT_EQ(s->host_metrics.count("host.cpu.utilization"), 0u);
  ASSERT_EQ(s->host_metrics.count("host.cpu.busy"), 1u);
  const MetricSummary& busy = s->host_metrics.at("host.cpu.busy");
  EXPECT_NEAR(busy.avg.value_or(-1), 0.7, 1e-9);      // 1 - (0.25 + 0.35) / 2
  EXPECT_NEAR(busy.latest.value_or(-1), 0.65, 1e-9);  // 1 - 0.35
  EXPECT_FALSE(busy.max.has_value());
  EXPECT_NEAR(s->host_metrics.at("host.memory.used").latest.value_or(-1), 8e9, 1e-3);
}

TEST_F(SummaryTest, CoversOnlyTheHostAskedFor) {
  WriteHosts();
  auto s = SummarizeHost(*storage_, "node2", At(kT0), At(kT0 + 60));
  ASSERT_TRUE(s) << s.error().message();
  ASSERT_EQ(s->gpus.size(), 1u);
  EXPECT_EQ(s->gpus.count("GPU-z"), 1u);
  EXPECT_TRUE(s->host_metrics.empty());
}

TEST_F(SummaryTest, AnUnknownHostOrAnEmptyStorageIsAnEmptySummary) {
  auto empty = SummarizeHost(*storage_, "node1", At(kT0), At(kT0 + 60));
  ASSERT_TRUE(empty) << empty.error().message();
  EXPECT_TRUE(empty->gpus.empty());
  EXPECT_TRUE(empty->host_metrics.empty());
  WriteHosts();
  auto unknown = SummarizeHost(*storage_, "node9", At(kT0), At(kT0 + 60));
  ASSERT_TRUE(unknown) << unknown.error().message();
  EXPECT_TRUE(unknown->gpus.empty());
}

TEST_F(SummaryTest, JsonListsGpusWithTheirMetrics) {
  WriteHosts();
  auto s = SummarizeHost(*storage_, "node1", At(kT0), At(kT0 + 60));
  ASSERT_TRUE(s) << s.error().message();
  json j = SummaryJson(*s);
  EXPECT_EQ(j["host"], "node1");
  EXPECT_EQ(j["start"], kT0);
  EXPECT_EQ(j["end"], kT0 + 60);
  ASSERT_EQ(j["gpus"].size(), 1u);
  EXPECT_EQ(j["gpus"][0]["entity"], "GPU-a");
  EXPECT_EQ(j["gpus"][0]["attributes"]["gpu.index"], "0");
  EXPECT_NEAR(j["gpus"][0]["metrics"]["gpu.utilization"]["avg"].get<double>(), 0.7, 1e-9);
  EXPECT_FALSE(j["host_metrics"]["host.cpu.busy"].contains("max"));
  EXPECT_TRUE(j["host_metrics"].contains("host.memory.used"));
  EXPECT_TRUE(SummaryJson(HostSummary{}).at("host_metrics").is_object());
}

}  // namespace
}  // namespace warpscope::server::query

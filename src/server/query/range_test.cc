// SPDX-License-Identifier: Apache-2.0
#include "server/query/range.h"

#include <gtest/gtest.h>

#include "server/query/testing/query_fixture.h"

namespace warpscope::server::query {
namespace {

using model::EntityKind;
using nlohmann::json;

class RangeTest : public QueryFixture {
 protected:
  // Two python3 processes and one trainer on GPU-a, one python3 process on GPU-b.
  void WriteProcesses() {
    IngestBatch b = Window("node2", 0);
    struct Proc {
      const char* id;
      const char* exe;
      const char* gpu;
      double util;
    };
    for (const Proc& p :
         {Proc{"pid/1/0", "python3", "GPU-a", 0.25}, Proc{"pid/2/0", "python3", "GPU-a", 0.5},
          Proc{"pid/3/0", "trainer", "GPU-a", 0.125}, Proc{"pid/4/0", "python3", "GPU-b", 1.0}}) {
      AddProcess(b, p.id, p.exe);
      AddGauge(b, "gpu.process.sm.utilization", EntityKind::kProcess, p.id, p.util,
               model::Labels{{"gpu.uuid", p.gpu}});
    }
    Write(b);
  }
  RangeQuery Minute(const std::string& metric) {
    RangeQuery q;
    q.metric = metric;
    q.start = At(kT0);
    q.end = At(kT0 + 60);
    q.step = std::chrono::minutes(1);
    return q;
  }
};

TEST_F(RangeTest, BreakdownSumsPerExecutableLargestFirst) {
  WriteProcesses();
  auto b = QueryBreakdown(*storage_, Minute("gpu.process.sm.utilization"), kDefaultBreakdownBy);
  ASSERT_TRUE(b) << b.error().message();
  ASSERT_EQ(b->groups.size(), 2u);
  EXPECT_EQ(b->groups[0].key, "python3");
  EXPECT_EQ(b->groups[0].entities, 3u);
  EXPECT_EQ(b->groups[0].series, 3u);
  ASSERT_EQ(b->groups[0].points.size(), 1u);
  EXPECT_NEAR(b->groups[0].points[0].value, 1.75, 1e-9);
  EXPECT_EQ(b->groups[1].key, "trainer");
  EXPECT_NEAR(b->groups[1].total, 0.125, 1e-9);
}

TEST_F(RangeTest, BreakdownByALabelOrByEntity) {
  WriteProcesses();
  auto by_gpu = QueryBreakdown(*storage_, Minute("gpu.process.sm.utilization"), "gpu.uuid");
  ASSERT_TRUE(by_gpu) << by_gpu.error().message();
  ASSERT_EQ(by_gpu->groups.size(), 2u);
  EXPECT_EQ(by_gpu->groups[0].key, "GPU-b");
  EXPECT_NEAR(by_gpu->groups[0].points[0].value, 1.0, 1e-9);
  auto by_entity = QueryBreakdown(*storage_, Minute("gpu.process.sm.utilization"), "entity");
  ASSERT_TRUE(by_entity) << by_entity.error().message();
  ASSERT_EQ(by_entity->groups.size(), 4u);
  EXPECT_EQ(by_entity->groups[0].key, "pid/4/0");
}

TEST_F(RangeTest, BreakdownOfAnUnknownMetricIsNotFound) {
  auto b = QueryBreakdown(*storage_, Minute("no.such.metric"), kDefaultBreakdownBy);
  ASSERT_FALSE(b);
  EXPECT_EQ(b.error().code(), base::StatusCode::kNotFound);
}

TEST_F(RangeTest, BreakdownJsonNamesTheGroupingAndTheStep) {
  WriteProcesses();
  RangeQuery q = Minute("gpu.process.sm.utilization");
  auto b = QueryBreakdown(*storage_, q, kDefaultBreakdownBy);
  ASSERT_TRUE(b) << b.error().message();
  json j = BreakdownJson(*b, q, kDefaultBreakdownBy);
  EXPECT_EQ(j["by"], "process.executable.name");
  EXPECT_EQ(j["metric"]["key"], "gpu.process.sm.utilization");
  EXPECT_DOUBLE_EQ(j["step"].get<double>(), 60.0);
  EXPECT_EQ(j["aggregation"], "avg");
  EXPECT_EQ(j["groups"][0]["key"], "python3");
  EXPECT_NEAR(j["groups"][0]["points"][0][1].get<double>(), 1.75, 1e-9);
}

TEST_F(RangeTest, RangeJsonWritesWholeSecondsAsIntegers) {
  for (int64_t offset : {0, 10}) {
    IngestBatch b = Window("node1", offset);
    AddGpu(b, "GPU-a", "0");
    AddGauge(b, "gpu.utilization", EntityKind::kGpu, "GPU-a", offset == 0 ? 0.9 : 0.5);
    Write(b);
  }
  RangeQuery q = Minute("gpu.utilization");
  q.step = std::chrono::seconds(10);
  auto j = RangeJson(*storage_, q);
  ASSERT_TRUE(j) << j.error().message();
  EXPECT_EQ((*j)["resolutions"], json::array({"raw"}));
  ASSERT_EQ((*j)["series"].size(), 1u);
  const json& s = (*j)["series"][0];
  EXPECT_EQ(s["host"], "node1");
  EXPECT_EQ(s["entity"], "GPU-a");
  EXPECT_EQ(s["kind"], "gpu");
  EXPECT_EQ(s["attributes"]["gpu.index"], "0");
  ASSERT_EQ(s["points"].size(), 2u);
  EXPECT_TRUE(s["points"][0][0].is_number_integer());
  EXPECT_EQ(s["points"][1][0], kT0 + 10);
  EXPECT_NEAR(s["points"][1][1].get<double>(), 0.5, 1e-9);
}

TEST_F(RangeTest, TopWithSparklines) {
  for (int64_t offset : {0, 30}) {
    IngestBatch b = Window("node1", offset);
    AddGpu(b, "GPU-a", "0");
    AddGpu(b, "GPU-b", "1");
    AddGauge(b, "gpu.utilization", EntityKind::kGpu, "GPU-a", offset == 0 ? 0.9 : 0.5);
    AddGauge(b, "gpu.utilization", EntityKind::kGpu, "GPU-b", 0.1);
    Write(b);
  }
  TopQuery q;
  q.metric = "gpu.utilization";
  q.match.entity_kind = EntityKind::kGpu;
  q.start = At(kT0);
  q.end = At(kT0 + 60);
  auto rows = QueryTop(*storage_, q, 6);
  ASSERT_TRUE(rows) << rows.error().message();
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0].entry.entity, "GPU-a");
  ASSERT_TRUE((*rows)[0].sparkline.has_value());
  // 10 s buckets over the minute: data in the first and the fourth, the others absent.
  ASSERT_EQ((*rows)[0].sparkline->size(), 2u);
  EXPECT_EQ((*rows)[0].sparkline->at(1).time, At(kT0 + 30));
  EXPECT_NEAR((*rows)[0].sparkline->at(1).value, 0.5, 1e-9);
  json j = TopJson(q.metric, *rows);
  EXPECT_EQ(j["metric"], "gpu.utilization");
  EXPECT_EQ(j["entries"][1]["entity"], "GPU-b");
  EXPECT_TRUE(j["entries"][1].contains("sparkline"));

  auto plain = QueryTop(*storage_, q, 0);
  ASSERT_TRUE(plain) << plain.error().message();
  EXPECT_FALSE((*plain)[0].sparkline.has_value());
  EXPECT_FALSE(TopJson(q.metric, *plain)["entries"][0].contains("sparkline"));
}

}  // namespace
}  // namespace warpscope::server::query

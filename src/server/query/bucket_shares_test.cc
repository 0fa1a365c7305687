// SPDX-License-Identifier: Apache-2.0
// Breakdowns of processes that come and go inside one step: the sums are of what ran at each
// moment, so a stacked chart never shows more than the GPU had.
#include "server/query/bucket_shares.h"

#include <gtest/gtest.h>

#include "server/query/range.h"
#include "server/query/testing/query_fixture.h"

namespace warpscope::server::query {
namespace {

using model::EntityKind;

constexpr uint32_t kCycles = 10;  // collection cycles per 10 s window (1 s cycles)
constexpr int64_t kMinute = 40;   // kT0 + 40 s is a whole minute: the start of one 1-minute step

class BucketSharesTest : public QueryFixture {
 protected:
  // The window at `offset_s` into the minute of node1, with the agent's cycle series when
  // `cycles` > 0.
  IngestBatch Node1(int64_t offset_s, uint32_t cycles = kCycles) {
    IngestBatch b = Window("node1", kMinute + offset_s);
    if (cycles > 0) {
      AddGauge(b, std::string(kCycleMetric), EntityKind::kHost, "node1", 1,
               model::Labels{{"version", "0.1.0"}});
      b.series.back().count = cycles;
    }
    return b;
  }
  // A process on GPU-a with `samples` samples of `metric` in the window.
  static void AddProcessValue(IngestBatch& b, const std::string& metric, const std::string& id,
                              const std::string& exe, double value, uint32_t samples = kCycles) {
    AddProcess(b, id, exe);
    AddGauge(b, metric, EntityKind::kProcess, id, value, model::Labels{{"gpu.uuid", "GPU-a"}});
    b.series.back().count = samples;
  }
  // One minute in one step.
  static RangeQuery Minute(const std::string& metric) {
    RangeQuery q;
    q.metric = metric;
    q.match.labels = model::Labels{{"gpu.uuid", "GPU-a"}};
    q.start = At(kT0 + kMinute);
    q.end = At(kT0 + kMinute + 60);
    q.step = std::chrono::minutes(1);
    return q;
  }
  // The single point of the single group of `by` = `key`.
  double Value(const RangeQuery& q, std::string_view by, std::string_view key) {
    auto b = QueryBreakdown(*storage_, q, by);
    EXPECT_TRUE(b) << b.error().message();
    if (!b) return -1;
    for (const BreakdownGroup& g : b->groups) {
      if (g.key == key) {
        EXPECT_EQ(g.points.size(), 1u) << key;
        return g.points.empty() ? -1 : g.points[0].value;
      }
    }
    ADD_FAILURE() << "no group " << key;
    return -1;
  }

  // pid 7 is python3 at 100 % for 20 s, exits, and pid 7 is taken by another python3 at 90 % for
  // the remaining 40 s of the minute.
  void WriteReusedPid(uint32_t cycles) {
    for (int64_t offset = 0; offset < 60; offset += 10) {
      IngestBatch b = Node1(offset, cycles);
      if (offset < 20) {
        AddProcessValue(b, "gpu.process.sm.utilization", "pid/7/100", "python3", 1.0);
      } else {
        AddProcessValue(b, "gpu.process.sm.utilization", "pid/7/2100", "python3", 0.9);
      }
      Write(b);
    }
  }
};

TEST_F(BucketSharesTest, AReusedPidInsideOneStepIsNotCountedTwice) {
  WriteReusedPid(kCycles);
  RangeQuery q = Minute("gpu.process.sm.utilization");
  // Both processes' averages added would read 190 % of one GPU.
  const double python3 = Value(q, kDefaultBreakdownBy, "python3");
  EXPECT_NEAR(python3, (1.0 * 20 + 0.9 * 40) / 60, 1e-9);
  EXPECT_LE(python3, 1.0);
  // Each process adds what it ran of the minute.
  EXPECT_NEAR(Value(q, "entity", "pid/7/100"), 1.0 * 20 / 60, 1e-9);
  EXPECT_NEAR(Value(q, "entity", "pid/7/2100"), 0.9 * 40 / 60, 1e-9);
  auto b = QueryBreakdown(*storage_, q, kDefaultBreakdownBy);
  ASSERT_TRUE(b) << b.error().message();
  EXPECT_EQ(b->groups[0].entities, 2u);  // two processes, one after the other
  EXPECT_NEAR(b->groups[0].total, python3, 1e-9);
}

TEST_F(BucketSharesTest, AReusedPidIsOneSlotEvenWithoutTheAgentsCycles) {
  // Data from another sender has no cycle series: the pid's processes, one after the other,
  // still cover the minute together.
  WriteReusedPid(/*cycles=*/0);
  EXPECT_NEAR(Value(Minute("gpu.process.sm.utilization"), kDefaultBreakdownBy, "python3"),
              (1.0 * 20 + 0.9 * 40) / 60, 1e-9);
}

TEST_F(BucketSharesTest, AReusedPidInsideOneWindowCountsItsSamples) {
  // One 10 s window: the first process ran 4 of its cycles at 100 %, the second 6 at 90 %.
  IngestBatch b = Node1(0);
  AddProcessValue(b, "gpu.process.sm.utilization", "pid/7/100", "python3", 1.0, 4);
  AddProcessValue(b, "gpu.process.sm.utilization", "pid/7/2100", "python3", 0.9, 6);
  Write(b);
  RangeQuery q = Minute("gpu.process.sm.utilization");
  q.step = std::chrono::seconds(10);
  q.end = At(kT0 + kMinute + 10);
  EXPECT_NEAR(Value(q, kDefaultBreakdownBy, "python3"), 0.4 + 0.54, 1e-9);
}

TEST_F(BucketSharesTest, ProcessesOneAfterTheOtherNeverStackAboveTheGpu) {
  // Two pids, each at 100 % of GPU-a for half of the minute.
  for (int64_t offset = 0; offset < 60; offset += 10) {
    IngestBatch b = Node1(offset);
    if (offset < 30) {
      AddProcessValue(b, "gpu.process.sm.utilization", "pid/1/100", "prep", 1.0);
    } else {
      AddProcessValue(b, "gpu.process.sm.utilization", "pid/2/3100", "train", 1.0);
    }
    Write(b);
  }
  RangeQuery q = Minute("gpu.process.sm.utilization");
  const double prep = Value(q, kDefaultBreakdownBy, "prep");
  const double train = Value(q, kDefaultBreakdownBy, "train");
  EXPECT_NEAR(prep, 0.5, 1e-9);
  EXPECT_NEAR(train, 0.5, 1e-9);
  EXPECT_LE(prep + train, 1.0 + 1e-9);
}

TEST_F(BucketSharesTest, MemoryConsumersNeverExceedWhatTheGpuHeld) {
  // 70 GB of an 80 GB GPU, held by one process whose executable entity changed within every
  // window (3 cycles as one, 7 as the other): summed as two, they would read 140 GB.
  for (int64_t offset = 0; offset < 60; offset += 10) {
    IngestBatch b = Node1(offset);
    AddGauge(b, "gpu.memory.total", EntityKind::kGpu, "GPU-a", 80e9);
    for (auto [exe, samples] : {std::pair{"exe/a", 3u}, std::pair{"exe/b", 7u}}) {
      b.entities.push_back(model::Entity{EntityKind::kExecutable, exe, "",
                                         model::Labels{{"process.executable.name", exe}}});
      AddGauge(b, "gpu.executable.memory.used", EntityKind::kExecutable, exe, 70e9,
               model::Labels{{"gpu.uuid", "GPU-a"}});
      b.series.back().count = samples;
    }
    Write(b);
  }
  auto b = QueryBreakdown(*storage_, Minute("gpu.executable.memory.used"), kDefaultBreakdownBy);
  ASSERT_TRUE(b) << b.error().message();
  ASSERT_EQ(b->groups.size(), 2u);
  double sum = 0;
  for (const BreakdownGroup& g : b->groups) {
    ASSERT_EQ(g.points.size(), 1u);
    sum += g.points[0].value;
  }
  EXPECT_NEAR(sum, 70e9, 1);
  EXPECT_LE(sum, 80e9);
  EXPECT_EQ(b->groups[0].key, "exe/b");
  EXPECT_NEAR(b->groups[0].points[0].value, 70e9 * 0.7, 1);
}

TEST_F(BucketSharesTest, ProcessesThatRanTheWholeStepKeepTheirAverages) {
  for (int64_t offset = 0; offset < 60; offset += 10) {
    IngestBatch b = Node1(offset);
    AddProcessValue(b, "gpu.process.sm.utilization", "pid/1/100", "python3", 0.25);
    AddProcessValue(b, "gpu.process.sm.utilization", "pid/2/200", "python3", 0.5);
    Write(b);
  }
  EXPECT_NEAR(Value(Minute("gpu.process.sm.utilization"), kDefaultBreakdownBy, "python3"), 0.75,
              1e-9);
}

TEST_F(BucketSharesTest, SeriesOfGpusAndOtherAggregationsAreNotWeighted) {
  // GPU-a reports in half of the minute's windows: its average is over those, not halved.
  for (int64_t offset = 0; offset < 60; offset += 10) {
    IngestBatch b = Node1(offset);
    if (offset < 30) {
      AddGpu(b, "GPU-a", "0");
      AddGauge(b, "gpu.utilization", EntityKind::kGpu, "GPU-a", 0.8);
      AddProcessValue(b, "gpu.process.sm.utilization", "pid/1/100", "python3", 0.8);
    }
    Write(b);
  }
  RangeQuery gpu = Minute("gpu.utilization");
  gpu.match.labels = {};
  EXPECT_NEAR(Value(gpu, "entity", "GPU-a"), 0.8, 1e-9);
  // The largest value a process reached in the minute is not a share of time.
  RangeQuery max = Minute("gpu.process.sm.utilization");
  max.aggregation = Aggregation::kMax;
  EXPECT_NEAR(Value(max, kDefaultBreakdownBy, "python3"), 0.9, 1e-9);
  // Its average is: it ran for half of the minute.
  EXPECT_NEAR(Value(Minute("gpu.process.sm.utilization"), kDefaultBreakdownBy, "python3"), 0.4,
              1e-9);
}

}  // namespace
}  // namespace warpscope::server::query

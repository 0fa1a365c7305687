// SPDX-License-Identifier: Apache-2.0
#include "agent/aggregator.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

namespace warpscope::agent {
namespace {

using model::EntityKind;
using model::MetricDesc;
using model::MetricKind;

constexpr MetricDesc kUtil{"gpu.utilization",
                           EntityKind::kGpu,
                           MetricKind::kGauge,
                           "1",
                           "util",
                           "DCGM_FI_DEV_GPU_UTIL",
                           100,
                           "hw.gpu.utilization"};
constexpr MetricDesc kEnergy{"gpu.energy", EntityKind::kGpu, MetricKind::kCounter,
                             "J",          "energy",         "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
                             1000,         "hw.energy"};

base::TimePoint T(int s) { return base::FromUnixNanos(int64_t{s} * 1'000'000'000); }

model::Entity Gpu(const std::string& id) {
  return model::Entity{EntityKind::kGpu, id, "", model::Labels{{"gpu.index", "0"}}};
}

void Cycle(Aggregator& agg, int t, double util, double energy) {
  agg.BeginCycle(T(t));
  agg.AddEntity(Gpu("GPU-a"));
  agg.AddValue(kUtil, "GPU-a", util);
  agg.AddValue(kEnergy, "GPU-a", energy);
  agg.EndCycle();
}

TEST(AggregatorTest, WindowKeepsAvgMinMaxLastOfGauges) {
  Aggregator agg;
  Cycle(agg, 0, 0.2, 10);
  Cycle(agg, 1, 0.9, 20);  // a spike shorter than the window
  Cycle(agg, 2, 0.4, 30);
  model::Frame w = agg.CloseWindow(T(3));
  ASSERT_EQ(w.series.size(), 2u);
  const auto& util = w.series[0].metric == &kUtil ? w.series[0] : w.series[1];
  EXPECT_NEAR(util.avg, 0.5, 1e-12);
  EXPECT_DOUBLE_EQ(util.min, 0.2);
  EXPECT_DOUBLE_EQ(util.max, 0.9);
  EXPECT_DOUBLE_EQ(util.last, 0.4);
  EXPECT_EQ(util.count, 3u);
  EXPECT_EQ(w.start, T(0));
  EXPECT_EQ(w.end, T(3));
}

TEST(AggregatorTest, CountersStayCumulative) {
  Aggregator agg;
  Cycle(agg, 0, 0.1, 10);
  Cycle(agg, 1, 0.1, 25);
  model::Frame w = agg.CloseWindow(T(2));
  const auto& energy = w.series[0].metric == &kEnergy ? w.series[0] : w.series[1];
  EXPECT_DOUBLE_EQ(energy.last, 25);
  EXPECT_DOUBLE_EQ(energy.avg, 25);
  EXPECT_DOUBLE_EQ(energy.min, 25);
}

TEST(AggregatorTest, NewWindowStartsWhereTheLastEnded) {
  Aggregator agg;
  Cycle(agg, 0, 0.1, 1);
  model::Frame w1 = agg.CloseWindow(T(10));
  Cycle(agg, 10, 0.3, 2);
  model::Frame w2 = agg.CloseWindow(T(20));
  EXPECT_EQ(w2.start, T(10));
  EXPECT_EQ(w2.sequence, w1.sequence + 1);
  ASSERT_EQ(w2.series.size(), 2u);
  EXPECT_EQ(w2.series[0].count, 1u);
}

TEST(AggregatorTest, LatestHoldsOnlyTheLastCycle) {
  Aggregator agg;
  agg.BeginCycle(T(0));
  agg.AddEntity(Gpu("GPU-a"));
  agg.AddEntity(Gpu("GPU-b"));
  agg.AddValue(kUtil, "GPU-a", 0.1);
  agg.AddValue(kUtil, "GPU-b", 0.2);
  agg.EndCycle();
  agg.BeginCycle(T(1));
  agg.AddEntity(Gpu("GPU-a"));
  agg.AddValue(kUtil, "GPU-a", 0.7);
  agg.EndCycle();
  ASSERT_EQ(agg.latest().series.size(), 1u);
  EXPECT_EQ(agg.latest().series[0].entity, "GPU-a");
  EXPECT_DOUBLE_EQ(agg.latest().series[0].last, 0.7);
  // The window still remembers GPU-b.
  EXPECT_EQ(agg.CloseWindow(T(2)).entities.size(), 2u);
}

TEST(AggregatorTest, LabelsDistinguishSeries) {
  Aggregator agg;
  agg.BeginCycle(T(0));
  agg.AddValue(kUtil, "GPU-a", model::Labels{{"link", "0"}}, 0.1);
  agg.AddValue(kUtil, "GPU-a", model::Labels{{"link", "1"}}, 0.2);
  agg.AddValue(kUtil, "GPU-a", model::Labels{{"link", "1"}}, 0.3);  // overwrite in the cycle
  agg.EndCycle();
  ASSERT_EQ(agg.latest().series.size(), 2u);
  EXPECT_DOUBLE_EQ(agg.latest().series[1].last, 0.3);
}

TEST(AggregatorTest, NanIsAbsentNotZero) {
  Aggregator agg;
  agg.BeginCycle(T(0));
  agg.AddValue(kUtil, "GPU-a", std::nan(""));
  agg.EndCycle();
  EXPECT_TRUE(agg.latest().series.empty());
}

TEST(AggregatorTest, SeriesLimitDropsAndCounts) {
  Aggregator agg(/*max_series=*/2);
  agg.BeginCycle(T(0));
  for (int i = 0; i < 5; ++i) {
    agg.AddValue(kUtil, "GPU-" + std::to_string(i), 0.5);
  }
  agg.EndCycle();
  EXPECT_EQ(agg.window_series(), 2u);
  EXPECT_EQ(agg.dropped_values_total(), 3u);
}

TEST(AggregatorTest, EventsReachTheWindow) {
  Aggregator agg;
  agg.BeginCycle(T(0));
  agg.AddEvent(model::Event{T(0), "GPU-a", "xid", 79, "GPU has fallen off the bus", {}});
  agg.EndCycle();
  EXPECT_EQ(agg.latest().events.size(), 1u);
  model::Frame w = agg.CloseWindow(T(1));
  ASSERT_EQ(w.events.size(), 1u);
  EXPECT_EQ(w.events[0].code, 79);
  EXPECT_TRUE(agg.CloseWindow(T(2)).events.empty());
}

TEST(AggregatorTest, StepsReachTheWindowUpToTheCap) {
  Aggregator agg(/*max_series=*/100, /*max_steps=*/2);
  agg.BeginCycle(T(0));
  for (int64_t n = 0; n < 3; ++n) {
    model::TrainingStep step;
    step.entity = "pid/1/2";
    step.step = n;
    agg.AddStep(step);
  }
  agg.EndCycle();
  model::Frame w = agg.CloseWindow(T(1));
  ASSERT_EQ(w.steps.size(), 2u);
  EXPECT_EQ(w.steps[1].step, 1);
  EXPECT_EQ(agg.dropped_steps_total(), 1u);
  EXPECT_TRUE(agg.CloseWindow(T(2)).steps.empty());
}

}  // namespace
}  // namespace warpscope::agent

namespace warpscope::agent {
namespace {

TEST(AggregatorTest, EntityWrittenTwiceInACycleIsMerged) {
  Aggregator agg;
  agg.BeginCycle(T(0));
  agg.AddEntity(model::Entity{EntityKind::kHost, "node1", "", {{"host.name", "node1"}}});
  agg.AddEntity(model::Entity{EntityKind::kHost, "node1", "", {{"os.type", "linux"}}});
  agg.EndCycle();
  ASSERT_EQ(agg.latest().entities.size(), 1u);
  EXPECT_EQ(agg.latest().entities[0].attributes.Get("host.name"), "node1");
  EXPECT_EQ(agg.latest().entities[0].attributes.Get("os.type"), "linux");
}

}  // namespace
}  // namespace warpscope::agent

namespace warpscope::agent {
namespace {

// The cycle frames reuse the storage of earlier cycles: whatever order and set of series a
// cycle writes, the latest frame holds exactly that cycle's series, entities and values.
TEST(AggregatorTest, LatestIsExactWhateverTheEarlierCyclesWrote) {
  Aggregator agg;
  agg.BeginCycle(T(0));
  agg.AddEntity(Gpu("GPU-a"));
  agg.AddEntity(Gpu("GPU-b"));
  agg.AddValue(kUtil, "GPU-a", model::Labels{{"link", "0"}}, 0.1);
  agg.AddValue(kUtil, "GPU-b", 0.2);
  agg.AddValue(kEnergy, "GPU-b", 5);
  agg.EndCycle();
  agg.BeginCycle(T(1));
  agg.AddEntity(Gpu("GPU-b"));
  agg.AddValue(kEnergy, "GPU-b", 6);
  agg.EndCycle();
  agg.BeginCycle(T(2));  // writes into the storage of cycle 0, in another order
  agg.AddEntity(Gpu("GPU-c-with-a-long-identifier-beyond-small-strings"));
  agg.AddValue(kUtil, "GPU-c-with-a-long-identifier-beyond-small-strings", 0.3);
  agg.AddValue(kUtil, "GPU-a", model::Labels{{"link", "1"}}, 0.4);
  agg.EndCycle();

  const model::Frame& latest = agg.latest();
  ASSERT_EQ(latest.series.size(), 2u);
  EXPECT_EQ(latest.series[0].metric, &kUtil);
  EXPECT_EQ(latest.series[0].entity, "GPU-c-with-a-long-identifier-beyond-small-strings");
  EXPECT_TRUE(latest.series[0].labels.empty());
  EXPECT_DOUBLE_EQ(latest.series[0].last, 0.3);
  EXPECT_EQ(latest.series[0].count, 1u);
  EXPECT_EQ(latest.series[0].last_time, T(2));
  EXPECT_EQ(latest.series[1].entity, "GPU-a");
  EXPECT_EQ(latest.series[1].labels.Get("link"), "1");
  EXPECT_DOUBLE_EQ(latest.series[1].last, 0.4);
  ASSERT_EQ(latest.entities.size(), 1u);
  EXPECT_EQ(latest.entities[0].id, "GPU-c-with-a-long-identifier-beyond-small-strings");
  EXPECT_EQ(latest.sequence, 3u);
  EXPECT_EQ(latest.start, T(2));
}

TEST(AggregatorTest, CycleEntitiesAreOnlyThoseOfTheCycleInProgress) {
  Aggregator agg;
  agg.BeginCycle(T(0));
  agg.AddEntity(Gpu("GPU-a"));
  agg.AddEntity(Gpu("GPU-b"));
  agg.AddEntity(Gpu("GPU-c"));
  agg.EndCycle();
  agg.BeginCycle(T(1));
  agg.AddEntity(Gpu("GPU-a"));
  agg.EndCycle();
  agg.BeginCycle(T(2));
  EXPECT_TRUE(agg.cycle_entities().empty());
  agg.AddEntity(Gpu("GPU-d"));
  ASSERT_EQ(agg.cycle_entities().size(), 1u);
  EXPECT_EQ(agg.cycle_entities()[0].id, "GPU-d");
  agg.EndCycle();
}

// One cycle at `t` that declares the GPUs of `util` and writes their utilization.
void UtilCycle(Aggregator& agg, int t, std::vector<std::pair<std::string, double>> util) {
  agg.BeginCycle(T(t));
  for (const auto& [gpu, value] : util) {
    agg.AddEntity(Gpu(gpu));
    agg.AddValue(kUtil, gpu, value);
  }
  agg.EndCycle();
}

TEST(AggregatorTest, SeriesAndEntitiesAWindowDidNotWriteAreNotInTheNext) {
  Aggregator agg;
  UtilCycle(agg, 0, {{"GPU-a", 0.1}, {"GPU-b", 0.2}});
  ASSERT_EQ(agg.CloseWindow(T(1)).series.size(), 2u);

  UtilCycle(agg, 1, {{"GPU-b", 0.6}});
  model::Frame w2 = agg.CloseWindow(T(2));
  ASSERT_EQ(w2.series.size(), 1u);
  EXPECT_EQ(w2.series[0].entity, "GPU-b");
  EXPECT_EQ(w2.series[0].count, 1u);  // the first window's sample is not carried over
  EXPECT_DOUBLE_EQ(w2.series[0].avg, 0.6);
  ASSERT_EQ(w2.entities.size(), 1u);
  EXPECT_EQ(w2.entities[0].id, "GPU-b");

  // GPU-a comes back: a new series in the third window, with only its new samples.
  UtilCycle(agg, 2, {{"GPU-a", 0.9}});
  model::Frame w3 = agg.CloseWindow(T(3));
  ASSERT_EQ(w3.series.size(), 1u);
  EXPECT_EQ(w3.series[0].entity, "GPU-a");
  EXPECT_DOUBLE_EQ(w3.series[0].min, 0.9);
  ASSERT_EQ(w3.entities.size(), 1u);
  EXPECT_EQ(w3.entities[0].attributes.Get("gpu.index"), "0");
}

TEST(AggregatorTest, WindowKeepsTheLatestAttributesOfAnEntity) {
  Aggregator agg;
  agg.BeginCycle(T(0));
  agg.AddEntity(model::Entity{EntityKind::kProcess, "pid/7/1", "", {{"process.pid", "7"}}});
  agg.EndCycle();
  agg.BeginCycle(T(1));
  agg.AddEntity(model::Entity{
      EntityKind::kProcess, "pid/7/1", "", {{"process.pid", "7"}, {"process.owner", "ann"}}});
  agg.EndCycle();
  model::Frame w = agg.CloseWindow(T(2));
  ASSERT_EQ(w.entities.size(), 1u);
  EXPECT_EQ(w.entities[0].attributes.Get("process.owner"), "ann");
}

TEST(AggregatorTest, SeriesLimitAppliesToEachWindow) {
  Aggregator agg(/*max_series=*/2);
  agg.BeginCycle(T(0));
  agg.AddValue(kUtil, "GPU-0", 0.5);
  agg.AddValue(kUtil, "GPU-1", 0.5);
  agg.EndCycle();
  agg.CloseWindow(T(1));
  // The next window may hold two other series; the first window's do not count.
  agg.BeginCycle(T(1));
  agg.AddValue(kUtil, "GPU-2", 0.5);
  agg.AddValue(kUtil, "GPU-3", 0.5);
  agg.AddValue(kUtil, "GPU-0", 0.5);  // over the bound in this window
  agg.EndCycle();
  EXPECT_EQ(agg.window_series(), 2u);
  EXPECT_EQ(agg.dropped_values_total(), 1u);
  ASSERT_EQ(agg.latest().series.size(), 2u);
  model::Frame w = agg.CloseWindow(T(2));
  ASSERT_EQ(w.series.size(), 2u);
  EXPECT_EQ(w.series[0].entity, "GPU-2");
  EXPECT_EQ(w.series[1].entity, "GPU-3");
}

TEST(AggregatorTest, ManySeriesStayDistinctAcrossTableGrowth) {
  Aggregator agg;
  for (int cycle = 0; cycle < 3; ++cycle) {
    agg.BeginCycle(T(cycle));
    for (int i = 0; i < 1000; ++i) {
      agg.AddValue(kUtil, "GPU-a", model::Labels{{"link", std::to_string(i)}}, i + cycle);
    }
    agg.EndCycle();
  }
  model::Frame w = agg.CloseWindow(T(3));
  ASSERT_EQ(w.series.size(), 1000u);
  for (int i = 0; i < 1000; ++i) {
    EXPECT_EQ(w.series[i].labels.Get("link"), std::to_string(i));
    EXPECT_EQ(w.series[i].count, 3u);
    EXPECT_DOUBLE_EQ(w.series[i].avg, i + 1);
  }
}

}  // namespace
}  // namespace warpscope::agent

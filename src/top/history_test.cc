// SPDX-License-Identifier: Apache-2.0
#include "top/history.h"

#include <gtest/gtest.h>

namespace warpscope::top {
namespace {

Snapshot OneGpu(std::optional<double> util, double mem_used) {
  Snapshot s;
  GpuRow g;
  g.uuid = "GPU-a";
  g.utilization = util;
  g.memory_used = mem_used;
  g.memory_total = 100;
  g.temperature = 50;
  s.gpus.push_back(g);
  return s;
}

TEST(HistoryTest, KeepsTheLastValuesAsFractionsWithGaps) {
  History h(3);
  h.Add(OneGpu(0.1, 10));
  h.Add(OneGpu(std::nullopt, 20));
  h.Add(OneGpu(0.3, 30));
  h.Add(OneGpu(0.4, 40));
  GpuRow g = OneGpu(0, 0).gpus[0];
  auto util = h.Values(g, Gauge::kUtilization);
  ASSERT_EQ(util.size(), 3u);
  EXPECT_FALSE(util[0].has_value());
  EXPECT_DOUBLE_EQ(*util[2], 0.4);
  EXPECT_DOUBLE_EQ(*h.Values(g, Gauge::kMemory)[2], 0.4);
  EXPECT_DOUBLE_EQ(*h.Values(g, Gauge::kTemperature)[0], 0.5);
  EXPECT_FALSE(h.Values(g, Gauge::kPower)[0].has_value());  // no limit: no ratio
}

TEST(HistoryTest, ForgetsGpusThatAreGone) {
  History h;
  h.Add(OneGpu(0.1, 10));
  h.Add(Snapshot{});
  EXPECT_TRUE(h.Values(OneGpu(0, 0).gpus[0], Gauge::kUtilization).empty());
}

}  // namespace
}  // namespace warpscope::top

// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include "server/insights/rules.h"
#include "server/insights/testing/inputs_builder.h"

namespace warpscope::server::insights {
namespace {

using testing::InputsBuilder;

constexpr size_t kBuckets = 90;

using testing::Observe;

TEST(MemoryBoundTest, BusyDramWithLowOccupancyIsMemoryBound) {
  InputsBuilder b(kBuckets);
  b.Gpu("node-1", "GPU-0", "0");  // healthy: occupancy 52 %, DRAM 55 %
  GpuInput& g = b.Gpu("node-1", "GPU-1", "1");
  InputsBuilder::Fill(g.dram_active, 0.88);
  InputsBuilder::Fill(g.sm_occupancy, 0.35);
  GpuInput& compute = b.Gpu("node-1", "GPU-2", "2");  // busy DRAM, but occupancy is high
  InputsBuilder::Fill(compute.dram_active, 0.88);
  InputsBuilder::Fill(compute.sm_occupancy, 0.75);
  GpuInput& idle = b.Gpu("node-1", "GPU-3", "3");  // a copy engine on an idle GPU
  InputsBuilder::Fill(idle.dram_active, 0.88);
  InputsBuilder::Fill(idle.sm_occupancy, 0.05);
  InputsBuilder::Fill(idle.utilization, 0.1);
  b.Gpu("node-1", "GPU-4", "4", "NVIDIA A100-SXM4-80GB", /*healthy=*/false);  // no GPM: no data
  std::vector<Observation> seen = Observe(*MakeMemoryBoundRule(), b.inputs());
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].entity, "GPU-1");
  EXPECT_NE(seen[0].summary.find("DRAM 88 % busy while SM occupancy is 35 %"), std::string::npos)
      << seen[0].summary;
  EXPECT_EQ(MakeMemoryBoundRule()->info().severity, Severity::kInfo);
}

TEST(UnderpoweredTest, ABusyGpuDrawingLittlePowerWithLowOccupancyIsUnderpowered) {
  InputsBuilder b(kBuckets);
  b.Gpu("node-1", "GPU-0", "0");  // 650 W
  GpuInput& g = b.Gpu("node-1", "GPU-1", "1");
  InputsBuilder::Fill(g.power, 420);
  InputsBuilder::Fill(g.sm_occupancy, 0.2);
  GpuInput& occupied = b.Gpu("node-1", "GPU-2", "2");  // low power but the SMs are full
  InputsBuilder::Fill(occupied.power, 420);
  GpuInput& input_bound = b.Gpu("node-1", "GPU-3", "3");  // not busy: another rule's
  InputsBuilder::Fill(input_bound.power, 270);
  InputsBuilder::Fill(input_bound.utilization, 0.35);
  InputsBuilder::Fill(input_bound.sm_occupancy, 0.18);
  std::vector<Observation> seen = Observe(*MakeUnderpoweredRule(), b.inputs());
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].entity, "GPU-1");
  EXPECT_EQ(seen[0].evidence["threshold_w"].get<double>(), 500);
  EXPECT_NEAR(seen[0].lost_fraction, 1 - 420.0 / 700, 1e-9);
}

TEST(UnderpoweredTest, WithoutOccupancyPowerAloneDecidesAndTheThresholdScales) {
  InputsBuilder b(kBuckets);
  // An L40S (350 W at full load): 500 W at 700 becomes 250 W.
  GpuInput& l40s = b.Gpu("node-1", "GPU-0", "0", "NVIDIA L40S");
  InputsBuilder::Fill(l40s.sm_occupancy, std::nan(""));
  InputsBuilder::Fill(l40s.power_limit, 350);
  InputsBuilder::Fill(l40s.power, 200);
  GpuInput& fine = b.Gpu("node-1", "GPU-1", "1", "NVIDIA L40S");
  InputsBuilder::Fill(fine.sm_occupancy, std::nan(""));
  InputsBuilder::Fill(fine.power, 300);
  std::vector<Observation> seen = Observe(*MakeUnderpoweredRule(), b.inputs());
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].entity, "GPU-0");
  EXPECT_EQ(seen[0].evidence["threshold_w"].get<double>(), 250);
  EXPECT_TRUE(seen[0].evidence["sm_occupancy"].is_null());
}

}  // namespace
}  // namespace warpscope::server::insights

// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include "server/insights/gpu_models.h"
#include "server/insights/rules.h"
#include "server/insights/testing/inputs_builder.h"

namespace warpscope::server::insights {
namespace {

using testing::InputsBuilder;

constexpr size_t kBuckets = 90;

std::vector<Observation> Observe(const InsightInputs& in) {
  return testing::Observe(*MakePowerDropRule(), in);
}

TEST(PowerDropTest, ABusyGpuThatLosesMoreThan300WAndStaysDownIsAThrottle) {
  InputsBuilder b(kBuckets);
  GpuInput& g = b.Gpu("node-1", "GPU-2", "2");
  InputsBuilder::Fill(g.power, 320, kBuckets - 12);  // the last two minutes
  std::vector<Observation> seen = Observe(b.inputs());
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].evidence["before_w"].get<double>(), 650);
  EXPECT_EQ(seen[0].evidence["now_w"].get<double>(), 320);
  EXPECT_EQ(seen[0].evidence["threshold_w"].get<double>(), 300);
  EXPECT_NEAR(seen[0].lost_fraction, 1 - 320.0 / 650, 1e-9);
  EXPECT_NE(seen[0].summary.find("dropped from 650 W to 320 W 2m ago"), std::string::npos)
      << seen[0].summary;
}

TEST(PowerDropTest, AJobEndingOrASmallDipOrARecoveryIsNot) {
  InputsBuilder b(kBuckets);
  GpuInput& ended = b.Gpu("node-1", "GPU-0", "0");
  InputsBuilder::Fill(ended.power, 70, kBuckets - 12);
  InputsBuilder::Fill(ended.utilization, 0, kBuckets - 12);
  GpuInput& dip = b.Gpu("node-1", "GPU-1", "1");
  InputsBuilder::Fill(dip.power, 400, kBuckets - 12);  // 250 W
  GpuInput& recovered = b.Gpu("node-1", "GPU-2", "2");
  InputsBuilder::Fill(recovered.power, 300, kBuckets - 12, kBuckets - 6);
  GpuInput& idle = b.Gpu("node-1", "GPU-3", "3");
  InputsBuilder::Fill(idle.utilization, 0.1);  // was not busy before
  InputsBuilder::Fill(idle.power, 320, kBuckets - 12);
  EXPECT_TRUE(Observe(b.inputs()).empty());
}

TEST(PowerDropTest, WhereTheGpuReportsItsClockAThrottleSlowsItAndAHangDoesNot) {
  InputsBuilder b(kBuckets);
  // Power-braked: 650 -> 290 W with the SM clock 1950 -> 900 MHz.
  GpuInput& braked = b.Gpu("node-1", "GPU-0", "0");
  InputsBuilder::Fill(braked.power, 290, kBuckets - 12);
  InputsBuilder::Fill(braked.sm_clock, 1950);
  InputsBuilder::Fill(braked.sm_clock, 900, kBuckets - 12);
  // Ranks spinning in a collective whose peer GPU was lost: 650 -> 330 W, clocks unchanged.
  GpuInput& hung = b.Gpu("node-1", "GPU-1", "1");
  InputsBuilder::Fill(hung.power, 330, kBuckets - 12);
  InputsBuilder::Fill(hung.sm_clock, 1950);
  // The same hang, then the job killed 30 s ago: the clock falls to idle, and so does the work.
  GpuInput& killed = b.Gpu("node-1", "GPU-2", "2");
  InputsBuilder::Fill(killed.power, 330, kBuckets - 12);
  InputsBuilder::Fill(killed.sm_clock, 1950);
  InputsBuilder::Fill(killed.sm_clock, 345, kBuckets - 3);
  InputsBuilder::Fill(killed.utilization, 0, kBuckets - 3);
  std::vector<Observation> seen = Observe(b.inputs());
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].entity, "GPU-0");
}

TEST(PowerDropTest, TheThresholdScalesWithTheCard) {
  InputsBuilder b(kBuckets);
  // An A100 at full load draws ~400 W: 300 W at 700 W becomes ~171 W.
  GpuInput& a100 = b.Gpu("node-1", "GPU-0", "0", "NVIDIA A100-SXM4-80GB");
  InputsBuilder::Fill(a100.power_limit, 400);
  InputsBuilder::Fill(a100.power, 380);
  InputsBuilder::Fill(a100.power, 190, kBuckets - 6);
  std::vector<Observation> seen = Observe(b.inputs());
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_NEAR(seen[0].evidence["threshold_w"].get<double>(), 171, 1);
}

TEST(GpuModelsTest, KnownModelsThenThePowerLimitThenTheReference) {
  EXPECT_EQ(ExpectedFullLoadWatts("NVIDIA H100 80GB HBM3", 700), 700);
  EXPECT_EQ(ExpectedFullLoadWatts("NVIDIA H100 PCIe", 350), 350);
  EXPECT_EQ(ExpectedFullLoadWatts("NVIDIA GH200 480GB", std::nullopt), 900);
  EXPECT_EQ(ExpectedFullLoadWatts("NVIDIA H200", std::nullopt), 700);
  EXPECT_EQ(ExpectedFullLoadWatts("NVIDIA L40S", std::nullopt), 350);
  EXPECT_EQ(ExpectedFullLoadWatts("NVIDIA L4", std::nullopt), 72);
  EXPECT_EQ(ExpectedFullLoadWatts("NVIDIA A100-SXM4-40GB", std::nullopt), 400);
  EXPECT_EQ(ExpectedFullLoadWatts("Some Future GPU", 550), 550);
  EXPECT_EQ(ExpectedFullLoadWatts("Some Future GPU", std::nullopt), kReferenceFullLoadWatts);
  EXPECT_EQ(ScaleWatts(300, 350), 150);
}

}  // namespace
}  // namespace warpscope::server::insights

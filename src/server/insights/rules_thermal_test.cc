// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "server/insights/rules.h"
#include "server/insights/testing/inputs_builder.h"

namespace warpscope::server::insights {
namespace {

using testing::InputsBuilder;

// 15 minutes of 10 s buckets.
constexpr size_t kBuckets = 90;

using testing::Observe;

// Temperature that climbs `per_minute` from bucket `from` on.
void Climb(Series& s, size_t from, double per_minute) {
  InputsBuilder::Set(
      s, [&](size_t i) { return 63 + per_minute * static_cast<double>(i - from) / 6; }, from);
}

TEST(CoolingFailureTest, AGpuHeatingFasterThanTenDegreesPerMinuteIsSeenWithinAMinute) {
  InputsBuilder b(kBuckets);
  for (int i = 0; i < 8; ++i) b.Gpu("node-1", "GPU-" + std::to_string(i), std::to_string(i));
  Climb(b.inputs().gpus[2].temperature, kBuckets - 6, 12.5);  // the last minute
  auto rule = MakeCoolingFailureRule();
  std::vector<Observation> seen = Observe(*rule, b.inputs());
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].entity, "GPU-2");
  EXPECT_EQ(seen[0].attributes.Get("gpu.uuid"), "GPU-2");
  EXPECT_EQ(seen[0].attributes.Get("gpu.index"), "2");
  EXPECT_NEAR(seen[0].evidence["rate_c_per_min"].get<double>(), 12.5, 0.2);
  EXPECT_NE(seen[0].summary.find("GPU 2 (NVIDIA H100 80GB HBM3) of node-1"), std::string::npos)
      << seen[0].summary;
  EXPECT_EQ(seen[0].lost_fraction, 0);
  EXPECT_EQ(rule->info().severity, Severity::kPage);
}

TEST(CoolingFailureTest, OscillationAndSlowWarmingAreNot) {
  InputsBuilder b(kBuckets);
  // The scenario's healthy wobble: ±1.5 °C over 40 s, whose steepest moment is ~14 °C/min.
  GpuInput& wobble = b.Gpu("node-1", "GPU-0", "0");
  InputsBuilder::Set(wobble.temperature, [](size_t i) {
    return 63 + 1.5 * std::sin(2 * std::numbers::pi * static_cast<double>(i) * 10 / 40);
  });
  GpuInput& slow = b.Gpu("node-1", "GPU-1", "1");
  Climb(slow.temperature, 0, 4);  // a job warming its GPU up
  EXPECT_TRUE(Observe(*MakeCoolingFailureRule(), b.inputs()).empty());
}

TEST(CoolingFailureTest, AnOpenFindingHoldsWhileTheClimbGoesOnAtHalfTheRate) {
  InputsBuilder b(kBuckets);
  GpuInput& g = b.Gpu("node-1", "GPU-0", "0");
  Climb(g.temperature, kBuckets - 6, 7);
  auto rule = MakeCoolingFailureRule();
  EXPECT_TRUE(Observe(*rule, b.inputs()).empty());
  EXPECT_EQ(Observe(*rule, b.inputs(), {{"node-1", "GPU-0"}}).size(), 1u);
}

TEST(CoolingFailureTest, AGpuWithoutTemperatureIsNotJudged) {
  InputsBuilder b(kBuckets);
  b.Gpu("node-1", "GPU-0", "0", "NVIDIA H100 80GB HBM3", /*healthy=*/false);
  GpuInput& sparse = b.Gpu("node-1", "GPU-1", "1");
  // Two readings a minute apart say little about a rate.
  InputsBuilder::Fill(sparse.temperature, std::nan(""));
  sparse.temperature[kBuckets - 6] = 60;
  sparse.temperature[kBuckets - 1] = 80;
  EXPECT_TRUE(Observe(*MakeCoolingFailureRule(), b.inputs()).empty());
}

InputsBuilder EightGpus(double hot_temperature, double hot_power) {
  InputsBuilder b(kBuckets);
  for (int i = 0; i < 8; ++i) {
    GpuInput& g = b.Gpu("node-1", "GPU-" + std::to_string(i), std::to_string(i));
    InputsBuilder::Set(g.temperature, [i](size_t) { return 62 + 0.3 * i; });
  }
  InputsBuilder::Fill(b.inputs().gpus[5].temperature, hot_temperature);
  InputsBuilder::Fill(b.inputs().gpus[5].power, hot_power);
  return b;
}

TEST(ThermalOutlierTest, AGpuFiveDegreesAboveItsPeersAtSimilarPowerIsAnOutlier) {
  InputsBuilder b = EightGpus(71, 650);
  std::vector<Observation> seen = Observe(*MakeThermalOutlierRule(), b.inputs());
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].entity, "GPU-5");
  EXPECT_EQ(seen[0].evidence["peers"].get<size_t>(), 7u);
  EXPECT_NEAR(seen[0].evidence["peer_median_c"].get<double>(), 62.9, 0.05);
}

TEST(ThermalOutlierTest, FourDegreesRaisesNothingButKeepsAnOpenFinding) {
  InputsBuilder b = EightGpus(67, 650);
  auto rule = MakeThermalOutlierRule();
  EXPECT_TRUE(Observe(*rule, b.inputs()).empty());
  EXPECT_EQ(Observe(*rule, b.inputs(), {{"node-1", "GPU-5"}}).size(), 1u);
}

TEST(ThermalOutlierTest, HotterAtLessPowerIsAnOutlierHotterAtMuchMoreIsNotJudged) {
  EXPECT_EQ(Observe(*MakeThermalOutlierRule(), EightGpus(75, 320).inputs()).size(), 1u);
  // Nobody draws as much: no peers to compare with.
  EXPECT_TRUE(Observe(*MakeThermalOutlierRule(), EightGpus(75, 900).inputs()).empty());
}

TEST(ThermalOutlierTest, PeersWhosePowerJustCameBackAreNotPeersYet) {
  // GPUs 0-3 were power-braked to 290 W for the first 70 s of the 5-minute window and are
  // still cooler from it (57 °C); GPUs 4-7 ran at 650 W and 63 °C throughout. On average the
  // braked ones draw 87 % of the others' power, but their temperature lags that power.
  InputsBuilder b(kBuckets);
  for (int i = 0; i < 8; ++i) {
    GpuInput& g = b.Gpu("node-1", "GPU-" + std::to_string(i), std::to_string(i));
    InputsBuilder::Fill(g.temperature, i < 4 ? 57 : 63);
    if (i < 4) InputsBuilder::Fill(g.power, 290, kBuckets - 30, kBuckets - 23);
  }
  EXPECT_TRUE(Observe(*MakeThermalOutlierRule(), b.inputs()).empty());
}

TEST(ThermalOutlierTest, PeersAreTheSameModelInTheSameCluster) {
  InputsBuilder b(kBuckets);
  for (int i = 0; i < 3; ++i) b.Gpu("node-1", "GPU-h" + std::to_string(i), std::to_string(i));
  // A different model runs hotter by design.
  for (int i = 0; i < 3; ++i) {
    GpuInput& g =
        b.Gpu("node-1", "GPU-l" + std::to_string(i), std::to_string(i + 3), "NVIDIA L40S");
    InputsBuilder::Fill(g.temperature, 80);
  }
  EXPECT_TRUE(Observe(*MakeThermalOutlierRule(), b.inputs()).empty());

  InputsBuilder c(kBuckets);
  for (int i = 0; i < 4; ++i) c.Gpu("node-" + std::to_string(i), "GPU-a" + std::to_string(i), "0");
  for (int i = 0; i < 4; ++i) {
    GpuInput& g = c.Gpu("node-x" + std::to_string(i), "GPU-b" + std::to_string(i), "0");
    g.cluster = "warm-room";
    InputsBuilder::Fill(g.temperature, 75);
  }
  EXPECT_TRUE(Observe(*MakeThermalOutlierRule(), c.inputs()).empty());
  InputsBuilder::Fill(c.inputs().gpus[0].temperature, 70);
  std::vector<Observation> seen = Observe(*MakeThermalOutlierRule(), c.inputs());
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].entity, "GPU-a0");
}

TEST(ThermalOutlierTest, TooFewPeersOrTooLittleDataJudgesNothing) {
  InputsBuilder b(kBuckets);
  for (int i = 0; i < 3; ++i) b.Gpu("node-1", "GPU-" + std::to_string(i), std::to_string(i));
  InputsBuilder::Fill(b.inputs().gpus[0].temperature, 80);
  EXPECT_TRUE(Observe(*MakeThermalOutlierRule(), b.inputs()).empty());  // 2 peers

  InputsBuilder c = EightGpus(75, 650);
  // The hot GPU reported for only the last minute of the 5-minute window.
  InputsBuilder::Fill(c.inputs().gpus[5].temperature, std::nan(""), 0, kBuckets - 6);
  EXPECT_TRUE(Observe(*MakeThermalOutlierRule(), c.inputs()).empty());
}

}  // namespace
}  // namespace warpscope::server::insights

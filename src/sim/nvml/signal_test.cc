// SPDX-License-Identifier: Apache-2.0
#include "sim/nvml/signal.h"

#include <gtest/gtest.h>

#include <cmath>

namespace warpscope::sim {
namespace {

TEST(SignalTest, ConstantIsFlat) {
  Signal s = Signal::Constant(42);
  EXPECT_EQ(EvaluateShape(s, 0), 42);
  EXPECT_EQ(EvaluateShape(s, 1e6), 42);
}

TEST(SignalTest, RampIsFlatOutsideAndLinearInside) {
  Signal s;
  s.kind = SignalKind::kRamp;
  s.from = 20;
  s.to = 72;
  s.start_s = 60;
  s.duration_s = 600;
  EXPECT_EQ(EvaluateShape(s, 0), 20);
  EXPECT_EQ(EvaluateShape(s, 60), 20);
  EXPECT_DOUBLE_EQ(EvaluateShape(s, 360), 46);
  EXPECT_EQ(EvaluateShape(s, 660), 72);
  EXPECT_EQ(EvaluateShape(s, 9999), 72);
}

TEST(SignalTest, SineOscillatesAroundMean) {
  Signal s;
  s.kind = SignalKind::kSine;
  s.mean = 650;
  s.amplitude = 25;
  s.period_s = 60;
  EXPECT_NEAR(EvaluateShape(s, 0), 650, 1e-9);
  EXPECT_NEAR(EvaluateShape(s, 15), 675, 1e-9);
  EXPECT_NEAR(EvaluateShape(s, 45), 625, 1e-9);
  EXPECT_NEAR(EvaluateShape(s, 60), 650, 1e-9);
  s.phase_s = 15;
  EXPECT_NEAR(EvaluateShape(s, 0), 675, 1e-9);
}

TEST(SignalTest, StepSwitchesAtItsTime) {
  Signal s;
  s.kind = SignalKind::kStep;
  s.before = 10;
  s.after = 90;
  s.at_s = 300;
  EXPECT_EQ(EvaluateShape(s, 299.999), 10);
  EXPECT_EQ(EvaluateShape(s, 300), 90);
}

TEST(SignalTest, PiecewiseInterpolatesBetweenPoints) {
  Signal s;
  s.kind = SignalKind::kPiecewise;
  s.points = {{0, 10}, {60, 80}, {300, 80}, {360, 0}};
  EXPECT_EQ(EvaluateShape(s, -5), 10);
  EXPECT_DOUBLE_EQ(EvaluateShape(s, 30), 45);
  EXPECT_EQ(EvaluateShape(s, 200), 80);
  EXPECT_DOUBLE_EQ(EvaluateShape(s, 330), 40);
  EXPECT_EQ(EvaluateShape(s, 1000), 0);
}

TEST(SignalTest, NoiseIsDeterministicAndConstantWithinASecond) {
  Signal s = Signal::Constant(50);
  s.noise = 5;
  uint64_t key = NoiseKey(42, 3, "power");
  EXPECT_EQ(Evaluate(s, key, 10.1), Evaluate(s, key, 10.9));
  EXPECT_EQ(Evaluate(s, key, 10.5), Evaluate(s, NoiseKey(42, 3, "power"), 10.5));
  EXPECT_NE(Evaluate(s, key, 10.5), Evaluate(s, key, 11.5));
}

TEST(SignalTest, NoiseStreamsDifferBySeedDeviceAndSignal) {
  EXPECT_NE(NoiseKey(1, 0, "power"), NoiseKey(2, 0, "power"));
  EXPECT_NE(NoiseKey(1, 0, "power"), NoiseKey(1, 1, "power"));
  EXPECT_NE(NoiseKey(1, 0, "power"), NoiseKey(1, 0, "temperature"));
}

TEST(SignalTest, NoiseIsStandardNormal) {
  uint64_t key = NoiseKey(7, 0, "gpu_util");
  double sum = 0, sum_sq = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    double g = GaussianNoise(key, i);
    sum += g;
    sum_sq += g * g;
  }
  double mean = sum / n;
  double stddev = std::sqrt(sum_sq / n - mean * mean);
  EXPECT_NEAR(mean, 0, 0.05);
  EXPECT_NEAR(stddev, 1, 0.05);
}

TEST(SignalTest, ClampsToTheSignalRange) {
  EXPECT_EQ(ClampSignal(SignalId::kGpuUtil, 104), 100);
  EXPECT_EQ(ClampSignal(SignalId::kGpuUtil, -3), 0);
  EXPECT_EQ(ClampSignal(SignalId::kPower, -1), 0);
  EXPECT_EQ(ClampSignal(SignalId::kPower, 900), 900);
  EXPECT_EQ(ClampSignal(SignalId::kClockEventReasons, 4.4), 4);
  EXPECT_EQ(ClampSignal(SignalId::kTemperature, 500), 200);
}

TEST(SignalTest, CatalogueFindsEveryName) {
  for (const auto& info : AllSignals()) {
    auto id = FindSignal(info.name);
    ASSERT_TRUE(id.has_value()) << info.name;
    EXPECT_EQ(*id, info.id);
  }
  EXPECT_FALSE(FindSignal("gpu_utilization").has_value());
}

}  // namespace
}  // namespace warpscope::sim

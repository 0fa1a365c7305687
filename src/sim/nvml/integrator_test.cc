// SPDX-License-Identifier: Apache-2.0
#include "sim/nvml/integrator.h"

#include <gtest/gtest.h>

#include <cmath>

#include "sim/nvml/signal.h"

namespace warpscope::sim {
namespace {

TEST(CumulativeIntegralTest, ConstantRateIsExact) {
  CumulativeIntegral integral;
  auto rate = [](double) { return 700.0; };
  EXPECT_EQ(integral.At(0, rate), 0);
  EXPECT_NEAR(integral.At(1, rate), 700, 1e-5);
  EXPECT_NEAR(integral.At(3600, rate), 700 * 3600, 1e-6);
  EXPECT_NEAR(integral.At(12.345, rate), 700 * 12.345, 1e-5);
}

TEST(CumulativeIntegralTest, NegativeTimeAndRatesCountAsZero) {
  CumulativeIntegral integral;
  EXPECT_EQ(integral.At(-5, [](double) { return 1.0; }), 0);
  CumulativeIntegral negative;
  EXPECT_EQ(negative.At(100, [](double) { return -3.0; }), 0);
}

TEST(CumulativeIntegralTest, RampIntegratesToTheTriangle) {
  CumulativeIntegral integral;
  auto rate = [](double t) { return t; };  // integral t^2/2
  EXPECT_NEAR(integral.At(100, rate), 5000, 1e-6);
}

TEST(CumulativeIntegralTest, NoisySineIsMonotonicAndRepeatable) {
  Signal power;
  power.kind = SignalKind::kSine;
  power.mean = 300;
  power.amplitude = 290;
  power.period_s = 7;
  power.noise = 50;
  uint64_t key = NoiseKey(1, 0, "power");
  auto rate = [&](double t) { return Evaluate(power, key, t); };
  CumulativeIntegral a;
  CumulativeIntegral b;
  double previous = 0;
  // Steps of about 1 ms, off the grid, across a checkpoint boundary (every 600 s).
  for (long long ns = 599'000'000'000; ns < 601'000'000'000; ns += 999'999) {
    double t = static_cast<double>(ns) / 1e9;
    double v = a.At(t, rate);
    ASSERT_GE(v, previous) << "at t=" << t;
    previous = v;
  }
  EXPECT_EQ(a.At(600.5, rate), b.At(600.5, rate));
}

TEST(CumulativeIntegralTest, QueriesInAnyOrderAgree) {
  auto rate = [](double t) { return 1.0 + std::sin(t); };
  CumulativeIntegral forward;
  for (int t = 0; t <= 2000; t += 7) {
    forward.At(t, rate);
  }
  CumulativeIntegral jump;
  for (double t : {1777.7, 3.3, 1203.05, 600.0, 1999.9}) {
    EXPECT_EQ(forward.At(t, rate), jump.At(t, rate)) << t;
  }
}

TEST(CumulativeIntegralTest, BetweenEqualsTheDifferenceOfCumulativeValues) {
  Signal s;
  s.kind = SignalKind::kSine;
  s.mean = 50;
  s.amplitude = 40;
  s.period_s = 9;
  s.noise = 7;
  uint64_t key = NoiseKey(3, 1, "sm_active");
  auto rate = [&](double t) { return Evaluate(s, key, t); };
  CumulativeIntegral integral;
  for (auto [t1, t2] : {std::pair{0.0, 12.34}, {3.05, 3.25}, {599.97, 1201.3}, {7.0, 7.0}}) {
    EXPECT_NEAR(CumulativeIntegral::Between(t1, t2, rate),
                integral.At(t2, rate) - integral.At(t1, rate), 1e-9)
        << t1 << ".." << t2;
  }
}

TEST(CumulativeIntegralTest, LongRunsStayExactAndCheap) {
  CumulativeIntegral integral;
  auto rate = [](double) { return 20e9 * 18; };  // NVLink bytes/s of a busy H100
  double day = 86400;
  EXPECT_NEAR(integral.At(day, rate) / (20e9 * 18 * day), 1.0, 1e-12);
  // After the first query, the next poll only integrates the new 30 s.
  EXPECT_NEAR(integral.At(day + 30, rate) - integral.At(day, rate), 20e9 * 18 * 30, 1);
}

}  // namespace
}  // namespace warpscope::sim

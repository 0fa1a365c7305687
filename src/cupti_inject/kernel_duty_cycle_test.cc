// SPDX-License-Identifier: Apache-2.0
#include "cupti_inject/kernel_duty_cycle.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace warpscope::cupti_inject {
namespace {

constexpr uint64_t kMs = 1'000'000;

// The schedule's clock is the kernel's own GPU start timestamp: the test feeds timestamps.
TEST(KernelDutyCycleTest, WindowsStartAtMultiplesOfTheInterval) {
  const KernelDutyCycle c{100, 1000};
  const uint64_t base = 1'764'500'000'000 * kMs;  // a CLOCK_REALTIME-like value, 1000 ms aligned
  EXPECT_TRUE(c.Contains(base));
  EXPECT_TRUE(c.Contains(base + 100 * kMs - 1));
  EXPECT_FALSE(c.Contains(base + 100 * kMs));
  EXPECT_FALSE(c.Contains(base + 999 * kMs));
  EXPECT_TRUE(c.Contains(base + 1000 * kMs));
  EXPECT_TRUE(c.Contains(base + 7050 * kMs));
  EXPECT_FALSE(c.Contains(base + 7150 * kMs));
}

TEST(KernelDutyCycleTest, FractionOfTimeInWindowsIsWindowOverInterval) {
  const KernelDutyCycle c{200, 10000};
  uint64_t inside = 0;
  const uint64_t steps = 100000;
  for (uint64_t i = 0; i < steps; ++i) {
    inside += c.Contains(5 * kMs + i * 1'000'003);  // ~1 ms steps over 100 s, unaligned
  }
  EXPECT_NEAR(static_cast<double>(inside) / steps, 0.02, 0.001);
}

TEST(KernelDutyCycleTest, OffSendsNoUnsampledKernel) {
  const KernelDutyCycle c = KernelDutyCycle::Off();
  EXPECT_TRUE(c.IsOff());
  EXPECT_FALSE(c.Contains(0));
  EXPECT_FALSE(c.Contains(123456789));
  EXPECT_FALSE((KernelDutyCycle{0, 0}).Contains(5));
}

TEST(KernelDutyCycleTest, WindowCoveringTheIntervalIsAlwaysOn) {
  EXPECT_TRUE(KernelDutyCycle::Always().IsAlways());
  for (const KernelDutyCycle c : {KernelDutyCycle{1000, 1000}, KernelDutyCycle{5000, 1000},
                                  KernelDutyCycle{1, 0}}) {
    EXPECT_TRUE(c.IsAlways());
    EXPECT_TRUE(c.Contains(0));
    EXPECT_TRUE(c.Contains(999 * kMs));
    EXPECT_TRUE(c.Contains(~0ull));
  }
  EXPECT_FALSE((KernelDutyCycle{999, 1000}).IsAlways());
}

TEST(KernelDutyCycleTest, PacksIntoTheControlValue) {
  const KernelDutyCycle c{200, 10000};
  EXPECT_EQ(c.Pack(), (200ull << 32) | 10000);
  EXPECT_EQ(KernelDutyCycle::Unpack(c.Pack()), c);
  EXPECT_TRUE(KernelDutyCycle::Unpack(0).IsOff());
  EXPECT_EQ(KernelDutyCycle::Unpack(~0ull), (KernelDutyCycle{0xffffffffu, 0xffffffffu}));
  EXPECT_TRUE(KernelDutyCycle::Unpack(~0ull).IsAlways());
}

}  // namespace
}  // namespace warpscope::cupti_inject

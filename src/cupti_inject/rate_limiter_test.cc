// SPDX-License-Identifier: Apache-2.0
#include "cupti_inject/rate_limiter.h"

#include <gtest/gtest.h>

namespace warpscope::cupti_inject {
namespace {

constexpr uint64_t kSec = 1'000'000'000ull;

TEST(TokenBucketTest, StartsFullThenAdmitsAtTheRate) {
  TokenBucket b;
  uint64_t t = 5 * kSec;
  int admitted = 0;
  for (int i = 0; i < 100; ++i) {
    admitted += b.Admit(t, 200, 20);
  }
  EXPECT_EQ(admitted, 20);  // the burst
  admitted = 0;
  // One simulated second at 10 kHz: 200 more.
  for (int i = 0; i < 10000; ++i) {
    t += kSec / 10000;
    admitted += b.Admit(t, 200, 20);
  }
  EXPECT_NEAR(admitted, 200, 1);
}

TEST(TokenBucketTest, RateZeroAdmitsNothing) {
  TokenBucket b;
  EXPECT_FALSE(b.Admit(kSec, 0, 20));
  EXPECT_FALSE(b.Admit(100 * kSec, 0, 20));
}

TEST(TokenBucketTest, IdleTimeRefillsOnlyUpToTheBurst) {
  TokenBucket b;
  uint64_t t = kSec;
  while (b.Admit(t, 100, 5)) {
  }
  t += 3600 * kSec;  // an hour idle
  int admitted = 0;
  for (int i = 0; i < 50; ++i) {
    admitted += b.Admit(t, 100, 5);
  }
  EXPECT_EQ(admitted, 5);
}

TEST(TokenBucketTest, ClockGoingBackwardsAddsNothing) {
  TokenBucket b;
  uint64_t t = 10 * kSec;
  while (b.Admit(t, 100, 2)) {
  }
  EXPECT_FALSE(b.Admit(t - kSec, 100, 2));
  EXPECT_FALSE(b.Admit(t, 100, 2));
}

TEST(TokenBucketTest, RetunedRateTakesEffect) {
  TokenBucket b;
  uint64_t t = kSec;
  while (b.Admit(t, 10, 1)) {
  }
  int admitted = 0;
  for (int i = 0; i < 1000; ++i) {
    t += kSec / 1000;
    admitted += b.Admit(t, 1000, 1);
  }
  EXPECT_NEAR(admitted, 1000, 2);
}

}  // namespace
}  // namespace warpscope::cupti_inject

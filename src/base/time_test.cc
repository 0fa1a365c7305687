// SPDX-License-Identifier: Apache-2.0
#include "base/time.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace warpscope::base {
namespace {

using ::testing::HasSubstr;
using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;

TEST(ParseDurationTest, AcceptsUnits) {
  EXPECT_EQ(*ParseDuration("30s"), seconds(30));
  EXPECT_EQ(*ParseDuration("500ms"), milliseconds(500));
  EXPECT_EQ(*ParseDuration("2m"), minutes(2));
  EXPECT_EQ(*ParseDuration("1m30s"), seconds(90));
  EXPECT_EQ(*ParseDuration("1.5s"), milliseconds(1500));
  EXPECT_EQ(*ParseDuration("1h"), minutes(60));
}

TEST(ParseDurationTest, RejectsMissingOrUnknownUnit) {
  auto bare = ParseDuration("30");
  ASSERT_FALSE(bare);
  EXPECT_NE(bare.error().message().find("missing unit"), std::string::npos);
  EXPECT_FALSE(ParseDuration("5 parsecs"));
  EXPECT_FALSE(ParseDuration("5y"));
  EXPECT_FALSE(ParseDuration(""));
  EXPECT_FALSE(ParseDuration("s"));
}

TEST(FormatDurationTest, RoundTrips) {
  EXPECT_EQ(FormatDuration(seconds(90)), "1m30s");
  EXPECT_EQ(FormatDuration(milliseconds(250)), "250ms");
  EXPECT_EQ(FormatDuration(Duration(0)), "0s");
  EXPECT_EQ(*ParseDuration(FormatDuration(minutes(61))), minutes(61));
}

// Regression tests for inputs found by src/base/time_fuzzer.cc.
TEST(ParseDurationTest, RejectsDurationsBeyondTheInt64Range) {
  auto too_long = ParseDuration("999999999999999999999h");
  ASSERT_FALSE(too_long);
  EXPECT_THAT(too_long.error().message(), HasSubstr("too long"));
  EXPECT_FALSE(ParseDuration("106751d106751d"));  // each part fits, the sum does not
  EXPECT_EQ(*ParseDuration("106751d"), hours(106751 * 24));
}

TEST(ParseDurationTest, RoundsFractionsToTheNearestNanosecond) {
  EXPECT_EQ(*ParseDuration("1.001s"), milliseconds(1001));  // 1.001 * 1e9 < 1001000000 in binary
  EXPECT_EQ(*ParseDuration("1.000000001s"), Duration(1'000'000'001));
}

TEST(FormatDurationTest, KeepsTheSubSecondRestOfLongDurations) {
  EXPECT_EQ(FormatDuration(milliseconds(61'500)), "1m1s500ms");
  EXPECT_EQ(FormatDuration(Duration(3'723'004'005'006)), "1h2m3s4005006ns");
  EXPECT_EQ(*ParseDuration(FormatDuration(Duration(3'723'004'005'006))),
            Duration(3'723'004'005'006));
}

TEST(FormatDurationTest, FormatsTheMostNegativeDuration) {
  EXPECT_EQ(FormatDuration(Duration::min()), "-2562047h47m16s854775808ns");
}

TEST(FakeClockTest, AdvancesBothClocks) {
  FakeClock clock;
  auto wall = clock.Now();
  auto mono = clock.Monotonic();
  clock.Advance(seconds(5));
  EXPECT_EQ(clock.Now() - wall, seconds(5));
  EXPECT_EQ(clock.Monotonic() - mono, seconds(5));
}

}  // namespace
}  // namespace warpscope::base

// SPDX-License-Identifier: Apache-2.0
#include "base/time.h"

#include <gtest/gtest.h>

namespace warpscope::base {
namespace {

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

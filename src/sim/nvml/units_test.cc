// SPDX-License-Identifier: Apache-2.0
#include "sim/nvml/units.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace warpscope::sim {
namespace {

using ::testing::HasSubstr;

TEST(UnitsTest, ParsesBinaryAndDecimalSizes) {
  EXPECT_EQ(*ParseBytes("80GiB"), 80.0 * 1024 * 1024 * 1024);
  EXPECT_EQ(*ParseBytes("500MiB"), 500.0 * 1024 * 1024);
  EXPECT_EQ(*ParseBytes("4 KiB"), 4096.0);
  EXPECT_EQ(*ParseBytes("1TiB"), 1024.0 * 1024 * 1024 * 1024);
  EXPECT_EQ(*ParseBytes("10GB"), 10e9);
  EXPECT_EQ(*ParseBytes("3KB"), 3000.0);
  EXPECT_EQ(*ParseBytes("1.5MB"), 1.5e6);
  EXPECT_EQ(*ParseBytes("12345"), 12345.0);
  EXPECT_EQ(*ParseBytes("2e9"), 2e9);
  EXPECT_EQ(*ParseBytes("7B"), 7.0);
}

TEST(UnitsTest, RejectsBadSizesWithTheUnitList) {
  auto r = ParseBytes("80Gb");
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message(), HasSubstr("unknown size unit 'Gb'"));
  EXPECT_THAT(r.error().message(), HasSubstr("GiB"));
  EXPECT_FALSE(ParseBytes("lots"));
  EXPECT_FALSE(ParseBytes("-1GiB"));
}

TEST(UnitsTest, ParsesDurations) {
  EXPECT_EQ(*ParseSeconds("30s"), 30.0);
  EXPECT_EQ(*ParseSeconds("5m"), 300.0);
  EXPECT_EQ(*ParseSeconds("1h"), 3600.0);
  EXPECT_DOUBLE_EQ(*ParseSeconds("250ms"), 0.25);
  EXPECT_EQ(*ParseSeconds("1m30s"), 90.0);
  EXPECT_EQ(*ParseSeconds("0"), 0.0);
}

TEST(UnitsTest, RejectsDurationWithoutUnit) {
  auto r = ParseSeconds("30");
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message(), HasSubstr("no unit"));
  EXPECT_THAT(r.error().message(), HasSubstr("30s"));
  EXPECT_FALSE(ParseSeconds("5 minutes"));
}

TEST(UnitsTest, ParsesWatts) {
  EXPECT_EQ(*ParseWatts("700"), 700.0);
  EXPECT_EQ(*ParseWatts("650W"), 650.0);
  EXPECT_EQ(*ParseWatts("1.2kW"), 1200.0);
  EXPECT_FALSE(ParseWatts("700V"));
}

TEST(UnitsTest, ParsesNumbers) {
  EXPECT_EQ(*ParseNumber("20e9"), 20e9);
  EXPECT_EQ(*ParseNumber("-3.5"), -3.5);
  EXPECT_EQ(*ParseNumber("+4"), 4.0);
  EXPECT_EQ(*ParseNumber("0x2330"), 0x2330);
  EXPECT_FALSE(ParseNumber("12abc"));
  EXPECT_FALSE(ParseNumber(""));
  EXPECT_FALSE(ParseNumber("nan"));
}

// Regressions found by units_fuzzer.cc.
TEST(UnitsTest, RejectsTwoSigns) {
  EXPECT_FALSE(ParseNumber("+-5"));
  EXPECT_FALSE(ParseNumber("++5"));
  EXPECT_FALSE(ParseBytes("+-5GiB"));
}

TEST(UnitsTest, RejectsSizesAndPowersThatOverflowToInfinity) {
  EXPECT_TRUE(ParseBytes("1e300"));
  EXPECT_FALSE(ParseBytes("1e308TiB"));
  EXPECT_FALSE(ParseWatts("1e308kW"));
}

}  // namespace
}  // namespace warpscope::sim

// SPDX-License-Identifier: Apache-2.0
#include "server/insights/series_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace warpscope::server::insights {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

TEST(SeriesMathTest, NoDataIsSkippedAndAStatisticOverNothingIsAbsent) {
  std::vector<double> s = {kNaN, 2, kNaN, 4, 9};
  EXPECT_EQ(CountValues(s), 3u);
  EXPECT_EQ(*Mean(s), 5);
  EXPECT_EQ(*Max(s), 9);
  EXPECT_EQ(*Min(s), 2);
  EXPECT_EQ(Last(s)->first, 4u);
  std::vector<double> none = {kNaN, kNaN};
  EXPECT_FALSE(Mean(none));
  EXPECT_FALSE(Max(none));
  EXPECT_FALSE(Last(none));
  EXPECT_FALSE(SlopePerBucket(none));
  EXPECT_FALSE(Median({kNaN}));
}

TEST(SeriesMathTest, SliceClampsToTheSeries) {
  std::vector<double> s = {1, 2, 3};
  EXPECT_EQ(Slice(s, 1, 10).size(), 2u);
  EXPECT_EQ(Slice(s, 5, 10).size(), 0u);
  EXPECT_EQ(Slice(s, 2, 1).size(), 0u);
}

TEST(SeriesMathTest, MedianOfOddAndEvenCounts) {
  EXPECT_EQ(*Median({3, 1, 2}), 2);
  EXPECT_EQ(*Median({4, 1, 3, 2}), 2.5);
  EXPECT_EQ(*Median({5}), 5);
}

TEST(SeriesMathTest, SlopeIsTheLeastSquaresFitOverTheBucketsThatHaveData) {
  std::vector<double> line = {1, 3, kNaN, 7, 9};
  EXPECT_NEAR(*SlopePerBucket(line), 2, 1e-12);
  EXPECT_NEAR(*SlopePerBucket(std::vector<double>{5, 5, 5}), 0, 1e-12);
  EXPECT_FALSE(SlopePerBucket(std::vector<double>{1}));
}

TEST(SeriesMathTest, LargestFallIsPeakToLaterTrough) {
  EXPECT_EQ(LargestFall(std::vector<double>{1, 5, 2, 6, 4}), 3);
  EXPECT_EQ(LargestFall(std::vector<double>{1, 2, 3}), 0);
  EXPECT_EQ(LargestFall(std::vector<double>{kNaN}), 0);
}

}  // namespace
}  // namespace warpscope::server::insights

// SPDX-License-Identifier: Apache-2.0
#include "server/storage/query_plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

namespace warpscope::server {
namespace {

constexpr int64_t kT0 = 1'699'999'200'000;  // a whole hour, in ms

}  // namespace

void PrintTo(const Segment& s, std::ostream* os) {
  *os << ResolutionName(s.resolution) << "[" << s.from - kT0 << ", " << s.to - kT0 << ")";
}

namespace {

TEST(QueryPlanTest, FloorAndCeilHandleNegativeTimes) {
  EXPECT_EQ(FloorTo(-1, 60), -60);
  EXPECT_EQ(FloorTo(61, 60), 60);
  EXPECT_EQ(CeilTo(61, 60), 120);
  EXPECT_EQ(CeilTo(120, 60), 120);
}

TEST(QueryPlanTest, PrefersTheCoarsestResolutionNotAboveTheStep) {
  EXPECT_EQ(PreferredResolution(10'000), Resolution::kRaw);
  EXPECT_EQ(PreferredResolution(kMinuteMs), Resolution::kMinute);
  EXPECT_EQ(PreferredResolution(5 * kMinuteMs), Resolution::kMinute);
  EXPECT_EQ(PreferredResolution(kHourMs), Resolution::kHour);
}

TEST(QueryPlanTest, RawOnlyWhenNothingIsRolledUp) {
  Availability a;
  EXPECT_THAT(PlanSegments(kT0, kT0 + kHourMs, kMinuteMs, a),
              ::testing::ElementsAre(Segment{Resolution::kRaw, kT0, kT0 + kHourMs}));
}

TEST(QueryPlanTest, RollupsUpToTheWatermarkThenRaw) {
  Availability a;
  a.minute_to = kT0 + 30 * kMinuteMs;
  a.minute_from = std::numeric_limits<int64_t>::min();
  EXPECT_THAT(PlanSegments(kT0 + 30'000, kT0 + kHourMs, kMinuteMs, a),
              ::testing::ElementsAre(Segment{Resolution::kRaw, kT0 + 30'000, kT0 + kMinuteMs},
                                     Segment{Resolution::kMinute, kT0 + kMinuteMs,
                                             kT0 + 30 * kMinuteMs},
                                     Segment{Resolution::kRaw, kT0 + 30 * kMinuteMs,
                                             kT0 + kHourMs}));
}

TEST(QueryPlanTest, HourStepUsesHoursThenMinutesThenRaw) {
  Availability a;
  a.minute_from = a.hour_from = std::numeric_limits<int64_t>::min();
  a.hour_to = kT0 + 2 * kHourMs;
  a.minute_to = kT0 + 2 * kHourMs + 10 * kMinuteMs;
  EXPECT_THAT(
      PlanSegments(kT0, kT0 + 3 * kHourMs, kHourMs, a),
      ::testing::ElementsAre(
          Segment{Resolution::kHour, kT0, kT0 + 2 * kHourMs},
          Segment{Resolution::kMinute, kT0 + 2 * kHourMs, kT0 + 2 * kHourMs + 10 * kMinuteMs},
          Segment{Resolution::kRaw, kT0 + 2 * kHourMs + 10 * kMinuteMs, kT0 + 3 * kHourMs}));
}

TEST(QueryPlanTest, FineStepFallsBackToRollupsWhereRawExpired) {
  Availability a;
  a.raw_from = kT0 + kHourMs;
  a.minute_from = std::numeric_limits<int64_t>::min();
  a.minute_to = kT0 + 2 * kHourMs;
  EXPECT_THAT(PlanSegments(kT0, kT0 + 2 * kHourMs, 10'000, a),
              ::testing::ElementsAre(Segment{Resolution::kMinute, kT0, kT0 + kHourMs},
                                     Segment{Resolution::kRaw, kT0 + kHourMs, kT0 + 2 * kHourMs}));
}

TEST(QueryPlanTest, NothingWhereNoResolutionHasData) {
  Availability a;
  a.raw_from = kT0 + kHourMs;
  EXPECT_TRUE(PlanSegments(kT0, kT0 + kMinuteMs, kMinuteMs, a).empty());
}

TEST(SeriesFolderTest, CombinesWindowsPerStepBucket) {
  SeriesFolder folder(kT0, kMinuteMs, 2);
  folder.Add(Row{kT0, 1, 0, 5, 2, 1});
  folder.Add(Row{kT0 + 30'000, 3, 1, 4, 7, 3});
  folder.Add(Row{kT0 + kMinuteMs, 9, 9, 9, 9, 1});
  const Bucket& b = folder.buckets()[0];
  EXPECT_DOUBLE_EQ(*b.Value(Aggregation::kAvg), (1.0 * 1 + 3.0 * 3) / 4);
  EXPECT_DOUBLE_EQ(*b.Value(Aggregation::kMin), 0);
  EXPECT_DOUBLE_EQ(*b.Value(Aggregation::kMax), 5);
  EXPECT_DOUBLE_EQ(*b.Value(Aggregation::kLast), 7);
  EXPECT_DOUBLE_EQ(*folder.buckets()[1].Value(Aggregation::kAvg), 9);
}

TEST(SeriesFolderTest, PartialBucketsMergeAsTheirRowsWould) {
  // Rows of one bucket split over two resolutions (an hour row, then minute rows), folded
  // row by row and as two partial buckets, give the same bucket.
  const std::vector<Row> rows = {Row{kT0, 2, 1, 3, 2.5, 60}, Row{kT0 + kHourMs, 4, 0, 9, 8, 1},
                                 Row{kT0 + kHourMs + kMinuteMs, 6, 5, 7, 6.5, 2}};
  SeriesFolder by_row(kT0, 2 * kHourMs, 2);
  for (const Row& r : rows) by_row.Add(r);
  SeriesFolder by_part(kT0, 2 * kHourMs, 2);
  SeriesFolder hour(kT0, 2 * kHourMs, 2);
  SeriesFolder minutes(kT0, 2 * kHourMs, 2);
  hour.Add(rows[0]);
  minutes.Add(rows[1]);
  minutes.Add(rows[2]);
  by_part.AddBucket(minutes.buckets()[0]);  // the later part first: last still goes by time
  by_part.AddBucket(hour.buckets()[0]);
  by_part.AddBucket(Bucket{});  // an empty part changes nothing
  const Bucket& want = by_row.buckets()[0];
  const Bucket& got = by_part.buckets()[0];
  for (Aggregation a :
       {Aggregation::kAvg, Aggregation::kMin, Aggregation::kMax, Aggregation::kLast}) {
    EXPECT_DOUBLE_EQ(*got.Value(a), *want.Value(a));
  }
  EXPECT_EQ(got.count, 63);
  EXPECT_EQ(got.last_start, kT0 + kHourMs + kMinuteMs);
  EXPECT_TRUE(by_part.buckets()[1].empty());
  // A part outside the frame is dropped.
  Bucket late = want;
  late.last_start = kT0 + 4 * kHourMs;
  by_part.AddBucket(late);
  EXPECT_EQ(by_part.buckets()[0].count, 63);
  EXPECT_TRUE(by_part.buckets()[1].empty());
}

TEST(SeriesFolderTest, EmptyBucketHasNoValue) {
  SeriesFolder folder(kT0, kMinuteMs, 2);
  folder.Add(Row{kT0, 1, 1, 1, 1, 1});
  EXPECT_FALSE(folder.buckets()[1].Value(Aggregation::kAvg).has_value());
}

TEST(SeriesFolderTest, RateUsesTheRowBeforeTheBucketAndReadsDecreasesAsResets) {
  SeriesFolder folder(kT0, kMinuteMs, 2);
  folder.Add(Row{kT0 - 30'000, 0, 0, 0, 100, 1});  // seed only
  folder.Add(Row{kT0, 0, 0, 0, 400, 1});           // +300 in 30 s
  folder.Add(Row{kT0 + 30'000, 0, 0, 0, 700, 1});  // +300 in 30 s
  folder.Add(Row{kT0 + kMinuteMs, 0, 0, 0, 50, 1});  // reset: +50 in 30 s
  EXPECT_DOUBLE_EQ(*folder.buckets()[0].Value(Aggregation::kRate), 10.0);
  EXPECT_DOUBLE_EQ(*folder.buckets()[1].Value(Aggregation::kRate), 50.0 / 30.0);
}

TEST(SeriesFolderTest, RateNeedsTwoRows) {
  SeriesFolder folder(kT0, kMinuteMs, 1);
  folder.Add(Row{kT0, 0, 0, 0, 5, 1});
  EXPECT_FALSE(folder.buckets()[0].Value(Aggregation::kRate).has_value());
}

}  // namespace
}  // namespace warpscope::server

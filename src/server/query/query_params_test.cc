// SPDX-License-Identifier: Apache-2.0
#include "server/query/query_params.h"

#include <gtest/gtest.h>

namespace warpscope::server {
namespace {

const base::TimePoint kNow = base::FromUnixNanos(1'700'000'000'000'000'000);

TEST(ParseTimeTest, AcceptsUnixSecondsRfc3339AndRelative) {
  EXPECT_EQ(*ParseTime("1700000000", kNow), kNow);
  EXPECT_EQ(*ParseTime("1700000000.5", kNow), kNow + std::chrono::milliseconds(500));
  EXPECT_EQ(*ParseTime("2023-11-14T22:13:20Z", kNow), kNow);
  EXPECT_EQ(*ParseTime("2023-11-14T22:13:20.250Z", kNow), kNow + std::chrono::milliseconds(250));
  EXPECT_EQ(*ParseTime("now", kNow), kNow);
  EXPECT_EQ(*ParseTime("now-15m", kNow), kNow - std::chrono::minutes(15));
  EXPECT_EQ(*ParseTime("now+1h", kNow), kNow + std::chrono::hours(1));
}

TEST(ParseTimeTest, RejectsWithAMessage) {
  for (const char* bad : {"", "yesterday", "now*2", "now-", "2023-11-14T22:13:20+01:00", "1e5x"}) {
    auto t = ParseTime(bad, kNow);
    ASSERT_FALSE(t) << bad;
    EXPECT_EQ(t.error().code(), base::StatusCode::kInvalidArgument);
  }
}

TEST(ParseTimeTest, RejectsTimesBeyondTheClockRange) {
  for (const char* bad : {"now-1000000h", "now+99999d", "99999999999999", "9999-01-01T00:00:00Z"}) {
    auto t = ParseTime(bad, kNow);
    ASSERT_FALSE(t) << bad;
    EXPECT_EQ(t.error().code(), base::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(ParseMatcherTest, ReadsHostKindLabelsAndAttributes) {
  Params p{{"host", "node1"}, {"kind", "gpu"}, {"label.link", "3"}, {"attr.gpu.index", "0"}};
  auto m = ParseMatcher(p);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->host, "node1");
  EXPECT_EQ(m->entity_kind, model::EntityKind::kGpu);
  EXPECT_EQ(m->labels.Get("link"), "3");
  EXPECT_EQ(m->entity_attributes.Get("gpu.index"), "0");
  EXPECT_FALSE(ParseMatcher(Params{{"kind", "toaster"}}));
}

TEST(ParseRangeTest, DefaultsAndOrder) {
  auto r = ParseRange({}, kNow);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->end, kNow);
  EXPECT_EQ(r->start, kNow - std::chrono::hours(1));
  EXPECT_FALSE(ParseRange(Params{{"start", "now"}, {"end", "now-1h"}}, kNow));
  auto bad = ParseRange(Params{{"start", "x"}}, kNow);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("start"), std::string::npos);
}

TEST(ParseCountTest, Bounds) {
  EXPECT_EQ(*ParseCount({}, "limit", 10, 100), 10u);
  EXPECT_EQ(*ParseCount(Params{{"limit", "50"}}, "limit", 10, 100), 50u);
  EXPECT_FALSE(ParseCount(Params{{"limit", "0"}}, "limit", 10, 100));
  EXPECT_FALSE(ParseCount(Params{{"limit", "101"}}, "limit", 10, 100));
  EXPECT_FALSE(ParseCount(Params{{"limit", "-1"}}, "limit", 10, 100));
}

}  // namespace
}  // namespace warpscope::server

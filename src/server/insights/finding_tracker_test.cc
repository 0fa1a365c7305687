// SPDX-License-Identifier: Apache-2.0
#include "server/insights/finding_tracker.h"

#include <gtest/gtest.h>

#include <chrono>

namespace warpscope::server::insights {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;

constexpr RuleInfo kRule{.name = "test_rule",
                         .title = "Test rule",
                         .severity = Severity::kTicket,
                         .hold_for = minutes(1),
                         .clear_after = minutes(2),
                         .suggestion = "Fix it."};

const base::TimePoint kT = base::FromUnixNanos(1'700'000'000'000'000'000);

Observation On(const std::string& entity, double lost = 0) {
  Observation o;
  o.host = "node-1";
  o.entity = entity;
  o.summary = "seen";
  o.lost_fraction = lost;
  return o;
}

TEST(FindingTrackerTest, PendingThenFiringAfterHoldForThenResolvedAfterClearAfter) {
  FindingTracker t;
  std::vector<Observation> seen = {On("GPU-0")};
  t.Apply(kRule, seen, kT, 0);
  ASSERT_EQ(t.Findings().size(), 1u);
  EXPECT_EQ(t.Findings()[0].state, FindingState::kPending);
  EXPECT_TRUE(t.Open("test_rule", "node-1", "GPU-0"));
  t.Apply(kRule, seen, kT + seconds(30), 0);
  EXPECT_EQ(t.Findings()[0].state, FindingState::kPending);
  t.Apply(kRule, seen, kT + seconds(60), 0);
  EXPECT_EQ(t.Findings()[0].state, FindingState::kFiring);
  EXPECT_EQ(t.Findings()[0].suggestion, "Fix it.");
  // Gone for less than clear_after: still firing, its end the last time it was seen.
  t.Apply(kRule, {}, kT + seconds(120), 0);
  EXPECT_EQ(t.Findings()[0].state, FindingState::kFiring);
  EXPECT_EQ(t.Findings()[0].end, kT + seconds(60));
  t.Apply(kRule, {}, kT + seconds(180), 0);
  ASSERT_EQ(t.Findings().size(), 1u);
  EXPECT_EQ(t.Findings()[0].state, FindingState::kResolved);
  EXPECT_EQ(t.Findings()[0].start, kT);
  EXPECT_EQ(t.Findings()[0].end, kT + seconds(60));
  EXPECT_FALSE(t.Open("test_rule", "node-1", "GPU-0"));
}

TEST(FindingTrackerTest, APendingFindingThatBlinksOutIsForgottenAFiringOneDoesNotFlap) {
  FindingTracker t;
  std::vector<Observation> seen = {On("GPU-0")};
  t.Apply(kRule, seen, kT, 0);
  t.Apply(kRule, {}, kT + seconds(10), 0);
  EXPECT_TRUE(t.Findings().empty());

  for (int i = 0; i <= 6; ++i) t.Apply(kRule, seen, kT + seconds(10 * i), 0);
  // Flapping: seen every other evaluation keeps one firing finding.
  for (int i = 7; i < 30; ++i) {
    t.Apply(kRule, i % 2 ? std::vector<Observation>{} : seen, kT + seconds(10 * i), 0);
  }
  ASSERT_EQ(t.Findings().size(), 1u);
  EXPECT_EQ(t.Findings()[0].state, FindingState::kFiring);
  EXPECT_EQ(t.Findings()[0].start, kT);
}

TEST(FindingTrackerTest, OneFindingPerRuleAndEntityAndOtherRulesAreLeftAlone) {
  FindingTracker t;
  std::vector<Observation> twice = {On("GPU-0"), On("GPU-0"), On("GPU-1")};
  t.Apply(kRule, twice, kT, 0);
  EXPECT_EQ(t.Findings().size(), 2u);
  RuleInfo other = kRule;
  other.name = "other_rule";
  t.Apply(other, {}, kT + minutes(10), 0);  // says nothing of test_rule's findings
  EXPECT_EQ(t.Findings().size(), 2u);
}

TEST(FindingTrackerTest, WasteIsTheLostShareOverTheTimeSeenPricedPerGpuHour) {
  FindingTracker t;
  std::vector<Observation> seen = {On("GPU-0", 0.5)};
  for (int i = 0; i <= 12; ++i) t.Apply(kRule, seen, kT + minutes(5 * i), 2.5);
  // One hour at half the GPU: 0.5 GPU-hours, 1.25 at 2.5 per GPU-hour.
  Finding f = t.Findings()[0];
  EXPECT_NEAR(f.waste.gpu_hours, 0.5, 1e-9);
  EXPECT_NEAR(f.waste.cost, 1.25, 1e-9);
  // A server outage of an hour is charged at most 5 minutes.
  t.Apply(kRule, seen, kT + minutes(120), 2.5);
  EXPECT_NEAR(t.Findings()[0].waste.gpu_hours, 0.5 + 0.5 * 5 / 60.0, 1e-9);
}

TEST(FindingTrackerTest, RestoredFindingsContinueTheirLifecycle) {
  FindingTracker first;
  std::vector<Observation> seen = {On("GPU-0")};
  first.Apply(kRule, seen, kT, 0);
  first.Apply(kRule, seen, kT + minutes(1), 0);
  FindingTracker second;
  second.Restore(first.Findings());
  EXPECT_TRUE(second.Open("test_rule", "node-1", "GPU-0"));
  second.Apply(kRule, seen, kT + minutes(2), 0);
  ASSERT_EQ(second.Findings().size(), 1u);
  EXPECT_EQ(second.Findings()[0].start, kT);
  EXPECT_EQ(second.Findings()[0].state, FindingState::kFiring);
}

TEST(FindingTrackerTest, ResolvedFindingsAreBounded) {
  FindingTracker t(/*max_resolved=*/3);
  RuleInfo instant = kRule;
  instant.hold_for = {};
  instant.clear_after = {};
  for (int i = 0; i < 10; ++i) {
    std::vector<Observation> seen = {On("GPU-" + std::to_string(i))};
    t.Apply(instant, seen, kT + minutes(i), 0);
  }
  t.Apply(instant, {}, kT + minutes(20), 0);
  std::vector<Finding> all = t.Findings();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].state, FindingState::kResolved);
}

}  // namespace
}  // namespace warpscope::server::insights

// SPDX-License-Identifier: Apache-2.0
#include "server/alerts/alert_notifier.h"

#include <gtest/gtest.h>

namespace warpscope::server::alerts {
namespace {

using insights::Finding;
using insights::FindingState;
using insights::Severity;
using std::chrono::minutes;
using std::chrono::seconds;

const base::TimePoint kT0 = base::FromUnixNanos(1'764'927'000'000'000'000);

Finding MakeFinding(std::string id, std::string gpu, FindingState state,
                    Severity severity = Severity::kPage) {
  Finding f;
  f.id = std::move(id);
  f.rule = "cooling_failure";
  f.title = "Cooling failure";
  f.severity = severity;
  f.state = state;
  f.host = "node";
  f.entity = "GPU-" + gpu;
  f.attributes = model::Labels({{"gpu.index", gpu}, {"gpu.uuid", "GPU-" + gpu}});
  f.start = kT0;
  f.end = kT0;
  f.updated = kT0;
  return f;
}

AlertNotifier MakeNotifier(Severity min = Severity::kPage) {
  return AlertNotifier(NotifierOptions{.min_severity = min,
                                       .resend = minutes(1),
                                       .evaluation_interval = seconds(10),
                                       .resolved_resend_for = minutes(15),
                                       .external_url = "http://ui"});
}

TEST(AlertNotifierTest, AFiringFindingIsSentAtOnceThenEveryResendWithAFreshLease) {
  AlertNotifier n = MakeNotifier();
  std::vector<Finding> findings{MakeFinding("f1", "1", FindingState::kFiring)};
  std::vector<Alert> due = n.Update(findings, kT0 + seconds(10));
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].labels.at("gpu"), "1");
  EXPECT_EQ(due[0].starts_at, kT0);
  EXPECT_EQ(due[0].ends_at, kT0 + seconds(10) + minutes(4));  // 4 × max(10 s, 1 min)
  EXPECT_EQ(due[0].generator_url, "http://ui/insights/f1");
  // Not again before the resend delay...
  for (int s = 20; s < 70; s += 10) {
    EXPECT_TRUE(n.Update(findings, kT0 + seconds(s)).empty()) << s;
  }
  // ...then again, with the lease moved on.
  due = n.Update(findings, kT0 + seconds(70));
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].ends_at, kT0 + seconds(70) + minutes(4));
  EXPECT_EQ(n.firing(), 1u);
}

TEST(AlertNotifierTest, TheLeaseFollowsASlowEvaluation) {
  AlertNotifier n(NotifierOptions{.resend = minutes(1), .evaluation_interval = minutes(2)});
  std::vector<Finding> findings{MakeFinding("f1", "1", FindingState::kFiring)};
  std::vector<Alert> due = n.Update(findings, kT0);
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].ends_at, kT0 + minutes(8));
}

TEST(AlertNotifierTest, PendingFindingsAndThoseUnderTheSeverityAreNotSent) {
  AlertNotifier n = MakeNotifier();
  std::vector<Finding> findings{MakeFinding("f1", "1", FindingState::kPending),
                                MakeFinding("f2", "2", FindingState::kFiring, Severity::kTicket),
                                MakeFinding("f3", "3", FindingState::kFiring, Severity::kInfo)};
  EXPECT_TRUE(n.Update(findings, kT0).empty());
  AlertNotifier tickets = MakeNotifier(Severity::kTicket);
  std::vector<Alert> due = tickets.Update(findings, kT0);
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].labels.at("severity"), "ticket");
}

TEST(AlertNotifierTest, AResolutionIsSentAtOnceAndRepeatedForFifteenMinutes) {
  AlertNotifier n = MakeNotifier();
  Finding f = MakeFinding("f1", "1", FindingState::kFiring);
  ASSERT_EQ(n.Update({&f, 1}, kT0).size(), 1u);
  f.state = FindingState::kResolved;
  f.end = kT0 + seconds(20);
  f.updated = kT0 + seconds(30);  // the evaluation that resolved it
  std::vector<Alert> due = n.Update({&f, 1}, kT0 + seconds(30));
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].ends_at, kT0 + seconds(30));
  EXPECT_EQ(n.firing(), 0u);
  EXPECT_EQ(n.resolving(), 1u);
  int sent = 1;
  for (base::TimePoint t = kT0 + seconds(40); t < kT0 + minutes(20); t += seconds(10)) {
    for (const Alert& a : n.Update({&f, 1}, t)) {
      EXPECT_EQ(a.ends_at, kT0 + seconds(30));
      EXPECT_LT(t - (kT0 + seconds(30)), minutes(15));
      ++sent;
    }
  }
  EXPECT_EQ(sent, 15);  // at 0:30, then each minute until 15 min after the resolution
  EXPECT_EQ(n.resolving(), 0u);
}

TEST(AlertNotifierTest, AFiringAlertThatLeavesTheListIsResolvedNow) {
  AlertNotifier n = MakeNotifier();
  Finding f = MakeFinding("f1", "1", FindingState::kFiring);
  ASSERT_EQ(n.Update({&f, 1}, kT0).size(), 1u);
  std::vector<Alert> due = n.Update({}, kT0 + seconds(10));
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].ends_at, kT0 + seconds(10));
}

TEST(AlertNotifierTest, ANewFindingOnTheSameGpuReplacesTheResolvedOne) {
  AlertNotifier n = MakeNotifier();
  Finding old = MakeFinding("f1", "1", FindingState::kFiring);
  ASSERT_EQ(n.Update({&old, 1}, kT0).size(), 1u);
  old.state = FindingState::kResolved;
  old.updated = kT0 + seconds(10);
  ASSERT_EQ(n.Update({&old, 1}, kT0 + seconds(10)).size(), 1u);
  Finding again = MakeFinding("f2", "1", FindingState::kFiring);
  again.start = kT0 + seconds(20);
  // The engine lists open findings first, then resolved ones.
  std::vector<Finding> findings{again, old};
  std::vector<Alert> due = n.Update(findings, kT0 + seconds(20));
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].starts_at, kT0 + seconds(20));
  EXPECT_GT(due[0].ends_at, kT0 + seconds(20));
  EXPECT_EQ(due[0].annotations.at("finding_id"), "f2");
  EXPECT_EQ(n.firing(), 1u);
  EXPECT_EQ(n.resolving(), 0u);
}

TEST(AlertNotifierTest, AfterARestartRecentResolutionsAreSentAndOldOnesNot) {
  AlertNotifier n = MakeNotifier();
  Finding recent = MakeFinding("f1", "1", FindingState::kResolved);
  recent.updated = kT0 - minutes(5);
  Finding old = MakeFinding("f2", "2", FindingState::kResolved);
  old.updated = kT0 - minutes(20);
  std::vector<Finding> findings{recent, old};
  std::vector<Alert> due = n.Update(findings, kT0);
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].labels.at("gpu"), "1");
  EXPECT_EQ(due[0].ends_at, kT0 - minutes(5));
}

TEST(AlertNotifierTest, SeveralAlertsComeOrderedByTheirLabels) {
  AlertNotifier n = MakeNotifier();
  std::vector<Finding> findings{MakeFinding("f2", "2", FindingState::kFiring),
                                MakeFinding("f1", "1", FindingState::kFiring)};
  std::vector<Alert> due = n.Update(findings, kT0);
  ASSERT_EQ(due.size(), 2u);
  EXPECT_EQ(due[0].labels.at("gpu"), "1");
  EXPECT_EQ(due[1].labels.at("gpu"), "2");
}

}  // namespace
}  // namespace warpscope::server::alerts

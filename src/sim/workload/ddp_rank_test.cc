// SPDX-License-Identifier: Apache-2.0
#include "sim/workload/ddp_rank.h"

#include <gtest/gtest.h>

#include <vector>

namespace warpscope::sim::workload {
namespace {

constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kStart = 1'700'000'000'000'000'000ull;

// The demo's step in miniature: forward, then per bucket a backward segment and its
// all-reduce, then the wait and the optimizer.
struct StepTimes {
  std::vector<Interval> all_reduces;
  Interval optimizer;
  uint64_t job_end = 0;
};
StepTimes RunStep(DdpClock& clock, uint64_t start) {
  StepTimes out;
  clock.BeginStep(start);
  clock.Compute(20 * kMs);  // forward
  for (int bucket = 0; bucket < 4; ++bucket) {
    clock.Compute(10 * kMs);  // backward of a bucket's layers
    out.all_reduces.push_back(clock.AllReduce(2 * kMs));
  }
  clock.WaitAllReduces();
  out.optimizer = clock.Compute(1 * kMs);
  out.job_end = clock.JobEnd();
  return out;
}

TEST(DdpClockTest, EveryRankOfTheJobSeesTheAllReducesEndTogether) {
  DdpClock fast(0, 20), slow(20, 20);
  const StepTimes f = RunStep(fast, kStart);
  const StepTimes s = RunStep(slow, kStart);
  ASSERT_EQ(f.all_reduces.size(), s.all_reduces.size());
  for (size_t i = 0; i < f.all_reduces.size(); ++i) {
    EXPECT_EQ(f.all_reduces[i].end_ns, s.all_reduces[i].end_ns) << "bucket " << i;
  }
  // The slow rank launches bucket 0 after 30 ms x 1.2 and it moves its data in 2 ms.
  EXPECT_EQ(s.all_reduces[0].start_ns, kStart + 36 * kMs);
  EXPECT_EQ(s.all_reduces[0].end_ns, kStart + 38 * kMs);
  // The fast rank launched it at 30 ms and waits in it for the slow one.
  EXPECT_EQ(f.all_reduces[0].start_ns, kStart + 30 * kMs);
  EXPECT_EQ(f.all_reduces[3].end_ns, kStart + 74 * kMs);
  // The last all-reduce starts last on the slow rank: one bucket's backward (12 ms) after the
  // one before it started there, minus its 2 ms transfer, later than on the fast rank.
  EXPECT_EQ(s.all_reduces[3].start_ns - f.all_reduces[3].start_ns, 10 * kMs);
  // The optimizer waits for the last all-reduce on both; the job ends with the slow one's.
  EXPECT_EQ(f.optimizer.start_ns, kStart + 74 * kMs);
  EXPECT_EQ(s.optimizer.end_ns, kStart + 74 * kMs + 1'200'000);
  EXPECT_EQ(f.job_end, s.job_end);
  EXPECT_EQ(s.job_end, s.optimizer.end_ns);
}

TEST(DdpClockTest, WithoutASlowRankNobodyWaits) {
  DdpClock a(0, 0);
  const StepTimes t = RunStep(a, kStart);
  for (const Interval& r : t.all_reduces) EXPECT_EQ(r.end_ns - r.start_ns, 2 * kMs);
  EXPECT_EQ(t.job_end, kStart + 63 * kMs);
}

TEST(DdpClockTest, TheJobsSlowdownIsAtLeastTheRanksOwn) {
  DdpClock alone(30, 0), told(30, 30);
  EXPECT_EQ(RunStep(alone, kStart).job_end, RunStep(told, kStart).job_end);
}

TEST(DdpClockTest, AStepForgetsTheStepBefore) {
  DdpClock clock(10, 10);
  const StepTimes first = RunStep(clock, kStart);
  const StepTimes second = RunStep(clock, first.job_end);
  EXPECT_EQ(second.job_end - first.job_end, first.job_end - kStart);
}

TEST(DdpScheduleTest, StepsFollowTheEpochAtThePeriod) {
  DdpSchedule s{.epoch_ns = kStart, .period_ns = 80 * kMs};
  EXPECT_EQ(s.NextStepAt(kStart - 5 * kMs), 0u);
  EXPECT_EQ(s.NextStepAt(kStart), 0u);
  EXPECT_EQ(s.NextStepAt(kStart + 1), 1u);
  EXPECT_EQ(s.NextStepAt(kStart + 160 * kMs), 2u);
  EXPECT_EQ(s.StartOf(3), kStart + 240 * kMs);
}

TEST(DdpCommIdTest, RanksOfOneRunAgreeAndRunsDiffer) {
  EXPECT_EQ(CommIdOf("training-straggler-1700000000"), CommIdOf("training-straggler-1700000000"));
  EXPECT_NE(CommIdOf("training-straggler-1700000000"), CommIdOf("training-straggler-1700000001"));
}

TEST(NcclPluginDriverTest, AMissingPluginIsAnError) {
  auto driver = NcclPluginDriver::Create("/nonexistent/libwarpscope_nccl.so", 1, 2, 0);
  ASSERT_FALSE(driver);
  EXPECT_NE(driver.error().message().find("NCCL_PROFILER_PLUGIN"), std::string::npos);
}

}  // namespace
}  // namespace warpscope::sim::workload

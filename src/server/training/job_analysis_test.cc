// SPDX-License-Identifier: Apache-2.0
#include "server/training/job_analysis.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace warpscope::server::training {
namespace {

using std::chrono::milliseconds;

const base::TimePoint kT0 = base::FromUnixNanos(1'700'000'000'000'000'000);

// A deterministic jitter in [-amplitude, amplitude] ms.
class Jitter {
 public:
  explicit Jitter(uint64_t seed) : state_(seed) {}
  double Next(double amplitude) {
    state_ = state_ * 6364136223846793005ULL + 1442695040888963407ULL;
    const double unit = static_cast<double>(state_ >> 11) / static_cast<double>(1ULL << 53);
    return (unit * 2 - 1) * amplitude;
  }

 private:
  uint64_t state_;
};

struct StepSpec {
  std::string job = "job-1";
  std::string host = "a";
  uint32_t rank = 0;
  uint32_t world_size = 8;
  int64_t step = 0;
  double start_ms = 0;
  double duration_ms = 1000;
  double compute_ms = 700;  // < 0: unknown
  double comm_ms = 100;
  double overlap_ms = 50;
  double offset_ms = 800;  // < 0: none
  double nccl_ms = 150;
};

int64_t Ns(double ms) { return static_cast<int64_t>(std::llround(ms * 1e6)); }

StoredStep Make(const StepSpec& s) {
  StoredStep out;
  out.host = s.host;
  out.step.job = s.job;
  out.step.entity = "pid/" + std::to_string(1000 + s.rank) + "/1";
  out.step.comm = "00000000000000aa";
  out.step.rank = s.rank;
  out.step.world_size = s.world_size;
  out.step.step = s.step;
  out.step.start = kT0 + base::Duration(Ns(s.start_ms));
  out.step.end = out.step.start + base::Duration(Ns(s.duration_ms));
  out.step.compute_ns = s.compute_ms < 0 ? -1 : Ns(s.compute_ms);
  out.step.comm_ns = Ns(s.comm_ms);
  out.step.overlap_ns = Ns(s.overlap_ms);
  out.step.last_collective_offset_ns = s.offset_ms < 0 ? -1 : Ns(s.offset_ms);
  out.step.nccl_ns = Ns(s.nccl_ms);
  out.step.source = "nvtx";
  return out;
}

// `steps` steps of a job of 2 hosts x 4 ranks (ranks 0-3 on "a", 4-7 on "b"), 1 s each, with
// offsets jittered by `jitter_ms`; `slow_rank` (if any) starts its last collective `lag_ms`
// later and its peers wait that long in NCCL.
std::vector<StoredStep> EightRanks(int steps, double jitter_ms, int slow_rank, double lag_ms) {
  std::vector<StoredStep> out;
  Jitter jitter(42);
  for (int i = 0; i < steps; ++i) {
    for (uint32_t r = 0; r < 8; ++r) {
      StepSpec s;
      s.host = r < 4 ? "a" : "b";
      s.rank = r;
      s.step = 100 + i;
      s.start_ms = i * 1000.0 + jitter.Next(2);
      s.offset_ms = 800 + jitter.Next(jitter_ms);
      const bool slow = static_cast<int>(r) == slow_rank;
      if (slow) {
        s.offset_ms += lag_ms;
        s.compute_ms += lag_ms;
      } else {
        s.nccl_ms += lag_ms;
        s.comm_ms += lag_ms;
      }
      out.push_back(Make(s));
    }
  }
  return out;
}

TEST(JobAnalysisTest, EmptyInputHasNoRanks) {
  JobAnalysis a = AnalyzeJob("job-1", {}, AnalysisOptions{});
  EXPECT_EQ(a.job, "job-1");
  EXPECT_TRUE(a.ranks.empty());
  EXPECT_TRUE(a.steps.empty());
  EXPECT_EQ(a.complete_steps, 0u);
  EXPECT_FALSE(a.straggler);
  EXPECT_TRUE(a.slow_steps.empty());
}

TEST(JobAnalysisTest, OneSlowRankOnTwoHostsIsTheStraggler) {
  std::vector<StoredStep> steps = EightRanks(50, 5, 5, 40);
  // Another job's steps are ignored.
  StepSpec other;
  other.job = "job-2";
  other.rank = 5;
  other.offset_ms = 990;
  steps.push_back(Make(other));

  JobAnalysis a = AnalyzeJob("job-1", steps, AnalysisOptions{});
  EXPECT_EQ(a.world_size, 8u);
  EXPECT_EQ(a.hosts, (std::vector<std::string>{"a", "b"}));
  ASSERT_EQ(a.ranks.size(), 8u);
  EXPECT_EQ(a.complete_steps, 50u);
  EXPECT_NEAR(a.step_time_p50_s, 1.0, 1e-9);
  ASSERT_TRUE(a.straggler);
  EXPECT_EQ(a.straggler->rank, 5u);
  EXPECT_EQ(a.straggler->host, "b");
  EXPECT_EQ(a.straggler->entity, "pid/1005/1");
  EXPECT_EQ(a.straggler->reason, "late_collective");
  EXPECT_GT(a.straggler->late_fraction, 0.9);
  EXPECT_NEAR(a.straggler->lag_s, 0.040, 0.006);
  EXPECT_NEAR(a.straggler->step_share, 0.04, 0.006);
  EXPECT_NEAR(a.straggler->gpu_hours_lost, a.straggler->lag_s * 50 * 8 / 3600, 1e-12);
  EXPECT_TRUE(a.ranks[5].straggler);
  EXPECT_FALSE(a.ranks[4].straggler);
  EXPECT_GT(a.ranks[5].late_fraction, 0.9);
  EXPECT_NEAR(a.ranks[5].compute_excess_s, 0.040, 1e-9);
  // The peers wait in NCCL, which is not a slow interconnect.
  EXPECT_TRUE(a.slow_interconnect_ranks.empty());
  for (const RankSummary& r : a.ranks) EXPECT_FALSE(r.slow_interconnect) << r.rank;
  // Shares: compute 0.7 (0.74 for the straggler), comm 0.1 (0.14 for its peers).
  EXPECT_NEAR(a.ranks[0].compute_share, 0.70, 1e-9);
  EXPECT_NEAR(a.ranks[0].comm_share, 0.14, 1e-9);
  EXPECT_NEAR(a.ranks[0].overlap_share, 0.05, 1e-9);
  EXPECT_NEAR(a.ranks[0].idle_share, 0.16, 1e-9);
  EXPECT_NEAR(a.ranks[5].compute_share, 0.74, 1e-9);
  EXPECT_NEAR(a.ranks[5].nccl_time_mean_s, 0.150, 1e-9);
  EXPECT_NEAR(a.ranks[0].nccl_time_mean_s, 0.190, 1e-9);
  EXPECT_NEAR(a.compute_share, (7 * 0.70 + 0.74) / 8, 1e-9);
  EXPECT_NEAR(a.gpu_hours, 8 * 50.0 / 3600, 8 * 0.01 / 3600);
  ASSERT_EQ(a.steps.size(), 50u);
  EXPECT_EQ(a.steps.front().step, 100);
  EXPECT_EQ(a.steps.back().step, 149);
  EXPECT_EQ(a.steps[3].duration_s.size(), 8u);
  EXPECT_TRUE(a.slow_steps.empty());
}

TEST(JobAnalysisTest, BalancedJobWithJitterHasNoStraggler) {
  JobAnalysis a = AnalyzeJob("job-1", EightRanks(100, 20, -1, 0), AnalysisOptions{});
  EXPECT_EQ(a.complete_steps, 100u);
  EXPECT_FALSE(a.straggler);
  EXPECT_TRUE(a.slow_interconnect_ranks.empty());
  double last_total = 0;
  for (const RankSummary& r : a.ranks) {
    EXPECT_LT(r.late_fraction, 0.5) << r.rank;
    EXPECT_FALSE(r.straggler);
    last_total += r.late_fraction;
  }
  EXPECT_NEAR(last_total, 1.0, 1e-9);
  // The analysis is deterministic.
  JobAnalysis b = AnalyzeJob("job-1", EightRanks(100, 20, -1, 0), AnalysisOptions{});
  for (size_t i = 0; i < a.ranks.size(); ++i) {
    EXPECT_EQ(a.ranks[i].late_fraction, b.ranks[i].late_fraction);
  }
}

TEST(JobAnalysisTest, ALateRankUnderTheLagThresholdIsNoStraggler) {
  // 5 ms late in every step is half a percent of a 1 s step: not worth a verdict.
  JobAnalysis a = AnalyzeJob("job-1", EightRanks(50, 1, 3, 5), AnalysisOptions{});
  EXPECT_GT(a.ranks[3].late_fraction, 0.9);
  EXPECT_FALSE(a.straggler);
}

TEST(JobAnalysisTest, ComputeOnlyStraggler) {
  std::vector<StoredStep> steps;
  Jitter jitter(7);
  for (int i = 0; i < 20; ++i) {
    for (uint32_t r = 0; r < 4; ++r) {
      StepSpec s;
      s.world_size = 4;
      s.rank = r;
      s.step = i;
      s.start_ms = i * 1000.0;
      s.offset_ms = -1;  // no large collective
      s.compute_ms = 700 + jitter.Next(10) + (r == 2 ? 100 : 0);
      steps.push_back(Make(s));
    }
  }
  JobAnalysis a = AnalyzeJob("job-1", steps, AnalysisOptions{});
  ASSERT_TRUE(a.straggler);
  EXPECT_EQ(a.straggler->rank, 2u);
  EXPECT_EQ(a.straggler->reason, "long_compute");
  EXPECT_DOUBLE_EQ(a.straggler->late_fraction, 1.0);
  EXPECT_NEAR(a.straggler->lag_s, 0.100, 0.015);
  EXPECT_TRUE(std::isnan(a.ranks[2].last_collective_offset_mean_s));
  EXPECT_EQ(a.ranks[2].late_fraction, 0);
  EXPECT_NEAR(a.ranks[2].compute_excess_s, 0.100, 0.015);
  for (const StepRow& row : a.steps) EXPECT_FALSE(row.last_rank);
}

TEST(JobAnalysisTest, UnknownComputeGivesNcclShareOnly) {
  std::vector<StoredStep> steps;
  for (int i = 0; i < 10; ++i) {
    for (uint32_t r = 0; r < 2; ++r) {
      StepSpec s;
      s.world_size = 2;
      s.rank = r;
      s.step = i;
      s.start_ms = i * 1000.0;
      s.compute_ms = -1;
      s.nccl_ms = 300;
      steps.push_back(Make(s));
    }
  }
  JobAnalysis a = AnalyzeJob("job-1", steps, AnalysisOptions{});
  ASSERT_EQ(a.ranks.size(), 2u);
  EXPECT_TRUE(std::isnan(a.ranks[0].compute_share));
  EXPECT_TRUE(std::isnan(a.ranks[0].overlap_share));
  EXPECT_TRUE(std::isnan(a.ranks[0].idle_share));
  EXPECT_NEAR(a.ranks[0].comm_share, 0.3, 1e-9);
  EXPECT_TRUE(std::isnan(a.compute_share));
  EXPECT_NEAR(a.comm_share, 0.3, 1e-9);
  EXPECT_TRUE(std::isnan(a.ranks[0].compute_excess_s));
  EXPECT_FALSE(a.straggler);
}

TEST(JobAnalysisTest, MissingStepsAndRanks) {
  std::vector<StoredStep> steps;
  for (int i = 0; i < 10; ++i) {
    for (uint32_t r = 0; r < 4; ++r) {
      if (r == 1 && i == 4) continue;  // rank 1's step 4 was lost
      StepSpec s;
      s.world_size = 4;
      s.rank = r;
      s.step = i;
      s.start_ms = i * 1000.0;
      steps.push_back(Make(s));
    }
  }
  JobAnalysis a = AnalyzeJob("job-1", steps, AnalysisOptions{});
  EXPECT_EQ(a.complete_steps, 9u);
  ASSERT_EQ(a.steps.size(), 10u);
  EXPECT_TRUE(std::isnan(a.steps[4].duration_s[1]));
  EXPECT_NEAR(a.steps[4].duration_s[0], 1.0, 1e-9);
  EXPECT_NEAR(a.steps[4].max_s, 1.0, 1e-9);
  EXPECT_EQ(a.ranks[1].steps, 9u);
  EXPECT_EQ(a.ranks[0].steps, 10u);

  // World size 4 but rank 3 never reported: no step is complete, so no verdicts, but shares.
  std::erase_if(steps, [](const StoredStep& s) { return s.step.rank == 3; });
  JobAnalysis b = AnalyzeJob("job-1", steps, AnalysisOptions{});
  EXPECT_EQ(b.world_size, 4u);
  EXPECT_EQ(b.ranks.size(), 3u);
  EXPECT_EQ(b.complete_steps, 0u);
  EXPECT_TRUE(std::isnan(b.step_time_p50_s));
  EXPECT_FALSE(b.straggler);
  EXPECT_NEAR(b.ranks[0].compute_share, 0.7, 1e-9);
  EXPECT_EQ(b.steps.size(), 10u);
}

TEST(JobAnalysisTest, SlowStepAndStall) {
  std::vector<StoredStep> steps;
  double start = 0;
  for (int i = 0; i < 30; ++i) {
    const double duration = i == 20 ? 2000 : i == 25 ? 6000 : 1000 + (i % 3) * 10;
    for (uint32_t r = 0; r < 2; ++r) {
      StepSpec s;
      s.world_size = 2;
      s.rank = r;
      s.step = i;
      s.start_ms = start;
      s.duration_ms = duration;
      steps.push_back(Make(s));
    }
    start += duration;
  }
  JobAnalysis a = AnalyzeJob("job-1", steps, AnalysisOptions{});
  ASSERT_EQ(a.slow_steps.size(), 2u);
  EXPECT_EQ(a.slow_steps[0].step, 20);
  EXPECT_NEAR(a.slow_steps[0].duration_s, 2.0, 1e-9);
  EXPECT_NEAR(a.slow_steps[0].trailing_median_s, 1.01, 1e-9);
  EXPECT_FALSE(a.slow_steps[0].stall);
  EXPECT_EQ(a.slow_steps[1].step, 25);
  EXPECT_TRUE(a.slow_steps[1].stall);
  EXPECT_EQ(a.slow_steps[1].start, steps[50].step.start);
}

TEST(JobAnalysisTest, SingleRankJob) {
  std::vector<StoredStep> steps;
  for (int i = 0; i < 10; ++i) {
    StepSpec s;
    s.world_size = 1;
    s.step = i;
    s.start_ms = i * 1000.0;
    steps.push_back(Make(s));
  }
  JobAnalysis a = AnalyzeJob("job-1", steps, AnalysisOptions{});
  EXPECT_EQ(a.world_size, 1u);
  EXPECT_EQ(a.complete_steps, 10u);
  EXPECT_FALSE(a.straggler);
  EXPECT_TRUE(a.slow_interconnect_ranks.empty());
  EXPECT_EQ(a.ranks[0].late_fraction, 0);
  for (const StepRow& row : a.steps) EXPECT_FALSE(row.last_rank);
  EXPECT_NEAR(a.gpu_hours, 10.0 / 3600, 1e-9);
}

TEST(JobAnalysisTest, SlowInterconnectRank) {
  std::vector<StoredStep> steps;
  Jitter jitter(3);
  for (int i = 0; i < 20; ++i) {
    for (uint32_t r = 0; r < 4; ++r) {
      StepSpec s;
      s.world_size = 4;
      s.rank = r;
      s.step = i;
      s.start_ms = i * 1000.0;
      s.offset_ms = 800 + jitter.Next(5);
      s.nccl_ms = (r == 3 ? 320 : 150) + jitter.Next(10);
      steps.push_back(Make(s));
    }
  }
  JobAnalysis a = AnalyzeJob("job-1", steps, AnalysisOptions{});
  EXPECT_EQ(a.slow_interconnect_ranks, (std::vector<uint32_t>{3}));
  EXPECT_TRUE(a.ranks[3].slow_interconnect);
  EXPECT_FALSE(a.ranks[0].slow_interconnect);
  EXPECT_FALSE(a.straggler);
}

TEST(JobAnalysisTest, KeepsTheNewestMaxSteps) {
  std::vector<StoredStep> steps;
  for (int i = 0; i < 30; ++i) {
    StepSpec s;
    s.world_size = 1;
    s.step = i;
    s.start_ms = i * 1000.0;
    steps.push_back(Make(s));
  }
  AnalysisOptions options;
  options.max_steps = 8;
  JobAnalysis a = AnalyzeJob("job-1", steps, options);
  ASSERT_EQ(a.steps.size(), 8u);
  EXPECT_EQ(a.steps.front().step, 22);
  EXPECT_EQ(a.steps.back().step, 29);
  EXPECT_EQ(a.complete_steps, 30u);
}

}  // namespace
}  // namespace warpscope::server::training

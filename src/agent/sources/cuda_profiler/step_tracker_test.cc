// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/cuda_profiler/step_tracker.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "agent/sources/cuda_profiler/step_pattern.h"
#include "agent/sources/cuda_profiler/training_metrics.h"
#include "model/testing/collecting_sink.h"

namespace warpscope::agent::cuda_profiler {
namespace {

namespace wire = ::warpscope::cupti::wire;

constexpr int32_t kPid = 4242;
constexpr uint64_t kComm = 0x5eed;
constexpr int64_t kMs = 1'000'000;
constexpr int64_t kT0 = 1'700'000'000'000'000'000;
constexpr int64_t kLater = kT0 + 3'600'000 * kMs;  // past every grace period

model::ProcessInfo Rank(int32_t pid, std::string job_rank = "") {
  model::ProcessInfo p;
  p.pid = pid;
  p.container_pid = pid;
  p.start_ticks = 777;
  p.executable = "python3";
  if (!job_rank.empty()) {
    p.job.launcher = "torchelastic";
    p.job.id = "run-1";
    p.job.rank = job_rank;
    p.job.world_size = "2";
  }
  return p;
}

// Issues one rank's collectives on one communicator: seq numbers per func, as NCCL does; each
// operation's GPU time follows its enqueue.
class Issuer {
 public:
  Issuer(StepTracker& tracker, int32_t pid, uint32_t rank = 0)
      : tracker_(tracker), pid_(pid), rank_(rank) {}
  // Waits `gap_ns`, then enqueues `func` of `count` elements running `exec_ns` on the GPU.
  void Op(std::string func, uint64_t count, int64_t gap_ns, int64_t exec_ns = 100'000,
          uint64_t bus_bytes = 1000) {
    now_ += gap_ns;
    wire::NcclCollective c;
    c.comm_id = kComm;
    c.rank = rank_;
    c.func = func;
    c.seq_number = seq_[func]++;
    c.count = count;
    c.datatype = "ncclFloat32";
    c.bus_bytes = bus_bytes;
    c.enqueue_ns = static_cast<uint64_t>(now_);
    c.enqueued_ns = c.enqueue_ns + 1000;
    c.gpu_start_ns = c.enqueue_ns + 10'000;
    c.gpu_end_ns = c.gpu_start_ns + static_cast<uint64_t>(exec_ns);
    c.gpu_exec_ns = static_cast<uint64_t>(exec_ns);
    c.complete_ns = c.gpu_end_ns + 5000;
    tracker_.AddCollective(pid_, c);
    now_ += 10'000 + exec_ns;
  }
  int64_t now() const { return now_; }
  void Skip(int64_t ns) { now_ += ns; }

 private:
  StepTracker& tracker_;
  int32_t pid_;
  uint32_t rank_;
  int64_t now_ = kT0;
  std::map<std::string, uint64_t> seq_;
};

std::vector<int64_t> Numbers(const std::vector<model::TrainingStep>& steps) {
  std::vector<int64_t> out;
  for (const auto& s : steps) {
    out.push_back(s.step);
  }
  return out;
}

// DDP: `buckets` all-reduces of decreasing sizes after `compute_ns` of compute.
void DdpStep(Issuer& r, int buckets, int64_t compute_ns) {
  for (int b = 0; b < buckets; ++b) {
    r.Op("AllReduce", 1000u >> b, b == 0 ? compute_ns : 50'000);
  }
}

TEST(StepPatternTest, FindsTheSmallestPeriodAfterWarmUp) {
  std::vector<OpSignature> ops;
  int64_t t = 0;
  ops.push_back({"Broadcast", 7, "f", 0, t});
  std::map<std::string, uint64_t> seq;
  for (int step = 0; step < 5; ++step) {
    for (int b = 0; b < 3; ++b) {
      t += b == 0 ? 1000 : 10;
      ops.push_back({"AllReduce", 100u + b, "f", seq["AllReduce"]++, t});
    }
  }
  auto pattern = FindStepPattern(ops, 64);
  ASSERT_TRUE(pattern.has_value());
  EXPECT_EQ(pattern->period, 3u);
  EXPECT_EQ(pattern->run_start, 1u);
  ASSERT_EQ(pattern->funcs.size(), 1u);
  EXPECT_EQ(pattern->funcs[0].per_step, 3u);
  EXPECT_EQ(pattern->funcs[0].offset, 0u);
  EXPECT_EQ(pattern->StepOf("AllReduce", 7), 2);
  EXPECT_EQ(pattern->StepOf("Broadcast", 0), std::nullopt);
}

TEST(StepPatternTest, NoPatternInNoiseOrTooShortAHistory) {
  std::vector<OpSignature> ops;
  for (uint64_t i = 0; i < 40; ++i) {
    ops.push_back({"AllReduce", (i * 7919) % 13 + i, "f", i, static_cast<int64_t>(i)});
  }
  EXPECT_FALSE(FindStepPattern(ops, 64).has_value());
  EXPECT_FALSE(FindStepPattern(std::span(ops).first(2), 64).has_value());
}

TEST(StepPatternTest, EqualBucketsTakeTheStepFromTheGaps) {
  // DDP with three buckets of one size: the signatures repeat every operation, the gaps every
  // three.
  std::vector<OpSignature> ops;
  int64_t t = 0;
  for (uint64_t i = 0; i < 30; ++i) {
    t += i % 3 == 0 ? 100'000 : 1000;
    ops.push_back({"AllReduce", 256, "f", i, t});
  }
  auto pattern = FindStepPattern(ops, 64);
  ASSERT_TRUE(pattern.has_value());
  EXPECT_EQ(pattern->period, 3u);
  EXPECT_EQ(pattern->StepOf("AllReduce", 3), 1);
  EXPECT_EQ(pattern->StepOf("AllReduce", 5), 1);
}

TEST(StepTrackerTest, DdpStepsFromPeriodicityWithWarmUp) {
  StepTracker tracker({});
  tracker.AddProcess(Rank(kPid, "1"), "");
  Issuer r(tracker, kPid, 1);
  r.Op("Broadcast", 5000, 0);  // parameters, once
  for (int step = 0; step < 6; ++step) {
    DdpStep(r, 3, 5 * kMs);
  }
  const auto steps = tracker.Collect(kLater);
  // Steps 0..4: step 5 has no successor to end it.
  EXPECT_EQ(Numbers(steps), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  const model::TrainingStep& s = steps[1];
  EXPECT_EQ(s.entity, "pid/4242/777");
  EXPECT_EQ(s.job, "run-1");
  EXPECT_EQ(s.comm, "0000000000005eed");
  EXPECT_EQ(s.rank, 1u);
  EXPECT_EQ(s.world_size, 2u);
  EXPECT_EQ(s.source, "collectives");
  EXPECT_EQ(s.collectives, 3u);
  EXPECT_EQ(s.bus_bytes, 3000u);
  EXPECT_EQ(s.nccl_ns, 300'000);
  EXPECT_EQ(s.compute_ns, -1);
  EXPECT_EQ(s.overlap_ns, 0);
  EXPECT_EQ(s.comm_ns, 300'000);  // the operations' GPU intervals, disjoint
  // 3 x (10 us + 100 us) with 50 us gaps between buckets, then 5 ms of compute.
  EXPECT_EQ(base::ToUnixNanos(s.end) - base::ToUnixNanos(s.start), 5 * kMs + 330'000 + 100'000);
  // The last operation's exec (100 us) is >= 1 % of the step (~5.4 ms): its GPU start.
  EXPECT_EQ(s.last_collective_offset_ns, 160'000 * 2 + 10'000);
  // Emitted once.
  EXPECT_TRUE(tracker.Collect(kLater).empty());
}

TEST(StepTrackerTest, FsdpGathersAndScatters) {
  StepTracker tracker({});
  tracker.AddProcess(Rank(kPid), "");
  Issuer r(tracker, kPid, 3);
  for (int step = 0; step < 5; ++step) {
    for (int layer = 0; layer < 4; ++layer) {
      r.Op("AllGather", 4096, layer == 0 ? 5 * kMs : 20'000);
    }
    for (int layer = 0; layer < 4; ++layer) {
      r.Op("ReduceScatter", 4096, 20'000);
    }
  }
  const auto steps = tracker.Collect(kLater);
  EXPECT_EQ(Numbers(steps), (std::vector<int64_t>{0, 1, 2, 3}));
  ASSERT_FALSE(steps.empty());
  EXPECT_EQ(steps[0].collectives, 8u);
  EXPECT_EQ(steps[0].job, "comm-0000000000005eed");
  EXPECT_EQ(steps[0].rank, 3u);
}

TEST(StepTrackerTest, TwoRanksWithDifferentTimingAgreeOnStepNumbers) {
  // The ranks compute for different times (rank 1 is the straggler): the step numbers are the
  // operations' (seq), equal all the same.
  StepTracker a({});
  StepTracker b({});
  a.AddProcess(Rank(1), "");
  b.AddProcess(Rank(2), "");
  Issuer r0(a, 1, 0);
  Issuer r1(b, 2, 1);
  r1.Skip(3 * kMs);
  for (int step = 0; step < 8; ++step) {
    DdpStep(r0, 2, 8 * kMs);
    DdpStep(r1, 2, 13 * kMs);
  }
  const auto sa = a.Collect(kLater);
  const auto sb = b.Collect(kLater);
  EXPECT_EQ(Numbers(sa), Numbers(sb));
  EXPECT_EQ(Numbers(sa).size(), 7u);
}

TEST(StepTrackerTest, StepNumbersComeFromSeqNotFromWhatWasSeen) {
  // The agent starts listening mid-run: the first operations it sees have seq 10.., and the
  // steps are numbered as on a rank that saw everything.
  StepTracker all({});
  all.AddProcess(Rank(1), "");
  Issuer full(all, 1);
  for (int step = 0; step < 10; ++step) {
    DdpStep(full, 2, 7 * kMs);
  }
  // A rank seen from step 5 on only: its operations carry the seq numbers of those steps.
  StepTracker replay({});
  replay.AddProcess(Rank(3), "");
  wire::NcclCollective c;
  c.comm_id = kComm;
  c.func = "AllReduce";
  c.datatype = "ncclFloat32";
  int64_t t = kT0;
  for (uint64_t seq = 10; seq < 20; ++seq) {
    t += seq % 2 == 0 ? 7 * kMs : 50'000;
    c.seq_number = seq;
    c.count = seq % 2 == 0 ? 1000 : 500;
    c.enqueue_ns = static_cast<uint64_t>(t);
    replay.AddCollective(3, c);
  }
  const auto full_steps = all.Collect(kLater);
  const auto replayed = replay.Collect(kLater);
  EXPECT_EQ(Numbers(replayed), (std::vector<int64_t>{5, 6, 7, 8}));
  EXPECT_EQ(Numbers(full_steps).back(), 8);
}

TEST(StepTrackerTest, PatternChangeIsFoundAgainAndNumberingGoesOn) {
  StepTracker tracker({});
  tracker.AddProcess(Rank(kPid), "");
  Issuer r(tracker, kPid);
  for (int step = 0; step < 5; ++step) {
    DdpStep(r, 2, 5 * kMs);
  }
  auto first = tracker.Collect(kLater);
  EXPECT_EQ(Numbers(first), (std::vector<int64_t>{0, 1, 2, 3}));
  for (int step = 0; step < 6; ++step) {
    DdpStep(r, 3, 5 * kMs);  // a bucket more
  }
  auto second = tracker.Collect(kLater);
  ASSERT_FALSE(second.empty());
  EXPECT_EQ(second.front().step, 4);
  for (size_t i = 1; i < second.size(); ++i) {
    EXPECT_EQ(second[i].step, second[i - 1].step + 1);
    EXPECT_EQ(second[i].collectives, 3u);
  }
  EXPECT_GE(tracker.stats().pattern_changes, 1u);
}

TEST(StepTrackerTest, NoSteadyPatternNoSteps) {
  StepTracker tracker({});
  tracker.AddProcess(Rank(kPid), "");
  Issuer r(tracker, kPid);
  for (uint64_t i = 0; i < 50; ++i) {
    r.Op("AllReduce", (i * 7919) % 101 + i, static_cast<int64_t>((i * 31) % 7) * kMs);
  }
  EXPECT_TRUE(tracker.Collect(kLater).empty());
  model::CollectingSink sink;
  tracker.EmitMetrics(sink);
  EXPECT_TRUE(sink.values.empty());
}

TEST(StepTrackerTest, WaitsForTheGraceOrTheNextStepsEnd) {
  StepTracker tracker({});
  tracker.AddProcess(Rank(kPid), "");
  Issuer r(tracker, kPid);
  for (int step = 0; step < 4; ++step) {
    DdpStep(r, 2, 5 * kMs);
  }
  // Steps 0..2 have ended; step 2's end is step 3's start, and step 3 has not ended: step 2
  // waits for the grace period.
  EXPECT_EQ(Numbers(tracker.Collect(r.now())), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(Numbers(tracker.Collect(r.now() + 2'000 * kMs)), (std::vector<int64_t>{2}));
}

TEST(StepTrackerTest, NvtxProfilerStepRangesWinOverPeriodicity) {
  StepTracker tracker({});
  tracker.AddProcess(Rank(kPid), "");
  Issuer r(tracker, kPid);
  for (int step = 0; step < 5; ++step) {
    DdpStep(r, 2, 5 * kMs);
  }
  tracker.AddNvtxRange(kPid, "ProfilerStep#41", kT0, kT0 + 10 * kMs);
  tracker.AddNvtxRange(kPid, "forward", kT0, kT0 + 3 * kMs);
  tracker.AddNvtxRange(kPid, "ProfilerStep#42", kT0 + 10 * kMs, kT0 + 20 * kMs);
  tracker.AddNvtxRange(kPid, "ProfilerStep#42", kT0 + 10 * kMs, kT0 + 20 * kMs);  // repeat
  const auto steps = tracker.Collect(kLater);
  EXPECT_EQ(Numbers(steps), (std::vector<int64_t>{41, 42}));
  EXPECT_EQ(steps[0].source, "nvtx");
  EXPECT_EQ(steps[0].comm, "0000000000005eed");
  EXPECT_EQ(steps[0].collectives, 2u);  // the operations enqueued in [0, 10 ms)
}

TEST(StepTrackerTest, NvtxStepRangeFromTheEnvironmentIsCounted) {
  StepTracker tracker({});
  tracker.AddProcess(Rank(kPid, "0"), "train_step");
  tracker.AddNvtxRange(kPid, "train_step", kT0, kT0 + 10 * kMs);
  tracker.AddNvtxRange(kPid, "train_step2", kT0 + 10 * kMs, kT0 + 11 * kMs);
  tracker.AddNvtxRange(kPid, "train_step", kT0 + 10 * kMs, kT0 + 20 * kMs);
  EXPECT_EQ(Numbers(tracker.Collect(kT0 + 10 * kMs)), std::vector<int64_t>{});  // grace
  const auto steps = tracker.Collect(kLater);
  EXPECT_EQ(Numbers(steps), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(steps[0].comm, "");
  EXPECT_EQ(steps[0].job, "run-1");
  EXPECT_EQ(steps[0].compute_ns, -1);
  EXPECT_EQ(steps[0].last_collective_offset_ns, -1);
}

TEST(StepTrackerTest, ComputeCommOverlapAndIdleFromKernels) {
  StepTracker tracker({});
  tracker.AddProcess(Rank(kPid), "");
  const int64_t t = kT0;
  tracker.AddNvtxRange(kPid, "ProfilerStep#0", t, t + 100 * kMs);
  // Compute: [0, 30) and [20, 50) overlap -> 50 ms; a kernel beyond the step is clipped.
  tracker.AddKernel(kPid, "gemm", t, t + 30 * kMs);
  tracker.AddKernel(kPid, "gemm", t + 20 * kMs, t + 50 * kMs);
  tracker.AddKernel(kPid, "gemm", t + 95 * kMs, t + 120 * kMs);
  // NCCL: [40, 70) -> 10 ms overlapped by compute, 20 ms not.
  tracker.AddKernel(kPid, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", t + 40 * kMs, t + 70 * kMs);
  const auto steps = tracker.Collect(kLater);
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].compute_ns, 55 * kMs);
  EXPECT_EQ(steps[0].overlap_ns, 10 * kMs);
  EXPECT_EQ(steps[0].comm_ns, 20 * kMs);
  // Idle = 100 - 55 - 20 = 25 ms.
  tracker.FinishWindow();
  model::CollectingSink sink;
  tracker.EmitMetrics(sink);
  // In no launcher's job and without NCCL, the process is a job of its own.
  EXPECT_EQ(steps[0].job, "pid-4242-777");
  const model::Labels labels{{"job", "pid-4242-777"}, {"rank", "0"}};
  EXPECT_EQ(sink.Find("training.steps", "pid/4242/777", labels), 1);
  EXPECT_EQ(sink.Find("training.step.last", "pid/4242/777", labels), 0);
  EXPECT_DOUBLE_EQ(*sink.Find("training.step.duration", "pid/4242/777", labels), 0.1);
  EXPECT_DOUBLE_EQ(*sink.Find("training.step.compute.share", "pid/4242/777", labels), 0.55);
  EXPECT_DOUBLE_EQ(*sink.Find("training.step.communication.share", "pid/4242/777", labels), 0.2);
  EXPECT_NEAR(*sink.Find("training.step.idle.share", "pid/4242/777", labels), 0.25, 1e-12);
}

TEST(StepTrackerTest, WithoutKernelsComputeAndIdleAreAbsent) {
  StepTracker tracker({});
  tracker.AddProcess(Rank(kPid, "1"), "");
  Issuer r(tracker, kPid, 1);
  for (int step = 0; step < 5; ++step) {
    DdpStep(r, 2, 5 * kMs);
  }
  ASSERT_FALSE(tracker.Collect(kLater).empty());
  tracker.FinishWindow();
  model::CollectingSink sink;
  tracker.EmitMetrics(sink);
  EXPECT_TRUE(sink.Has("training.step.communication.share"));
  EXPECT_FALSE(sink.Has("training.step.compute.share"));
  EXPECT_FALSE(sink.Has("training.step.idle.share"));
  // The next window without steps: no gauges but the counter and the last step.
  tracker.FinishWindow();
  sink.Clear();
  tracker.EmitMetrics(sink);
  EXPECT_TRUE(sink.Has("training.steps"));
  EXPECT_FALSE(sink.Has("training.step.duration"));
}

TEST(StepTrackerTest, LastCollectiveOffsetSkipsSmallOperations) {
  StepTracker tracker({});
  tracker.AddProcess(Rank(kPid), "");
  wire::NcclCollective big;
  big.comm_id = kComm;
  big.func = "AllReduce";
  big.enqueue_ns = kT0 + 10 * kMs;
  big.gpu_start_ns = kT0 + 12 * kMs;
  big.gpu_end_ns = kT0 + 14 * kMs;
  big.gpu_exec_ns = 2 * kMs;  // 2 % of the step
  wire::NcclCollective tiny = big;
  tiny.enqueue_ns = kT0 + 60 * kMs;
  tiny.gpu_start_ns = kT0 + 61 * kMs;
  tiny.gpu_end_ns = tiny.gpu_start_ns + 100'000;
  tiny.gpu_exec_ns = 100'000;  // 0.1 %
  tracker.AddCollective(kPid, big);
  tracker.AddCollective(kPid, tiny);
  tracker.AddNvtxRange(kPid, "ProfilerStep#3", kT0, kT0 + 100 * kMs);
  const auto steps = tracker.Collect(kLater);
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].last_collective_offset_ns, 12 * kMs);
  EXPECT_EQ(steps[0].collectives, 2u);
  EXPECT_EQ(steps[0].nccl_ns, 2 * kMs + 100'000);
}

TEST(StepTrackerTest, CapsBoundWhatIsKeptAndGoneProcessesAreDropped) {
  StepTracker::Options options;
  options.max_ops = 16;
  options.max_history = 16;
  options.max_kernels = 8;
  options.max_ranges = 4;
  options.max_processes = 1;
  StepTracker tracker(options);
  tracker.AddProcess(Rank(kPid), "");
  tracker.AddProcess(Rank(kPid + 1), "");
  EXPECT_EQ(tracker.stats().processes_refused, 1u);
  EXPECT_FALSE(tracker.HasProcess(kPid + 1));
  Issuer r(tracker, kPid);
  for (int step = 0; step < 100; ++step) {
    DdpStep(r, 2, 5 * kMs);
  }
  for (int k = 0; k < 20; ++k) {
    tracker.AddKernel(kPid, "gemm", kT0 + k, kT0 + k + 1);
  }
  for (int k = 0; k < 10; ++k) {
    tracker.AddNvtxRange(kPid, "ProfilerStep#" + std::to_string(k), kLater + k, kLater + k + 1);
  }
  EXPECT_GT(tracker.stats().ops_dropped, 0u);
  EXPECT_EQ(tracker.stats().kernels_dropped, 12u);
  EXPECT_EQ(tracker.stats().ranges_dropped, 6u);
  const auto steps = tracker.Collect(kLater + 3'600'000 * kMs);
  EXPECT_EQ(Numbers(steps), (std::vector<int64_t>{6, 7, 8, 9}));
  EXPECT_TRUE(tracker.ForgetProcess(kPid).empty());
  EXPECT_FALSE(tracker.HasProcess(kPid));
  tracker.AddProcess(Rank(kPid + 1), "");
  EXPECT_TRUE(tracker.HasProcess(kPid + 1));
}

// A rank that exits: once its connections have closed nothing more comes, so the step that
// ended when the last one began is complete without waiting for the grace period (the process
// is forgotten at the next window, long before); the last step, which never ends, is not.
TEST(StepTrackerTest, ForgettingAProcessReturnsTheStepsThatEnded) {
  StepTracker tracker({});
  tracker.AddProcess(Rank(kPid, "0"), "");
  tracker.AddProcess(Rank(kPid + 1, "1"), "");
  Issuer nccl_only(tracker, kPid);
  Issuer with_kernels(tracker, kPid + 1, 1);
  for (int step = 0; step < 6; ++step) {
    DdpStep(nccl_only, 2, 5 * kMs);
    DdpStep(with_kernels, 2, 5 * kMs);
    tracker.AddKernel(kPid + 1, "gemm", with_kernels.now() - kMs, with_kernels.now());
  }
  // Without kernel records, a step is cut once the step after it has ended (0-3); with them,
  // only after the grace period (none yet).
  const int64_t now = std::max(nccl_only.now(), with_kernels.now());
  EXPECT_EQ(Numbers(tracker.Collect(now)), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(Numbers(tracker.ForgetProcess(kPid)), (std::vector<int64_t>{4}));
  EXPECT_EQ(Numbers(tracker.ForgetProcess(kPid + 1)), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_FALSE(tracker.HasProcess(kPid));
  EXPECT_FALSE(tracker.HasProcess(kPid + 1));
  EXPECT_TRUE(tracker.ForgetProcess(kPid).empty());
  EXPECT_TRUE(tracker.Collect(kLater).empty());
}

TEST(StepTrackerTest, ProfilerStepNumberParsesTheSuffix) {
  EXPECT_EQ(ProfilerStepNumber("ProfilerStep#12"), 12);
  EXPECT_EQ(ProfilerStepNumber("ProfilerStep#7, op_id = 3"), 7);
  EXPECT_EQ(ProfilerStepNumber("ProfilerStep#"), std::nullopt);
  EXPECT_EQ(ProfilerStepNumber("ProfilerStep"), std::nullopt);
  EXPECT_EQ(ProfilerStepNumber("train"), std::nullopt);
}

TEST(StepTrackerTest, UnionLengthClipsAndMerges) {
  EXPECT_EQ(UnionLength({{0, 10}, {5, 15}, {20, 30}}, 0, 100), 25);
  EXPECT_EQ(UnionLength({{0, 10}, {5, 15}, {20, 30}}, 8, 25), 12);
  EXPECT_EQ(UnionLength({}, 0, 100), 0);
}

}  // namespace
}  // namespace warpscope::agent::cuda_profiler

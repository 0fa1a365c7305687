// SPDX-License-Identifier: Apache-2.0
// End to end (cupti_e2e_fixture.h). Launches and their stacks: every launch's native stack names its launch site, both unwinders,
// the rate limiter, the ring pool, launches through a stripped library built like libcuda.
#include "cupti_e2e_fixture.h"

namespace warpscope::cupti::e2e {
namespace {

TEST_F(CuptiE2eTest, KernelsArriveWithTheirLaunchStacksAndGpuTime) {
  TestAgent agent(SocketPath());
  auto run = RunApp(dir_.path(), {"--threads", "3", "--launches", "20", "--graph", "--markers", "--reverse"},
                    Env(SocketPath(), {"WARPSCOPE_CUPTI_BURST=1000",
                                       "WARPSCOPE_CUPTI_ACTIVITY_BUFFERS=32"}));
  ASSERT_TRUE(ExitedOk(run)) << run.err;
  ASSERT_TRUE(agent.WaitUntil([](const auto& cs) { return AllClosed(cs, 1); }, 20s));
  auto conns = agent.Snapshot();
  ASSERT_EQ(conns.size(), 1u);
  EXPECT_TRUE(conns[0].error.empty()) << conns[0].error;
  Received r = Index(conns[0]);
  EXPECT_EQ(r.hello.pid, run.pid);
  EXPECT_EQ(r.hello.cupti_version, FakeVersion());
  EXPECT_NE(r.hello.exe.find("fake_cuda_app"), std::string::npos);

  // 3 threads x 20 x (gemm + softmax) + 2 graph launches; the nested driver call of each runtime
  // launch is not counted twice.
  EXPECT_EQ(r.counters[wire::CounterId::kLaunchesSeen], 122u);
  EXPECT_EQ(r.counters[wire::CounterId::kLaunchesAdmitted], 122u);
  EXPECT_EQ(r.counters[wire::CounterId::kRingDrops], 0u);
  EXPECT_EQ(r.counters[wire::CounterId::kBufferPoolExhausted], 0u);
  EXPECT_GT(r.counters[wire::CounterId::kOverheadNs], 0u);
  ASSERT_EQ(r.launches.size(), 122u);

  // Every launch names a stack that was sent, and the stack holds the launching function.
  std::map<std::string, std::string> site_of = {{"_Z9fake_gemmv", "FakeAppLaunchGemm"},
                                                {"triton_softmax", "FakeAppLaunchSoftmax"},
                                                {"", "FakeAppLaunchGraph"}};
  for (const auto& l : r.launches) {
    ASSERT_TRUE(r.stacks.contains(l.stack_hash)) << "launch " << l.correlation_id;
    const auto& site = run.sites[site_of[l.symbol]];
    ASSERT_GT(site.size, 0u) << l.symbol;
    EXPECT_TRUE(StackHasSite(r.stacks[l.stack_hash], site)) << l.symbol;
  }

  // Every kernel joined its launch: 120 single kernels + 2 graph launches x 3 nodes.
  ASSERT_EQ(r.kernels.size(), 126u);
  std::map<std::string, int> by_name;
  for (const auto& k : r.kernels) {
    const std::string name = r.names[k.name_id];
    ++by_name[name];
    ASSERT_NE(k.stack_hash, 0u);
    const std::string site = name.starts_with("_Z8graph") ? "FakeAppLaunchGraph" : site_of[name];
    EXPECT_TRUE(StackHasSite(r.stacks[k.stack_hash], run.sites[site])) << name;
    if (name.starts_with("_Z8graph")) {
      EXPECT_EQ(k.graph_id, 42u);
      EXPECT_EQ(k.launch_cbid, 514u);  // cuGraphLaunch
    } else if (name == "_Z9fake_gemmv") {
      EXPECT_EQ(k.launch_domain, 2u);  // the runtime launch, not its nested driver call
      EXPECT_EQ(k.launch_cbid, 211u);
    }
    EXPECT_GT(k.launch_ns, 0u);
  }
  EXPECT_EQ(by_name["_Z9fake_gemmv"], 60);
  EXPECT_EQ(by_name["triton_softmax"], 60);
  EXPECT_EQ(by_name["_Z8graph_k2v"], 2);

  // GPU time per kernel, from the aggregates.
  EXPECT_EQ(r.gpu_ns["_Z9fake_gemmv"], 60u * 5000);
  EXPECT_EQ(r.gpu_ns["triton_softmax"], 60u * 1000);
  EXPECT_EQ(r.gpu_count["_Z8graph_k1v"], 2u);

  ASSERT_EQ(r.ranges.size(), 1u);
  EXPECT_EQ(r.ranges[0].name, "train_step");
  EXPECT_EQ(r.ranges[0].end_ns - r.ranges[0].start_ns, 50u);
  ASSERT_EQ(r.memcpys.size(), 1u);
  EXPECT_EQ(r.memcpys[0].bytes, 4096u);
}

TEST_F(CuptiE2eTest, FramePointerUnwinderSeesTheLaunchSite) {
  TestAgent agent(SocketPath());
  auto run = RunApp(dir_.path(), {"--threads", "2", "--launches", "5"},
                    Env(SocketPath(), {"WARPSCOPE_CUPTI_UNWINDER=fp"}));
  ASSERT_TRUE(ExitedOk(run)) << run.err;
  ASSERT_TRUE(agent.WaitUntil([](const auto& cs) { return AllClosed(cs, 1); }, 20s));
  Received r = Index(agent.Snapshot()[0]);
  ASSERT_EQ(r.launches.size(), 20u);
  for (const auto& l : r.launches) {
    const auto& site = run.sites[l.symbol == "triton_softmax" ? "FakeAppLaunchSoftmax" : "FakeAppLaunchGemm"];
    EXPECT_TRUE(StackHasSite(r.stacks[l.stack_hash], site)) << l.symbol;
  }
}

TEST_F(CuptiE2eTest, UnsampledKernelsStillCountGpuTime) {
  TestAgent agent(SocketPath());
  auto run = RunApp(dir_.path(), {"--threads", "2", "--launches", "30"},
                    Env(SocketPath(), {"WARPSCOPE_CUPTI_RATE=0"}));
  ASSERT_TRUE(ExitedOk(run)) << run.err;
  ASSERT_TRUE(agent.WaitUntil([](const auto& cs) { return AllClosed(cs, 1); }, 20s));
  Received r = Index(agent.Snapshot()[0]);
  EXPECT_EQ(r.counters[wire::CounterId::kLaunchesSeen], 120u);
  EXPECT_EQ(r.counters[wire::CounterId::kLaunchesAdmitted], 0u);
  EXPECT_EQ(r.counters[wire::CounterId::kLaunchesThrottled], 120u);
  EXPECT_TRUE(r.launches.empty());
  EXPECT_TRUE(r.kernels.empty());
  EXPECT_EQ(r.gpu_ns["_Z9fake_gemmv"], 60u * 5000);
  EXPECT_EQ(r.gpu_count["triton_softmax"], 60u);
  EXPECT_EQ(r.counters[wire::CounterId::kKernelsSeen], 120u);
}

TEST_F(CuptiE2eTest, RateLimiterAdmitsTheBurstPerThread) {
  TestAgent agent(SocketPath());
  auto run = RunApp(dir_.path(), {"--threads", "2", "--launches", "50"},
                    Env(SocketPath(), {"WARPSCOPE_CUPTI_RATE=1", "WARPSCOPE_CUPTI_BURST=5"}));
  ASSERT_TRUE(ExitedOk(run)) << run.err;
  ASSERT_TRUE(agent.WaitUntil([](const auto& cs) { return AllClosed(cs, 1); }, 20s));
  Received r = Index(agent.Snapshot()[0]);
  const uint64_t admitted = r.counters[wire::CounterId::kLaunchesAdmitted];
  EXPECT_GE(admitted, 10u);  // 5 per thread, plus at most a token per second of run time
  EXPECT_LE(admitted, 16u);
  EXPECT_EQ(admitted + r.counters[wire::CounterId::kLaunchesThrottled], 200u);
  EXPECT_EQ(r.launches.size(), admitted);
  EXPECT_EQ(r.kernels.size(), admitted);
}

TEST_F(CuptiE2eTest, ThreadsBeyondTheRingPoolAreCountedNotProfiled) {
  TestAgent agent(SocketPath());
  auto run = RunApp(dir_.path(), {"--threads", "4", "--launches", "25"},
                    Env(SocketPath(), {"WARPSCOPE_CUPTI_MAX_THREADS=1", "WARPSCOPE_CUPTI_BURST=1000",
                                       "WARPSCOPE_CUPTI_ACTIVITY_BUFFERS=32"}));
  ASSERT_TRUE(ExitedOk(run)) << run.err;
  ASSERT_TRUE(agent.WaitUntil([](const auto& cs) { return AllClosed(cs, 1); }, 20s));
  Received r = Index(agent.Snapshot()[0]);
  // Whether a thread got the one slot depends on scheduling; every launch is accounted for.
  EXPECT_EQ(r.counters[wire::CounterId::kLaunchesSeen] + r.counters[wire::CounterId::kThreadsOverCap],
            200u);
  EXPECT_EQ(r.launches.size(), r.counters[wire::CounterId::kLaunchesSeen]);
  EXPECT_EQ(r.gpu_count["_Z9fake_gemmv"], 100u);  // GPU time does not depend on the slots
}

// Launches through a library built like libcuda (no frame pointers, no unwind tables, stripped):
// FakeAppStrippedCaller -> FakeAppLaunchViaDriver -> FakeDriverLaunch (stripped) -> callback.
// What each unwinder keeps (docs/design/cuda-profiler.md, "Past code without unwind tables"):
// both reach the return address inside the stripped library. The frame-pointer walk continues
// through the frame record the stripped code left untouched, and so keeps the application's
// frames above it except the one that called into the library (its return address lies in the
// stripped frame, not in a record). The DWARF unwinder (backtrace, the default) finds no unwind
// entry for the stripped frame and resumes above it: the caller from a scan of the stripped
// frame, the frames above from their own unwind entries, so it keeps every application frame.
struct StrippedStacks {
  size_t launches = 0, with_driver = 0, with_caller = 0, with_direct_caller = 0;
};
StrippedStacks RunThroughStrippedDriver(const std::string& dir, const std::string& socket,
                                        const std::string& unwinder) {
  StrippedStacks out;
  TestAgent agent(socket);
  auto run = RunApp(dir, {"--threads", "1", "--launches", "5", "--stripped-driver"},
                    Env(socket, {"WARPSCOPE_CUPTI_UNWINDER=" + unwinder}));
  EXPECT_TRUE(ExitedOk(run)) << run.err;
  EXPECT_TRUE(agent.WaitUntil([](const auto& cs) { return AllClosed(cs, 1); }, 20s));
  Received r = Index(agent.Snapshot()[0]);
  EXPECT_GT(run.sites["FakeDriverLaunch"].size, 0u) << "the stripped library keeps its dynsym";
  for (const auto& l : r.launches) {
    if (l.symbol != "_Z9fake_gemmv") continue;
    ++out.launches;
    const auto& stack = r.stacks[l.stack_hash];
    out.with_driver += StackHasSite(stack, run.sites["FakeDriverLaunch"]);
    out.with_caller += StackHasSite(stack, run.sites["FakeAppStrippedCaller"]);
    out.with_direct_caller += StackHasSite(stack, run.sites["FakeAppLaunchViaDriver"]);
  }
  return out;
}

TEST_F(CuptiE2eTest, StrippedDriverFramePointerWalkKeepsTheCallersAboveIt) {
  const StrippedStacks s = RunThroughStrippedDriver(dir_.path(), SocketPath(), "fp");
  ASSERT_EQ(s.launches, 5u);
  EXPECT_EQ(s.with_driver, 5u);
  EXPECT_EQ(s.with_caller, 5u);
  EXPECT_EQ(s.with_direct_caller, 0u) << "if this now holds, update the design doc";
}

TEST_F(CuptiE2eTest, StrippedDriverDwarfUnwinderResumesAboveIt) {
  const StrippedStacks s = RunThroughStrippedDriver(dir_.path(), SocketPath(), "backtrace");
  ASSERT_EQ(s.launches, 5u);
  EXPECT_EQ(s.with_driver, 5u);
  EXPECT_EQ(s.with_direct_caller, 5u);
  EXPECT_EQ(s.with_caller, 5u);
}

}  // namespace
}  // namespace warpscope::cupti::e2e

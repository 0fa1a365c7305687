// SPDX-License-Identifier: Apache-2.0
// End to end (cupti_e2e_fixture.h). Activity records and the join: the buffer pool, all-kernels
// windows (from the start and switched at run time), both correlation numberings, buffers completed
// on the fake's thread.
#include "cupti_e2e_fixture.h"

namespace warpscope::cupti::e2e {
namespace {

// Two threads of `launches` gemm + softmax launches each with a pool of 2 buffers, 16 records
// per buffer, delivered at the exit flush only (synchronously, whatever the fake's preset): every
// buffer is requested before any is completed. The counters the agent received.
std::map<wire::CounterId, uint64_t> ExitBurstCounters(const std::string& dir,
                                                      const std::string& socket, int launches) {
  TestAgent agent(socket);
  auto run =
      RunApp(dir, {"--threads", "2", "--launches", std::to_string(launches)},
             Env(socket, {"WARPSCOPE_CUPTI_ACTIVITY_BUFFERS=2", "WARPSCOPE_CUPTI_FLUSH_MS=60000",
                          "WARPSCOPE_FAKE_CUPTI_BUFFERS=sync"}));
  EXPECT_TRUE(ExitedOk(run)) << run.err;
  EXPECT_TRUE(agent.WaitUntil([](const auto& cs) { return AllClosed(cs, 1); }, 20s));
  auto snapshot = agent.Snapshot();
  if (snapshot.empty()) return {};
  return Index(snapshot[0]).counters;
}

TEST_F(CuptiE2eTest, ABurstBeyondThePoolIsServedByTheReserveAndNothingIsLost) {
  // 240 records need 15 buffers: the pool holds 2, the reserve the other 13.
  auto c = ExitBurstCounters(dir_.path(), SocketPath(), 60);
  EXPECT_EQ(c[wire::CounterId::kBufferReserveUsed], 13u);
  EXPECT_EQ(c[wire::CounterId::kBufferPoolExhausted], 0u);
  EXPECT_EQ(c[wire::CounterId::kCuptiDroppedRecords], 0u);
  EXPECT_EQ(c[wire::CounterId::kKernelsSeen], 240u);
}

TEST_F(CuptiE2eTest, ExhaustedBufferPoolDropsAndCountsRecords) {
  // 2,400 records need 150 buffers; the pool and the reserve hold 2 + 32.
  auto c = ExitBurstCounters(dir_.path(), SocketPath(), 600);
  EXPECT_GT(c[wire::CounterId::kBufferPoolExhausted], 0u);
  EXPECT_EQ(c[wire::CounterId::kBufferReserveUsed], 32u);
  EXPECT_GT(c[wire::CounterId::kCuptiDroppedRecords], 0u);
  EXPECT_EQ(c[wire::CounterId::kKernelsSeen] + c[wire::CounterId::kCuptiDroppedRecords], 2400u);
}

// "All kernels" duty-cycled: a kernel whose launch was not sampled is sent as KernelActivity
// exactly when its GPU start time t satisfies t mod interval < window; sampled kernels always;
// KernelAggregate counts every kernel either way. The fake GPU clock starts at 1 s and advances
// by 1 ms of idle time per kernel, so 160 kernels span four 40 ms intervals.
TEST_F(CuptiE2eTest, AllKernelsWindowsSendEveryKernelInsideAndOnlySampledOutside) {
  TestAgent agent(SocketPath());
  auto run =
      RunApp(dir_.path(),
             {"--threads", "2", "--launches", "40", "--kernel-gap-us", "1000", "--print-kernels"},
             Env(SocketPath(),
                 {"WARPSCOPE_CUPTI_RATE=1", "WARPSCOPE_CUPTI_BURST=3",
                  "WARPSCOPE_CUPTI_ACTIVITY_BUFFERS=32", "WARPSCOPE_CUPTI_ALL_KERNELS_WINDOW_MS=10",
                  "WARPSCOPE_CUPTI_ALL_KERNELS_INTERVAL_MS=40"}));
  ASSERT_TRUE(ExitedOk(run)) << run.err;
  ASSERT_TRUE(agent.WaitUntil([](const auto& cs) { return AllClosed(cs, 1); }, 20s));
  Received r = Index(agent.Snapshot()[0]);
  EXPECT_TRUE(r.notices.empty());

  std::map<uint32_t, uint64_t> start_of;  // every kernel the app ran
  std::istringstream lines(run.out);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string word;
    uint32_t corr = 0;
    uint64_t start = 0;
    if (words >> word && word == "kernel" && words >> corr >> start) {
      start_of[corr] = start;
    }
  }
  ASSERT_EQ(start_of.size(), 160u);
  std::set<uint32_t> sampled;
  for (const auto& l : r.launches) sampled.insert(l.correlation_id);
  EXPECT_GE(sampled.size(), 6u);  // the burst of 3 per thread
  EXPECT_LT(sampled.size(), 20u);
  std::map<uint32_t, wire::KernelActivity> sent;
  for (const auto& k : r.kernels) {
    EXPECT_TRUE(sent.emplace(k.correlation_id, k).second) << "kernel sent twice";
  }

  constexpr uint64_t kIntervalNs = 40'000'000, kWindowNs = 10'000'000;
  int in_window_unsampled = 0, outside_unsampled = 0;
  for (const auto& [corr, start] : start_of) {
    const bool in_window = start % kIntervalNs < kWindowNs;
    const bool was_sampled = sampled.contains(corr);
    auto it = sent.find(corr);
    EXPECT_EQ(it != sent.end(), in_window || was_sampled)
        << "kernel " << corr << " at " << start << (in_window ? " (in a window)" : "")
        << (was_sampled ? " (sampled)" : "");
    if (it == sent.end()) continue;
    EXPECT_EQ(it->second.start_ns, start);
    EXPECT_EQ(it->second.stack_hash != 0, was_sampled) << corr;
    if (!was_sampled) {
      (in_window ? in_window_unsampled : outside_unsampled) += 1;
    }
  }
  EXPECT_GT(in_window_unsampled, 20);  // ~40 kernels start inside windows
  EXPECT_EQ(outside_unsampled, 0);
  EXPECT_LT(r.kernels.size(), 100u);  // most kernels start outside windows

  // GPU time stays exact for every kernel, in windows or not.
  EXPECT_EQ(r.counters[wire::CounterId::kKernelsSeen], 160u);
  EXPECT_EQ(r.gpu_count["_Z9fake_gemmv"], 80u);
  EXPECT_EQ(r.gpu_ns["_Z9fake_gemmv"], 80u * 5000);
  EXPECT_EQ(r.gpu_count["triton_softmax"], 80u);
  EXPECT_EQ(r.gpu_ns["triton_softmax"], 80u * 1000);
}

// The agent switches "all kernels" on for a running process that samples nothing (rate 0): the
// kernels of phase 2 arrive as KernelActivity without a stack, those of phase 1 did not.
TEST_F(CuptiE2eTest, AgentSwitchesAllKernelsOnAtRunTime) {
  Received r;
  RunControlled(dir_.path(), SocketPath(),
                {{wire::ControlOp::kSetAllKernelsDutyCycle, (1000ull << 32) | 1000}}, &r,
                {"WARPSCOPE_CUPTI_RATE=0"});
  EXPECT_EQ(r.counters[wire::CounterId::kLaunchesAdmitted], 0u);
  ASSERT_EQ(r.kernels.size(), 20u);
  for (const auto& k : r.kernels) {
    EXPECT_EQ(k.stack_hash, 0u);
  }
  EXPECT_EQ(r.gpu_count["_Z9fake_gemmv"], 20u);  // both phases
  EXPECT_EQ(r.gpu_count["triton_softmax"], 20u);
}

TEST_F(CuptiE2eTest, AgentSwitchesAllKernelsOffAtRunTime) {
  Received r;
  RunControlled(dir_.path(), SocketPath(), {{wire::ControlOp::kSetAllKernelsDutyCycle, 0}}, &r,
                {"WARPSCOPE_CUPTI_RATE=0", "WARPSCOPE_CUPTI_KERNELS=all"});
  EXPECT_EQ(r.kernels.size(), 20u);  // phase 1 only
  EXPECT_EQ(r.gpu_count["_Z9fake_gemmv"], 20u);
}

// Both numberings of a runtime launch and its nested driver call: one shared id, or an id of the
// driver call's own while the kernel record carries the runtime call's. Either way the kernel
// joins the runtime launch and its stack, and the nested call is not counted as a launch.
void ExpectRuntimeLaunchesJoin(const std::string& dir, const std::string& socket,
                               const std::string& numbering) {
  TestAgent agent(socket);
  auto run = RunApp(
      dir, {"--threads", "2", "--launches", "10"},
      Env(socket, {"WARPSCOPE_CUPTI_BURST=1000", "WARPSCOPE_FAKE_CUPTI_CORRELATION=" + numbering}));
  ASSERT_TRUE(ExitedOk(run)) << run.err;
  ASSERT_TRUE(agent.WaitUntil([](const auto& cs) { return AllClosed(cs, 1); }, 20s));
  Received r = Index(agent.Snapshot()[0]);
  EXPECT_EQ(r.counters[wire::CounterId::kLaunchesSeen], 40u) << numbering;
  ASSERT_EQ(r.launches.size(), 40u) << numbering;
  ASSERT_EQ(r.kernels.size(), 40u) << numbering;
  std::set<uint32_t> launch_ids;
  for (const auto& l : r.launches) launch_ids.insert(l.correlation_id);
  for (const auto& k : r.kernels) {
    EXPECT_TRUE(launch_ids.contains(k.correlation_id)) << numbering;
    ASSERT_NE(k.stack_hash, 0u) << numbering;
    if (r.names[k.name_id] == "_Z9fake_gemmv") {
      EXPECT_EQ(k.launch_domain, 2u) << numbering;  // the runtime launch
      EXPECT_EQ(k.launch_cbid, 211u) << numbering;
      EXPECT_TRUE(StackHasSite(r.stacks[k.stack_hash], run.sites["FakeAppLaunchGemm"]));
    }
  }
  EXPECT_EQ(r.counters[wire::CounterId::kPendingEvicted], 0u) << numbering;
}

TEST_F(CuptiE2eTest, RuntimeLaunchesJoinWhenTheDriverCallSharesTheirId) {
  ExpectRuntimeLaunchesJoin(dir_.path(), SocketPath(), "shared");
}

TEST_F(CuptiE2eTest, RuntimeLaunchesJoinWhenTheDriverCallHasItsOwnId) {
  ExpectRuntimeLaunchesJoin(dir_.path(), SocketPath(), "distinct");
}

// Buffers completed on the fake's own thread, at its own time (as CUPTI's worker thread does):
// every kernel still arrives and joins.
TEST_F(CuptiE2eTest, BuffersCompletedOnCuptisOwnThreadAllArrive) {
  TestAgent agent(SocketPath());
  auto run =
      RunApp(dir_.path(), {"--threads", "3", "--launches", "20", "--graph"},
             Env(SocketPath(), {"WARPSCOPE_CUPTI_BURST=1000", "WARPSCOPE_CUPTI_ACTIVITY_BUFFERS=32",
                                "WARPSCOPE_FAKE_CUPTI_BUFFERS=async"}));
  ASSERT_TRUE(ExitedOk(run)) << run.err;
  ASSERT_TRUE(agent.WaitUntil([](const auto& cs) { return AllClosed(cs, 1); }, 20s));
  const auto pos = run.out.find("fake_cupti buffers=");
  ASSERT_NE(pos, std::string::npos) << run.out;
  const auto by_worker = run.out.find("by_worker=", pos);
  ASSERT_NE(by_worker, std::string::npos);
  EXPECT_EQ(std::stoull(run.out.substr(pos + 19)), std::stoull(run.out.substr(by_worker + 10)))
      << "every buffer is completed on the fake's thread";
  EXPECT_GT(std::stoull(run.out.substr(by_worker + 10)), 0u);
  Received r = Index(agent.Snapshot()[0]);
  EXPECT_EQ(r.counters[wire::CounterId::kKernelsSeen], 126u);
  EXPECT_EQ(r.kernels.size(), 126u);
  EXPECT_EQ(r.gpu_ns["_Z9fake_gemmv"], 60u * 5000);
  EXPECT_EQ(r.counters[wire::CounterId::kPendingEvicted], 0u);
}

}  // namespace
}  // namespace warpscope::cupti::e2e

// SPDX-License-Identifier: Apache-2.0
// End to end (cupti_e2e_fixture.h). Resilience and the agent connection: another subscriber, no agent, no libcupti, the real
// libcupti without a driver, invalid settings, a flooded agent, memory in a storm, fork, run-time
// controls, the agent restarting.
#include "cupti_e2e_fixture.h"

namespace warpscope::cupti::e2e {
namespace {

TEST_F(CuptiE2eTest, SecondSubscriberMakesTheLibraryPassiveAndIsReportedOnce) {
  TestAgent agent(SocketPath());
  auto run = RunApp(dir_.path(), {"--threads", "2", "--launches", "10", "--second-subscriber"},
                    Env(SocketPath(), {}));
  ASSERT_TRUE(ExitedOk(run)) << run.err;
  ASSERT_TRUE(agent.WaitUntil([](const auto& cs) { return AllClosed(cs, 1); }, 20s));
  Received r = Index(agent.Snapshot()[0]);
  ASSERT_EQ(r.notices.size(), 1u);
  EXPECT_EQ(r.notices[0].code, 39u);
  EXPECT_EQ(r.notices[0].severity, wire::Severity::kError);
  EXPECT_NE(r.notices[0].message.find("another tool"), std::string::npos);
  EXPECT_NE(r.notices[0].message.find("held by \"CUPTI for FakeOtherTool\""), std::string::npos)
      << r.notices[0].message;
  EXPECT_TRUE(r.launches.empty());
  EXPECT_EQ(r.counters[wire::CounterId::kLaunchesSeen], 0u);
}

TEST_F(CuptiE2eTest, AppRunsNormallyWithoutAnAgent) {
  auto run = RunApp(dir_.path(), {"--threads", "4", "--launches", "200", "--graph"},
                    Env(dir_.path() + "/nobody-listens.sock", {}), 20s);
  ASSERT_TRUE(ExitedOk(run)) << run.err;
  EXPECT_NE(run.out.find("done ok"), std::string::npos);
}

TEST_F(CuptiE2eTest, AppRunsWithoutTheCuptiLibrary) {
  TestAgent agent(SocketPath());
  auto run = RunApp(dir_.path(), {"--threads", "1", "--launches", "5"},
                    {"CUDA_INJECTION64_PATH=" + kInject,
                     "WARPSCOPE_CUPTI_LIBRARY=/nonexistent/libcupti.so.13",
                     "WARPSCOPE_AGENT_SOCKET=" + SocketPath(), "WARPSCOPE_CUPTI_FLUSH_MS=50"});
  ASSERT_TRUE(ExitedOk(run)) << run.err;
  ASSERT_TRUE(agent.WaitUntil([](const auto& cs) { return AllClosed(cs, 1); }, 20s));
  Received r = Index(agent.Snapshot()[0]);
  ASSERT_EQ(r.notices.size(), 1u);
  EXPECT_NE(r.notices[0].message.find("WARPSCOPE_CUPTI_LIBRARY"), std::string::npos);
  EXPECT_TRUE(run.err.empty()) << "the library must be silent by default: " << run.err;
}

// With the real libcupti and no GPU driver, cuptiSubscribe fails: the library must go passive,
// say why, and leave the application alone. Runs where a CUDA toolkit is installed.
TEST_F(CuptiE2eTest, RealCuptiWithoutADriverGoesPassive) {
  std::string real;
  for (const char* p : {"/usr/local/cuda/lib64/libcupti.so.13", "/usr/local/cuda-13.0/lib/libcupti.so.13",
                        "/usr/local/cuda-13.0/lib64/libcupti.so.13",
                        "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13"}) {
    if (access(p, R_OK) == 0) {
      real = p;
      break;
    }
  }
  if (access("/dev/nvidiactl", F_OK) == 0) {
    GTEST_SKIP() << "an NVIDIA driver is loaded: this test needs a machine without one";
  }
  WARPSCOPE_REQUIRE_PEER(!real.empty(), "NVIDIA's libcupti.so.13",
                         "install the CUDA 13 toolkit in /usr/local/cuda (part of the machine image)");
  TestAgent agent(SocketPath());
  auto run = RunApp(dir_.path(), {"--threads", "2", "--launches", "5"},
                    {"CUDA_INJECTION64_PATH=" + kInject, "WARPSCOPE_CUPTI_LIBRARY=" + real,
                     "WARPSCOPE_AGENT_SOCKET=" + SocketPath()});
  ASSERT_TRUE(ExitedOk(run)) << run.err;
  ASSERT_TRUE(agent.WaitUntil([](const auto& cs) { return AllClosed(cs, 1); }, 20s));
  Received r = Index(agent.Snapshot()[0]);
  EXPECT_EQ(r.hello.cupti_version / 10000, 13u);
  ASSERT_EQ(r.notices.size(), 1u);
  EXPECT_NE(r.notices[0].message.find("cuptiSubscribe failed"), std::string::npos);
  EXPECT_TRUE(r.launches.empty());
}

TEST_F(CuptiE2eTest, InvalidSettingIsReportedAndIgnored) {
  TestAgent agent(SocketPath());
  auto run = RunApp(dir_.path(), {"--threads", "1", "--launches", "5"},
                    Env(SocketPath(), {"WARPSCOPE_CUPTI_RATE=lots"}));
  ASSERT_TRUE(ExitedOk(run)) << run.err;
  ASSERT_TRUE(agent.WaitUntil([](const auto& cs) { return AllClosed(cs, 1); }, 20s));
  Received r = Index(agent.Snapshot()[0]);
  ASSERT_EQ(r.notices.size(), 1u);
  EXPECT_EQ(r.notices[0].severity, wire::Severity::kWarning);
  EXPECT_NE(r.notices[0].message.find("WARPSCOPE_CUPTI_RATE"), std::string::npos);
  EXPECT_EQ(r.counters[wire::CounterId::kLaunchesAdmitted], 10u);  // default burst 20
}

TEST_F(CuptiE2eTest, FloodedAgentNeitherBlocksNorGrowsTheApp) {
  TestAgent agent(SocketPath(), /*reading=*/false);
  auto run = RunApp(dir_.path(), {"--storm-ms", "1500", "--storm-threads", "2"},
                    Env(SocketPath(), {"WARPSCOPE_CUPTI_RATE=100000", "WARPSCOPE_CUPTI_BURST=100000",
                                       "WARPSCOPE_CUPTI_OUT_KB=256"}),
                    30s);
  ASSERT_TRUE(ExitedOk(run)) << run.err;
  // Peak RSS stays bounded while nothing is read (fixed rings, fixed unsent-bytes cap).
  const auto pos = run.out.find("rss_kb=");
  ASSERT_NE(pos, std::string::npos);
  const uint64_t rss_kb = std::stoull(run.out.substr(pos + 7));
  EXPECT_LT(rss_kb, 96u * 1024) << run.out;
  // What was written is still a valid stream once the agent reads it.
  agent.StartReading();
  ASSERT_TRUE(agent.WaitUntil([](const auto& cs) { return AllClosed(cs, 1); }, 20s));
  auto conns = agent.Snapshot();
  EXPECT_TRUE(conns[0].error.empty()) << conns[0].error;
  EXPECT_FALSE(conns[0].messages.empty());
}

TEST_F(CuptiE2eTest, MemoryGaugeStaysUnderTheCapInAStorm) {
  TestAgent agent(SocketPath());
  auto run = RunApp(dir_.path(), {"--storm-ms", "1000", "--storm-threads", "2"},
                    Env(SocketPath(), {"WARPSCOPE_CUPTI_RATE=100000", "WARPSCOPE_CUPTI_BURST=100000"}),
                    30s);
  ASSERT_TRUE(ExitedOk(run)) << run.err;
  ASSERT_TRUE(agent.WaitUntil([](const auto& cs) { return AllClosed(cs, 1); }, 20s));
  Received r = Index(agent.Snapshot()[0]);
  // Default cap: 2 used rings x 64 KiB + 8 x 2 MiB activity buffers and the 32 x 128 KiB
  // reserve + 2 x 4 MiB unsent bytes + 512 KiB intern table.
  const uint64_t cap =
      2 * 64 * 1024 + 8 * 2048 * 1024 + 32 * 128 * 1024 + 2 * 4096 * 1024 + 512 * 1024;
  EXPECT_GT(r.counters[wire::CounterId::kMemoryBytes], 0u);
  EXPECT_LE(r.counters[wire::CounterId::kMemoryBytes], cap);
  EXPECT_GT(r.counters[wire::CounterId::kLaunchesSeen], 1000u);
}

TEST_F(CuptiE2eTest, ForkedChildReportsItsOwnLaunches) {
  TestAgent agent(SocketPath());
  // The child starts the flusher thread again; TSan builds must be told that this is intended.
  auto run = RunApp(dir_.path(), {"--threads", "1", "--launches", "3", "--fork"},
                    Env(SocketPath(), {"WARPSCOPE_CUPTI_BURST=1000", "TSAN_OPTIONS=die_after_fork=0"}));
  ASSERT_TRUE(ExitedOk(run)) << run.err;
  EXPECT_NE(run.out.find("child ok"), std::string::npos);
  ASSERT_TRUE(agent.WaitUntil([](const auto& cs) { return AllClosed(cs, 2); }, 20s));
  auto conns = agent.Snapshot();
  ASSERT_EQ(conns.size(), 2u);
  const AgentConnection* child = nullptr;
  const AgentConnection* parent = nullptr;
  for (const auto& c : conns) {
    (c.pid == run.pid ? parent : child) = &c;
  }
  ASSERT_NE(parent, nullptr);
  ASSERT_NE(child, nullptr);
  Received rc = Index(*child);
  ASSERT_EQ(rc.launches.size(), 1u);
  EXPECT_TRUE(StackHasSite(rc.stacks[rc.launches[0].stack_hash], run.sites["FakeAppLaunchInChild"]));
  Received rp = Index(*parent);
  EXPECT_EQ(rp.counters[wire::CounterId::kLaunchesSeen], 6u + 4u);  // before and after the fork
}

TEST_F(CuptiE2eTest, AgentTurnsCollectionOffAtRunTime) {
  Received r;
  RunControlled(dir_.path(), SocketPath(), {{wire::ControlOp::kDisableCollection, 0}}, &r);
  EXPECT_EQ(r.counters[wire::CounterId::kLaunchesSeen], 20u);  // phase 2 not seen
  EXPECT_EQ(r.launches.size(), 20u);
}

TEST_F(CuptiE2eTest, AgentRetunesTheRateAtRunTime) {
  Received r;
  RunControlled(dir_.path(), SocketPath(), {{wire::ControlOp::kSetRate, 0}}, &r);
  EXPECT_EQ(r.counters[wire::CounterId::kLaunchesSeen], 40u);
  EXPECT_EQ(r.counters[wire::CounterId::kLaunchesAdmitted], 20u);
  EXPECT_EQ(r.counters[wire::CounterId::kLaunchesThrottled], 20u);
}

TEST_F(CuptiE2eTest, AgentRestartIsSurvivedAndReconnected) {
  const std::string go = dir_.path() + "/go";
  auto agent = std::make_unique<TestAgent>(SocketPath());
  auto child = test::ChildProcess::Start(
      {kBin, "--threads", "1", "--launches", "10", "--pause-file", go}, dir_.path(),
      Env(SocketPath(), {"WARPSCOPE_CUPTI_BURST=1000"}));
  ASSERT_TRUE(child.has_value());
  ASSERT_TRUE(agent->WaitUntil(
      [](const auto& cs) {
        return !cs.empty() && Index(cs[0]).counters[wire::CounterId::kLaunchesSeen] == 20;
      },
      20s));
  agent.reset();  // the agent goes away mid-run
  TestAgent restarted(SocketPath());
  ASSERT_TRUE(restarted.WaitUntil(
      [](const auto& cs) { return !cs.empty() && !cs[0].messages.empty(); }, 20s));
  std::ofstream(go) << "go";
  const int status = (*child)->Wait(20s);
  ASSERT_TRUE(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0) << (*child)->Stderr();
  ASSERT_TRUE(restarted.WaitUntil([](const auto& cs) { return AllClosed(cs, 1); }, 20s));
  Received r = Index(restarted.Snapshot()[0]);
  EXPECT_EQ(r.hello.pid, static_cast<uint32_t>((*child)->pid()));
  EXPECT_EQ(r.counters[wire::CounterId::kReconnects], 2u);
  EXPECT_EQ(r.counters[wire::CounterId::kLaunchesSeen], 40u);
  ASSERT_EQ(r.launches.size(), 20u);  // phase 2, with its stacks sent again
  for (const auto& l : r.launches) {
    EXPECT_TRUE(r.stacks.contains(l.stack_hash));
  }
}

}  // namespace
}  // namespace warpscope::cupti::e2e

// SPDX-License-Identifier: Apache-2.0
// libwarpscope_nccl.so end to end: the fake NCCL driver loads it and calls it as NCCL does; a
// test agent on a unix socket decodes what it sends. Calls that block show in the driver's
// slow_calls counter (event calls over 500 ms), not in wall-clock asserts.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cupti/wire.h"
#include "integration/child_process.h"
#include "test_agent.h"

namespace warpscope::nccl_plugin {
namespace {

namespace wire = ::warpscope::cupti::wire;
using ::warpscope::cupti::testing::AgentConnection;
using ::warpscope::cupti::testing::TestAgent;
using namespace std::chrono_literals;

const std::string kDriver = std::string(WARPSCOPE_BINARY_DIR) + "/bin/fake_nccl_driver";
const std::string kPlugin = std::string(WARPSCOPE_BINARY_DIR) + "/lib/libwarpscope_nccl.so";

struct DriverRun {
  int status = -1;
  std::string out, err;
  uint64_t slow_calls = UINT64_MAX;
  uint64_t calls = 0;
};

void ParseCounts(DriverRun* run) {
  std::istringstream in(run->out);
  std::string word;
  while (in >> word) {
    if (word == "calls") {
      in >> run->calls;
    } else if (word == "slow_calls") {
      in >> run->slow_calls;
    }
  }
}

std::vector<std::string> Env(const std::string& socket, std::vector<std::string> extra = {}) {
  std::vector<std::string> env = {"WARPSCOPE_NCCL_SOCKET=" + socket, "WARPSCOPE_NCCL_FLUSH_MS=20"};
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

std::vector<std::string> Args(std::vector<std::string> more) {
  std::vector<std::string> a = {kDriver, "--plugin", kPlugin};
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

DriverRun RunDriver(const std::string& dir, std::vector<std::string> args,
              std::vector<std::string> env) {
  DriverRun run;
  auto child = test::ChildProcess::Start(std::move(args), dir, std::move(env));
  if (!child) {
    ADD_FAILURE() << child.error().message();
    return run;
  }
  run.status = (*child)->Wait(60s);
  run.out = (*child)->Stdout();
  run.err = (*child)->Stderr();
  ParseCounts(&run);
  return run;
}

bool ExitedOk(const DriverRun& r) {
  return r.status >= 0 && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0;
}

// What one connection sent.
struct Received {
  wire::Hello hello;
  std::vector<wire::NcclComm> comms;
  std::vector<wire::NcclCollective> ops;
  std::map<wire::CounterId, uint64_t> counters;  // the last Counters
};

Received Index(const AgentConnection& c) {
  Received r;
  for (const auto& m : c.messages) {
    if (const auto* h = std::get_if<wire::Hello>(&m)) {
      r.hello = *h;
    } else if (const auto* cm = std::get_if<wire::NcclComm>(&m)) {
      r.comms.push_back(*cm);
    } else if (const auto* op = std::get_if<wire::NcclCollective>(&m)) {
      r.ops.push_back(*op);
    } else if (const auto* cs = std::get_if<wire::Counters>(&m)) {
      for (const auto& x : cs->counters) {
        r.counters[x.id] = x.value;
      }
    }
  }
  return r;
}

bool AllClosed(const std::vector<AgentConnection>& cs, size_t n) {
  size_t closed = 0;
  for (const auto& c : cs) {
    closed += c.closed ? 1 : 0;
  }
  return closed >= n;
}

class NcclPluginE2eTest : public ::testing::Test {
 protected:
  std::string Socket() const { return dir_.path() + "/agent.sock"; }
  test::TempDir dir_;
};

TEST_F(NcclPluginE2eTest, RecordsCollectivesWithTheirGpuTimeBytesAndBusBandwidth) {
  TestAgent agent(Socket());
  const DriverRun run = RunDriver(dir_.path(),
                            Args({"--ranks", "4", "--collectives", "10", "--channels", "2",
                                  "--p2p", "1", "--slow-rank", "2", "--exec-us", "100",
                                  "--slow-us", "400"}),
                            Env(Socket()));
  ASSERT_TRUE(ExitedOk(run)) << run.err;
  EXPECT_NE(run.out.find("loaded ncclProfiler_v6"), std::string::npos);
  EXPECT_EQ(run.slow_calls, 0u);
  ASSERT_TRUE(agent.WaitUntil([](const auto& cs) { return AllClosed(cs, 1); }, 30s));
  const auto conns = agent.Snapshot();
  ASSERT_EQ(conns.size(), 1u);
  ASSERT_TRUE(conns[0].error.empty()) << conns[0].error;
  const Received r = Index(conns[0]);
  EXPECT_EQ(r.hello.component, wire::Component::kNccl);
  ASSERT_EQ(r.comms.size(), 4u);
  std::set<uint32_t> ranks, op_ranks;
  for (const auto& c : r.comms) {
    EXPECT_EQ(c.comm_id, 0x5eedu);
    EXPECT_EQ(c.nranks, 4u);
    EXPECT_EQ(c.plugin_abi, 6u);
    ranks.insert(c.rank);
  }
  EXPECT_EQ(ranks.size(), 4u);
  size_t colls = 0, p2p = 0;
  std::map<uint64_t, std::set<uint64_t>> seq_by_exec;
  for (const auto& op : r.ops) {
    op_ranks.insert(op.rank);
    EXPECT_EQ(op.kernel_channels, 2u);
    EXPECT_LE(op.enqueue_ns, op.enqueued_ns);
    EXPECT_LE(op.enqueued_ns, op.complete_ns);
    // The GPU times on the CPU clock fall between the enqueue and the completion (1 ms slack
    // for the two clocks' rates).
    EXPECT_GE(op.gpu_start_ns + 1'000'000, op.enqueue_ns);
    EXPECT_LE(op.gpu_start_ns, op.complete_ns + 1'000'000);
    EXPECT_EQ(op.gpu_end_ns - op.gpu_start_ns, op.gpu_exec_ns);
    if (op.kind == wire::NcclOpKind::kCollective) {
      ++colls;
      EXPECT_EQ(op.func, "AllReduce");
      EXPECT_EQ(op.algo, "RING");
      EXPECT_EQ(op.proto, "SIMPLE");
      EXPECT_EQ(op.bytes, 4u << 20);
      EXPECT_EQ(op.bus_bytes, (4u << 20) * 2 * 3 / 4);  // all-reduce: 2(n-1)/n
      // The slow rank runs 100 us; the three waiting for it 500 us.
      EXPECT_TRUE(op.gpu_exec_ns == 100'000 || op.gpu_exec_ns == 500'000) << op.gpu_exec_ns;
      seq_by_exec[op.gpu_exec_ns].insert(op.seq_number);
    } else {
      ++p2p;
      EXPECT_EQ(op.func, "Send");
      EXPECT_EQ(op.bytes, 4096u);
      EXPECT_EQ(op.bus_bytes, 4096u);
    }
  }
  EXPECT_EQ(op_ranks, ranks);
  EXPECT_EQ(colls, 40u);
  EXPECT_EQ(p2p, 40u);
  EXPECT_EQ(seq_by_exec[100'000].size(), 10u);
  EXPECT_EQ(seq_by_exec[500'000].size(), 10u);
  EXPECT_EQ(r.counters.at(wire::CounterId::kNcclCollectives), 40u);
  EXPECT_EQ(r.counters.at(wire::CounterId::kNcclP2p), 40u);
  EXPECT_EQ(r.counters.at(wire::CounterId::kRingDrops), 0u);
  EXPECT_EQ(r.counters.at(wire::CounterId::kNcclEventsDropped), 0u);
}

// Two processes holding two ranks each of one 4-rank communicator, rank 3 slow: the agent can
// tell the slow rank by its short kernels (its peers wait for it), whichever process it is in.
TEST_F(NcclPluginE2eTest, RanksInSeveralProcessesShareTheCommunicatorAndShowTheSlowRank) {
  TestAgent agent(Socket());
  for (const char* first : {"0", "2"}) {
    const DriverRun run = RunDriver(dir_.path(),
                                    Args({"--ranks", "2", "--first-rank", first, "--nranks", "4",
                                          "--nnodes", "2", "--collectives", "6", "--slow-rank",
                                          "3"}),
                                    Env(Socket()));
    ASSERT_TRUE(ExitedOk(run)) << run.err;
  }
  ASSERT_TRUE(agent.WaitUntil([](const auto& cs) { return AllClosed(cs, 2); }, 30s));
  std::map<uint32_t, uint64_t> exec_by_rank;  // rank -> total GPU time
  std::set<uint32_t> pids;
  for (const auto& conn : agent.Snapshot()) {
    const Received r = Index(conn);
    pids.insert(r.hello.pid);
    ASSERT_EQ(r.comms.size(), 2u);
    for (const auto& c : r.comms) {
      EXPECT_EQ(c.comm_id, 0x5eedu);
      EXPECT_EQ(c.nranks, 4u);
      EXPECT_EQ(c.nnodes, 2u);
    }
    for (const auto& op : r.ops) {
      EXPECT_EQ(op.comm_id, 0x5eedu);
      exec_by_rank[op.rank] += op.gpu_exec_ns;
    }
  }
  EXPECT_EQ(pids.size(), 2u);
  // Three ranks waited (6 x 500 us), one did not (6 x 100 us): rank 3.
  EXPECT_EQ(exec_by_rank, (std::map<uint32_t, uint64_t>{
                              {0, 3'000'000}, {1, 3'000'000}, {2, 3'000'000}, {3, 600'000}}));
}
TEST_F(NcclPluginE2eTest, OlderNcclPicksTheTableItKnows) {
  for (const auto& [nccl, abi] : std::vector<std::pair<std::string, uint32_t>>{{"2.27", 4},
                                                                                {"2.28", 5}}) {
    const std::string socket = dir_.path() + "/agent" + nccl + ".sock";
    TestAgent agent(socket);
    const DriverRun run = RunDriver(
        dir_.path(), Args({"--nccl", nccl, "--ranks", "1", "--collectives", "4"}), Env(socket));
    ASSERT_TRUE(ExitedOk(run)) << run.err;
    EXPECT_NE(run.out.find("loaded ncclProfiler_v" + std::to_string(abi)), std::string::npos);
    ASSERT_TRUE(agent.WaitUntil([](const auto& cs) { return AllClosed(cs, 1); }, 30s));
    const Received r = Index(agent.Snapshot().at(0));
    ASSERT_EQ(r.comms.size(), 1u);
    EXPECT_EQ(r.comms[0].plugin_abi, abi);
    ASSERT_EQ(r.ops.size(), 4u) << nccl;
    EXPECT_EQ(r.ops[0].bytes, 4u << 20);
    EXPECT_EQ(r.ops[0].gpu_exec_ns, 100'000u);
  }
}

// Waits until the driver printed "half" (it then waits for `file`), or the timeout.
bool WaitForHalf(test::ChildProcess& child, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (child.Stdout().find("half") != std::string::npos) {
      return true;
    }
    usleep(2000);
  }
  return false;
}

void Touch(const std::string& path) { std::ofstream(path) << "go"; }

TEST_F(NcclPluginE2eTest, TheAgentTurnsProxyStepDetailOnAtRunTime) {
  TestAgent agent(Socket());
  const std::string go = dir_.path() + "/go";
  auto child = test::ChildProcess::Start(
      Args({"--ranks", "1", "--collectives", "8", "--channels", "2", "--steps", "3",
            "--wait-file", go}),
      dir_.path(), Env(Socket()));
  ASSERT_TRUE(child);
  ASSERT_TRUE(agent.WaitUntil(
      [](const auto& cs) { return !cs.empty() && Index(cs[0]).ops.size() >= 4; }, 30s));
  agent.SendControl({wire::ControlOp::kSetNcclProxyDetail, 1});
  ASSERT_TRUE(agent.WaitUntil(
      [](const auto& cs) {
        const auto r = Index(cs[0]);
        auto it = r.counters.find(wire::CounterId::kControlsApplied);
        return it != r.counters.end() && it->second >= 1;
      },
      30s));
  Touch(go);
  ASSERT_EQ((*child)->Wait(60s), 0);
  ASSERT_TRUE(agent.WaitUntil([](const auto& cs) { return AllClosed(cs, 1); }, 30s));
  const Received r = Index(agent.Snapshot()[0]);
  ASSERT_EQ(r.ops.size(), 8u);
  for (size_t i = 0; i < r.ops.size(); ++i) {
    const bool detail = r.ops[i].seq_number >= 4;
    EXPECT_EQ(r.ops[i].proxy_ops, detail ? 2u : 0u) << i;
    EXPECT_EQ(r.ops[i].proxy_steps, detail ? 6u : 0u) << i;
    EXPECT_EQ(r.ops[i].step_bytes, detail ? 6u * 65536 : 0u) << i;
  }
}

TEST_F(NcclPluginE2eTest, WithoutAnAgentCallsNeverBlockAndNothingIsPrinted) {
  const DriverRun run = RunDriver(dir_.path(), Args({"--ranks", "2", "--collectives", "200"}),
                            Env(dir_.path() + "/nobody.sock"));
  ASSERT_TRUE(ExitedOk(run)) << run.err;
  EXPECT_EQ(run.slow_calls, 0u);
  EXPECT_EQ(run.calls, 200u * 2 * (2 + 2 * 3));  // start, stop; 2 channels: start, state, stop
  EXPECT_TRUE(run.err.empty()) << run.err;
}

TEST_F(NcclPluginE2eTest, AKilledAgentLeavesCallsUnblocked) {
  const std::string go = dir_.path() + "/go";
  auto agent = std::make_unique<TestAgent>(Socket());
  auto child = test::ChildProcess::Start(
      Args({"--ranks", "2", "--collectives", "400", "--wait-file", go}), dir_.path(),
      Env(Socket()));
  ASSERT_TRUE(child);
  ASSERT_TRUE(agent->WaitUntil(
      [](const auto& cs) { return !cs.empty() && !Index(cs[0]).ops.empty(); }, 30s));
  agent.reset();  // the agent dies: its sockets close
  Touch(go);
  ASSERT_EQ((*child)->Wait(60s), 0);
  DriverRun run;
  run.out = (*child)->Stdout();
  ParseCounts(&run);
  EXPECT_EQ(run.slow_calls, 0u);
}

TEST_F(NcclPluginE2eTest, AFloodedSocketDropsAndCountsWithoutBlocking) {
  const std::string go = dir_.path() + "/go";
  TestAgent agent(Socket(), /*reading=*/false);
  auto child = test::ChildProcess::Start(
      Args({"--ranks", "2", "--collectives", "40000", "--channels", "1", "--wait-file", go}),
      dir_.path(), Env(Socket(), {"WARPSCOPE_NCCL_OUT_KB=64", "WARPSCOPE_NCCL_RING_KB=64"}));
  ASSERT_TRUE(child);
  ASSERT_TRUE(WaitForHalf(**child, 60s));
  agent.StartReading();
  Touch(go);
  ASSERT_EQ((*child)->Wait(60s), 0);
  DriverRun run;
  run.out = (*child)->Stdout();
  ParseCounts(&run);
  EXPECT_EQ(run.slow_calls, 0u);
  ASSERT_TRUE(agent.WaitUntil([](const auto& cs) { return AllClosed(cs, 1); }, 30s));
  const auto conns = agent.Snapshot();
  ASSERT_TRUE(conns[0].error.empty()) << conns[0].error;  // frames are dropped whole
  const Received r = Index(conns[0]);
  EXPECT_LT(r.ops.size(), 80000u);
  // The application threads outrun the proxy threads (events), the flusher (rings) and the agent
  // (bytes): each loss is counted.
  const uint64_t dropped = r.counters.at(wire::CounterId::kRingDrops) +
                           r.counters.at(wire::CounterId::kBytesDropped) +
                           r.counters.at(wire::CounterId::kNcclEventsDropped);
  EXPECT_GT(dropped, 0u);
  // Recording went on after the losses.
  EXPECT_GT(r.counters.at(wire::CounterId::kNcclCollectives), 0u);
  // Memory stays within the configured bounds (rings, event pool, output cap).
  EXPECT_LT(r.counters.at(wire::CounterId::kMemoryBytes), 32u << 20);
}

TEST_F(NcclPluginE2eTest, AForkedChildReportsItsOwnCommunicatorOnItsOwnConnection) {
  TestAgent agent(Socket());
  const DriverRun run = RunDriver(
      dir_.path(), Args({"--ranks", "1", "--collectives", "6", "--fork", "1"}), Env(Socket()));
  ASSERT_TRUE(ExitedOk(run)) << run.err;
  ASSERT_TRUE(agent.WaitUntil([](const auto& cs) { return AllClosed(cs, 2); }, 30s));
  const auto conns = agent.Snapshot();
  ASSERT_EQ(conns.size(), 2u);
  std::map<uint64_t, size_t> ops_by_comm[2];
  std::set<uint32_t> pids;
  for (size_t i = 0; i < 2; ++i) {
    const Received r = Index(conns[i]);
    pids.insert(r.hello.pid);
    for (const auto& op : r.ops) {
      ++ops_by_comm[i][op.comm_id];
    }
  }
  EXPECT_EQ(pids.size(), 2u);
  // One connection has the parent's 6 collectives, the other the child's 6 on its communicator.
  std::set<std::pair<uint64_t, size_t>> seen;
  for (const auto& m : ops_by_comm) {
    for (const auto& kv : m) {
      seen.insert(kv);
    }
  }
  EXPECT_EQ(seen, (std::set<std::pair<uint64_t, size_t>>{{0x5eed, 6}, {0x5eee, 6}}));
}

TEST_F(NcclPluginE2eTest, DisabledPluginFailsInitAndNcclRunsOn) {
  TestAgent agent(Socket());
  const DriverRun run = RunDriver(dir_.path(), Args({"--ranks", "1", "--collectives", "2"}),
                            Env(Socket(), {"WARPSCOPE_NCCL_ENABLED=0"}));
  ASSERT_TRUE(ExitedOk(run)) << run.err;
  EXPECT_NE(run.out.find("init failed"), std::string::npos);
  EXPECT_TRUE(agent.Snapshot().empty());
}

TEST(NcclPluginExportsTest, ExportsOnlyTheThreeTables) {
  FILE* p = popen(("nm -D --defined-only " + kPlugin + " 2>/dev/null").c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::set<std::string> names;
  char line[512];
  while (fgets(line, sizeof(line), p) != nullptr) {
    std::istringstream in(line);
    std::string addr, type, name;
    if (in >> addr >> type >> name) {
      names.insert(name);
    }
  }
  if (pclose(p) != 0 && names.empty()) {
    GTEST_SKIP() << "nm (binutils) is not installed";
  }
  EXPECT_EQ(names, (std::set<std::string>{"ncclProfiler_v4", "ncclProfiler_v5",
                                          "ncclProfiler_v6"}));
}

}  // namespace
}  // namespace warpscope::nccl_plugin

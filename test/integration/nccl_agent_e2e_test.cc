// SPDX-License-Identifier: Apache-2.0
// End to end: fake_nccl_driver (test/fakes/nccl) loads libwarpscope_nccl.so and reports to the
// real agent (`warpscope agent --cuda-profiler`, socket and /metrics port in a temporary
// directory); the NCCL metrics are read back from the agent's Prometheus /metrics and checked
// against what the driver ran: two ranks of one communicator, all-reduces of 4 MiB whose kernels
// run 100 us each on the GPU timer; and training steps cut from the collectives' periodicity, two
// ranks in two processes, one of them a straggler.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/testing/temp_dir.h"
#include "integration/child_process.h"
#include "integration/scrape.h"

namespace warpscope {
namespace {

using namespace std::chrono_literals;

const std::string kDriver = std::string(WARPSCOPE_BINARY_DIR) + "/bin/fake_nccl_driver";
const std::string kPlugin = std::string(WARPSCOPE_BINARY_DIR) + "/lib/libwarpscope_nccl.so";

constexpr int kHalf = 5;                    // all-reduces per rank before the driver waits
constexpr double kBytes = 4.0 * (1 << 20);  // 1 Mi float32 elements
constexpr double kExecSeconds = 100e-6;     // --exec-us 100
// Bus bytes of an all-reduce on 2 ranks: bytes x 2(n-1)/n = bytes.
constexpr double kBusBandwidth = kBytes / kExecSeconds;

// The driver and the plugin exist (built with this test).
void CheckBuilt() {
  for (const auto& path : {kDriver, kPlugin}) {
    ASSERT_EQ(access(path.c_str(), R_OK), 0)
        << path << " is missing; build fake_nccl_driver and warpscope_nccl";
  }
}

// `warpscope agent --cuda-profiler` on `socket`, serving /metrics on `port`, collecting every
// `collect_interval`; returns once /metrics has a first cycle (an empty body before it).
void StartAgent(const test::TempDir& dir, const std::string& socket, int port,
                const std::string& collect_interval, std::unique_ptr<test::ChildProcess>& out) {
  auto agent = test::ChildProcess::Start(
      {test::WarpscopeBinary(), "agent", "--enable-gpu-metrics=false",
       "--enable-host-metrics=false", "--cuda-profiler", "--cuda-profiler-socket", socket,
       "--cuda-profile-interval", "1s", "--collect-metrics-interval", collect_interval,
       "--export-metrics-interval", "1s", "--listen-address", "127.0.0.1:" + std::to_string(port),
       "--hostname", "nccl-node"},
      dir.path());
  ASSERT_TRUE(agent.has_value()) << agent.error().message();
  out = std::move(*agent);
  ASSERT_FALSE(test::WaitForHttp(port, "/metrics", [](const std::string& text) {
                 return !text.empty();
               }).empty())
      << out->Stderr();
}

std::vector<std::string> Rank(int rank) {
  return {"comm=\"0000000000005eed\"", "comm_name=\"fake\"",
          "rank=\"" + std::to_string(rank) + "\"", "nranks=\"2\"", "collective=\"AllReduce\""};
}

TEST(NcclAgentE2eTest, TheAgentServesTheDriversCollectivesOnItsMetricsEndpoint) {
  ASSERT_NO_FATAL_FAILURE(CheckBuilt());
  test::TempDir dir;
  const std::string socket = dir.path() + "/agent/cupti.sock";
  const int port = test::PickFreePort();
  std::unique_ptr<test::ChildProcess> agent;
  ASSERT_NO_FATAL_FAILURE(StartAgent(dir, socket, port, "500ms", agent));

  const std::string go = dir.path() + "/go";
  auto driver = test::ChildProcess::Start(
      {kDriver, "--plugin", kPlugin, "--ranks", "2", "--collectives", std::to_string(2 * kHalf),
       "--exec-us", "100", "--channels", "2", "--wait-file", go},
      dir.path(),
      {"WARPSCOPE_NCCL_SOCKET=" + socket, "WARPSCOPE_NCCL_FLUSH_MS=50",
       "TORCHELASTIC_RUN_ID=nccl-e2e", "RANK=0", "WORLD_SIZE=1"});
  ASSERT_TRUE(driver.has_value()) << driver.error().message();
  const std::string pid = "pid=\"" + std::to_string((*driver)->pid()) + "\"";

  // Both ranks' first half, with a window that saw them (the gauges).
  const std::string body = test::WaitForHttp(port, "/metrics", [&](const std::string& text) {
    std::vector<std::string> rank0 = Rank(0);
    rank0.push_back(pid);
    return test::PromSample(text, "warpscope_nccl_collectives_total", rank0) == kHalf &&
           test::PromSample(text, "warpscope_nccl_collectives_total", Rank(1)) == kHalf &&
           test::PromSample(text, "nccl_bus_bandwidth_gbs", {"rank=\"1\""}).has_value() &&
           test::PromSample(text, "nccl_bus_bandwidth_gbs", {"rank=\"0\""}).has_value();
  });
  SCOPED_TRACE(body);
  for (int rank : {0, 1}) {
    const std::vector<std::string> op = Rank(rank);
    ASSERT_EQ(test::PromSample(body, "warpscope_nccl_collectives_total", op), kHalf)
        << agent->Stderr();
    EXPECT_NEAR(*test::PromSample(body, "warpscope_nccl_collective_gpu_seconds_total", op),
                kHalf * kExecSeconds, 1e-9);
    EXPECT_EQ(test::PromSample(body, "warpscope_nccl_collective_bytes_total", op), kHalf * kBytes);
    EXPECT_EQ(test::PromSample(body, "warpscope_nccl_collective_bus_bytes_total", op),
              kHalf * kBytes);
    EXPECT_GT(*test::PromSample(body, "warpscope_nccl_collective_completion_seconds_total", op),
              0.0);
    const std::string r = "rank=\"" + std::to_string(rank) + "\"";
    const std::vector<std::string> inspector = {"collective=\"AllReduce\"",
                                                "message_size=\"4194304\"",
                                                "algo_proto=\"RING_SIMPLE\"",
                                                "comm_name=\"fake\"",
                                                "nranks=\"2\"",
                                                r};
    EXPECT_NEAR(*test::PromSample(body, "nccl_bus_bandwidth_gbs", inspector), kBusBandwidth / 1e9,
                1e-6);
    EXPECT_NEAR(*test::PromSample(body, "nccl_collective_exec_time_microseconds", inspector), 100.0,
                1e-6);
    EXPECT_GT(*test::PromSample(body, "warpscope_nccl_time_ratio", {r}), 0.0);
    EXPECT_EQ(test::PromSample(body, "warpscope_nccl_records_dropped_total",
                               {pid, "reason=\"event_pool\""}),
              0.0);
  }
  EXPECT_FALSE(test::PromSample(body, "warpscope_cuda_profiler_launches_dropped_total", {pid}))
      << "the NCCL plugin's connection is no CUDA process";

  std::ofstream(go) << "go";
  const int status = (*driver)->Wait(30s);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << (*driver)->Stdout();
  const int agent_status = agent->Signal(SIGINT, 20s);
  EXPECT_TRUE(WIFEXITED(agent_status) && WEXITSTATUS(agent_status) == 0) << agent->Stderr();
}

// Two ranks, each its own process (as torchrun starts them), run steps of two all-reduces after a
// compute phase; rank 1 computes 30 ms longer and rank 0 waits for it in its first all-reduce.
// The agent cuts the steps from the collectives alone (no CUDA library: no kernel records).
TEST(NcclAgentE2eTest, StepsFromTheCollectivesPeriodicityShowTheWaitingRank) {
  ASSERT_NO_FATAL_FAILURE(CheckBuilt());
  test::TempDir dir;
  const std::string socket = dir.path() + "/agent/cupti.sock";
  const int port = test::PickFreePort();
  std::unique_ptr<test::ChildProcess> agent;
  ASSERT_NO_FATAL_FAILURE(StartAgent(dir, socket, port, "200ms", agent));

  // 12 steps of 2 collectives; each driver waits after 6 steps.
  const std::string go = dir.path() + "/go";
  std::vector<std::unique_ptr<test::ChildProcess>> drivers;
  for (int rank : {0, 1}) {
    auto driver = test::ChildProcess::Start(
        {kDriver, "--plugin", kPlugin, "--ranks", "1", "--first-rank", std::to_string(rank),
         "--nranks", "2", "--collectives", "24", "--exec-us", "2000", "--step-compute-us",
         "20000", "--slow-rank", "1", "--slow-compute-us", "30000", "--wait-file", go},
        dir.path(),
        {"WARPSCOPE_NCCL_SOCKET=" + socket, "WARPSCOPE_NCCL_FLUSH_MS=20",
         "TORCHELASTIC_RUN_ID=steps-e2e", "RANK=" + std::to_string(rank), "WORLD_SIZE=2"});
    ASSERT_TRUE(driver.has_value()) << driver.error().message();
    drivers.push_back(std::move(*driver));
  }
  // Steps 0..3 are cut as soon as the step after each has ended, step 4 after the grace period
  // (step 5 never ends while the drivers wait). The window gauges last one window: keep the
  // shares as they pass.
  std::optional<double> share[2];
  std::optional<double> duration[2];
  const std::string body = test::WaitForHttp(port, "/metrics", [&](const std::string& text) {
    bool done = true;
    for (int rank : {0, 1}) {
      const std::vector<std::string> labels = {"job=\"steps-e2e\"",
                                               "rank=\"" + std::to_string(rank) + "\""};
      if (auto v = test::PromSample(text, "warpscope_training_communication_ratio", labels)) {
        share[rank] = v;
      }
      if (auto v = test::PromSample(text, "warpscope_training_step_duration_seconds", labels)) {
        duration[rank] = v;
      }
      done = done && test::PromSample(text, "warpscope_training_steps_total", labels) == 5 &&
             share[rank] && duration[rank];
    }
    return done;
  });
  SCOPED_TRACE(body);
  for (int rank : {0, 1}) {
    const std::vector<std::string> labels = {"job=\"steps-e2e\"",
                                             "rank=\"" + std::to_string(rank) + "\""};
    ASSERT_EQ(test::PromSample(body, "warpscope_training_steps_total", labels), 5)
        << agent->Stderr();
    EXPECT_EQ(test::PromSample(body, "warpscope_training_last_step", labels), 4);
    EXPECT_FALSE(test::PromSample(body, "warpscope_training_compute_ratio", labels))
        << "no kernel records: compute is unknown";
    // 20 ms compute + 30 ms straggling + 2 x 2 ms collectives, on both ranks.
    ASSERT_TRUE(duration[rank].has_value());
    EXPECT_GT(*duration[rank], 0.050);
    EXPECT_LT(*duration[rank], 0.5);
  }
  ASSERT_TRUE(share[0] && share[1]);
  // Rank 0 waits ~30 ms of ~54 ms in NCCL, rank 1 ~4 ms.
  EXPECT_GT(*share[0], 2 * *share[1]);
  EXPECT_GT(*share[0], 0.3);

  std::ofstream(go) << "go";
  for (auto& driver : drivers) {
    const int status = driver->Wait(30s);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << driver->Stdout();
  }
  const int agent_status = agent->Signal(SIGINT, 20s);
  EXPECT_TRUE(WIFEXITED(agent_status) && WEXITSTATUS(agent_status) == 0) << agent->Stderr();
}

}  // namespace
}  // namespace warpscope

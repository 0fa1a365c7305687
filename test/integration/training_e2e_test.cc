// SPDX-License-Identifier: Apache-2.0
// Distributed training analysis end to end with the real binaries: one `warpscope server` and two
// `warpscope agent --cuda-profiler --simulate` standing for two hosts, each with its own socket;
// eight `fake_nccl_driver` processes (test/fakes/nccl), four per host, are the ranks of one
// torchrun job and one communicator, and report through libwarpscope_nccl.so to their host's
// agent. The agents cut the ranks' steps from the collectives' periodicity and push them; the
// server's job analysis and insight rules judge them (docs/design/training.md).
//
// A control job runs first, all ranks alike: listed, analysed, no straggler. Then a job whose
// rank 6 (second host) computes 15 ms longer before its step's last all-reduce, which the other
// seven ranks wait in: /api/v1/jobs/{job} names rank 6 and its host as the straggler
// (late_collective), the waiting ranks spend a larger share of their steps in NCCL, and
// /api/v1/insights has a training_straggler finding on rank 6's process.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/file_util.h"
#include "child_process.h"
#include "scrape.h"

namespace warpscope::test {
namespace {

using nlohmann::json;
using std::chrono::seconds;

const std::string kDriver = std::string(WARPSCOPE_BINARY_DIR) + "/bin/fake_nccl_driver";
const std::string kPlugin = std::string(WARPSCOPE_BINARY_DIR) + "/lib/libwarpscope_nccl.so";

constexpr int kRanksPerHost = 4;
constexpr int kWorldSize = 2 * kRanksPerHost;
constexpr int kSlowRank = 6;  // on the second host
// Steps run per job. The agent cuts every step but the last (it never sees the next one start).
constexpr int kSteps = 30;
constexpr int kCutSteps = kSteps - 1;

// A simulated host of four busy H100s (the GPUs the ranks would run on).
constexpr char kScenario[] = R"(
name: training-node
devices:
  - repeat: 4
    name: "NVIDIA H100 80GB HBM3"
    architecture: hopper
    memory_total: 80GiB
    power_limit: 700
    signals:
      gpu_util: 97
      memory_used: 60GiB
      power: 620
      temperature: 62
)";

// The training rules read the jobs' steps at every evaluation; verdicts need 5 complete steps
// (the default).
constexpr char kServerConfig[] = R"(
[server.insights]
training-refresh = "0s"
)";

struct Host {
  std::string name;
  std::string socket;
  int port = 0;
  std::unique_ptr<ChildProcess> agent;
};

// The first open training_straggler finding of `body` (a /api/v1/insights answer).
std::optional<json> StragglerFinding(const std::string& body) {
  json doc = json::parse(body, nullptr, false);
  if (!doc.is_object() || !doc["insights"].is_array()) return std::nullopt;
  for (const json& f : doc["insights"]) {
    if (f["rule"] == "training_straggler" && f["state"] != "resolved") return f;
  }
  return std::nullopt;
}

// The job `job` of a /api/v1/jobs answer; null when it is not listed.
json ListedJob(const std::string& body, const std::string& job) {
  json doc = json::parse(body, nullptr, false);
  if (!doc.is_object() || !doc["jobs"].is_array()) return nullptr;
  for (const json& j : doc["jobs"]) {
    if (j["job"] == job) return j;
  }
  return nullptr;
}

class TrainingE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const auto& path : {kDriver, kPlugin}) {
      ASSERT_EQ(access(path.c_str(), R_OK), 0)
          << path << " is missing; build fake_nccl_driver and warpscope_nccl";
    }
    files_ = PrepareAgentAndServer(tmp_, kScenario);
    const std::string config = tmp_.path() + "/warpscope.toml";
    ASSERT_TRUE(files_.ok && base::WriteFile(config, kServerConfig).ok());
    server_port_ = files_.server_port;
    auto server = ChildProcess::Start(
        {WarpscopeBinary(), "--config", config, "server", "--data-dir=" + tmp_.path() + "/data",
         "--listen-address=127.0.0.1:" + std::to_string(server_port_),
         "--auth-token-file=" + files_.token, "--insights-interval=1s"},
        tmp_.path());
    ASSERT_TRUE(server) << server.error().message();
    server_ = std::move(*server);
    WaitForHttp(server_port_, "/healthz", [](const std::string&) { return true; });

    for (const char* name : {"train-node-a", "train-node-b"}) {
      Host& host = hosts_.emplace_back();
      host.name = name;
      host.socket = tmp_.path() + "/" + name + "/cupti.sock";
      host.port = PickFreePort();
      AgentServerFiles files = files_;
      files.agent_port = host.port;
      std::vector<std::string> argv = PushingAgentArgv(files, name);
      argv.insert(argv.end(), {"--cuda-profiler", "--cuda-profiler-socket=" + host.socket,
                               "--cuda-profile-interval=1s"});
      auto agent = ChildProcess::Start(argv, tmp_.path());
      ASSERT_TRUE(agent) << agent.error().message();
      host.agent = std::move(*agent);
    }
    // Each agent is up (its socket listens) once its /metrics has a first cycle.
    for (const Host& host : hosts_) {
      ASSERT_FALSE(
          WaitForHttp(host.port, "/metrics", [](const std::string& text) { return !text.empty(); })
              .empty())
          << host.name << ": " << host.agent->Stderr();
    }
  }

  void TearDown() override {
    for (Host& host : hosts_) {
      if (!host.agent) continue;
      const int status = host.agent->Signal(SIGINT, seconds(20));
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
          << host.name << ": " << host.agent->Stderr();
    }
    if (server_) {
      const int status = server_->Signal(SIGTERM, seconds(20));
      EXPECT_TRUE(WIFEXITED(status)) << server_->Stderr();
    }
  }

  // Runs the eight ranks of torchrun job `job` (communicator `comm_id`), one process each, ranks
  // 0-3 on the first host and 4-7 on the second, and waits for them to finish. Steps of two
  // all-reduces of 2 ms after 40 ms of compute; with `slow_rank`, that rank computes 15 ms more
  // before each step's second all-reduce, and the others wait in theirs. Returns the drivers'
  // pids by rank.
  std::vector<pid_t> RunJob(const std::string& job, const std::string& comm_id,
                            std::optional<int> slow_rank) {
    std::vector<std::unique_ptr<ChildProcess>> drivers;
    std::vector<pid_t> pids;
    for (int rank = 0; rank < kWorldSize; ++rank) {
      const Host& host = hosts_[rank / kRanksPerHost];
      std::vector<std::string> argv = {kDriver,
                                       "--plugin",
                                       kPlugin,
                                       "--ranks",
                                       "1",
                                       "--first-rank",
                                       std::to_string(rank),
                                       "--nranks",
                                       std::to_string(kWorldSize),
                                       "--comm-id",
                                       comm_id,
                                       "--collectives",
                                       std::to_string(2 * kSteps),
                                       "--exec-us",
                                       "2000",
                                       "--step-compute-us",
                                       "40000"};
      if (slow_rank) {
        argv.insert(argv.end(), {"--slow-rank", std::to_string(*slow_rank), "--slow-compute-us",
                                 "15000", "--slow-phase", "backward"});
      }
      auto driver = ChildProcess::Start(
          argv, tmp_.path(),
          {"WARPSCOPE_NCCL_SOCKET=" + host.socket, "WARPSCOPE_NCCL_FLUSH_MS=20",
           "TORCHELASTIC_RUN_ID=" + job, "RANK=" + std::to_string(rank),
           "LOCAL_RANK=" + std::to_string(rank % kRanksPerHost),
           "WORLD_SIZE=" + std::to_string(kWorldSize), "MASTER_ADDR=train-node-a"});
      EXPECT_TRUE(driver) << driver.error().message();
      if (!driver) return {};
      pids.push_back((*driver)->pid());
      drivers.push_back(std::move(*driver));
    }
    for (auto& driver : drivers) {
      const int status = driver->Wait(seconds(30));
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << driver->Stdout();
    }
    return pids;
  }

  // GET /api/v1/jobs/{job} once every step the agents cut of it is stored (bounded: 20 s).
  json WaitForAnalysis(const std::string& job) {
    const std::string body =
        WaitForHttp(server_port_, "/api/v1/jobs/" + job, [](const std::string& b) {
          json doc = json::parse(b, nullptr, false);
          return doc.is_object() && doc["complete_steps"] == kCutSteps;
        });
    return json::parse(body, nullptr, false);
  }

  std::string Logs() const {
    std::string out = "\nserver: " + server_->Stderr();
    for (const Host& host : hosts_) out += "\n" + host.name + ": " + host.agent->Stderr();
    return out;
  }

  TempDir tmp_;
  AgentServerFiles files_;
  int server_port_ = 0;
  std::unique_ptr<ChildProcess> server_;
  std::vector<Host> hosts_;
};

TEST_F(TrainingE2eTest, TheSlowRankOnTheSecondHostIsNamedTheStragglerAndTheControlJobIsNot) {
  // The control job: eight equal ranks.
  RunJob("control-run", "0xc0", std::nullopt);
  const json control = WaitForAnalysis("control-run");
  ASSERT_TRUE(control.is_object()) << Logs();
  ASSERT_EQ(control["complete_steps"], kCutSteps) << control.dump() << Logs();
  EXPECT_EQ(control["world_size"], kWorldSize);
  EXPECT_TRUE(control["straggler"].is_null()) << control.dump();

  // The job with a straggler.
  const std::vector<pid_t> pids = RunJob("pretrain-7", "0x7a", kSlowRank);
  ASSERT_EQ(pids.size(), static_cast<size_t>(kWorldSize));
  const json job = WaitForAnalysis("pretrain-7");
  ASSERT_TRUE(job.is_object()) << Logs();
  SCOPED_TRACE(job.dump());
  ASSERT_EQ(job["complete_steps"], kCutSteps) << Logs();
  EXPECT_EQ(job["world_size"], kWorldSize);
  EXPECT_EQ(job["hosts"], json({"train-node-a", "train-node-b"}));
  ASSERT_TRUE(job["straggler"].is_object());
  EXPECT_EQ(job["straggler"]["rank"], kSlowRank);
  EXPECT_EQ(job["straggler"]["host"], "train-node-b");
  EXPECT_EQ(job["straggler"]["reason"], "late_collective");
  const std::string slow_entity = "pid/" + std::to_string(pids[kSlowRank]) + "/";
  EXPECT_EQ(job["straggler"]["entity"].get<std::string>().rfind(slow_entity, 0), 0u);
  // It starts the last all-reduce ~15 ms after the others in a ~59 ms step.
  EXPECT_GT(job["straggler"]["lag_s"].get<double>(), 0.010);
  EXPECT_LT(job["straggler"]["lag_s"].get<double>(), 0.030);
  EXPECT_GT(job["straggler"]["late_fraction"].get<double>(), 0.5);

  // Every rank on its host, in rank order; the waiting ranks spend ~19 ms of a step in NCCL, the
  // straggler ~4 ms.
  ASSERT_EQ(job["ranks"].size(), static_cast<size_t>(kWorldSize));
  const double slow_share = job["ranks"][kSlowRank]["comm_share"].get<double>();
  for (int rank = 0; rank < kWorldSize; ++rank) {
    const json& r = job["ranks"][rank];
    EXPECT_EQ(r["rank"], rank);
    EXPECT_EQ(r["host"], rank < kRanksPerHost ? "train-node-a" : "train-node-b");
    EXPECT_EQ(r["steps"], kCutSteps);
    EXPECT_EQ(r["straggler"], rank == kSlowRank);
    EXPECT_TRUE(r["compute_share"].is_null()) << "no kernel records: compute is unknown";
    if (rank != kSlowRank) {
      EXPECT_GT(r["comm_share"].get<double>(), 2 * slow_share) << "rank " << rank;
    }
  }
  EXPECT_LT(slow_share, 0.15);
  EXPECT_TRUE(job["slow_interconnect_ranks"].empty());

  // The list: both jobs, eight ranks each on both hosts, only the second with a straggler.
  const std::string jobs = WaitForHttp(server_port_, "/api/v1/jobs", [](const std::string& b) {
    return !ListedJob(b, "pretrain-7").is_null() && !ListedJob(b, "control-run").is_null();
  });
  for (const char* name : {"pretrain-7", "control-run"}) {
    const json listed = ListedJob(jobs, name);
    ASSERT_TRUE(listed.is_object()) << jobs;
    EXPECT_EQ(listed["ranks"], kWorldSize) << listed.dump();
    EXPECT_EQ(listed["world_size"], kWorldSize) << listed.dump();
    EXPECT_EQ(listed["hosts"], json({"train-node-a", "train-node-b"})) << listed.dump();
  }
  EXPECT_EQ(ListedJob(jobs, "pretrain-7")["straggler"]["rank"], kSlowRank);
  EXPECT_TRUE(ListedJob(jobs, "control-run")["straggler"].is_null());

  // The finding, on the slow rank's process (pending: the rule holds it two minutes before it
  // fires). The engine read the control job's steps at the same evaluation: no finding on it.
  const std::string body = WaitForHttp(
      server_port_, "/api/v1/insights?rule=training_straggler",
      [](const std::string& b) { return StragglerFinding(b).has_value(); }, 300);
  const std::optional<json> finding = StragglerFinding(body);
  ASSERT_TRUE(finding) << body << Logs();
  EXPECT_EQ((*finding)["host"], "train-node-b");
  EXPECT_EQ((*finding)["entity"], job["straggler"]["entity"]);
  EXPECT_EQ((*finding)["kind"], "process");
  EXPECT_EQ((*finding)["attributes"]["job.id"], "pretrain-7");
  EXPECT_EQ((*finding)["attributes"]["job.rank"], std::to_string(kSlowRank));
  EXPECT_EQ((*finding)["evidence"]["straggler"]["reason"], "late_collective");
  size_t stragglers = 0;
  const json insights = json::parse(body);
  for (const json& f : insights["insights"]) {
    EXPECT_NE(f["attributes"]["job.id"], "control-run") << f.dump();
    stragglers += f["rule"] == "training_straggler";
  }
  EXPECT_EQ(stragglers, 1u) << body;
}

}  // namespace
}  // namespace warpscope::test

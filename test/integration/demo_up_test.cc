// SPDX-License-Identifier: Apache-2.0
// `warpscope up --simulate dataloader-bound` end to end: the demo workload of GPU 3 runs
// through the real injected library (over the CUPTI simulator) and the real CPU profiler, its
// pid is the one the simulator reports for GPU 3's process, the server gets a GPU profile of it
// with Python launch frames and PC samples (SASS offsets of the demo cubin, stall reasons) and a
// CPU profile of the same pid, and stopping `up` (Ctrl-C, or a
// kill -9) leaves no workload process behind. `up --simulate inference-overprovisioned` runs each
// GPU's inference workload under a fake vLLM, its parent, that serves vLLM's metrics, which the
// agent scrapes and the server stores on the serving process with the GPU of its workload.
// `up --simulate training-straggler` runs 8 ddp ranks of one torchrun job in lockstep: the agent
// cuts their steps from the NVTX ProfilerStep#N ranges, rank 5, which computes 20 % longer, is
// the one its peers wait for in NCCL, and the server's Jobs view names it the straggler.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "integration/child_process.h"

namespace warpscope::test {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

// Polls `done` until it holds or `timeout` passes (the steps only bound the polling rate).
bool WaitFor(const std::function<bool()>& done, std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(200ms);
  }
  return done();
}

// A process that is gone: no such pid, or a zombie waiting for init to reap it.
bool Gone(pid_t pid) {
  if (kill(pid, 0) != 0) return errno == ESRCH;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const size_t paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] == 'Z';
}

void CollectNames(const nlohmann::json& node, const std::string& kind, std::set<std::string>& out) {
  if (kind.empty() || node.value("kind", "") == kind) out.insert(node.value("name", ""));
  for (const auto& c : node["children"]) CollectNames(c, kind, out);
}

struct Up {
  std::unique_ptr<ChildProcess> process;
  int port = 0;
  pid_t gpu3_pid = 0;
};

void StartUp(const TempDir& dir, Up& up) {
  auto child = ChildProcess::Start(
      {WarpscopeBinary(), "up", "--simulate", "dataloader-bound", "--workloads", "3", "--port",
       "0", "--agent-port", "0", "--data-dir", dir.path() + "/up"},
      dir.path(),
      {"TMPDIR=" + dir.path(), "WARPSCOPE_AGENT_SOCKET=" + dir.path() + "/cupti.sock"});
  ASSERT_TRUE(child) << child.error().message();
  up.process = std::move(*child);
  std::smatch m;
  ASSERT_TRUE(WaitFor(
      [&] {
        const std::string out = up.process->Stdout();
        static const std::regex kUrl(R"(web UI +http://127\.0\.0\.1:(\d+)/)");
        static const std::regex kPid(R"(GPU 3 pid (\d+) \(dataloader\))");
        std::smatch u, p;
        if (!std::regex_search(out, u, kUrl) || !std::regex_search(out, p, kPid)) return false;
        up.port = std::stoi(u[1]);
        up.gpu3_pid = std::stoi(p[1]);
        return true;
      },
      60s))
      << "stdout:\n" << up.process->Stdout() << "\nstderr:\n" << up.process->Stderr();
}

TEST(DemoUpTest, WorkloadOfGpu3HasGpuAndCpuProfilesAndStopsWithUp) {
  TempDir dir;
  Up up;
  ASSERT_NO_FATAL_FAILURE(StartUp(dir, up));
  const pid_t pid = up.gpu3_pid;

  // The simulator reports the workload's pid for GPU 3's process: its host tree has the pid,
  // with the scenario's command line.
  bool in_tree = false;
  for (const auto& e : fs::directory_iterator(dir.path())) {
    if (e.path().filename().string().starts_with("warpscope-sim-host-")) {
      std::ifstream cmdline(e.path() / "proc" / std::to_string(pid) / "cmdline");
      std::string text((std::istreambuf_iterator<char>(cmdline)), {});
      in_tree = text.find("--local-rank=3") != std::string::npos;
    }
  }
  EXPECT_TRUE(in_tree) << "no simulated /proc/" << pid << " with GPU 3's command line";

  httplib::Client api("127.0.0.1", up.port);
  auto tree_of = [&](const std::string& kind, nlohmann::json& tree) {
    auto res = api.Get("/api/v1/profiles/merged?kind=" + kind + "&pid=" + std::to_string(pid));
    if (!res || res->status != 200) return false;
    tree = nlohmann::json::parse(res->body, nullptr, false);
    return !tree.is_discarded() && tree.value("profiles", 0) > 0;
  };
  nlohmann::json gpu;
  ASSERT_TRUE(WaitFor([&] { return tree_of("gpu", gpu); }, 120s))
      << "no GPU profile of pid " << pid << "\nstderr:\n" << up.process->Stderr();
  std::set<std::string> python, kernels;
  CollectNames(gpu["root"], "python", python);
  CollectNames(gpu["root"], "kernel", kernels);
  EXPECT_TRUE(python.contains("train_step")) << gpu.dump().substr(0, 4000);
  EXPECT_TRUE(python.contains("Linear.forward") || python.contains("forward"))
      << gpu.dump().substr(0, 4000);
  bool gemm = false;
  for (const auto& k : kernels) gemm |= k.starts_with("sm90_xmma_gemm_bf16");
  EXPECT_TRUE(gemm) << gpu.dump().substr(0, 4000);
  bool device3 = false;
  for (const auto& key : gpu["labels"]) {
    if (key.value("key", "") != "device") continue;
    for (const auto& v : key["values"]) device3 |= v["value"] == 3;
  }
  EXPECT_TRUE(device3) << gpu["labels"].dump();

  // PC samples of the demo cubin's GEMMs (up turns PC sampling on with --simulate): a GEMM
  // kernel → its SASS instruction offsets → stall reasons, under the Python launch frames.
  std::set<std::string> stalls, sass;
  ASSERT_TRUE(WaitFor(
      [&] {
        if (!tree_of("gpu", gpu)) return false;
        stalls.clear();
        CollectNames(gpu["root"], "stall", stalls);
        return !stalls.empty();
      },
      120s))
      << "no PC samples in the GPU profiles of pid " << pid << "\nstderr:\n"
      << up.process->Stderr();
  EXPECT_TRUE(stalls.contains("[stall] long_scoreboard")) << testing::PrintToString(stalls);
  EXPECT_TRUE(stalls.contains("[stall] barrier")) << testing::PrintToString(stalls);
  std::function<void(const nlohmann::json&, bool)> sass_under_gemm = [&](const nlohmann::json& n,
                                                                         bool in_gemm) {
    const std::string name = n.value("name", "");
    in_gemm |= n.value("kind", "") == "kernel" && name.starts_with("sm90_xmma_gemm_bf16");
    if (in_gemm && n.value("kind", "") == "sass") sass.insert(name);
    for (const auto& c : n["children"]) sass_under_gemm(c, in_gemm);
  };
  sass_under_gemm(gpu["root"], false);
  ASSERT_FALSE(sass.empty()) << gpu.dump().substr(0, 4000);
  static const std::regex kSass(R"(\[sass\] 0x[0-9a-f]{4}.*)");
  EXPECT_TRUE(std::regex_match(*sass.begin(), kSass)) << *sass.begin();

  nlohmann::json cpu;
  ASSERT_TRUE(WaitFor([&] { return tree_of("cpu", cpu); }, 120s))
      << "no CPU profile of pid " << pid << "\nstderr:\n" << up.process->Stderr();
  std::set<std::string> all;
  CollectNames(cpu["root"], "", all);
  EXPECT_TRUE(all.contains("SimDecodeImage") || all.contains("decode_jpeg"))
      << cpu.dump().substr(0, 4000);

  const int status = up.process->Signal(SIGINT, 30s);
  ASSERT_NE(status, -1) << "up did not stop within 30 s of SIGINT";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << up.process->Stderr();
  EXPECT_TRUE(Gone(pid)) << "workload " << pid << " outlived up";
}

TEST(DemoUpTest, KillNineOfUpTakesTheWorkloadsWithIt) {
  TempDir dir;
  Up up;
  ASSERT_NO_FATAL_FAILURE(StartUp(dir, up));
  ASSERT_FALSE(Gone(up.gpu3_pid));
  up.process->Signal(SIGKILL, 10s);
  EXPECT_TRUE(WaitFor([&] { return Gone(up.gpu3_pid); }, 10s))
      << "workload " << up.gpu3_pid << " outlived a kill -9 of up";
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The parent pid from /proc/<pid>/stat (field 4, after the command in parentheses).
pid_t ParentOf(pid_t pid) {
  const std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return 0;
  std::istringstream rest(stat.substr(paren + 2));
  std::string state;
  pid_t ppid = 0;
  rest >> state >> ppid;
  return ppid;
}

TEST(DemoUpTest, InferenceScenarioServesVllmMetricsAboveItsGpuWorkload) {
  TempDir dir;
  auto child = ChildProcess::Start(
      {WarpscopeBinary(), "up", "--simulate", "inference-overprovisioned", "--workloads", "0",
       "--port", "0", "--agent-port", "0", "--data-dir", dir.path() + "/up"},
      dir.path(), {"TMPDIR=" + dir.path(), "WARPSCOPE_AGENT_SOCKET=" + dir.path() + "/cupti.sock"});
  ASSERT_TRUE(child) << child.error().message();
  pid_t server = 0, worker = 0;
  int port = 0, api_port = 0;
  ASSERT_TRUE(WaitFor(
      [&] {
        const std::string out = (*child)->Stdout();
        static const std::regex kServer(
            R"(GPU 0 vllm pid (\d+) http://127\.0\.0\.1:(\d+)/metrics)");
        static const std::regex kWorker(R"(GPU 0 pid (\d+) \(inference\))");
        static const std::regex kUrl(R"(web UI +http://127\.0\.0\.1:(\d+)/)");
        std::smatch s, w, u;
        if (!std::regex_search(out, s, kServer) || !std::regex_search(out, w, kWorker) ||
            !std::regex_search(out, u, kUrl)) {
          return false;
        }
        server = std::stoi(s[1]);
        port = std::stoi(s[2]);
        worker = std::stoi(w[1]);
        api_port = std::stoi(u[1]);
        return true;
      },
      60s))
      << "stdout:\n"
      << (*child)->Stdout() << "\nstderr:\n"
      << (*child)->Stderr();

  // It looks like vLLM's API server, and the GPU process is its child.
  std::string cmdline = ReadFile("/proc/" + std::to_string(server) + "/cmdline");
  std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
  EXPECT_TRUE(cmdline.starts_with("vllm serve meta-llama/Llama-3.1-8B-Instruct ")) << cmdline;
  EXPECT_NE(cmdline.find("--max-num-seqs 256"), std::string::npos) << cmdline;
  EXPECT_EQ(ParentOf(worker), server);

  // vLLM's metrics, with a batch far below the limit: the over-provisioned serving of the
  // scenario (a few running requests of --max-num-seqs 256).
  httplib::Client client("127.0.0.1", port);
  std::string body;
  ASSERT_TRUE(WaitFor(
      [&] {
        auto res = client.Get("/metrics");
        if (!res || res->status != 200) return false;
        body = res->body;
        return body.find("vllm:request_success_total{") != std::string::npos &&
               body.find("finished_reason=\"stop\"} 0.0") == std::string::npos;
      },
      30s))
      << body;
  std::smatch m;
  static const std::regex kRunning(R"(vllm:num_requests_running\{[^}]*\} (\d+)\.0)");
  ASSERT_TRUE(std::regex_search(body, m, kRunning)) << body;
  EXPECT_LT(std::stoi(m[1]), 256 * 30 / 100);
  EXPECT_NE(body.find("vllm:time_to_first_token_seconds_bucket{"), std::string::npos);

  // The agent scrapes it (a static target tied to its pid: the simulated /proc the agent reads
  // has neither the server nor its socket) and the server stores its inference series on the
  // serving process, with the engine, the endpoint and the GPU of its child: GPU 0.
  httplib::Client api("127.0.0.1", api_port);
  std::string gpu0;
  ASSERT_TRUE(WaitFor(
      [&] {
        auto res = api.Get("/api/v1/entities?kind=gpu");
        if (!res || res->status != 200) return false;
        const auto j = nlohmann::json::parse(res->body, nullptr, false);
        if (j.is_discarded()) return false;
        for (const auto& e : j["entities"]) {
          if (e["attributes"].value("gpu.index", "") == "0") {
            gpu0 = e["attributes"].value("gpu.uuid", "");
          }
        }
        return !gpu0.empty();
      },
      60s))
      << "no GPU 0 at the server";
  const std::string entity_prefix = "pid/" + std::to_string(server) + "/";
  for (const std::string metric : {"inference.batch.efficiency", "inference.time_to_first_token"}) {
    nlohmann::json series;
    ASSERT_TRUE(WaitFor(
        [&] {
          auto res = api.Get("/api/v1/query_range?metric=" + metric + "&kind=process");
          if (!res || res->status != 200) return false;
          const auto j = nlohmann::json::parse(res->body, nullptr, false);
          if (j.is_discarded()) return false;
          for (const auto& s : j["series"]) {
            if (s.value("entity", "").starts_with(entity_prefix) && !s["points"].empty()) {
              series = s;
              return true;
            }
          }
          return false;
        },
        60s))
        << metric << " of the fake vLLM (pid " << server << ") never reached the server\n"
        << (*child)->Stderr();
    const auto& attributes = series["attributes"];
    EXPECT_EQ(attributes.value("inference.engine", ""), "vllm") << series.dump();
    EXPECT_EQ(attributes.value("inference.endpoint", ""),
              "http://127.0.0.1:" + std::to_string(port) + "/metrics")
        << series.dump();
    EXPECT_EQ(attributes.value("inference.gpu.uuids", ""), gpu0) << series.dump();
    EXPECT_EQ(series["labels"].value("model", ""), "meta-llama/Llama-3.1-8B-Instruct");
    if (metric == "inference.batch.efficiency") {
      // vLLM's iteration tokens against --max-num-batched-tokens 8192: far under 30 %.
      EXPECT_EQ(series["labels"].value("basis", ""), "tokens") << series.dump();
      EXPECT_LT(series["points"].back()[1].get<double>(), 0.3) << series.dump();
    } else {
      EXPECT_FALSE(series["labels"].value("quantile", "").empty()) << series.dump();
    }
  }

  const int status = (*child)->Signal(SIGINT, 30s);
  ASSERT_NE(status, -1) << "up did not stop within 30 s of SIGINT";
  EXPECT_TRUE(WaitFor([&] { return Gone(server) && Gone(worker); }, 10s))
      << "the fake vLLM " << server << " or its worker " << worker << " outlived up";
}

// One series of the agent's Prometheus text: its labels and value.
struct PromSample {
  std::string job;
  int rank = -1;
  double value = 0;
};
std::vector<PromSample> SamplesOf(const std::string& text, const std::string& metric) {
  std::vector<PromSample> out;
  const std::regex line("^" + metric + R"(\{([^}]*)\} (\S+)$)");
  static const std::regex kJob(R"re(job="([^"]*)")re"), kRank(R"re(rank="(\d+)")re");
  std::istringstream in(text);
  std::string l;
  while (std::getline(in, l)) {
    std::smatch m, j, r;
    if (!std::regex_match(l, m, line)) continue;
    const std::string labels = m[1];
    PromSample s;
    if (std::regex_search(labels, j, kJob)) s.job = j[1];
    if (std::regex_search(labels, r, kRank)) s.rank = std::stoi(r[1]);
    s.value = std::stod(m[2]);
    out.push_back(s);
  }
  return out;
}

TEST(DemoUpTest, TrainingStragglerRunsOneJobOfEightRanksThatWaitForRankFive) {
  TempDir dir;
  auto child = ChildProcess::Start(
      {WarpscopeBinary(), "up", "--simulate", "training-straggler", "--port", "0", "--agent-port",
       "0", "--data-dir", dir.path() + "/up"},
      dir.path(), {"TMPDIR=" + dir.path(), "WARPSCOPE_AGENT_SOCKET=" + dir.path() + "/cupti.sock"});
  ASSERT_TRUE(child) << child.error().message();
  int agent_port = 0, api_port = 0;
  std::set<pid_t> ranks;
  ASSERT_TRUE(WaitFor(
      [&] {
        const std::string out = (*child)->Stdout();
        static const std::regex kAgent(R"(agent metrics +http://127\.0\.0\.1:(\d+)/metrics)");
        static const std::regex kRank(R"(GPU \d pid (\d+) \(ddp\))");
        static const std::regex kUrl(R"(web UI +http://127\.0\.0\.1:(\d+)/)");
        std::smatch a, u;
        if (!std::regex_search(out, a, kAgent) || !std::regex_search(out, u, kUrl)) return false;
        agent_port = std::stoi(a[1]);
        api_port = std::stoi(u[1]);
        ranks.clear();
        for (auto it = std::sregex_iterator(out.begin(), out.end(), kRank);
             it != std::sregex_iterator(); ++it) {
          ranks.insert(std::stoi((*it)[1]));
        }
        return ranks.size() == 8;
      },
      60s))
      << "stdout:\n" << (*child)->Stdout() << "\nstderr:\n" << (*child)->Stderr();

  // Every rank's steps, with the breakdown of its kernel records, in one job: 8 ranks.
  httplib::Client agent("127.0.0.1", agent_port);
  std::string text;
  auto all_ranks = [&](const std::string& metric) {
    std::set<int> seen;
    for (const PromSample& s : SamplesOf(text, metric)) seen.insert(s.rank);
    return seen.size() == 8;
  };
  ASSERT_TRUE(WaitFor(
      [&] {
        auto res = agent.Get("/metrics");
        if (!res || res->status != 200) return false;
        text = res->body;
        return all_ranks("warpscope_training_communication_ratio") &&
               all_ranks("warpscope_training_compute_ratio") &&
               all_ranks("warpscope_training_step_duration_seconds");
      },
      90s))
      << "no training steps of 8 ranks at the agent\n" << text << "\nstderr:\n"
      << (*child)->Stderr();
  std::set<std::string> jobs;
  for (const PromSample& s : SamplesOf(text, "warpscope_training_last_step")) jobs.insert(s.job);
  ASSERT_EQ(jobs.size(), 1u) << text;
  EXPECT_TRUE(std::regex_match(*jobs.begin(), std::regex(R"(training-straggler-\d+)")))
      << *jobs.begin();

  // Lockstep: one step time for all (the straggler's pace), steps numbered alike.
  const auto durations = SamplesOf(text, "warpscope_training_step_duration_seconds");
  for (const PromSample& s : durations) {
    EXPECT_NEAR(s.value, durations.front().value, durations.front().value * 0.01)
        << "rank " << s.rank;
    EXPECT_GT(s.value, 0.05) << "rank " << s.rank;
    EXPECT_LT(s.value, 0.2) << "rank " << s.rank;
  }
  // The waiting ranks spend ~18 % of each step in NCCL beyond compute, rank 5 ~2 %.
  for (const PromSample& s : SamplesOf(text, "warpscope_training_communication_ratio")) {
    if (s.rank == 5) {
      EXPECT_LT(s.value, 0.06) << text;
    } else {
      EXPECT_GT(s.value, 0.12) << "rank " << s.rank << "\n" << text;
      EXPECT_LT(s.value, 0.25) << "rank " << s.rank << "\n" << text;
    }
  }

  // The server's Jobs view: the job, its 8 ranks, rank 5 the straggler, and its finding (open:
  // pending until it has held for 2 minutes), the only training rule the job raises.
  httplib::Client api("127.0.0.1", api_port);
  const std::string job = *jobs.begin();
  nlohmann::json analysis;
  ASSERT_TRUE(WaitFor(
      [&] {
        auto res = api.Get("/api/v1/jobs/" + job);
        if (!res || res->status != 200) return false;
        analysis = nlohmann::json::parse(res->body, nullptr, false);
        return !analysis.is_discarded() && analysis["straggler"].is_object() &&
               !analysis["findings"].empty();
      },
      120s))
      << "no straggler finding of job " << job << ": " << analysis.dump().substr(0, 4000);
  EXPECT_EQ(analysis.value("world_size", 0), 8);
  ASSERT_EQ(analysis["ranks"].size(), 8u);
  for (const auto& r : analysis["ranks"]) {
    EXPECT_TRUE(ranks.contains(r.value("pid", 0))) << r.dump();
  }
  EXPECT_EQ(analysis["straggler"].value("rank", -1), 5) << analysis["straggler"].dump();
  EXPECT_EQ(analysis["straggler"].value("reason", ""), "late_collective");
  for (const auto& f : analysis["findings"]) {
    EXPECT_EQ(f.value("rule", ""), "training_straggler") << f.dump();
    EXPECT_EQ(f["attributes"].value("job.rank", ""), "5") << f.dump();
    EXPECT_EQ(f["attributes"].value("job.id", ""), job) << f.dump();
  }
  auto listed = api.Get("/api/v1/jobs");
  ASSERT_TRUE(listed && listed->status == 200);
  const auto list = nlohmann::json::parse(listed->body, nullptr, false);
  ASSERT_FALSE(list.is_discarded());
  ASSERT_EQ(list["jobs"].size(), 1u) << list.dump();
  EXPECT_EQ(list["jobs"][0].value("job", ""), job);
  EXPECT_EQ(list["jobs"][0].value("ranks", 0), 8);

  const int status = (*child)->Signal(SIGINT, 30s);
  ASSERT_NE(status, -1) << "up did not stop within 30 s of SIGINT";
  for (pid_t pid : ranks) {
    EXPECT_TRUE(WaitFor([&] { return Gone(pid); }, 10s)) << "rank pid " << pid << " outlived up";
  }
}

}  // namespace
}  // namespace warpscope::test

// SPDX-License-Identifier: Apache-2.0
// One simulated GPU host for insights_confusion_test: the agent exactly as `warpscope agent
// --simulate SCENARIO` wires it (AgentProcess: NVML on the simulator, host metrics from the
// simulated host's /proc tree, the server push), with `warpscope up`'s intervals, on simulated
// time that its parent moves.
//
//   insights_sim_host SCENARIO.yaml HOSTNAME SERVER_URL TOKEN_FILE START_UNIX_SECONDS
//
// One line each way (commands on stdin, answers on stdout):
//   <- "ready <gpus>"          the agent started and ran its first cycle at t = 0
//   -> "run <seconds>"         move simulated time to <seconds> since the start, running every
//   <- "ok <windows>"          collect cycle and window due until then; answered once the server
//                              has acknowledged every window (<windows>: pushed so far)
//   -> end of input            stops the agent (a final window) and exits 0
//   <- "error <message>"       then exits 1
//
// A process per host: the simulator is one library instance per process (one scenario, one
// clock, its environment read at nvmlInit), so hosts that run together need a process each.
// The agent's clock, the simulator's manual clock and the simulated host's /proc tree move in
// the same steps, so rates (CPU, energy, GPM) are those of the scenario.
//
// A scenario process whose `workload` is `inference` is served as under `warpscope up`: a fake
// vLLM (warpscope-fake-inference, up's command line and traffic) on a manual clock that moves
// with the others, handed to the agent as `--inference-targets URL,engine=vllm,pid=PID`. The
// fake itself stands for the GPU process (WARPSCOPE_SIM_PIDS gives it the scenario pid; `up`
// makes the GPU process its child instead), which attributes the GPU to the serving process the
// same way: the agent counts the serving process's own pid among those of its GPUs.
#include <dlfcn.h>
#include <httplib.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>

#include "agent/agent.h"
#include "base/file_util.h"
#include "base/testing/temp_dir.h"
#include "cli/commands.h"
#include "cli/demo_workloads.h"
#include "exporters/server/server_exporter.h"
#include "sim/inference/fake_config.h"
#include "sim/inference/testing/fake_engine_process.h"
#include "sim/nvml/hooks.h"
#include "stepped_time.h"

namespace warpscope::test {
namespace {

int Fail(FILE* reply, const std::string& message) {
  std::fprintf(reply, "error %s\n", message.c_str());
  std::fflush(reply);
  return 1;
}

int Run(int argc, char** argv) {
  // Answers go to the stdout we were given; whatever else writes to stdout goes to stderr.
  FILE* reply = fdopen(dup(STDOUT_FILENO), "w");
  dup2(STDERR_FILENO, STDOUT_FILENO);
  if (reply == nullptr) return 1;
  if (argc != 6) {
    return Fail(reply, "usage: insights_sim_host SCENARIO HOSTNAME SERVER_URL TOKEN_FILE START");
  }
  const std::string scenario = argv[1];
  const long long start_s = std::atoll(argv[5]);

  // The library `--simulate` loads (next to the binary, as for `warpscope`), opened first so
  // that its clock is manual, at t = 0, before nvmlInit reads the scenario.
  std::error_code ec;
  const std::filesystem::path lib = std::filesystem::canonical(
      std::filesystem::path(base::ExecutableDir()) / ".." / "lib" / "sim" / "libnvidia-ml.so.1",
      ec);
  void* handle = ec ? nullptr : dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    return Fail(reply, "cannot open the NVML simulator next to this binary (build target "
                       "warpscope_nvml_sim): " +
                           std::string(ec ? ec.message() : dlerror()));
  }
  auto set_time = reinterpret_cast<sim::SetTimeNsFn>(dlsym(handle, sim::kSetTimeNsSymbol));
  if (set_time == nullptr) return Fail(reply, "the simulator lacks warpscope_sim_set_time_ns");
  set_time(0);

  // The fake vLLM servers of the scenario's inference workloads, at simulated time 0.
  auto workloads = cli::ListDemoWorkloads(lib.string(), scenario);
  if (!workloads) return Fail(reply, workloads.error().message());
  base::TempDir fake_dir("insights_sim_host_");
  std::vector<std::unique_ptr<sim::inference::FakeEngineProcess>> servers;
  std::string pid_map;
  std::vector<std::string> targets;
  std::string config_json = cli::InferenceServerConfigJson();
  config_json.insert(1, R"("clock": "manual", )");
  for (const cli::DemoWorkload& w : *workloads) {
    if (w.workload != "inference") continue;
    const std::string dir = fake_dir.path() + "/gpu" + std::to_string(w.device);
    std::filesystem::create_directories(dir, ec);
    auto server = sim::inference::FakeEngineProcess::Start(
        {.argv = cli::InferenceServerArgv(), .config_json = config_json, .dir = dir});
    if (!server) {
      return Fail(reply, "fake vLLM of GPU " + std::to_string(w.device) + ": " +
                             server.error().message());
    }
    pid_map += (pid_map.empty() ? "" : ",") + std::to_string(w.scenario_pid) + "=" +
               std::to_string((*server)->pid());
    targets.push_back((*server)->url() + ",engine=vllm,pid=" + std::to_string((*server)->pid()));
    servers.push_back(std::move(*server));
  }
  if (!pid_map.empty()) setenv("WARPSCOPE_SIM_PIDS", pid_map.c_str(), 1);
  auto set_server_times = [&servers](base::Duration t) {
    for (const auto& server : servers) {
      httplib::Client c("127.0.0.1", server->port());
      c.Put(sim::inference::kTimePath, std::to_string(base::ToSeconds(t)), "text/plain");
    }
  };

  SteppedClock clock(base::FromUnixNanos(start_s * 1'000'000'000));
  SteppedTaskRunner runner(clock);
  agent::AgentConfig config;
  config.collect_interval = std::chrono::seconds(1);  // `warpscope up`'s intervals
  config.export_interval = std::chrono::seconds(10);
  config.simulate = scenario;
  config.enable_gpu_metrics = true;
  config.hostname = argv[2];
  config.prometheus_listen_address.clear();
  config.server_url = argv[3];
  config.auth_token_file = argv[4];
  config.inference_targets = targets;
  if (base::Status st = config.Validate(); !st.ok()) return Fail(reply, st.message());
  auto process = cli::AgentProcess::Start(config, runner, clock);
  if (!process) return Fail(reply, process.error().message());
  const exporters::ServerExporter* exporter = (*process)->server_exporter();
  if (exporter == nullptr) return Fail(reply, "the agent has no server exporter");

  runner.RunUntil(base::Duration(0));  // the first cycle
  size_t gpus = 0;
  for (const model::Entity& e : (*process)->agent().aggregator().latest().entities) {
    gpus += e.kind == model::EntityKind::kGpu;
  }
  std::fprintf(reply, "ready %zu\n", gpus);
  std::fflush(reply);

  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.rfind("run ", 0) != 0) return Fail(reply, "unknown command: " + line);
    const base::Duration target = std::chrono::seconds(std::atoll(line.c_str() + 4));
    runner.RunUntil(target, [&](base::Duration t) {
      set_time(t.count());
      set_server_times(t);
    });
    // Every window reaches the server before the parent evaluates: no step races a push.
    const bool delivered = exporter->WaitForStatsForTesting(
        [](const exporters::ServerExporter::Stats& s) { return s.queued == 0; },
        std::chrono::seconds(60));
    auto stats = exporter->stats();
    if (!delivered) return Fail(reply, "windows not acknowledged: " + stats.last_error);
    std::fprintf(reply, "ok %llu\n", static_cast<unsigned long long>(stats.sent));
    std::fflush(reply);
  }
  (*process)->Stop();
  return 0;
}

}  // namespace
}  // namespace warpscope::test

int main(int argc, char** argv) { return warpscope::test::Run(argc, argv); }

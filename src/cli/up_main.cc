// SPDX-License-Identifier: Apache-2.0
// `warpscope up`: the whole product on one machine. A server with embedded storage and a local
// agent pushing to it with a generated token, in one process, on loopback.
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "agent/agent.h"
#include "agent/sources/cuda_profiler/profile_listener.h"
#include "base/file_util.h"
#include "base/logging.h"
#include "cli/commands.h"
#include "cli/demo_workloads.h"
#include "cli/install_layout.h"
#include "cli/simulation.h"

namespace warpscope::cli {
namespace {

// A random token in `path` (created 0600) unless the file already holds one.
base::Status EnsureToken(const std::string& path) {
  if (std::filesystem::exists(path)) return base::OkStatus();
  unsigned char raw[24];
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0 || read(fd, raw, sizeof(raw)) != static_cast<ssize_t>(sizeof(raw))) {
    if (fd >= 0) close(fd);
    return base::Unavailable("cannot read /dev/urandom to make a token");
  }
  close(fd);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string token;
  for (unsigned char c : raw) {
    token += kHex[c >> 4];
    token += kHex[c & 15];
  }
  int out = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (out < 0) return base::Unavailable("cannot create {}: {}", path, base::ErrnoString(errno));
  token += "\n";
  bool ok = write(out, token.data(), token.size()) == static_cast<ssize_t>(token.size());
  close(out);
  return ok ? base::OkStatus() : base::Unavailable("cannot write {}", path);
}

base::Result<std::unique_ptr<DemoWorkloads>> StartWorkloads(const UpOptions& options,
                                                            const Simulation& sim,
                                                            const std::string& agent_socket) {
  WARPSCOPE_ASSIGN_OR_RETURN(auto all, ListDemoWorkloads(sim.library_path, sim.scenario_path));
  auto selected = SelectDemoWorkloads(all, options.workloads);
  if (!selected) return base::Error(selected.error());
  const InstallLayout layout = OwnInstallLayout();
  const std::filesystem::path helpers(layout.helper_dir);
  DemoWorkloads::Options o;
  o.program = (helpers / "warpscope-demo-workload").string();
  o.inject_library = layout.cupti_inject;
  o.cupti_library = (std::filesystem::path(layout.sim_dir) / "libcupti.so").string();
  o.agent_socket = agent_socket;
  o.log_dir = options.data_dir;
  o.inference_program = (helpers / "warpscope-fake-inference").string();
  o.nccl_plugin = layout.nccl_plugin;
  // A run id of its own per `up`: a restarted demo is another run, whose steps number from 0.
  o.job_id = std::filesystem::path(sim.scenario_path).stem().string() + "-" +
             std::to_string(std::chrono::duration_cast<std::chrono::seconds>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count());
  return DemoWorkloads::Start(o, std::move(*selected));
}

// "  workloads      GPU 3 pid 4242 (dataloader) ...\n" and, for inference workloads,
// "  inference      GPU 0 vllm pid 4240 http://127.0.0.1:PORT/metrics ...\n"; "" without any.
std::string DescribeWorkloads(const std::vector<DemoWorkload>& workloads) {
  if (workloads.empty()) return "";
  std::string out = "  workloads     ";
  for (const DemoWorkload& w : workloads) {
    out += " GPU " + std::to_string(w.device) + " pid " + std::to_string(w.pid) + " (" +
           w.workload + ")";
  }
  out += "\n";
  // The fake vLLM servers of `inference` workloads (the workload is the server's child).
  std::string servers;
  for (const DemoWorkload& w : workloads) {
    if (w.server_pid == 0) continue;
    servers += " GPU " + std::to_string(w.device) + " vllm pid " + std::to_string(w.server_pid) +
               " http://127.0.0.1:" + std::to_string(w.server_port) + "/metrics";
  }
  if (!servers.empty()) out += "  inference     " + servers + "\n";
  return out;
}

}  // namespace

std::string DefaultUpDataDir() {
  const char* xdg = getenv("XDG_DATA_HOME");
  if (xdg != nullptr && *xdg != '\0') return std::string(xdg) + "/warpscope";
  const char* home = getenv("HOME");
  if (home != nullptr && *home != '\0') return std::string(home) + "/.local/share/warpscope";
  return "/tmp/warpscope";
}

int RunUp(const UpOptions& options) {
  const sigset_t signals = BlockTerminationSignals();

  std::error_code ec;
  std::filesystem::create_directories(options.data_dir, ec);
  if (ec) {
    std::fprintf(stderr, "warpscope up: cannot create --data-dir %s: %s\n",
                 options.data_dir.c_str(), ec.message().c_str());
    return 2;
  }
  const std::string token_file = options.data_dir + "/token";
  if (base::Status st = EnsureToken(token_file); !st.ok()) {
    std::fprintf(stderr, "warpscope up: %s\n", st.message().c_str());
    return 1;
  }

  base::RealClock& clock = base::RealClock::Get();
  base::ThreadTaskRunner runner(clock);

  server::ServerConfig server_config;
  server_config.listen_address = "127.0.0.1:" + std::to_string(options.server_port);
  server_config.data_dir = options.data_dir + "/data";
  server_config.auth_token_file = token_file;
  server_config.alertmanager_urls = options.alertmanager_urls;
  auto server = ServerProcess::Start(server_config, runner, clock);
  if (!server) {
    std::fprintf(stderr, "warpscope up: %s\n", server.error().message().c_str());
    return 1;
  }

  agent::AgentConfig agent_config;
  agent_config.collect_interval = std::chrono::seconds(1);
  agent_config.export_interval = std::chrono::seconds(10);
  agent_config.simulate = options.simulate;
  agent_config.enable_gpu_metrics = options.enable_gpu_metrics || !options.simulate.empty();
  agent_config.prometheus_listen_address = "127.0.0.1:" + std::to_string(options.agent_port);
  agent_config.server_url = "http://127.0.0.1:" + std::to_string((*server)->port());
  agent_config.auth_token_file = token_file;
  agent_config.buffer_dir = options.data_dir + "/spool";
  // CUDA kernel profiles of injected applications go to the local server too.
  agent_config.enable_cuda_profiler = true;
  agent_config.cuda_profile_interval = std::chrono::seconds(10);
  // The simulated processes' kernels come with PC samples of the demo cubin (docs/simulator.md).
  agent_config.cuda_pc_sampling =
      options.cuda_pc_sampling || (!options.simulate.empty() && !options.no_cuda_pc_sampling);
  // WARPSCOPE_AGENT_SOCKET, the injected library's own variable, moves both ends.
  const char* socket = ::getenv("WARPSCOPE_AGENT_SOCKET");
  agent_config.cuda_profiler_socket = socket != nullptr && *socket == '/'
                                          ? std::string(socket)
                                          : agent::cuda_profiler::DefaultListenSocket(::getenv);
  // CPU profiles of every process of this machine, in windows as short as the CUDA profiler's.
  // Without the privilege to sample system-wide the profiler falls back to the processes it may
  // profile, or turns itself off with the reason; the rest of `up` runs either way.
  agent_config.enable_cpu_profiler = options.cpu_profiler;
  agent_config.cpu_profile_interval = std::chrono::seconds(10);
  // The scenario's demo workloads start before the agent, so that the simulator, which reads
  // the scenario at the agent's NVML init, reports their pids (WARPSCOPE_SIM_PIDS).
  std::unique_ptr<DemoWorkloads> workloads;
  if (!options.simulate.empty()) {
    auto sim = ResolveSimulation(options.simulate);
    if (!sim) {
      std::fprintf(stderr, "warpscope up: --simulate: %s\n", sim.error().message().c_str());
      return 2;
    }
    agent_config.simulate = sim->scenario_path;
    auto started = StartWorkloads(options, *sim, agent_config.cuda_profiler_socket);
    if (!started) {
      std::fprintf(stderr, "warpscope up: %s\n", started.error().message().c_str());
      return 2;
    }
    workloads = std::move(*started);
    if (!workloads->workloads().empty()) {
      setenv("WARPSCOPE_SIM_PIDS", workloads->PidMap().c_str(), 1);
    }
    // The agent reads the simulated host's /proc, where the fake vLLM servers (real processes
    // on loopback) cannot be discovered: each is a static target tied to its real pid, whose
    // children on this machine's /proc are the GPU workloads NVML reports.
    for (const DemoWorkload& w : workloads->workloads()) {
      if (w.server_pid == 0) continue;
      agent_config.inference_targets.push_back(
          "http://127.0.0.1:" + std::to_string(w.server_port) +
          "/metrics,engine=vllm,pid=" + std::to_string(w.server_pid));
    }
  }
  if (base::Status st = agent_config.Validate(); !st.ok()) {
    std::fprintf(stderr, "warpscope up: %s\n", st.message().c_str());
    return 2;
  }
  auto agent = AgentProcess::Start(agent_config, runner, clock);
  if (!agent) {
    std::fprintf(stderr, "warpscope up: %s\n", agent.error().message().c_str());
    return 1;
  }

  std::printf(
      "warpscope is up%s\n"
      "  web UI         http://127.0.0.1:%d/\n"
      "  query API      http://127.0.0.1:%d/api/v1/entities   (docs/api.md)\n"
      "  agent metrics  http://127.0.0.1:%d/metrics\n"
      "  data           %s  (ingest token in %s)\n"
      "  CUDA profiler  CUDA_INJECTION64_PATH=%s "
      "WARPSCOPE_AGENT_SOCKET=%s <app>\n"
      "%s"
      "Ctrl-C stops it.\n",
      options.simulate.empty() ? "" : (" on the NVML simulator (" + options.simulate + ")").c_str(),
      (*server)->port(), (*server)->port(), (*agent)->metrics_port(), options.data_dir.c_str(),
      token_file.c_str(), OwnInstallLayout().cupti_inject.c_str(),
      agent_config.cuda_profiler_socket.c_str(),
      workloads == nullptr ? "" : DescribeWorkloads(workloads->workloads()).c_str());
  std::fflush(stdout);

  RunUntilSignal(runner, signals, [&] {
    if (workloads != nullptr) workloads->Stop();
    (*agent)->Stop();
    (*server)->Stop();
  });
  return 0;
}

}  // namespace warpscope::cli

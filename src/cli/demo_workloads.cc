// SPDX-License-Identifier: Apache-2.0
#include "cli/demo_workloads.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

extern char** environ;

namespace warpscope::cli {

namespace {

// The simulator's export (sim/nvml/hooks.h, kListWorkloadsSymbol), declared here: cli reaches
// the simulator only through its library.
using ListWorkloadsFn = long (*)(const char* scenario_path, char* out, unsigned long cap);
constexpr char kListWorkloadsSymbol[] = "warpscope_sim_list_workloads";

}  // namespace

base::Result<std::vector<DemoWorkload>> ListDemoWorkloads(const std::string& sim_library,
                                                          const std::string& scenario_path) {
  void* lib = dlopen(sim_library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    return base::Error(base::Unavailable("cannot load the NVML simulator {}: {}", sim_library,
                                         dlerror()));
  }
  auto list = reinterpret_cast<ListWorkloadsFn>(dlsym(lib, kListWorkloadsSymbol));
  if (list == nullptr) {
    dlclose(lib);
    return base::Error(base::Unavailable(
        "the NVML simulator {} has no {}; rebuild warpscope (target warpscope_nvml_sim)",
        sim_library, kListWorkloadsSymbol));
  }
  std::string text(4096, '\0');
  long n = list(scenario_path.c_str(), text.data(), text.size());
  if (n < 0 && n != LONG_MIN) {
    text.assign(static_cast<size_t>(-n), '\0');
    n = list(scenario_path.c_str(), text.data(), text.size());
  }
  dlclose(lib);
  if (n == LONG_MIN || n < 0) {
    return base::Error(base::InvalidArgument("{}", text.c_str()));
  }
  text.resize(static_cast<size_t>(n));
  std::vector<DemoWorkload> out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    DemoWorkload w;
    if (!(fields >> w.scenario_pid >> w.device >> w.workload)) continue;
    if (!(fields >> w.slowdown_percent)) w.slowdown_percent = 0;
    out.push_back(w);
  }
  return out;
}

namespace {
constexpr char kDdpWorkload[] = "ddp";  // sim/nvml/workloads.h kDdpWorkload
}  // namespace

std::vector<std::vector<std::string>> DdpJobEnvironment(const std::vector<DemoWorkload>& workloads,
                                                        const std::string& job_id,
                                                        const std::string& nccl_plugin) {
  size_t world = 0;
  for (const DemoWorkload& w : workloads) world += w.workload == kDdpWorkload;
  std::vector<std::vector<std::string>> out(workloads.size());
  size_t rank = 0;
  for (size_t i = 0; i < workloads.size(); ++i) {
    if (workloads[i].workload != kDdpWorkload) continue;
    out[i] = {"TORCHELASTIC_RUN_ID=" + job_id,
              "RANK=" + std::to_string(rank),
              "LOCAL_RANK=" + std::to_string(rank),
              "GROUP_RANK=0",
              "WORLD_SIZE=" + std::to_string(world),
              "LOCAL_WORLD_SIZE=" + std::to_string(world),
              "MASTER_ADDR=127.0.0.1",
              "MASTER_PORT=29500",
              "NCCL_PROFILER_PLUGIN=" + nccl_plugin,
              // Every kernel record, not only the sampled launches': the steps' breakdown.
              "WARPSCOPE_CUPTI_KERNELS=all"};
    ++rank;
  }
  return out;
}

std::vector<std::string> DdpArguments(const std::vector<DemoWorkload>& workloads,
                                      const DemoWorkload& self, uint64_t epoch_ns) {
  double job_slowdown = 0;
  for (const DemoWorkload& w : workloads) {
    if (w.workload == kDdpWorkload) job_slowdown = std::max(job_slowdown, w.slowdown_percent);
  }
  auto percent = [](double v) {
    std::ostringstream text;
    text << v;
    return text.str();
  };
  return {"--slowdown", percent(self.slowdown_percent), "--job-slowdown", percent(job_slowdown),
          "--job-epoch-ns", std::to_string(epoch_ns)};
}

base::Result<std::vector<DemoWorkload>> SelectDemoWorkloads(const std::vector<DemoWorkload>& all,
                                                            const std::string& selection) {
  if (selection == "all") return all;
  if (selection == "none") return std::vector<DemoWorkload>();
  std::set<unsigned> gpus;
  std::istringstream in(selection);
  std::string item;
  while (std::getline(in, item, ',')) {
    char* end = nullptr;
    const unsigned long v = std::strtoul(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v > 1023) {
      return base::Error(base::InvalidArgument(
          "--workloads '{}': '{}' is not a GPU index; use all, none or indices like 0,3",
          selection, item));
    }
    gpus.insert(static_cast<unsigned>(v));
  }
  std::vector<DemoWorkload> out;
  for (const DemoWorkload& w : all) {
    if (gpus.erase(w.device) > 0) out.push_back(w);
  }
  if (!gpus.empty()) {
    return base::Error(base::InvalidArgument(
        "--workloads '{}': GPU {} has no process with a workload in this scenario", selection,
        *gpus.begin()));
  }
  return out;
}

namespace {

// warpscope-fake-inference's environment (sim/inference/fake_config.h), repeated here: cli runs
// the binary and includes nothing of it.
constexpr char kFakeConfigEnv[] = "WARPSCOPE_FAKE_INFERENCE_CONFIG";
constexpr char kFakePortFileEnv[] = "WARPSCOPE_FAKE_INFERENCE_PORT_FILE";
constexpr char kInferenceWorkload[] = "inference";

struct Argv {
  explicit Argv(std::vector<std::string> a) : strings(std::move(a)) {
    for (std::string& s : strings) pointers.push_back(s.data());
    pointers.push_back(nullptr);
  }
  std::vector<std::string> strings;
  std::vector<char*> pointers;
};

// The first steps of every child, right after fork: only async-signal-safe calls.
void EnterChild(pid_t group, pid_t parent, const char* log) {
  setpgid(0, group);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);  // the parent died before the request took effect
  sigset_t all;
  sigfillset(&all);
  sigprocmask(SIG_UNBLOCK, &all, nullptr);  // `up` blocks SIGINT/SIGTERM for its own wait
  const int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
  const int out = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (in >= 0) dup2(in, 0);
  if (out >= 0) {
    dup2(out, 1);
    dup2(out, 2);
  }
}

// Waits up to 10 s for the port the fake engine writes once it listens (it starts in
// milliseconds; 20 ms steps cost nothing beside that bound).
base::Result<int> WaitForPort(const std::string& path, pid_t server) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    std::ifstream in(path);
    int port = 0;
    if (in >> port && port > 0) return port;
    if (waitpid(server, nullptr, WNOHANG) == server ||
        std::chrono::steady_clock::now() > deadline) {
      return base::Error(base::Unavailable(
          "the fake vLLM (pid {}) reported no port in {}; see its log beside it", server, path));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace

std::vector<std::string> InferenceServerArgv() {
  return {"vllm",
          "serve",
          "meta-llama/Llama-3.1-8B-Instruct",
          "--host",
          "127.0.0.1",
          "--port",
          "0",
          "--max-num-seqs",
          "256",
          "--max-num-batched-tokens",
          "8192",
          "--gpu-memory-utilization",
          "0.9"};
}

std::string InferenceServerConfigJson() {
  // ~1.5 requests/s of ~700 prompt and ~190 output tokens at ~24 ms per token: e2e ~4.6 s, so
  // ~7 requests run at a time (Little's law): ~3 % of 256 sequences, ~0.3 % of 8192 tokens per
  // 20 ms step. TTFT p95 0.25 s, below the 500 ms paging target.
  return R"({"traffic": {"requests_per_second": 1.5,
    "queue_seconds": [0.004, 0.006, 0.008, 0.012],
    "ttft_seconds": [0.045, 0.06, 0.07, 0.08, 0.09, 0.11, 0.13, 0.15, 0.18, 0.25],
    "itl_seconds": [0.018, 0.022, 0.025, 0.03],
    "prompt_tokens": [350, 620, 800, 1100],
    "output_tokens": [96, 160, 224, 288],
    "prefix_hit_percent": 35, "step_seconds": 0.02, "kv_cache_tokens": 196608}})";
}

base::Result<std::unique_ptr<DemoWorkloads>> DemoWorkloads::Start(
    const Options& options, std::vector<DemoWorkload> workloads) {
  std::unique_ptr<DemoWorkloads> self(new DemoWorkloads());
  if (workloads.empty()) return self;
  std::vector<const std::string*> needed = {&options.program, &options.inject_library,
                                            &options.cupti_library};
  bool inference = false;
  bool ddp = false;
  for (const DemoWorkload& w : workloads) {
    inference |= w.workload == kInferenceWorkload;
    ddp |= w.workload == kDdpWorkload;
  }
  if (inference) needed.push_back(&options.inference_program);
  if (ddp) needed.push_back(&options.nccl_plugin);
  for (const std::string* f : needed) {
    if (access(f->c_str(), R_OK) != 0) {
      return base::Error(base::NotFound(
          "{} is missing; rebuild warpscope (targets warpscope_demo_workload, warpscope_cupti, "
          "warpscope_sim_cupti, warpscope_fake_inference, warpscope_nccl) or run `up "
          "--workloads none`",
          f->empty() ? std::string("a helper program or library") : *f));
    }
  }
  const std::string config = options.log_dir + "/inference.json";
  if (inference) {
    std::ofstream out(config);
    out << InferenceServerConfigJson();
    if (!out) return base::Error(base::Unavailable("cannot write {}", config));
  }
  // Everything the children need is built before fork: after it, only async-signal-safe calls.
  std::vector<std::string> base_env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view v(*e);
    if (v.starts_with("CUDA_INJECTION64_PATH=") || v.starts_with("WARPSCOPE_CUPTI_LIBRARY=") ||
        v.starts_with("WARPSCOPE_AGENT_SOCKET=") || v.starts_with(kFakeConfigEnv) ||
        v.starts_with(kFakePortFileEnv)) {
      continue;
    }
    base_env.emplace_back(v);
  }
  std::vector<std::string> workload_env = base_env;
  workload_env.push_back("CUDA_INJECTION64_PATH=" + options.inject_library);
  workload_env.push_back("WARPSCOPE_CUPTI_LIBRARY=" + options.cupti_library);
  workload_env.push_back("WARPSCOPE_AGENT_SOCKET=" + options.agent_socket);
  const std::vector<std::vector<std::string>> job_env =
      DdpJobEnvironment(workloads, options.job_id, options.nccl_plugin);
  const uint64_t epoch_ns =
      options.job_epoch_ns != 0
          ? options.job_epoch_ns
          : static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                      std::chrono::system_clock::now().time_since_epoch())
                                      .count()) +
                2'000'000'000ull;
  const pid_t parent = getpid();
  self->workloads_ = std::move(workloads);
  for (size_t i = 0; i < self->workloads_.size(); ++i) {
    DemoWorkload& w = self->workloads_[i];
    const std::string device = std::to_string(w.device);
    const std::string log = options.log_dir + "/workload-gpu" + device + ".log";
    std::vector<std::string> args = {options.program, "--workload", w.workload, "--device", device};
    std::vector<std::string> env = workload_env;
    if (w.workload == kDdpWorkload) {
      for (std::string& a : DdpArguments(self->workloads_, w, epoch_ns)) args.push_back(a);
      env.insert(env.end(), job_env[i].begin(), job_env[i].end());
    }
    Argv argv(std::move(args));
    Argv envp(std::move(env));
    const bool serve = w.workload == kInferenceWorkload;
    const std::string server_log = options.log_dir + "/inference-gpu" + device + ".log";
    const std::string port_file = options.log_dir + "/inference-gpu" + device + ".port";
    std::vector<std::string> server_env = base_env;
    server_env.push_back(std::string(kFakeConfigEnv) + "=" + config);
    server_env.push_back(std::string(kFakePortFileEnv) + "=" + port_file);
    Argv server_envp(std::move(server_env));
    Argv server_argv(InferenceServerArgv());
    int pipe_fds[2] = {-1, -1};
    if (serve) {
      unlink(port_file.c_str());
      if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
        return base::Error(base::Unavailable("pipe: {}", std::strerror(errno)));
      }
    }
    const pid_t group = self->group_;
    const pid_t pid = fork();
    if (pid < 0) {
      return base::Error(base::Unavailable("fork for the demo workload of GPU {}: {}", w.device,
                                           std::strerror(errno)));
    }
    if (pid == 0 && !serve) {
      EnterChild(group, parent, log.c_str());
      execve(argv.pointers[0], argv.pointers.data(), envp.pointers.data());
      _exit(127);
    }
    if (pid == 0) {
      // The fake vLLM: fork its GPU worker, tell `up` the worker's pid, become the server.
      EnterChild(group, parent, server_log.c_str());
      const pid_t server = getpid();
      const pid_t worker = fork();
      if (worker == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != server) _exit(127);
        const int out = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (out >= 0) {
          dup2(out, 1);
          dup2(out, 2);
        }
        execve(argv.pointers[0], argv.pointers.data(), envp.pointers.data());
        _exit(127);
      }
      if (write(pipe_fds[1], &worker, sizeof(worker)) != sizeof(worker) || worker < 0) _exit(127);
      execve(options.inference_program.c_str(), server_argv.pointers.data(),
             server_envp.pointers.data());
      _exit(127);
    }
    setpgid(pid, group);  // also here: whichever of parent and child runs first
    if (self->group_ == 0) self->group_ = pid;
    w.pid = pid;
    if (serve) {
      close(pipe_fds[1]);
      pid_t worker = -1;
      const ssize_t n = read(pipe_fds[0], &worker, sizeof(worker));
      close(pipe_fds[0]);
      w.server_pid = pid;
      w.pid = n == sizeof(worker) && worker > 0 ? worker : 0;
      if (w.pid == 0) {
        return base::Error(base::Unavailable(
            "the fake vLLM of GPU {} could not start its worker; see {}", w.device, server_log));
      }
    }
  }
  for (DemoWorkload& w : self->workloads_) {
    if (w.server_pid == 0) continue;
    WARPSCOPE_ASSIGN_OR_RETURN(w.server_port, WaitForPort(options.log_dir + "/inference-gpu" +
                                                              std::to_string(w.device) + ".port",
                                                          w.server_pid));
  }
  return self;
}

std::string DemoWorkloads::PidMap() const {
  std::string out;
  for (const DemoWorkload& w : workloads_) {
    if (!out.empty()) out += ",";
    out += std::to_string(w.scenario_pid) + "=" + std::to_string(w.pid);
  }
  return out;
}

void DemoWorkloads::Stop() {
  if (group_ == 0) return;
  kill(-group_, SIGTERM);
  std::set<pid_t> running;
  for (const DemoWorkload& w : workloads_) {
    running.insert(w.pid);  // a fake vLLM's worker is its child: ECHILD here, reaped by it
    if (w.server_pid > 0) running.insert(w.server_pid);
  }
  // Polls waitpid: a child has no way to wake a thread that waits for several children with a
  // deadline; 20 ms steps cost nothing beside a 5 s bound.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!running.empty()) {
    for (auto it = running.begin(); it != running.end();) {
      const pid_t r = waitpid(*it, nullptr, WNOHANG);
      it = (r == *it || (r < 0 && errno == ECHILD)) ? running.erase(it) : std::next(it);
    }
    if (running.empty()) break;
    if (std::chrono::steady_clock::now() >= deadline) {
      kill(-group_, SIGKILL);
      for (pid_t p : running) waitpid(p, nullptr, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  group_ = 0;
}

DemoWorkloads::~DemoWorkloads() { Stop(); }

}  // namespace warpscope::cli

// SPDX-License-Identifier: Apache-2.0
#include "cli/demo_workloads.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstring>
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
  DemoWorkload w;
  while (lines >> w.scenario_pid >> w.device >> w.workload) out.push_back(w);
  return out;
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

base::Result<std::unique_ptr<DemoWorkloads>> DemoWorkloads::Start(
    const Options& options, std::vector<DemoWorkload> workloads) {
  std::unique_ptr<DemoWorkloads> self(new DemoWorkloads());
  if (workloads.empty()) return self;
  for (const std::string* f : {&options.program, &options.inject_library, &options.cupti_library}) {
    if (access(f->c_str(), R_OK) != 0) {
      return base::Error(base::NotFound(
          "{} is missing; rebuild warpscope (targets warpscope_demo_workload, warpscope_cupti, "
          "warpscope_sim_cupti) or run `up --workloads none`",
          *f));
    }
  }
  // Everything the child needs is built before fork: after it, only async-signal-safe calls.
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view v(*e);
    if (v.starts_with("CUDA_INJECTION64_PATH=") || v.starts_with("WARPSCOPE_CUPTI_LIBRARY=") ||
        v.starts_with("WARPSCOPE_AGENT_SOCKET=")) {
      continue;
    }
    env_strings.emplace_back(v);
  }
  env_strings.push_back("CUDA_INJECTION64_PATH=" + options.inject_library);
  env_strings.push_back("WARPSCOPE_CUPTI_LIBRARY=" + options.cupti_library);
  env_strings.push_back("WARPSCOPE_AGENT_SOCKET=" + options.agent_socket);
  std::vector<char*> envp;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  const pid_t parent = getpid();
  self->workloads_ = std::move(workloads);
  for (DemoWorkload& w : self->workloads_) {
    std::string device = std::to_string(w.device);
    std::string log = options.log_dir + "/workload-gpu" + device + ".log";
    std::vector<std::string> args = {options.program, "--workload", w.workload, "--device",
                                     device};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const pid_t group = self->group_;
    const pid_t pid = fork();
    if (pid < 0) {
      return base::Error(base::Unavailable("fork for the demo workload of GPU {}: {}", w.device,
                                           std::strerror(errno)));
    }
    if (pid == 0) {
      setpgid(0, group);
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(127);  // `up` died before the request took effect
      sigset_t all;
      sigfillset(&all);
      sigprocmask(SIG_UNBLOCK, &all, nullptr);  // `up` blocks SIGINT/SIGTERM for its own wait
      const int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
      const int out = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (in >= 0) dup2(in, 0);
      if (out >= 0) {
        dup2(out, 1);
        dup2(out, 2);
      }
      execve(argv[0], argv.data(), envp.data());
      _exit(127);
    }
    setpgid(pid, group);  // also here: whichever of parent and child runs first
    if (self->group_ == 0) self->group_ = pid;
    w.pid = pid;
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
  for (const DemoWorkload& w : workloads_) running.insert(w.pid);
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

// SPDX-License-Identifier: Apache-2.0
#include "child_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "base/file_util.h"
#include "base/logging.h"

namespace warpscope::test {

base::Result<std::unique_ptr<ChildProcess>> ChildProcess::Start(
    std::vector<std::string> argv, const std::string& log_dir, std::vector<std::string> extra_env) {
  static int counter = 0;
  std::unique_ptr<ChildProcess> child(new ChildProcess());
  std::string stem = log_dir + "/" + std::filesystem::path(argv[0]).filename().string() + "." +
                     std::to_string(counter++);
  child->out_path_ = stem + ".stdout";
  child->err_path_ = stem + ".stderr";
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) return base::Error(base::Internal("fork: {}", base::ErrnoString(errno)));
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    int out = open(child->out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int err = open(child->err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out >= 0) dup2(out, 1);
    if (err >= 0) dup2(err, 2);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, 0);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    for (auto& e : extra_env) putenv(e.data());
    execv(args[0], args.data());
    _exit(127);
  }
  child->pid_ = pid;
  return child;
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && !exited_) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

int ChildProcess::Wait(std::chrono::milliseconds timeout) {
  if (exited_) return -1;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    int status = 0;
    pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      exited_ = true;
      return status;
    }
    if (std::chrono::steady_clock::now() >= deadline) return -1;
    // Polling a child's exit: there is no portable blocking wait with a timeout.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

int ChildProcess::Signal(int sig, std::chrono::milliseconds timeout) {
  if (exited_) return -1;
  kill(pid_, sig);
  int status = Wait(timeout);
  if (status == -1) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    exited_ = true;
  }
  return status;
}

std::string ChildProcess::Stdout() const { return base::ReadFile(out_path_).value_or(""); }
std::string ChildProcess::Stderr() const { return base::ReadFile(err_path_).value_or(""); }

int PickFreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return 0;
  }
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

std::string WarpscopeBinary() { return std::string(WARPSCOPE_BINARY_DIR) + "/bin/warpscope"; }

AgentServerFiles PrepareAgentAndServer(const TempDir& dir, std::string_view scenario_yaml) {
  AgentServerFiles f;
  f.scenario = dir.path() + "/scenario.yaml";
  f.token = dir.path() + "/token";
  f.ok = !dir.path().empty() && base::WriteFile(f.scenario, scenario_yaml).ok() &&
         base::WriteFile(f.token, "e2e-secret-token\n").ok() && chmod(f.token.c_str(), 0600) == 0;
  f.server_port = PickFreePort();
  f.agent_port = PickFreePort();
  return f;
}

std::vector<std::string> PushingAgentArgv(const AgentServerFiles& files,
                                          std::string_view hostname) {
  return {WarpscopeBinary(),
          "agent",
          "--simulate",
          files.scenario,
          "--enable-host-metrics=false",
          "--collect-metrics-interval=500ms",
          "--export-metrics-interval=1s",
          "--listen-address=127.0.0.1:" + std::to_string(files.agent_port),
          "--hostname=" + std::string(hostname),
          "--server=http://127.0.0.1:" + std::to_string(files.server_port),
          "--auth-token-file=" + files.token};
}

std::string TwoGpuCoolingScenario(std::string_view name, std::string_view gpu1_temperature) {
  return fmt::format(R"(
name: {}
devices:
  - repeat: 2
    name: "NVIDIA H100 80GB HBM3"
    architecture: hopper
    memory_total: 80GiB
    power_limit: 700
    signals:
      gpu_util: 95
      memory_used: 60GiB
      power: 650
      temperature: 60
    overrides:
      "1":
        signals:
          temperature: {}
)",
                     name, gpu1_temperature);
}

}  // namespace warpscope::test

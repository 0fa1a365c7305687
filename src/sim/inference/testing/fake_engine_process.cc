// SPDX-License-Identifier: Apache-2.0
#include "sim/inference/testing/fake_engine_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <thread>

extern char** environ;

namespace warpscope::sim::inference {

namespace {

// The names of fake_config.h, repeated: this helper links only base.
constexpr char kConfigEnv[] = "WARPSCOPE_FAKE_INFERENCE_CONFIG";
constexpr char kPortFileEnv[] = "WARPSCOPE_FAKE_INFERENCE_PORT_FILE";

std::string MetricsPathOf(const std::vector<std::string>& argv) {
  const std::string& prog = argv.empty() ? std::string() : argv[0];
  return prog.ends_with("trtllm-serve") ? "/prometheus/metrics" : "/metrics";
}

// Reads "PORT\n" from the FIFO `fd` until `deadline`, or until the child exits.
base::Result<int> ReadPort(int fd, pid_t child, std::chrono::steady_clock::time_point deadline) {
  std::string text;
  while (text.find('\n') == std::string::npos) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      return base::Error(base::Unavailable("the fake engine reported no port in time"));
    }
    pollfd p{fd, POLLIN, 0};
    // 100 ms slices only to notice an early exit of the child; the FIFO wakes us on the port.
    const int r = poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 100)));
    if (r > 0) {
      char buf[32];
      const ssize_t n = read(fd, buf, sizeof(buf));
      if (n > 0) text.append(buf, static_cast<size_t>(n));
    }
    int status = 0;
    if (waitpid(child, &status, WNOHANG) == child) {
      return base::Error(base::Unavailable(
          "the fake engine exited before listening (status {}); see its log", status));
    }
  }
  return std::atoi(text.c_str());
}

}  // namespace

base::Result<std::unique_ptr<FakeEngineProcess>> FakeEngineProcess::Start(const Options& o) {
  if (o.argv.empty()) return base::Error(base::InvalidArgument("FakeEngineProcess: empty argv"));
  std::unique_ptr<FakeEngineProcess> self(new FakeEngineProcess());
  self->metrics_path_ = MetricsPathOf(o.argv);
  static int serial = 0;
  const std::string stem = o.dir + "/fake-engine-" + std::to_string(++serial);
  const std::string fifo = stem + ".port";
  const std::string log = stem + ".log";
  const std::string config = stem + ".json";
  if (mkfifo(fifo.c_str(), 0600) != 0) {
    return base::Error(base::Unavailable("mkfifo {}: {}", fifo, std::strerror(errno)));
  }
  {
    std::ofstream out(config);
    out << (o.config_json.empty() ? "{}" : o.config_json);
    if (!out) return base::Error(base::Unavailable("cannot write {}", config));
  }
  // O_RDWR keeps the FIFO open for reading without waiting for the writer (Linux).
  const int fd = open(fifo.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return base::Error(base::Unavailable("open {}: {}", fifo, std::strerror(errno)));
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) env_strings.emplace_back(*e);
  env_strings.push_back(std::string(kConfigEnv) + "=" + config);
  env_strings.push_back(std::string(kPortFileEnv) + "=" + fifo);
  std::vector<char*> envp;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = o.argv;
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    close(fd);
    return base::Error(base::Unavailable("fork: {}", std::strerror(errno)));
  }
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    const int out = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out >= 0) {
      dup2(out, 1);
      dup2(out, 2);
    }
    execve(o.program.c_str(), argv.data(), envp.data());
    _exit(127);
  }
  self->pid_ = pid;
  auto port = ReadPort(fd, pid, std::chrono::steady_clock::now() + o.timeout);
  close(fd);
  if (!port) {
    self->pid_ = -1;  // already reaped, or killed below
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    std::ifstream in(log);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return base::Error(base::Unavailable("{}: {}", port.error().message(), text));
  }
  self->port_ = *port;
  return self;
}

std::string FakeEngineProcess::url() const {
  return "http://127.0.0.1:" + std::to_string(port_) + metrics_path_;
}

int FakeEngineProcess::Stop() {
  if (pid_ <= 0) return -1;
  kill(pid_, SIGTERM);
  int status = -1;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  // waitpid has no timeout: poll it in 10 ms steps, bounded by the deadline.
  while (waitpid(pid_, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() >= deadline) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  pid_ = -1;
  return status;
}

FakeEngineProcess::~FakeEngineProcess() { Stop(); }

}  // namespace warpscope::sim::inference

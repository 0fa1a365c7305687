// SPDX-License-Identifier: Apache-2.0
#include "sim_fleet.h"

#include <fcntl.h>
#include <httplib.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>

#include "base/file_util.h"
#include "base/logging.h"
#include "server/server_config.h"

namespace warpscope::test {
namespace {

// The simulator's wall-clock base (docs/simulator.md, "Time"): NVML's timestamps and the
// agents' agree.
constexpr int64_t kStartUnixSeconds = 1'700'000'000;
// How long one host may take to answer a command: a 10-second step of an 8-GPU host costs
// milliseconds; this bounds a hung host, it is no synchronisation.
constexpr int kAnswerTimeoutMs = 120'000;

}  // namespace

struct SimFleet::Host {
  std::string hostname;
  std::string log_path;
  pid_t pid = -1;
  int to_host = -1;    // its stdin
  int from_host = -1;  // its stdout
  std::string buffered;

  ~Host() {
    if (to_host >= 0) close(to_host);
    if (from_host >= 0) close(from_host);
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }
};

SimFleet::SimFleet() : clock_(base::FromUnixNanos(kStartUnixSeconds * 1'000'000'000)), runner_(clock_) {}

SimFleet::~SimFleet() { Stop(); }

base::Result<std::unique_ptr<SimFleet>> SimFleet::Start(const std::vector<SimHost>& hosts,
                                                        const std::string& dir) {
  std::unique_ptr<SimFleet> fleet(new SimFleet());
  fleet->dir_ = dir;
  fleet->token_ = "confusion-matrix-token";
  const std::string token_file = dir + "/token";
  WARPSCOPE_RETURN_IF_ERROR(base::WriteFile(token_file, fleet->token_ + "\n"));
  chmod(token_file.c_str(), 0600);

  server::ServerConfig config;
  config.listen_address = "127.0.0.1:0";
  config.data_dir = dir + "/data";
  config.auth_token_file = token_file;
  config.insights_interval = kStep;
  WARPSCOPE_ASSIGN_OR_RETURN(fleet->server_,
                             cli::ServerProcess::Start(config, fleet->runner_, fleet->clock_));
  const std::string url = "http://127.0.0.1:" + std::to_string(fleet->server_->port());

  for (const SimHost& h : hosts) {
    auto host = std::make_unique<Host>();
    host->hostname = h.hostname;
    host->log_path = dir + "/" + h.hostname + ".log";
    std::vector<std::string> argv = {INSIGHTS_SIM_HOST, h.scenario_path, h.hostname, url,
                                     token_file, std::to_string(kStartUnixSeconds)};
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) {
      return base::Error(base::Internal("pipe: {}", base::ErrnoString(errno)));
    }
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid < 0) return base::Error(base::Internal("fork: {}", base::ErrnoString(errno)));
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(127);
      dup2(in[0], 0);
      dup2(out[1], 1);
      int log = open(host->log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (log >= 0) dup2(log, 2);
      execv(args[0], args.data());
      _exit(127);
    }
    close(in[0]);
    close(out[1]);
    host->pid = pid;
    host->to_host = in[1];
    host->from_host = out[0];
    fleet->hosts_.push_back(std::move(host));
  }
  for (auto& host : fleet->hosts_) {
    base::Result<std::string> ready = fleet->ReadLine(*host);
    if (!ready || ready->rfind("ready ", 0) != 0 || std::atoi(ready->c_str() + 6) == 0) {
      return base::Error(base::Internal(
          "host {} did not start with GPUs ({}); its log:\n{}", host->hostname,
          ready ? *ready : ready.error().message(), fleet->LogOf(*host)));
    }
  }
  return fleet;
}

base::Result<std::string> SimFleet::ReadLine(Host& host) {
  while (true) {
    size_t eol = host.buffered.find('\n');
    if (eol != std::string::npos) {
      std::string line = host.buffered.substr(0, eol);
      host.buffered.erase(0, eol + 1);
      return line;
    }
    pollfd p{host.from_host, POLLIN, 0};
    int r = poll(&p, 1, kAnswerTimeoutMs);
    if (r == 0) return base::Error(base::Unavailable("no answer within {} ms", kAnswerTimeoutMs));
    if (r < 0 && errno == EINTR) continue;
    char buf[512];
    ssize_t n = r < 0 ? -1 : read(host.from_host, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return base::Error(base::Unavailable("the host exited"));
    host.buffered.append(buf, static_cast<size_t>(n));
  }
}

std::string SimFleet::LogOf(const Host& host) const {
  std::ifstream in(host.log_path);
  std::stringstream s;
  s << in.rdbuf();
  std::string log = s.str();
  return log.size() > 4000 ? "..." + log.substr(log.size() - 4000) : log;
}

base::Status SimFleet::Call(Host& host, const std::string& command) {
  const std::string line = command + "\n";
  if (write(host.to_host, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
    return base::Unavailable("host {}: cannot send '{}'; its log:\n{}", host.hostname, command,
                             LogOf(host));
  }
  return base::OkStatus();
}

base::Status SimFleet::RunUntil(
    base::Duration elapsed,
    const std::function<void(base::Duration, const nlohmann::json&)>& on_findings) {
  httplib::Client api("127.0.0.1", server_->port());
  const httplib::Headers auth = {{"Authorization", "Bearer " + token_}};
  for (base::Duration t = clock_.elapsed() + kStep; t <= elapsed; t += kStep) {
    const std::string command =
        "run " + std::to_string(std::chrono::duration_cast<std::chrono::seconds>(t).count());
    // All hosts step at once (each in its own process), then each answer is collected.
    for (auto& host : hosts_) WARPSCOPE_RETURN_IF_ERROR(Call(*host, command));
    for (auto& host : hosts_) {
      base::Result<std::string> answer = ReadLine(*host);
      if (!answer || answer->rfind("ok ", 0) != 0) {
        return base::Unavailable("host {} at {}: {}; its log:\n{}", host->hostname,
                                 base::FormatDuration(t),
                                 answer ? *answer : answer.error().message(), LogOf(*host));
      }
    }
    runner_.RunUntil(t);  // the evaluation of this instant, with every window of it stored
    auto res = api.Get("/api/v1/insights?limit=5000", auth);
    if (!res || res->status != 200) {
      return base::Unavailable("GET /api/v1/insights at {}: {}", base::FormatDuration(t),
                               res ? res->body : httplib::to_string(res.error()));
    }
    nlohmann::json answer = nlohmann::json::parse(res->body, nullptr, false);
    if (!answer.is_object() || !answer["insights"].is_array()) {
      return base::Internal("GET /api/v1/insights: not a findings answer: {}", res->body);
    }
    on_findings(t, answer);
  }
  return base::OkStatus();
}

void SimFleet::Stop() {
  for (auto& host : hosts_) {
    if (host->to_host >= 0) {
      close(host->to_host);  // end of input: the host stops its agent and exits
      host->to_host = -1;
    }
  }
  for (auto& host : hosts_) {
    // Its final window reaches the server or gives up within the exporter's 2 s.
    pollfd p{host->from_host, POLLIN, 0};
    while (poll(&p, 1, kAnswerTimeoutMs) > 0) {
      char buf[256];
      if (read(host->from_host, buf, sizeof(buf)) <= 0) break;
    }
    waitpid(host->pid, nullptr, 0);
    host->pid = -1;
  }
  hosts_.clear();
  if (server_) server_->Stop();
  server_.reset();
}

}  // namespace warpscope::test

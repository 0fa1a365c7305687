// SPDX-License-Identifier: Apache-2.0
#include "integration/prometheus_peer.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "base/file_util.h"
#include "base/logging.h"

namespace warpscope::test {

namespace {

// A port that is free now (bound to 127.0.0.1:0, read back, closed). Another process may take
// it before Prometheus binds it; Start() retries with a fresh port when that happens.
int FreeLoopbackPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) {
    return 0;
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

std::string SecondsString(base::Duration d) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
  return ms % 1000 == 0 ? std::to_string(ms / 1000) + "s" : std::to_string(ms) + "ms";
}

}  // namespace

bool PrometheusPeer::Available(const std::string& binary) {
  return access(binary.c_str(), X_OK) == 0;
}

base::Result<std::unique_ptr<PrometheusPeer>> PrometheusPeer::Start(Options options) {
  if (!Available(options.binary)) {
    return base::Error(base::NotFound("{} not found or not executable; apt-get install prometheus",
                                      options.binary));
  }
  std::unique_ptr<PrometheusPeer> peer(new PrometheusPeer());
  const char* tmp = getenv("TMPDIR");
  std::string templ =
      std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/warpscope-prometheus-XXXXXX";
  if (mkdtemp(templ.data()) == nullptr) {
    return base::Error(base::Internal("mkdtemp({}) failed: {}", templ, base::ErrnoString(errno)));
  }
  peer->dir_ = templ;

  std::string config = "global:\n  scrape_interval: " + SecondsString(options.scrape_interval) +
                       "\n  scrape_timeout: " + SecondsString(options.scrape_interval) +
                       "\n  evaluation_interval: " +
                       SecondsString(options.evaluation_interval > base::Duration::zero()
                                         ? options.evaluation_interval
                                         : options.scrape_interval) +
                       "\n";
  if (!options.rule_files.empty()) {
    config += "rule_files:\n";
    for (const auto& f : options.rule_files) {
      config += "  - '" + f + "'\n";
    }
  }
  config += "scrape_configs:\n";
  for (const auto& t : options.targets) {
    config += "  - job_name: '" + t.job + "'\n    metrics_path: '" + t.metrics_path +
              "'\n    static_configs:\n      - targets: ['" + t.address + "']\n";
  }
  if (!options.remote_write_url.empty()) {
    config += "remote_write:\n  - url: '" + options.remote_write_url +
              "'\n    queue_config:\n      batch_send_deadline: 1s\n      min_backoff: 100ms\n"
              "      max_backoff: 1s\n";
    if (!options.remote_write_bearer_token.empty()) {
      config +=
          "    authorization:\n      credentials: '" + options.remote_write_bearer_token + "'\n";
    }
  }
  if (base::Status st = base::WriteFile(peer->dir_ + "/prometheus.yml", config); !st.ok()) {
    return base::Error(st);
  }

  base::Status last;
  for (int attempt = 0; attempt < 3; ++attempt) {
    last = peer->Launch(options);
    if (last.ok()) {
      return peer;
    }
  }
  return base::Error(last);
}

base::Status PrometheusPeer::Launch(const Options& options) {
  port_ = FreeLoopbackPort();
  if (port_ == 0) {
    return base::Internal("no free loopback port for prometheus");
  }
  const std::string log_path = dir_ + "/prometheus.log";
  std::vector<std::string> args = {options.binary, "--config.file=" + dir_ + "/prometheus.yml",
                                   "--storage.tsdb.path=" + dir_ + "/data",
                                   "--web.listen-address=127.0.0.1:" + std::to_string(port_),
                                   "--log.level=info"};
  std::vector<char*> argv;
  for (auto& a : args) {
    argv.push_back(a.data());
  }
  argv.push_back(nullptr);

  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    return base::Internal("fork failed: {}", base::ErrnoString(errno));
  }
  if (pid == 0) {
    // Child: dies with the test process; logs to the temp dir.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) {
      _exit(127);
    }
    int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
      close(fd);
    }
    execv(argv[0], argv.data());
    _exit(127);
  }
  pid_ = pid;

  httplib::Client client("127.0.0.1", port_);
  client.set_connection_timeout(1, 0);
  client.set_read_timeout(2, 0);
  const auto deadline = std::chrono::steady_clock::now() + options.ready_timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return base::Unavailable("prometheus exited during startup (status {}); log:\n{}", status,
                               LogTail());
    }
    auto res = client.Get("/-/ready");
    if (res && res->status == 200) {
      return base::OkStatus();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  Kill();
  return base::Unavailable("prometheus on 127.0.0.1:{} not ready within {}; log:\n{}", port_,
                           base::FormatDuration(options.ready_timeout), LogTail());
}

void PrometheusPeer::Kill() {
  if (pid_ <= 0) {
    return;
  }
  kill(pid_, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
      pid_ = -1;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

PrometheusPeer::~PrometheusPeer() {
  Kill();
  if (!dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

std::string PrometheusPeer::LogTail(size_t max_bytes) const {
  auto log = base::ReadFile(dir_ + "/prometheus.log");
  if (!log) {
    return "(no log)";
  }
  return log->size() <= max_bytes ? *log : log->substr(log->size() - max_bytes);
}

base::Result<nlohmann::json> PrometheusPeer::Query(std::string_view promql) {
  httplib::Client client("127.0.0.1", port_);
  client.set_connection_timeout(2, 0);
  client.set_read_timeout(10, 0);
  httplib::Params params{{"query", std::string(promql)}};
  auto res = client.Get("/api/v1/query", params, httplib::Headers{});
  if (!res) {
    return base::Error(
        base::Unavailable("query '{}': {}", promql, httplib::to_string(res.error())));
  }
  auto body = nlohmann::json::parse(res->body, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded() || !body.is_object()) {
    return base::Error(base::Internal("query '{}': HTTP {} with a body that is not JSON: {}",
                                      promql, res->status, res->body.substr(0, 300)));
  }
  if (body.value("status", "") != "success") {
    return base::Error(
        base::InvalidArgument("query '{}': HTTP {}: {}", promql, res->status, body.dump()));
  }
  return body["data"]["result"];
}

base::Result<nlohmann::json> PrometheusPeer::WaitForQuery(
    std::string_view promql, const std::function<bool(const nlohmann::json&)>& done,
    base::Duration timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string last;
  while (true) {
    auto r = Query(promql);
    if (r && done(*r)) {
      return r;
    }
    last = r ? r->dump() : r.error().ToString();
    if (std::chrono::steady_clock::now() >= deadline) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return base::Error(
      base::Unavailable("query '{}' did not reach the expected result within {}; "
                        "last result: {}",
                        promql, base::FormatDuration(timeout), last.substr(0, 2000)));
}

}  // namespace warpscope::test

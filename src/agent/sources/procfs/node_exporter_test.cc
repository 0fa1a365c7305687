// SPDX-License-Identifier: Apache-2.0
// Integration: ProcfsSource on the real "/" agrees with prometheus-node-exporter (Debian package)
// scraped at the same time on 127.0.0.1. Skipped when the exporter is not installed.
//
// Counters are bracketed: our source reads before and after the scrape, so the exporter's value
// must lie between the two readings, widened by a tolerance:
//   CPU seconds per mode (node_cpu_seconds_total summed over cpus): 1 s x logical CPUs, because
//     the aggregate "cpu" line we read also counts CPUs that are offline now, while the exporter
//     sums the per-CPU lines;
//   lo receive/transmit bytes: 64 KiB;
// and gauges compared directly: MemTotal exactly, MemAvailable within 2%, load1 within 0.5.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "model/process.h"
#include "model/testing/fake_process_resolver.h"
#include "agent/sources/procfs/procfs_source.h"
#include "model/testing/collecting_sink.h"
#include "base/testing/peer.h"

extern char** environ;

namespace warpscope::agent {
namespace {

constexpr char kNodeExporter[] = "/usr/bin/prometheus-node-exporter";

// A free TCP port on 127.0.0.1: bind port 0, read the port back, close.
int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  int port = -1;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

// One sample of the text exposition format: name, labels, value.
struct PromSample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

std::vector<PromSample> ParseExposition(const std::string& body) {
  std::vector<PromSample> out;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t end = body.find('\n', pos);
    if (end == std::string::npos) end = body.size();
    std::string line = body.substr(pos, end - pos);
    pos = end + 1;
    if (line.empty() || line[0] == '#') continue;
    PromSample s;
    size_t name_end = line.find_first_of("{ ");
    if (name_end == std::string::npos) continue;
    s.name = line.substr(0, name_end);
    size_t value_start = name_end;
    if (line[name_end] == '{') {
      size_t close = line.find('}', name_end);
      if (close == std::string::npos) continue;
      std::string labels = line.substr(name_end + 1, close - name_end - 1);
      size_t i = 0;
      while (i < labels.size()) {
        size_t eq = labels.find('=', i);
        if (eq == std::string::npos) break;
        size_t q1 = labels.find('"', eq);
        size_t q2 = labels.find('"', q1 + 1);
        if (q1 == std::string::npos || q2 == std::string::npos) break;
        s.labels[labels.substr(i, eq - i)] = labels.substr(q1 + 1, q2 - q1 - 1);
        i = q2 + 1;
        if (i < labels.size() && labels[i] == ',') ++i;
      }
      value_start = close + 1;
    }
    s.value = std::strtod(line.c_str() + value_start, nullptr);
    out.push_back(std::move(s));
  }
  return out;
}

// Sum of the samples of `name` whose labels include `match`; NAN (and a test failure) when
// the exporter wrote none.
double Sum(const std::vector<PromSample>& samples, const std::string& name,
           const std::map<std::string, std::string>& match) {
  double sum = 0;
  bool found = false;
  for (const PromSample& s : samples) {
    if (s.name != name) continue;
    bool ok = true;
    for (const auto& [k, v] : match) {
      auto it = s.labels.find(k);
      if (it == s.labels.end() || it->second != v) ok = false;
    }
    if (ok) {
      sum += s.value;
      found = true;
    }
  }
  EXPECT_TRUE(found) << "node_exporter wrote no " << name;
  return found ? sum : NAN;
}

class NodeExporterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (access(kNodeExporter, X_OK) != 0) return;
    port_ = FreePort();
    ASSERT_GT(port_, 0) << "no free loopback port";
    std::string listen = "--web.listen-address=127.0.0.1:" + std::to_string(port_);
    std::vector<std::string> args = {
        kNodeExporter, listen, "--collector.disable-defaults", "--collector.cpu",
        "--collector.meminfo", "--collector.loadavg", "--collector.netdev",
        // The exporter skips lo by default; we compare lo.
        "--collector.netdev.device-exclude=^$", "--collector.diskstats"};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    // Its log lines would only clutter the test output.
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
    int rc = posix_spawn(&pid_, kNodeExporter, &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ASSERT_EQ(rc, 0) << "posix_spawn(" << kNodeExporter << "): " << strerror(rc);

    // Poll /metrics until it answers, with a bounded number of attempts and a growing pause;
    // stop early if the exporter exits (e.g. the port was taken in between).
    httplib::Client client("127.0.0.1", port_);
    client.set_connection_timeout(0, 200'000);
    constexpr int kAttempts = 60;
    for (int attempt = 0; attempt < kAttempts; ++attempt) {
      auto res = client.Get("/metrics");
      if (res && res->status == 200) {
        ready_ = true;
        return;
      }
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = 0;
        FAIL() << "prometheus-node-exporter exited during startup (status " << status << ")";
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min(10 * (attempt + 1), 200)));
    }
    FAIL() << "prometheus-node-exporter did not answer on 127.0.0.1:" << port_ << " after "
           << kAttempts << " attempts";
  }

  static void TearDownTestSuite() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      int status = 0;
      waitpid(pid_, &status, 0);
      pid_ = 0;
    }
  }

  void SetUp() override {
    WARPSCOPE_REQUIRE_PEER(access(kNodeExporter, X_OK) == 0, kNodeExporter,
                           "run scripts/setup.sh --test (apt-get install prometheus-node-exporter)");
    ASSERT_TRUE(ready_) << "prometheus-node-exporter is not running";
    ProcfsSourceOptions options;
    options.root = "/";
    options.host_id = "self";
    options.top_processes = 0;
    options.per_core_cpu = false;
    options.interface_exclude = {};
    source_ = std::make_unique<ProcfsSource>(options, base::RealClock::Get(), resolver_);
    ASSERT_TRUE(source_->Start().ok());
    source_->Poll(base::RealClock::Get().Now(), before_);
    httplib::Client client("127.0.0.1", port_);
    auto res = client.Get("/metrics");
    ASSERT_TRUE(res) << "scrape failed";
    ASSERT_EQ(res->status, 200);
    node_ = ParseExposition(res->body);
    source_->Poll(base::RealClock::Get().Now(), after_);
  }

  double Ours(const model::CollectingSink& sink, std::string_view key,
              const model::Labels& labels = {}) {
    std::optional<double> v = sink.Find(key, "self", labels);
    EXPECT_TRUE(v.has_value()) << key;
    return v.value_or(NAN);
  }

  static inline pid_t pid_ = 0;
  static inline int port_ = 0;
  static inline bool ready_ = false;

  model::FakeProcessResolver resolver_;
  std::unique_ptr<ProcfsSource> source_;
  model::CollectingSink before_;
  model::CollectingSink after_;
  std::vector<PromSample> node_;
};

TEST_F(NodeExporterTest, CpuSecondsPerModeAgree) {
  double cpus = Ours(before_, "host.cpu.logical_count");
  double tolerance = 1.0 * cpus;
  for (const char* mode : {"user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"}) {
    SCOPED_TRACE(mode);
    double node = Sum(node_, "node_cpu_seconds_total", {{"mode", mode}});
    model::Labels labels{{"mode", mode}};
    EXPECT_GE(node, Ours(before_, "host.cpu.time", labels) - tolerance);
    EXPECT_LE(node, Ours(after_, "host.cpu.time", labels) + tolerance);
  }
}

TEST_F(NodeExporterTest, MemTotalIsExact) {
  EXPECT_EQ(Sum(node_, "node_memory_MemTotal_bytes", {}), Ours(before_, "host.memory.total"));
}

TEST_F(NodeExporterTest, MemAvailableWithinTwoPercent) {
  double node = Sum(node_, "node_memory_MemAvailable_bytes", {});
  double ours = Ours(before_, "host.memory.available");
  EXPECT_NEAR(node, ours, 0.02 * node);
}

TEST_F(NodeExporterTest, LoopbackBytesAgree) {
  constexpr double kSlack = 64 * 1024;
  for (const char* direction : {"receive", "transmit"}) {
    SCOPED_TRACE(direction);
    std::string name = std::string("node_network_") + direction + "_bytes_total";
    double node = Sum(node_, name, {{"device", "lo"}});
    model::Labels labels{{"direction", direction}, {"interface", "lo"}};
    EXPECT_GE(node, Ours(before_, "host.network.io", labels) - kSlack);
    EXPECT_LE(node, Ours(after_, "host.network.io", labels) + kSlack);
  }
}

TEST_F(NodeExporterTest, LoadAverageWithinHalf) {
  EXPECT_NEAR(Sum(node_, "node_load1", {}), Ours(before_, "host.load.1m"), 0.5);
}

}  // namespace
}  // namespace warpscope::agent

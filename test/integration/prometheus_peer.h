// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_TEST_INTEGRATION_PROMETHEUS_PEER_H_
#define WARPSCOPE_TEST_INTEGRATION_PROMETHEUS_PEER_H_

#include <sys/types.h>

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "base/time.h"

namespace warpscope::test {

// A real Prometheus server (Debian's `prometheus`, 2.42) for integration tests: listens on
// 127.0.0.1 with a free port, keeps its TSDB in a temporary directory and scrapes the given
// targets every `scrape_interval`. The process is stopped (SIGTERM, then SIGKILL) and the
// directory removed by the destructor; it is also killed if the test process dies.
// Not thread-safe.
class PrometheusPeer {
 public:
  struct Target {
    std::string job;      // job label
    std::string address;  // "127.0.0.1:PORT"
    std::string metrics_path = "/metrics";
  };
  struct Options {
    std::vector<Target> targets;
    std::string binary = "/usr/bin/prometheus";
    base::Duration scrape_interval = std::chrono::seconds(1);
    base::Duration ready_timeout = std::chrono::seconds(60);
    // When set, Prometheus also forwards every scraped sample to this remote write 1.0
    // receiver ("http://127.0.0.1:PORT/api/v1/write"), in small batches sent within a second.
    std::string remote_write_url;
    // Sent as "Authorization: Bearer <token>" on remote write requests when non-empty.
    std::string remote_write_bearer_token;
    // Rule files (alerting or recording rules) Prometheus loads, evaluated every
    // `evaluation_interval` (zero: every `scrape_interval`).
    std::vector<std::string> rule_files;
    base::Duration evaluation_interval{};
  };

  // True when `binary` exists and is executable; tests WARPSCOPE_REQUIRE_PEER it.
  static bool Available(const std::string& binary = "/usr/bin/prometheus");

  // Starts Prometheus and waits (bounded polling of /-/ready) until it serves queries.
  [[nodiscard]] static base::Result<std::unique_ptr<PrometheusPeer>> Start(Options options);
  ~PrometheusPeer();
  PrometheusPeer(const PrometheusPeer&) = delete;
  PrometheusPeer& operator=(const PrometheusPeer&) = delete;

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  const std::string& dir() const { return dir_; }

  // Instant query via /api/v1/query; returns `data.result` (an array for vector results).
  [[nodiscard]] base::Result<nlohmann::json> Query(std::string_view promql);
  // Repeats Query every 100 ms until `done(result)` holds; returns that result, or an error
  // naming the query and its last result after `timeout`.
  [[nodiscard]] base::Result<nlohmann::json> WaitForQuery(
      std::string_view promql, const std::function<bool(const nlohmann::json&)>& done,
      base::Duration timeout = std::chrono::seconds(30));

  // The end of Prometheus's own log, for failure messages.
  std::string LogTail(size_t max_bytes = 4000) const;

 private:
  PrometheusPeer() = default;
  [[nodiscard]] base::Status Launch(const Options& options);
  void Kill();

  pid_t pid_ = -1;
  int port_ = 0;
  std::string dir_;
};

}  // namespace warpscope::test

#endif  // WARPSCOPE_TEST_INTEGRATION_PROMETHEUS_PEER_H_

// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_EXPORTERS_PROMETHEUS_METRICS_HTTP_SERVER_H_
#define WARPSCOPE_EXPORTERS_PROMETHEUS_METRICS_HTTP_SERVER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "base/listen_address.h"
#include "base/status.h"
#include "base/time.h"
#include "exporters/prometheus/prometheus_exporter.h"
#include "exporters/prometheus/text_renderer.h"

namespace httplib {
class Server;
}

namespace warpscope::exporters {


using base::ListenAddress;
using base::ParseListenAddress;

// Picks the exposition format from an Accept header: OpenMetrics when an
// application/openmetrics-text entry has a q-value > 0 that is not lower than the best
// text/plain entry's, and `openmetrics_enabled`; the 0.0.4 text format otherwise.
ExpositionFormat NegotiateExpositionFormat(std::string_view accept, bool openmetrics_enabled);
// True when an Accept-Encoding header lists gzip with q > 0.
bool AcceptsGzip(std::string_view accept_encoding);

// Serves the latest snapshot of a MetricsSnapshotStore over HTTP:
//   GET /metrics  exposition, content-negotiated (Accept, Accept-Encoding: gzip)
//   GET /healthz  {"status":"ok","sequence":N}
//   other paths   404 {"error": ...}; other methods on the two paths: 405 {"error": ...}
// The accept loop runs on its own thread ("metrics-http") and requests on a small pool; they
// only read the store, never agent state. Start()/Stop() are called from one thread.
class MetricsHttpServer {
 public:
  struct Options {
    // dcgm-exporter's default. Tests and `warpscope up` pass a loopback address.
    std::string listen_address = "127.0.0.1:9400";
    bool openmetrics = true;  // false: always serve the 0.0.4 text format
    int worker_threads = 2;
    // Idle keep-alive connections are closed after this; it also bounds how long Stop() waits
    // for a connected client.
    base::Duration keep_alive_timeout = std::chrono::seconds(1);
    base::Duration read_timeout = std::chrono::seconds(5);
  };

  struct Stats {
    uint64_t metrics_text = 0;         // /metrics answers in the 0.0.4 format
    uint64_t metrics_openmetrics = 0;  // /metrics answers in OpenMetrics
    uint64_t metrics_gzip = 0;         // of those, gzip-compressed
    uint64_t healthz = 0;
    uint64_t errors = 0;  // 404 and 405 answers
  };

  MetricsHttpServer(Options options, std::shared_ptr<const MetricsSnapshotStore> store);
  ~MetricsHttpServer();  // Stop()
  MetricsHttpServer(const MetricsHttpServer&) = delete;
  MetricsHttpServer& operator=(const MetricsHttpServer&) = delete;

  // Binds the listen address and starts serving. Returns the bound port (useful with port 0).
  // Errors: InvalidArgument for a malformed address, Unavailable when the address is in use or
  // cannot be bound; the message names the address and the remedy.
  [[nodiscard]] base::Result<int> Start();
  // Stops accepting, finishes requests in flight and joins the threads. Idempotent.
  void Stop();

  int port() const { return port_; }
  Stats stats() const;

 private:
  void InstallRoutes();

  Options options_;
  std::shared_ptr<const MetricsSnapshotStore> store_;
  std::unique_ptr<httplib::Server> server_;
  std::jthread thread_;
  int port_ = 0;

  std::atomic<uint64_t> metrics_text_{0};
  std::atomic<uint64_t> metrics_openmetrics_{0};
  std::atomic<uint64_t> metrics_gzip_{0};
  std::atomic<uint64_t> healthz_{0};
  std::atomic<uint64_t> errors_{0};
};

}  // namespace warpscope::exporters

#endif  // WARPSCOPE_EXPORTERS_PROMETHEUS_METRICS_HTTP_SERVER_H_

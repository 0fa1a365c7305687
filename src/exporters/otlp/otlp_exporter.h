// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_EXPORTERS_OTLP_OTLP_EXPORTER_H_
#define WARPSCOPE_EXPORTERS_OTLP_OTLP_EXPORTER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "base/time.h"
#include "exporters/delivery.h"
#include "exporters/exporter.h"
#include "exporters/http_push.h"
#include "exporters/otlp/otlp_json_encoder.h"
#include "exporters/otlp/otlp_transport.h"

namespace warpscope::exporters {

// Where and how to POST. The base URL is e.g. "http://127.0.0.1:4318"; "/v1/metrics" is
// used unless the URL has a path of its own.
using OtlpEndpoint = HttpEndpoint;
[[nodiscard]] base::Result<OtlpEndpoint> ParseOtlpEndpoint(std::string_view url);

// Pushes export windows to an OTLP receiver: OTLP/HTTP with JSON (the default) or protobuf
// bodies, or OTLP/gRPC (MetricsService/Export). Every protocol carries the same request
// (OtlpJsonEncoder's) and has the same delivery below; only the transport differs.
//
// Export() copies the frame into a bounded queue and returns at once (kSuccess when queued,
// kDropped after Shutdown). When the queue is full the oldest frame is dropped and counted. A
// worker thread ("otlp-export") encodes and POSTs one frame at a time; 429, 502, 503, 504 and
// connection failures are retried with exponential backoff (Retry-After honoured, capped) up to
// `max_attempts`; other statuses are not retried. Over gRPC the retried codes are OTLP's:
// UNAVAILABLE, DEADLINE_EXCEEDED, CANCELLED, ABORTED, OUT_OF_RANGE, DATA_LOSS. Shutdown(timeout) stops accepting frames,
// sends what it can before the deadline, then abandons the rest (counted as dropped) and joins.
class OtlpExporter : public Exporter {
 public:
  struct Options {
    std::string endpoint;                                      // --otlp-endpoint
    OtlpProtocol protocol = OtlpProtocol::kHttpJson;           // --otlp-protocol
    std::vector<std::pair<std::string, std::string>> headers;  // e.g. authorization
    base::Duration timeout = std::chrono::seconds(10);         // per request
    size_t max_queue = 8;                                      // frames
    int max_attempts = 5;                                      // per frame, first try included
    base::Duration initial_backoff = std::chrono::seconds(1);
    base::Duration max_backoff = std::chrono::seconds(30);
    bool gzip = false;  // Content-Encoding: gzip request bodies (gRPC: gzip messages)
    // https / TLS gRPC: the CAs to trust instead of the system's (--tls-ca-file).
    std::string tls_ca_file;
    OtlpJsonEncoder::Options encoder;
  };

  struct Stats {
    uint64_t sent = 0;     // frames accepted by the receiver (2xx, gRPC OK)
    uint64_t failed = 0;   // frames given up on: non-retryable status or attempts exhausted
    uint64_t dropped = 0;  // frames discarded unsent: queue overflow or shutdown
    uint64_t retries = 0;  // extra attempts
    uint64_t queued = 0;   // frames waiting now
  };

  // Validates the options and starts the worker thread.
  [[nodiscard]] static base::Result<std::unique_ptr<OtlpExporter>> Create(Options options);
  ~OtlpExporter() override;  // Shutdown(0) if not shut down yet

  ExportResult Export(const model::Frame& frame) noexcept override;
  void Shutdown(base::Duration timeout) override;
  std::string_view name() const override { return "otlp"; }

  // Thread-safe.
  Stats stats() const;

 private:
  OtlpExporter(Options options, std::unique_ptr<OtlpTransport> transport);
  void Run(std::stop_token stop);
  // Sends one body with retries. Returns false when it gave up.
  bool Send(const std::string& body, std::stop_token& stop);

  const Options options_;
  OtlpJsonEncoder encoder_;                   // worker thread only
  RetryPolicy retry_;                         // worker thread only
  std::unique_ptr<OtlpTransport> transport_;  // worker thread only (Cancel() from Shutdown)

  mutable LoopMonitor monitor_;
  DropOldestQueue<model::Frame> queue_;  // guarded by monitor_.mu

  std::atomic<uint64_t> sent_{0};
  std::atomic<uint64_t> failed_{0};
  std::atomic<uint64_t> dropped_{0};
  std::atomic<uint64_t> retries_{0};

  SendLoop loop_{"otlp-export", monitor_};  // last: its thread uses everything above
};

}  // namespace warpscope::exporters

#endif  // WARPSCOPE_EXPORTERS_OTLP_OTLP_EXPORTER_H_

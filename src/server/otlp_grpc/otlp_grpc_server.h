// SPDX-License-Identifier: Apache-2.0
// The OTLP/gRPC receiver: opentelemetry.proto.collector.metrics.v1.MetricsService/Export and
// ...trace.v1.TraceService/Export on their own listener (the OpenTelemetry SDKs' and the
// Collector's default protocol, port 4317). Requests are decoded with the OTLP/HTTP decoders
// (server/ingest) and stored through OtlpIngest, so the mapping, the token and the counters are
// those of OTLP/HTTP. docs/design/ingest.md ("OTLP/gRPC") has the threads and limits.
//
// This header carries no gRPC types: only otlp_grpc_server.cc compiles against grpc++.
#ifndef WARPSCOPE_SERVER_OTLP_GRPC_OTLP_GRPC_SERVER_H_
#define WARPSCOPE_SERVER_OTLP_GRPC_OTLP_GRPC_SERVER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "base/status.h"
#include "server/ingest/otlp_ingest.h"

namespace warpscope::server {

class OtlpGrpcServer {
 public:
  struct Options {
    // "host:port", ":port" (all IPv4 interfaces) or "[v6]:port"; port 0 picks a free one.
    std::string listen_address = "127.0.0.1:4317";
    // TLS with this certificate chain and key (PEM files) when both are set.
    std::string tls_cert_file;
    std::string tls_key_file;
    // The largest request message, after decompression: RESOURCE_EXHAUSTED beyond.
    size_t max_message_bytes = 32u << 20;
    // Threads that decode and store requests, and the requests that may wait for one; a request
    // beyond both is answered UNAVAILABLE at once (OTLP senders retry it with backoff), so a
    // flood of gRPC exports cannot hold more than these threads or starve the HTTP API.
    int worker_threads = 4;
    int max_queued_requests = 64;
  };
  struct Stats {
    uint64_t requests = 0;     // Export calls answered, any status
    uint64_t overloaded = 0;   // answered UNAVAILABLE because the queue was full
    uint64_t queued = 0;       // requests waiting for a worker now
  };

  // Binds and starts serving on gRPC's threads and `worker_threads` of its own. `ingest` must
  // outlive the server. Errors name the address and the remedy (a port in use, unreadable TLS
  // files); Unsupported when built without gRPC (-DWARPSCOPE_OTLP_GRPC=OFF).
  [[nodiscard]] static base::Result<std::unique_ptr<OtlpGrpcServer>> Start(Options options,
                                                                           OtlpIngest& ingest);
  // Stops: calls still running get up to 2 s to finish, queued ones are answered UNAVAILABLE.
  // Idempotent; the destructor calls it.
  ~OtlpGrpcServer();
  void Stop();
  OtlpGrpcServer(const OtlpGrpcServer&) = delete;
  OtlpGrpcServer& operator=(const OtlpGrpcServer&) = delete;

  // The bound port (the one chosen for port 0).
  int port() const;
  Stats stats() const;

  class Impl;

 private:
  explicit OtlpGrpcServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace warpscope::server

#endif  // WARPSCOPE_SERVER_OTLP_GRPC_OTLP_GRPC_SERVER_H_

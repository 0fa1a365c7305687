// SPDX-License-Identifier: Apache-2.0
// One attempt to deliver an OTLP metrics export request, over OTLP/HTTP (JSON or protobuf) or
// OTLP/gRPC. OtlpExporter owns one and wraps it in its queue, retries and backoff, so every
// protocol has the same delivery semantics.
#ifndef WARPSCOPE_EXPORTERS_OTLP_OTLP_TRANSPORT_H_
#define WARPSCOPE_EXPORTERS_OTLP_OTLP_TRANSPORT_H_

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "base/time.h"

namespace warpscope::exporters {

// OTEL_EXPORTER_OTLP_PROTOCOL's names: "http/json", "http/protobuf" and "grpc".
enum class OtlpProtocol { kHttpJson, kHttpProtobuf, kGrpc };
[[nodiscard]] base::Result<OtlpProtocol> ParseOtlpProtocol(std::string_view name);
std::string_view OtlpProtocolName(OtlpProtocol protocol);

struct OtlpAttempt {
  bool accepted = false;
  // When not accepted: whether the receiver or the network said "try again later".
  bool retryable = false;
  std::optional<base::Duration> retry_after;  // the receiver's hint, if it gave one
  std::string what;     // not accepted: the status and the receiver's message, for the log
  std::string partial;  // accepted: the receiver's partial_success, when it rejected points
};

struct OtlpTransportOptions {
  std::string endpoint;  // the exporter's --otlp-endpoint
  std::vector<std::pair<std::string, std::string>> headers;  // gRPC: metadata, lowercased
  base::Duration timeout = std::chrono::seconds(10);         // per attempt
  bool gzip = false;                                         // compress requests
  std::string tls_ca_file;  // https/TLS: the CAs to trust instead of the system's
  std::string user_agent;
};

// Not thread-safe but for Cancel: Send runs on the exporter's sender thread.
class OtlpTransport {
 public:
  virtual ~OtlpTransport() = default;
  OtlpTransport(const OtlpTransport&) = delete;
  OtlpTransport& operator=(const OtlpTransport&) = delete;

  // Sends `json`, an ExportMetricsServiceRequest in OTLP/JSON (OtlpJsonEncoder's output),
  // converted to the transport's encoding.
  virtual OtlpAttempt Send(const std::string& json) = 0;
  // Aborts a Send in flight and the ones after it (any thread; for Shutdown).
  virtual void Cancel() = 0;
  // Where it sends, for the log: "http://collector:4318/v1/metrics", "grpc collector:4317".
  virtual std::string target() const = 0;

 protected:
  OtlpTransport() = default;
};

// OTLP/gRPC (MetricsService/Export) to `options.endpoint`: "http://host:port" or "host:port"
// (plaintext), "https://host:port" (TLS). Only otlp_grpc_transport.cc compiles against grpc++;
// Unsupported in a build without gRPC.
[[nodiscard]] base::Result<std::unique_ptr<OtlpTransport>> MakeOtlpGrpcTransport(
    const OtlpTransportOptions& options);

// The protobuf encoding of an OTLP/JSON ExportMetricsServiceRequest (for http/protobuf and
// gRPC). InvalidArgument when `json` is not one.
[[nodiscard]] base::Result<std::string> OtlpJsonToProtobuf(std::string_view json);

}  // namespace warpscope::exporters

#endif  // WARPSCOPE_EXPORTERS_OTLP_OTLP_TRANSPORT_H_

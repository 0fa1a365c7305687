// SPDX-License-Identifier: Apache-2.0
// OTLP/gRPC transport: MetricsService/Export with grpc++'s generated stub. The only exporter
// code that compiles against grpc++.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <cctype>
#include <mutex>

#include "base/file_util.h"
#include "exporters/otlp/otlp_transport.h"
#include "opentelemetry/proto/collector/metrics/v1/metrics_service.grpc.pb.h"

namespace warpscope::exporters {
namespace {

namespace metrics_pb = ::opentelemetry::proto::collector::metrics::v1;

// OTLP's retryable gRPC codes. RESOURCE_EXHAUSTED is not among them: our server answers it for a
// message over its limit, which a retry cannot fix.
bool Retryable(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::CANCELLED:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
    case grpc::StatusCode::ABORTED:
    case grpc::StatusCode::OUT_OF_RANGE:
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DATA_LOSS:
      return true;
    default:
      return false;
  }
}

class GrpcTransport final : public OtlpTransport {
 public:
  GrpcTransport(const OtlpTransportOptions& options, std::string target,
                std::shared_ptr<grpc::Channel> channel)
      : options_(options),
        target_(std::move(target)),
        stub_(metrics_pb::MetricsService::NewStub(std::move(channel))) {}

  OtlpAttempt Send(const std::string& json) override {
    OtlpAttempt out;
    auto bytes = OtlpJsonToProtobuf(json);
    metrics_pb::ExportMetricsServiceRequest request;
    if (!bytes || !request.ParseFromString(*bytes)) {
      out.what = bytes ? "the request does not parse" : bytes.error().message();
      return out;
    }
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + options_.timeout);
    for (const auto& [k, v] : options_.headers) {
      std::string key = k;
      std::transform(key.begin(), key.end(), key.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      ctx.AddMetadata(key, v);
    }
    if (options_.gzip) ctx.set_compression_algorithm(GRPC_COMPRESS_GZIP);
    {
      std::lock_guard lock(mu_);
      if (cancelled_) {
        out.what = "cancelled";
        return out;
      }
      current_ = &ctx;
    }
    metrics_pb::ExportMetricsServiceResponse response;
    grpc::Status status = stub_->Export(&ctx, request, &response);
    {
      std::lock_guard lock(mu_);
      current_ = nullptr;
    }
    if (status.ok()) {
      out.accepted = true;
      if (response.has_partial_success() && response.partial_success().rejected_data_points() > 0) {
        out.partial = std::to_string(response.partial_success().rejected_data_points()) +
                      " points rejected: " + response.partial_success().error_message();
      }
      return out;
    }
    out.retryable = Retryable(status.error_code());
    out.what = "gRPC status " + std::to_string(static_cast<int>(status.error_code())) + ": " +
               status.error_message().substr(0, 300);
    return out;
  }

  void Cancel() override {
    std::lock_guard lock(mu_);
    cancelled_ = true;
    if (current_ != nullptr) current_->TryCancel();
  }

  std::string target() const override { return target_; }

 private:
  const OtlpTransportOptions options_;
  const std::string target_;
  std::unique_ptr<metrics_pb::MetricsService::Stub> stub_;
  std::mutex mu_;
  grpc::ClientContext* current_ = nullptr;  // GUARDED_BY(mu_)
  bool cancelled_ = false;                  // GUARDED_BY(mu_)
};

}  // namespace

base::Result<std::unique_ptr<OtlpTransport>> MakeOtlpGrpcTransport(
    const OtlpTransportOptions& options) {
  std::string_view address = options.endpoint;
  bool tls = false;
  if (address.starts_with("https://")) {
    tls = true;
    address.remove_prefix(8);
  } else if (address.starts_with("http://")) {
    address.remove_prefix(7);
  }
  while (address.ends_with('/')) address.remove_suffix(1);
  if (address.empty() || address.find_first_of("/?#@ ") != std::string_view::npos ||
      address.find(':') == std::string_view::npos) {
    return base::Error(base::InvalidArgument(
        "--otlp-endpoint={}: for --otlp-protocol=grpc give host:port, http://host:port or "
        "https://host:port (TLS), e.g. http://collector:4317",
        options.endpoint));
  }
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (tls) {
    grpc::SslCredentialsOptions ssl;
    if (!options.tls_ca_file.empty()) {
      auto pem = base::ReadFile(options.tls_ca_file, 1 << 20);
      if (!pem) return base::Error(pem.error().WithContext("--tls-ca-file"));
      ssl.pem_root_certs = *pem;
    }
    credentials = grpc::SslCredentials(ssl);
  }
  grpc::ChannelArguments args;
  if (!options.user_agent.empty()) args.SetUserAgentPrefix(options.user_agent);
  // Reconnect soon after a server restart: the exporter's own backoff paces the retries.
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 5000);
  std::string target(address);
  auto channel = grpc::CreateCustomChannel(target, credentials, args);
  return std::unique_ptr<OtlpTransport>(new GrpcTransport(
      options, std::string(tls ? "grpcs " : "grpc ") + target, std::move(channel)));
}

}  // namespace warpscope::exporters

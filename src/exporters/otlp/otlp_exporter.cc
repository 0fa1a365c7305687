// SPDX-License-Identifier: Apache-2.0
#include "exporters/otlp/otlp_exporter.h"

#include <httplib.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "base/logging.h"
#include "opentelemetry/proto/collector/metrics/v1/metrics_service.pb.h"

namespace warpscope::exporters {

namespace {

bool Retryable(int status) {
  return status == 429 || status == 502 || status == 503 || status == 504;
}

// The partial_success of a 2xx answer, as text; "" when nothing was rejected.
std::string PartialSuccess(const httplib::Response& res, bool protobuf) {
  if (protobuf) {
    opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceResponse reply;
    if (!reply.ParseFromString(res.body) || !reply.has_partial_success() ||
        reply.partial_success().rejected_data_points() == 0) {
      return "";
    }
    return std::to_string(reply.partial_success().rejected_data_points()) +
           " points rejected: " + reply.partial_success().error_message();
  }
  auto reply = nlohmann::json::parse(res.body, nullptr, /*allow_exceptions=*/false);
  if (reply.is_object() && reply.contains("partialSuccess")) {
    const auto& ps = reply["partialSuccess"];
    if (ps.is_object() && ps.contains("rejectedDataPoints")) return ps.dump();
  }
  return "";
}

// OTLP/HTTP: POST the JSON request, or its protobuf encoding, to the endpoint.
class HttpTransport final : public OtlpTransport {
 public:
  HttpTransport(const OtlpTransportOptions& options, OtlpEndpoint endpoint, bool protobuf)
      : options_(options),
        endpoint_(std::move(endpoint)),
        protobuf_(protobuf),
        client_(MakeHttpClient(endpoint_, {.timeout = options.timeout,
                                           .gzip = options.gzip,
                                           .tls_ca_file = options.tls_ca_file})) {
    headers_.emplace("User-Agent", options.user_agent);
    for (const auto& [k, v] : options.headers) headers_.emplace(k, v);
  }

  OtlpAttempt Send(const std::string& json) override {
    OtlpAttempt out;
    std::string converted;
    if (protobuf_) {
      auto bytes = OtlpJsonToProtobuf(json);
      if (!bytes) {
        out.what = bytes.error().message();
        return out;
      }
      converted = std::move(*bytes);
    }
    auto res = client_->Post(endpoint_.path, headers_, protobuf_ ? converted : json,
                             protobuf_ ? "application/x-protobuf" : "application/json");
    if (res && res->status >= 200 && res->status < 300) {
      out.accepted = true;
      out.partial = PartialSuccess(*res, protobuf_);
      return out;
    }
    out.retryable = !res || Retryable(res->status);
    if (res) out.retry_after = RetryAfter(*res);
    out.what = res ? "HTTP " + std::to_string(res->status) + " " + BodySnippet(res->body)
                   : httplib::to_string(res.error());
    return out;
  }

  void Cancel() override { client_->stop(); }
  std::string target() const override { return endpoint_.scheme_host_port + endpoint_.path; }

 private:
  const OtlpTransportOptions options_;
  const OtlpEndpoint endpoint_;
  const bool protobuf_;
  std::unique_ptr<httplib::Client> client_;
  httplib::Headers headers_;
};

}  // namespace

base::Result<OtlpEndpoint> ParseOtlpEndpoint(std::string_view url) {
  WARPSCOPE_ASSIGN_OR_RETURN(HttpEndpoint out,
                             ParseHttpEndpoint(url, "--otlp-endpoint", "http://collector:4318"));
  if (out.path.empty() || out.path == "/") {
    out.path = "/v1/metrics";
  }
  return out;
}

base::Result<std::unique_ptr<OtlpExporter>> OtlpExporter::Create(Options options) {
  if (options.max_queue == 0) {
    return base::Error(base::InvalidArgument("OTLP exporter: max_queue must be at least 1"));
  }
  if (options.max_attempts < 1) {
    return base::Error(base::InvalidArgument("OTLP exporter: max_attempts must be at least 1"));
  }
  if (options.timeout <= base::Duration::zero()) {
    return base::Error(base::InvalidArgument("OTLP exporter: the request timeout must be > 0"));
  }
  for (const auto& [k, v] : options.headers) {
    if (!IsValidHeaderName(k) || !IsValidHeaderValue(v)) {
      return base::Error(base::InvalidArgument(
          "OTLP exporter: header '{}' is not a valid HTTP header name/value", k));
    }
  }
  OtlpTransportOptions transport{.endpoint = options.endpoint,
                                 .headers = options.headers,
                                 .timeout = options.timeout,
                                 .gzip = options.gzip,
                                 .tls_ca_file = options.tls_ca_file,
                                 .user_agent = "warpscope-agent/" +
                                               options.encoder.service_version};
  std::unique_ptr<OtlpTransport> sender;
  if (options.protocol == OtlpProtocol::kGrpc) {
    WARPSCOPE_ASSIGN_OR_RETURN(sender, MakeOtlpGrpcTransport(transport));
  } else {
    WARPSCOPE_ASSIGN_OR_RETURN(OtlpEndpoint endpoint, ParseOtlpEndpoint(options.endpoint));
    sender = std::make_unique<HttpTransport>(transport, std::move(endpoint),
                                             options.protocol == OtlpProtocol::kHttpProtobuf);
  }
  return std::unique_ptr<OtlpExporter>(new OtlpExporter(std::move(options), std::move(sender)));
}

OtlpExporter::OtlpExporter(Options options, std::unique_ptr<OtlpTransport> transport)
    : options_(std::move(options)),
      encoder_(options_.encoder),
      retry_({.backoff = {.initial = options_.initial_backoff, .max = options_.max_backoff},
              .max_attempts = options_.max_attempts,
              .retry_after = RetryPolicy::RetryAfter::kReplacesBackoff}),
      transport_(std::move(transport)),
      queue_(options_.max_queue) {
  loop_.Start([this](std::stop_token stop) { Run(std::move(stop)); });
}

OtlpExporter::~OtlpExporter() { Shutdown(base::Duration::zero()); }

ExportResult OtlpExporter::Export(const model::Frame& frame) noexcept {
  try {
    model::Frame copy = frame;
    {
      std::lock_guard<std::mutex> lock(monitor_.mu);
      if (!loop_.accepting()) {
        return ExportResult::kDropped;
      }
      if (queue_.Push(std::move(copy))) {
        dropped_.fetch_add(1, std::memory_order_relaxed);
        WARPSCOPE_LOG_FIRST_N(WARNING, 1,
                              "OTLP exporter: queue of {} frames is full ({} is slow or down); "
                              "dropping the oldest",
                              options_.max_queue, options_.endpoint);
      }
    }
    monitor_.cv.notify_all();
    return ExportResult::kSuccess;
  } catch (...) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return ExportResult::kFailure;
  }
}

void OtlpExporter::Run(std::stop_token stop) {
  while (true) {
    model::Frame frame;
    {
      SendLoop::Lock lock(monitor_.mu);
      if (!loop_.WaitForWork(lock, stop, [&] { return !queue_.empty(); })) {
        break;
      }
      frame = queue_.Pop();
    }
    try {
      std::string body = encoder_.Encode(frame);
      Send(body, stop);
    } catch (...) {
      failed_.fetch_add(1, std::memory_order_relaxed);
      WARPSCOPE_LOG_FIRST_N(ERROR, 1, "OTLP exporter: unexpected error encoding a frame");
    }
    SendLoop::Lock lock(monitor_.mu);
    loop_.FinishItem(lock);
  }
}

bool OtlpExporter::Send(const std::string& body, std::stop_token& stop) {
  retry_.Reset();
  for (int attempt = 1;; ++attempt) {
    if (stop.stop_requested()) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    OtlpAttempt result = transport_->Send(body);
    if (result.accepted) {
      sent_.fetch_add(1, std::memory_order_relaxed);
      if (!result.partial.empty()) {
        WARPSCOPE_LOG_FIRST_N(WARNING, 5, "OTLP receiver {} rejected some data points: {}",
                              options_.endpoint, result.partial);
      }
      return true;
    }
    std::optional<base::Duration> wait;
    if (result.retryable) {
      wait = retry_.NextWait(result.retry_after);
    }
    if (!wait.has_value()) {
      failed_.fetch_add(1, std::memory_order_relaxed);
      WARPSCOPE_LOG_EVERY_N(WARNING, 10, "OTLP export to {} failed after {} attempt(s): {}{}",
                            transport_->target(), attempt, result.what,
                            result.retryable ? ""
                                             : " (not retryable; check the endpoint, protocol "
                                               "and headers)");
      return false;
    }
    retries_.fetch_add(1, std::memory_order_relaxed);
    if (!loop_.WaitBeforeRetry(*wait, stop)) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
  }
}

void OtlpExporter::Shutdown(base::Duration timeout) {
  if (!loop_.Shutdown(
          timeout, [&] { return queue_.empty(); }, [&] { transport_->Cancel(); })) {
    return;
  }
  std::lock_guard<std::mutex> lock(monitor_.mu);
  dropped_.fetch_add(queue_.Clear(), std::memory_order_relaxed);
}

OtlpExporter::Stats OtlpExporter::stats() const {
  Stats s;
  s.sent = sent_.load(std::memory_order_relaxed);
  s.failed = failed_.load(std::memory_order_relaxed);
  s.dropped = dropped_.load(std::memory_order_relaxed);
  s.retries = retries_.load(std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(monitor_.mu);
  s.queued = queue_.size();
  return s;
}

}  // namespace warpscope::exporters

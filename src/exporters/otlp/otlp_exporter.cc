// SPDX-License-Identifier: Apache-2.0
#include "exporters/otlp/otlp_http_exporter.h"

#include <httplib.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "base/logging.h"

namespace warpscope::exporters {

namespace {

bool Retryable(int status) {
  return status == 429 || status == 502 || status == 503 || status == 504;
}

}  // namespace

base::Result<OtlpEndpoint> ParseOtlpEndpoint(std::string_view url) {
  WARPSCOPE_ASSIGN_OR_RETURN(HttpEndpoint out,
                             ParseHttpEndpoint(url, "--otlp-endpoint", "http://collector:4318"));
  if (out.path.empty() || out.path == "/") {
    out.path = "/v1/metrics";
  }
  return out;
}

base::Result<std::unique_ptr<OtlpHttpExporter>> OtlpHttpExporter::Create(Options options) {
  WARPSCOPE_ASSIGN_OR_RETURN(OtlpEndpoint endpoint, ParseOtlpEndpoint(options.endpoint));
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
  return std::unique_ptr<OtlpHttpExporter>(
      new OtlpHttpExporter(std::move(options), std::move(endpoint)));
}

OtlpHttpExporter::OtlpHttpExporter(Options options, OtlpEndpoint endpoint)
    : options_(std::move(options)),
      endpoint_(std::move(endpoint)),
      encoder_(options_.encoder),
      retry_({.backoff = {.initial = options_.initial_backoff, .max = options_.max_backoff},
              .max_attempts = options_.max_attempts,
              .retry_after = RetryPolicy::RetryAfter::kReplacesBackoff}),
      client_(MakeHttpClient(endpoint_, {.timeout = options_.timeout, .gzip = options_.gzip})),
      queue_(options_.max_queue) {
  loop_.Start([this](std::stop_token stop) { Run(std::move(stop)); });
}

OtlpHttpExporter::~OtlpHttpExporter() { Shutdown(base::Duration::zero()); }

ExportResult OtlpHttpExporter::Export(const model::Frame& frame) noexcept {
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

void OtlpHttpExporter::Run(std::stop_token stop) {
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

bool OtlpHttpExporter::Send(const std::string& body, std::stop_token& stop) {
  httplib::Headers headers;
  headers.emplace("User-Agent", "warpscope-agent/" + options_.encoder.service_version);
  for (const auto& [k, v] : options_.headers) {
    headers.emplace(k, v);
  }
  retry_.Reset();
  for (int attempt = 1;; ++attempt) {
    if (stop.stop_requested()) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    auto res = client_->Post(endpoint_.path, headers, body, "application/json");
    if (res && res->status >= 200 && res->status < 300) {
      sent_.fetch_add(1, std::memory_order_relaxed);
      auto reply = nlohmann::json::parse(res->body, nullptr, /*allow_exceptions=*/false);
      if (reply.is_object() && reply.contains("partialSuccess")) {
        const auto& ps = reply["partialSuccess"];
        if (ps.is_object() && ps.contains("rejectedDataPoints")) {
          WARPSCOPE_LOG_FIRST_N(WARNING, 5, "OTLP receiver {} rejected some data points: {}",
                                options_.endpoint, ps.dump());
        }
      }
      return true;
    }
    const bool retryable = !res || Retryable(res->status);
    std::optional<base::Duration> wait;
    if (retryable) {
      wait = retry_.NextWait(res ? RetryAfter(*res) : std::nullopt);
    }
    if (!wait.has_value()) {
      const std::string what =
          res ? "HTTP " + std::to_string(res->status) + " " + BodySnippet(res->body)
              : httplib::to_string(res.error());
      failed_.fetch_add(1, std::memory_order_relaxed);
      WARPSCOPE_LOG_EVERY_N(WARNING, 10, "OTLP export to {}{} failed after {} attempt(s): {}{}",
                            endpoint_.scheme_host_port, endpoint_.path, attempt, what,
                            retryable ? "" : " (not retryable; check the endpoint and headers)");
      return false;
    }
    retries_.fetch_add(1, std::memory_order_relaxed);
    if (!loop_.WaitBeforeRetry(*wait, stop)) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
  }
}

void OtlpHttpExporter::Shutdown(base::Duration timeout) {
  if (!loop_.Shutdown(
          timeout, [&] { return queue_.empty(); }, [&] { client_->stop(); })) {
    return;
  }
  std::lock_guard<std::mutex> lock(monitor_.mu);
  dropped_.fetch_add(queue_.Clear(), std::memory_order_relaxed);
}

OtlpHttpExporter::Stats OtlpHttpExporter::stats() const {
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

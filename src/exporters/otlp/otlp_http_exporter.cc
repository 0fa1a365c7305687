// SPDX-License-Identifier: Apache-2.0
#include "exporters/otlp/otlp_http_exporter.h"

#include <httplib.h>
#include <pthread.h>

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
      client_(MakeHttpClient(endpoint_, {.timeout = options_.timeout, .gzip = options_.gzip})) {
  worker_ = std::jthread([this](std::stop_token stop) { Run(std::move(stop)); });
}

OtlpHttpExporter::~OtlpHttpExporter() { Shutdown(base::Duration::zero()); }

ExportResult OtlpHttpExporter::Export(const model::Frame& frame) noexcept {
  try {
    model::Frame copy = frame;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!accepting_) {
        return ExportResult::kDropped;
      }
      if (queue_.size() >= options_.max_queue) {
        queue_.pop_front();
        dropped_.fetch_add(1, std::memory_order_relaxed);
        WARPSCOPE_LOG_FIRST_N(WARNING, 1,
                              "OTLP exporter: queue of {} frames is full ({} is slow or down); "
                              "dropping the oldest",
                              options_.max_queue, options_.endpoint);
      }
      queue_.push_back(std::move(copy));
    }
    cv_.notify_all();
    return ExportResult::kSuccess;
  } catch (...) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return ExportResult::kFailure;
  }
}

void OtlpHttpExporter::Run(std::stop_token stop) {
  pthread_setname_np(pthread_self(), "otlp-export");
  while (true) {
    model::Frame frame;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, stop, [&] { return !queue_.empty(); });
      if (queue_.empty() || stop.stop_requested()) {
        break;
      }
      frame = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
    }
    try {
      std::string body = encoder_.Encode(frame);
      Send(body, stop);
    } catch (...) {
      failed_.fetch_add(1, std::memory_order_relaxed);
      WARPSCOPE_LOG_FIRST_N(ERROR, 1, "OTLP exporter: unexpected error encoding a frame");
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      busy_ = false;
    }
    cv_.notify_all();
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    busy_ = false;
  }
  cv_.notify_all();
}

bool OtlpHttpExporter::Backoff(base::Duration d, std::stop_token& stop) {
  std::unique_lock<std::mutex> lock(mu_);
  if (draining_ && std::chrono::steady_clock::now() + d > deadline_) {
    return false;  // cannot retry before the shutdown deadline
  }
  cv_.wait_for(lock, stop, d, [] { return false; });
  return !stop.stop_requested();
}

bool OtlpHttpExporter::Send(const std::string& body, std::stop_token& stop) {
  httplib::Headers headers;
  headers.emplace("User-Agent", "warpscope-agent/" + options_.encoder.service_version);
  for (const auto& [k, v] : options_.headers) {
    headers.emplace(k, v);
  }
  ExponentialBackoff backoff({.initial = options_.initial_backoff, .max = options_.max_backoff});
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
    const std::string what =
        res ? "HTTP " + std::to_string(res->status) + " " + BodySnippet(res->body)
            : httplib::to_string(res.error());
    if (!retryable || attempt >= options_.max_attempts) {
      failed_.fetch_add(1, std::memory_order_relaxed);
      WARPSCOPE_LOG_EVERY_N(WARNING, 10, "OTLP export to {}{} failed after {} attempt(s): {}{}",
                            endpoint_.scheme_host_port, endpoint_.path, attempt, what,
                            retryable ? "" : " (not retryable; check the endpoint and headers)");
      return false;
    }
    base::Duration wait = backoff.Next();
    if (res) {
      if (auto ra = RetryAfter(*res)) {
        wait = *ra;
      }
    }
    wait = std::min(wait, options_.max_backoff);
    retries_.fetch_add(1, std::memory_order_relaxed);
    if (!Backoff(wait, stop)) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
  }
}

void OtlpHttpExporter::Shutdown(base::Duration timeout) {
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (!worker_.joinable()) {
      return;
    }
    accepting_ = false;
    draining_ = true;
    deadline_ = std::chrono::steady_clock::now() +
                std::chrono::duration_cast<std::chrono::steady_clock::duration>(timeout);
    cv_.notify_all();
    cv_.wait_until(lock, deadline_, [&] { return queue_.empty() && !busy_; });
  }
  worker_.request_stop();
  {
    // A request in flight ends at its timeout at the latest; stopping the client aborts it now.
    std::unique_lock<std::mutex> lock(mu_);
    while (busy_) {
      lock.unlock();
      client_->stop();
      lock.lock();
      cv_.wait_for(lock, std::chrono::milliseconds(10), [&] { return !busy_; });
    }
  }
  worker_.join();
  std::lock_guard<std::mutex> lock(mu_);
  dropped_.fetch_add(queue_.size(), std::memory_order_relaxed);
  queue_.clear();
}

OtlpHttpExporter::Stats OtlpHttpExporter::stats() const {
  Stats s;
  s.sent = sent_.load(std::memory_order_relaxed);
  s.failed = failed_.load(std::memory_order_relaxed);
  s.dropped = dropped_.load(std::memory_order_relaxed);
  s.retries = retries_.load(std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(mu_);
  s.queued = queue_.size();
  return s;
}

}  // namespace warpscope::exporters

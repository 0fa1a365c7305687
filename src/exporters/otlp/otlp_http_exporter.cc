// SPDX-License-Identifier: Apache-2.0
#include "exporters/otlp/otlp_http_exporter.h"

#include <httplib.h>
#include <pthread.h>

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>
#include <optional>

#include "base/logging.h"

namespace warpscope::exporters {

namespace {

bool Retryable(int status) {
  return status == 429 || status == 502 || status == 503 || status == 504;
}

// Retry-After in seconds; the HTTP-date form is ignored (the backoff applies).
std::optional<base::Duration> RetryAfter(const httplib::Response& res) {
  std::string v = res.get_header_value("Retry-After");
  int64_t secs = 0;
  auto r = std::from_chars(v.data(), v.data() + v.size(), secs);
  if (v.empty() || r.ec != std::errc() || r.ptr != v.data() + v.size() || secs < 0) {
    return std::nullopt;
  }
  return std::chrono::seconds(secs);
}

std::string Snippet(const std::string& body) {
  return body.size() <= 200 ? body : body.substr(0, 200) + "...";
}

}  // namespace

base::Result<OtlpEndpoint> ParseOtlpEndpoint(std::string_view url) {
  std::string_view rest;
  std::string_view scheme;
  if (url.starts_with("http://")) {
    scheme = "http://";
  } else if (url.starts_with("https://")) {
    scheme = "https://";
  } else {
    return base::Error(base::InvalidArgument(
        "--otlp-endpoint '{}': expected an http:// or https:// URL, e.g. http://127.0.0.1:4318",
        url));
  }
  rest = url.substr(scheme.size());
  size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
  if (authority.empty() || authority.find_first_of(" @?#") != std::string_view::npos) {
    return base::Error(base::InvalidArgument(
        "--otlp-endpoint '{}': missing or invalid host, e.g. http://collector:4318", url));
  }
  size_t colon = authority.rfind(':');
  if (colon != std::string_view::npos && authority.back() != ']') {
    std::string_view port = authority.substr(colon + 1);
    int p = 0;
    auto r = std::from_chars(port.data(), port.data() + port.size(), p);
    if (port.empty() || r.ec != std::errc() || r.ptr != port.data() + port.size() || p <= 0 ||
        p > 65535) {
      return base::Error(base::InvalidArgument(
          "--otlp-endpoint '{}': port '{}' is not a number from 1 to 65535", url, port));
    }
  }
  OtlpEndpoint out;
  out.scheme_host_port = std::string(scheme) + std::string(authority);
  out.path = (path.empty() || path == "/") ? "/v1/metrics" : std::string(path);
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
    if (k.empty() || k.find_first_of(":\r\n ") != std::string::npos ||
        v.find_first_of("\r\n") != std::string::npos) {
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
      client_(std::make_unique<httplib::Client>(endpoint_.scheme_host_port)) {
  auto split = [](base::Duration d, auto set) {
    auto us = std::chrono::duration_cast<std::chrono::microseconds>(d).count();
    set(static_cast<time_t>(us / 1000000), static_cast<time_t>(us % 1000000));
  };
  split(options_.timeout, [&](time_t s, time_t us) { client_->set_connection_timeout(s, us); });
  split(options_.timeout, [&](time_t s, time_t us) { client_->set_read_timeout(s, us); });
  split(options_.timeout, [&](time_t s, time_t us) { client_->set_write_timeout(s, us); });
  client_->set_compress(options_.gzip);
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
  base::Duration backoff = options_.initial_backoff;
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
    const std::string what = res ? "HTTP " + std::to_string(res->status) + " " + Snippet(res->body)
                                 : httplib::to_string(res.error());
    if (!retryable || attempt >= options_.max_attempts) {
      failed_.fetch_add(1, std::memory_order_relaxed);
      WARPSCOPE_LOG_EVERY_N(WARNING, 10, "OTLP export to {}{} failed after {} attempt(s): {}{}",
                            endpoint_.scheme_host_port, endpoint_.path, attempt, what,
                            retryable ? "" : " (not retryable; check the endpoint and headers)");
      return false;
    }
    base::Duration wait = backoff;
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
    backoff = std::min(backoff * 2, options_.max_backoff);
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

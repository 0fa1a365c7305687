// SPDX-License-Identifier: Apache-2.0
#include "exporters/prometheus/metrics_http_server.h"

#include <httplib.h>
#include <pthread.h>
#include <sys/socket.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <nlohmann/json.hpp>

#include "base/logging.h"

namespace warpscope::exporters {

namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) {
    s.remove_suffix(1);
  }
  return s;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) {
    return false;
  }
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i];
    char y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) {
      return false;
    }
  }
  return true;
}

// Calls f(token, q) for each comma-separated entry of an Accept-style header.
template <typename F>
void ForEachEntry(std::string_view header, F f) {
  while (!header.empty()) {
    size_t comma = header.find(',');
    std::string_view entry = header.substr(0, comma);
    header.remove_prefix(comma == std::string_view::npos ? header.size() : comma + 1);
    size_t semi = entry.find(';');
    std::string_view token = Trim(entry.substr(0, semi));
    double q = 1.0;
    while (semi != std::string_view::npos) {
      entry.remove_prefix(semi + 1);
      semi = entry.find(';');
      std::string_view param = Trim(entry.substr(0, semi));
      if (param.size() > 2 && (param[0] == 'q' || param[0] == 'Q') && param[1] == '=') {
        double v = 0;
        auto r = std::from_chars(param.data() + 2, param.data() + param.size(), v);
        q = r.ec == std::errc() ? v : 0.0;
      }
    }
    if (!token.empty()) {
      f(token, q);
    }
  }
}

std::string JsonError(std::string_view message) {
  nlohmann::json j = {{"error", message}};
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

ExpositionFormat NegotiateExpositionFormat(std::string_view accept, bool openmetrics_enabled) {
  if (!openmetrics_enabled) {
    return ExpositionFormat::kText004;
  }
  double best_om = -1;
  double best_text = -1;
  ForEachEntry(accept, [&](std::string_view type, double q) {
    if (EqualsIgnoreCase(type, "application/openmetrics-text")) {
      best_om = std::max(best_om, q);
    } else if (EqualsIgnoreCase(type, "text/plain")) {
      best_text = std::max(best_text, q);
    }
  });
  return best_om > 0 && best_om >= best_text ? ExpositionFormat::kOpenMetrics1
                                             : ExpositionFormat::kText004;
}

bool AcceptsGzip(std::string_view accept_encoding) {
  bool gzip = false;
  ForEachEntry(accept_encoding, [&](std::string_view coding, double q) {
    if ((EqualsIgnoreCase(coding, "gzip") || EqualsIgnoreCase(coding, "x-gzip")) && q > 0) {
      gzip = true;
    }
  });
  return gzip;
}

MetricsHttpServer::MetricsHttpServer(Options options,
                                     std::shared_ptr<const MetricsSnapshotStore> store)
    : options_(std::move(options)), store_(std::move(store)) {}

MetricsHttpServer::~MetricsHttpServer() { Stop(); }

MetricsHttpServer::Stats MetricsHttpServer::stats() const {
  Stats s;
  s.metrics_text = metrics_text_.load(std::memory_order_relaxed);
  s.metrics_openmetrics = metrics_openmetrics_.load(std::memory_order_relaxed);
  s.metrics_gzip = metrics_gzip_.load(std::memory_order_relaxed);
  s.healthz = healthz_.load(std::memory_order_relaxed);
  s.errors = errors_.load(std::memory_order_relaxed);
  return s;
}

void MetricsHttpServer::InstallRoutes() {
  httplib::Server& svr = *server_;

  svr.Get("/metrics", [this](const httplib::Request& req, httplib::Response& res) {
    std::shared_ptr<const MetricsSnapshot> snap = store_->Get();
    const ExpositionFormat format =
        NegotiateExpositionFormat(req.get_header_value("Accept"), options_.openmetrics);
    const std::string* body = &snap->body(format);
    if (AcceptsGzip(req.get_header_value("Accept-Encoding"))) {
      if (const std::string* gz = snap->gzipped(format)) {
        body = gz;
        res.set_header("Content-Encoding", "gzip");
        metrics_gzip_.fetch_add(1, std::memory_order_relaxed);
      }
    }
    (format == ExpositionFormat::kOpenMetrics1 ? metrics_openmetrics_ : metrics_text_)
        .fetch_add(1, std::memory_order_relaxed);
    res.set_header("Vary", "Accept, Accept-Encoding");
    const std::string content_type(ExpositionContentType(format));
    if (body->empty()) {
      res.set_content("", content_type.c_str());
      return;
    }
    // A content provider with a known length is sent as is: httplib neither copies it nor
    // compresses it again (it would gzip a text/plain body set with set_content). The lambda
    // keeps the snapshot alive until the response is written.
    res.set_content_provider(body->size(), content_type.c_str(),
                             [snap, body](size_t offset, size_t length, httplib::DataSink& sink) {
                               return sink.write(body->data() + offset, length);
                             });
  });

  svr.Get("/healthz", [this](const httplib::Request&, httplib::Response& res) {
    healthz_.fetch_add(1, std::memory_order_relaxed);
    nlohmann::json j = {{"status", "ok"}, {"sequence", store_->Get()->sequence()}};
    res.set_content(j.dump(), "application/json");
  });

  auto not_found = [this](const httplib::Request& req, httplib::Response& res) {
    errors_.fetch_add(1, std::memory_order_relaxed);
    res.status = 404;
    res.set_content(JsonError("no such path: " + req.path +
                              "; this server serves /metrics and "
                              "/healthz"),
                    "application/json");
  };
  auto not_allowed = [this](const httplib::Request& req, httplib::Response& res) {
    errors_.fetch_add(1, std::memory_order_relaxed);
    res.status = 405;
    res.set_header("Allow", "GET, HEAD");
    res.set_content(
        JsonError("method " + req.method + " is not allowed on " + req.path + "; use GET"),
        "application/json");
  };
  const std::string known = "/metrics|/healthz";
  svr.Get(".*", not_found);
  svr.Post(known, not_allowed);
  svr.Post(".*", not_found);
  svr.Put(known, not_allowed);
  svr.Put(".*", not_found);
  svr.Patch(known, not_allowed);
  svr.Patch(".*", not_found);
  svr.Delete(known, not_allowed);
  svr.Delete(".*", not_found);
  svr.Options(known, not_allowed);
  svr.Options(".*", not_found);
}

base::Result<int> MetricsHttpServer::Start() {
  if (server_ != nullptr) {
    return base::Error(
        base::Internal("metrics HTTP server on {} is already started", options_.listen_address));
  }
  WARPSCOPE_ASSIGN_OR_RETURN(ListenAddress addr, ParseListenAddress(options_.listen_address));

  server_ = std::make_unique<httplib::Server>();
  const int workers = std::max(1, options_.worker_threads);
  server_->new_task_queue = [workers] { return new httplib::ThreadPool(workers); };
  // httplib's default sets SO_REUSEPORT, which would let a second exporter bind the same port
  // and silently share the scrapes. SO_REUSEADDR alone still allows a quick restart.
  server_->set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  auto secs = [](base::Duration d) {
    return std::max<time_t>(1, std::chrono::duration_cast<std::chrono::seconds>(d).count());
  };
  server_->set_keep_alive_timeout(secs(options_.keep_alive_timeout));
  server_->set_read_timeout(secs(options_.read_timeout), 0);
  server_->set_payload_max_length(64 * 1024);
  InstallRoutes();

  errno = 0;
  int port = addr.port;
  bool bound = false;
  if (addr.port == 0) {
    port = server_->bind_to_any_port(addr.host);
    bound = port > 0;
  } else {
    bound = server_->bind_to_port(addr.host, addr.port);
  }
  const int err = errno;
  if (!bound) {
    server_.reset();
    const std::string& a = options_.listen_address;
    if (err == EADDRINUSE) {
      return base::Error(
          base::Unavailable("{} is in use: stop the other exporter or pass --listen-address", a));
    }
    if (err == EACCES) {
      return base::Error(base::ErrStatus(
          base::StatusCode::kPermissionDenied,
          "cannot listen on {}: permission denied; ports below 1024 need CAP_NET_BIND_SERVICE, "
          "or pass --listen-address with a higher port",
          a));
    }
    if (err == EADDRNOTAVAIL) {
      return base::Error(base::Unavailable(
          "cannot listen on {}: no such local address on this host; pass --listen-address with "
          "an address of this host",
          a));
    }
    return base::Error(
        base::Unavailable("cannot listen on {}: {}; check --listen-address", a,
                          err != 0 ? base::ErrnoString(err) : std::string("host not resolved")));
  }
  port_ = port;

  httplib::Server* svr = server_.get();
  auto exited = std::make_shared<std::atomic<bool>>(false);
  thread_ = std::jthread([svr, exited] {
    pthread_setname_np(pthread_self(), "metrics-http");
    try {
      if (!svr->listen_after_bind()) {
        WARPSCOPE_LOG(ERROR, "metrics HTTP server: accept loop ended with an error");
      }
    } catch (...) {
      WARPSCOPE_LOG(ERROR, "metrics HTTP server: unexpected exception in the accept loop");
    }
    exited->store(true);
  });
  // httplib's stop() only acts once the accept loop runs; wait for it (well under a second) so
  // that a Stop() right after Start() cannot miss it.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!svr->is_running() && !exited->load()) {
    if (std::chrono::steady_clock::now() > deadline) {
      WARPSCOPE_LOG(ERROR, "metrics HTTP server on {} did not start within 10s",
                    options_.listen_address);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  WARPSCOPE_VLOG(1, "serving /metrics on {} (port {})", options_.listen_address, port_);
  return port_;
}

void MetricsHttpServer::Stop() {
  if (server_ == nullptr) {
    return;
  }
  server_->stop();
  if (thread_.joinable()) {
    thread_.join();
  }
  server_.reset();
}

}  // namespace warpscope::exporters

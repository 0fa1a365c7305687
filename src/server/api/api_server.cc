// SPDX-License-Identifier: Apache-2.0
// ApiServer's frame: routes, authorization, the listening thread, the web UI, health and the
// server's own metrics. The endpoints are in ingest_handlers.cc and query_handlers.cc.
#include "server/api/api_server.h"

#include <fmt/format.h>
#include <httplib.h>

#include <chrono>
#include <cstdlib>
#include <exception>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/listen_address.h"
#include "base/logging.h"
#include "server/alerts/alert_sender.h"
#include "server/api/http_reply.h"
#include "server/traces/trace_store.h"
#include "server/ui/ui_handler.h"
#include "web/assets.h"

namespace warpscope::server {
namespace {

using api_internal::SendError;
using api_internal::SendJson;
using nlohmann::json;

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

// The Alertmanager senders' counters, one series per --alertmanager-url.
void AppendAlertMetrics(const alerts::AlertSender& sender, std::string& out) {
  const std::vector<alerts::AlertSender::TargetStats> stats = sender.stats();
  struct {
    const char* name;
    const char* type;
    const char* help;
    uint64_t alerts::AlertSender::TargetStats::*field;
  } const rows[] = {
      {"warpscope_server_alerts_sent_total", "counter", "Alerts Alertmanager accepted.",
       &alerts::AlertSender::TargetStats::sent},
      {"warpscope_server_alert_posts_failed_total", "counter",
       "POSTs to Alertmanager that failed and are retried.",
       &alerts::AlertSender::TargetStats::failed_posts},
      {"warpscope_server_alerts_rejected_total", "counter",
       "Alerts Alertmanager refused with a 4xx (not retried).",
       &alerts::AlertSender::TargetStats::rejected},
      {"warpscope_server_alerts_dropped_total", "counter",
       "Alerts dropped unsent: too many waiting for a down Alertmanager, or at shutdown.",
       &alerts::AlertSender::TargetStats::dropped},
      {"warpscope_server_alerts_pending", "gauge", "Alerts waiting to be sent.",
       &alerts::AlertSender::TargetStats::pending},
  };
  for (const auto& row : rows) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", row.name, row.help, row.name, row.type);
    for (const auto& s : stats) {
      std::string url = s.url;
      std::erase_if(url, [](char c) { return c == '"' || c == '\\' || c == '\n'; });
      out += fmt::format("{}{{alertmanager=\"{}\"}} {}\n", row.name, url, s.*row.field);
    }
  }
}

// The request traces' counters: OTLP/HTTP trace requests, and what became of their spans.
void AppendTraceMetrics(const ApiServer::Stats& api, const traces::TraceStoreStats& store,
                        std::string& out) {
  out +=
      "# HELP warpscope_server_trace_requests_total OTLP/HTTP trace requests stored.\n"
      "# TYPE warpscope_server_trace_requests_total counter\n";
  out += fmt::format("warpscope_server_trace_requests_total {}\n", api.trace_requests);
  out +=
      "# HELP warpscope_server_trace_spans_total Spans received, by what became of them: "
      "stored, sampled_out (near --trace-max-spans), evicted (oldest, over it), expired "
      "(--trace-retention), ignored (no inference request), rejected (malformed).\n"
      "# TYPE warpscope_server_trace_spans_total counter\n";
  const std::pair<const char*, uint64_t> outcomes[] = {{"stored", store.stored},
                                                       {"sampled_out", store.sampled_out},
                                                       {"evicted", store.evicted},
                                                       {"expired", store.expired},
                                                       {"ignored", api.trace_spans_ignored},
                                                       {"rejected", api.trace_spans_rejected}};
  for (const auto& [outcome, n] : outcomes) {
    out += fmt::format("warpscope_server_trace_spans_total{{outcome=\"{}\"}} {}\n", outcome, n);
  }
  out +=
      "# HELP warpscope_server_trace_spans Spans held by the trace store.\n"
      "# TYPE warpscope_server_trace_spans gauge\n";
  out += fmt::format("warpscope_server_trace_spans {}\n", store.spans);
}

}  // namespace

ApiServer::ApiServer(Options options, Storage& storage, const base::Clock& clock)
    : options_(std::move(options)),
      auth_token_(std::make_shared<const std::string>(options_.auth_token)),
      storage_(storage),
      clock_(clock) {}

void ApiServer::SetAuthToken(std::string token) {
  auth_token_.store(std::make_shared<const std::string>(std::move(token)));
}

ApiServer::~ApiServer() { Stop(); }

ApiServer::Stats ApiServer::stats() const {
  Stats s;
  s.batches = batches_.load();
  s.duplicate_batches = duplicate_batches_.load();
  s.series_windows = series_windows_.load();
  s.dropped_series = dropped_series_.load();
  s.rejected = rejected_.load();
  s.unauthorized = unauthorized_.load();
  s.profiles = profiles_.load();
  s.queries = queries_.load();
  s.otlp_requests = otlp_requests_.load();
  s.remote_write_requests = remote_write_requests_.load();
  s.skipped_points = skipped_points_.load();
  s.trace_requests = trace_requests_.load();
  s.trace_spans_ignored = trace_spans_ignored_.load();
  s.trace_spans_rejected = trace_spans_rejected_.load();
  return s;
}

bool ApiServer::Authorized(const httplib::Request& req, httplib::Response& res, bool ingest) {
  if (!ingest && !options_.auth_read) return true;
  base::Status st = AuthorizeIngest(req.get_header_value("Authorization"));
  if (st.ok()) return true;
  res.set_header("WWW-Authenticate", "Bearer");
  SendError(res, 401, st.message());
  return false;
}

base::Status ApiServer::AuthorizeIngest(std::string_view authorization) {
  const std::shared_ptr<const std::string> token = auth_token_.load();
  if (token->empty()) return base::OkStatus();
  constexpr std::string_view kBearer = "Bearer ";
  if (authorization.starts_with(kBearer) &&
      ConstantTimeEquals(authorization.substr(kBearer.size()), *token)) {
    return base::OkStatus();
  }
  ++unauthorized_;
  return base::PermissionDenied(
      "{}", authorization.empty()
                ? "missing bearer token: send 'Authorization: Bearer <token>' (the agent's "
                  "--auth-token-file)"
                : "invalid bearer token: use the token from the server's --auth-token-file");
}

void ApiServer::InstallRoutes() {
  auto bind = [this](Handler h) {
    return [this, h](const httplib::Request& req, httplib::Response& res) {
      try {
        (this->*h)(req, res);
      } catch (const std::exception& e) {
        WARPSCOPE_LOG_EVERY_N(ERROR, 100, "{} {}: {}", req.method, req.path, e.what());
        SendError(res, 500, "internal error");
      } catch (...) {
        SendError(res, 500, "internal error");
      }
    };
  };
  // POST bodies: read through a content reader, which httplib hands the body inflated chunk by
  // chunk as it arrives (gzip, deflate, br), so the read stops at --max-body-bytes of inflated
  // data. Memory per request is bounded by the limit, whatever a small compressed body inflates
  // to; the handlers then see the body in req.body as before.
  auto bind_body = [this, bind](Handler h) {
    return [this, inner = bind(h)](const httplib::Request& req, httplib::Response& res,
                                   const httplib::ContentReader& read) {
      // A body declared larger than the limit is not read at all (as httplib refuses it for
      // handlers without a reader; not counted as rejected, like those).
      const std::string declared = req.get_header_value("Content-Length");
      if (!declared.empty() &&
          std::strtoull(declared.c_str(), nullptr, 10) > options_.max_body_bytes) {
        res.set_header("Connection", "close");
        SendError(res, 413,
                  fmt::format("request body too large: {} bytes, the limit is {}; send smaller "
                              "batches or raise --max-body-bytes",
                              declared, options_.max_body_bytes));
        return;
      }
      httplib::Request with_body = req;
      bool too_large = false;
      const bool complete = read([&](const char* data, size_t size) {
        if (with_body.body.size() + size > options_.max_body_bytes) {
          too_large = true;
          return false;
        }
        with_body.body.append(data, size);
        return true;
      });
      if (too_large) {
        ++rejected_;
        res.set_header("Connection", "close");
        SendError(res, 413,
                  fmt::format("request body too large: more than {} bytes after decompression; "
                              "send smaller batches or raise --max-body-bytes",
                              options_.max_body_bytes));
        return;
      }
      if (!complete) {
        ++rejected_;
        SendError(res, 400, "the request body could not be read: cut short, or corrupt gzip");
        return;
      }
      inner(with_body, res);
    };
  };
  // cpp-httplib answers "Accept-Encoding: br" with brotli at its slowest setting: hundreds of
  // milliseconds for a 100 KB JSON answer, seconds when a browser loads a dozen charts at once.
  // gzip is 30x faster and nearly as small, so brotli is taken out of every offer. (The request
  // object is httplib's own non-const local; the handler only sees it through a const ref.)
  http_->set_pre_routing_handler([](const httplib::Request& req, httplib::Response&) {
    auto& headers = const_cast<httplib::Request&>(req).headers;
    auto range = headers.equal_range("Accept-Encoding");
    for (auto it = range.first; it != range.second; ++it) {
      it->second = it->second.find("gzip") != std::string::npos ? "gzip" : "identity";
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  http_->Post("/api/v1/ingest/batch", bind_body(&ApiServer::IngestBatch));
  http_->Post("/api/v1/ingest/profile", bind_body(&ApiServer::IngestProfile));
  http_->Post("/v1/metrics", bind_body(&ApiServer::OtlpMetrics));
  http_->Post("/api/v1/otlp/v1/metrics", bind_body(&ApiServer::OtlpMetrics));
  http_->Post("/api/v1/write", bind_body(&ApiServer::RemoteWrite));
  http_->Post("/v1/traces", bind_body(&ApiServer::OtlpTraces));
  http_->Post("/api/v1/otlp/v1/traces", bind_body(&ApiServer::OtlpTraces));
  http_->Get("/api/v1/traces/models", bind(&ApiServer::TraceModels));
  http_->Get("/api/v1/traces/breakdown", bind(&ApiServer::TraceBreakdown));
  http_->Get("/api/v1/traces/requests", bind(&ApiServer::TraceRequests));
  http_->Get(R"(/api/v1/traces/([0-9A-Za-z]+))", bind(&ApiServer::TraceById));
  http_->Get("/api/v1/metrics", bind(&ApiServer::Metrics));
  http_->Get("/api/v1/entities", bind(&ApiServer::Entities));
  http_->Get("/api/v1/query_range", bind(&ApiServer::QueryRange));
  http_->Get("/api/v1/top", bind(&ApiServer::Top));
  http_->Get("/api/v1/events", bind(&ApiServer::Events));
  http_->Get("/api/v1/summary", bind(&ApiServer::Summary));
  http_->Get("/api/v1/fleet", bind(&ApiServer::Fleet));
  http_->Get("/api/v1/breakdown", bind(&ApiServer::Breakdown));
  http_->Post("/api/v1/query_batch", bind_body(&ApiServer::QueryBatch));
  http_->Get("/api/v1/profiles", bind(&ApiServer::Profiles));
  http_->Get("/api/v1/profiles/merged", bind(&ApiServer::MergedProfile));
  http_->Get(R"(/api/v1/profiles/(\d+))", bind(&ApiServer::ProfileData));
  http_->Get("/api/v1/insights", bind(&ApiServer::Insights));
  http_->Get(R"(/api/v1/insights/([A-Za-z0-9]+))", bind(&ApiServer::InsightById));
  http_->Get("/api/v1/jobs", bind(&ApiServer::Jobs));
  http_->Get(R"(/api/v1/jobs/(.+))", bind(&ApiServer::JobById));
  http_->Post("/mcp", bind_body(&ApiServer::Mcp));
  http_->Get("/mcp", bind(&ApiServer::McpNotAllowed));
  http_->Delete("/mcp", bind(&ApiServer::McpNotAllowed));
  http_->Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    SendJson(res, 200, json{{"status", "ok"}});
  });
  http_->Get("/readyz", bind(&ApiServer::Ready));
  http_->Get("/metrics", bind(&ApiServer::SelfMetrics));
  // Last: every other GET is the web UI (its files, or index.html for the app's own paths).
  if (options_.serve_ui) {
    http_->Get(R"(/.*)", bind(&ApiServer::Ui));
  }
  // Bodies httplib refuses itself (too large) or paths without a route get a JSON error too.
  http_->set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    if (res.status == 413) {
      SendError(res, 413, "request body too large: split the batch or raise --max-body-bytes");
    } else if (res.status == 404) {
      SendError(res, 404, "no such endpoint: " + req.path + " (see docs/api.md)");
    } else {
      SendError(res, res.status, "request failed with HTTP " + std::to_string(res.status));
    }
  });
}

base::Result<int> ApiServer::Start() {
  WARPSCOPE_ASSIGN_OR_RETURN(base::ListenAddress addr,
                             base::ParseListenAddress(options_.listen_address));
  if (!options_.tls_cert_file.empty()) {
    auto tls = std::make_unique<httplib::SSLServer>(options_.tls_cert_file.c_str(),
                                                    options_.tls_key_file.c_str());
    if (!tls->is_valid()) {
      return base::Error(base::InvalidArgument(
          "cannot load --tls-cert {} / --tls-key {}: check that both are readable PEM files and "
          "that the key matches the certificate",
          options_.tls_cert_file, options_.tls_key_file));
    }
    http_ = std::move(tls);
  } else {
    http_ = std::make_unique<httplib::Server>();
  }
  http_->set_payload_max_length(options_.max_body_bytes);
  http_->new_task_queue = [n = options_.worker_threads] { return new httplib::ThreadPool(n); };
  // A second server on the same port must fail loudly, not share the port.
  http_->set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  InstallRoutes();
  int bound = addr.port == 0 ? http_->bind_to_any_port(addr.host)
                             : (http_->bind_to_port(addr.host, addr.port) ? addr.port : -1);
  if (bound < 0) {
    http_.reset();
    return base::Error(base::Unavailable(
        "cannot listen on {}: the port is in use or the address is not local; stop the other "
        "process or pass --listen-address",
        options_.listen_address));
  }
  port_ = bound;
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "api-http");
    http_->listen_after_bind();
  });
  // httplib marks itself running only once its accept loop starts, and a stop() before that is
  // lost (the loop would then never end): return only once it is serving. httplib 0.11 has no
  // readiness notification, hence the bounded poll.
  for (int i = 0; i < 10000 && !http_->is_running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return port_;
}

void ApiServer::Stop() {
  if (http_) http_->stop();
  if (thread_.joinable()) thread_.join();
  http_.reset();
}

void ApiServer::Ui(const httplib::Request& req, httplib::Response& res) {
  ui::UiResponse r = ui::ServeUi(web::Assets(), req.path, req.get_header_value("If-None-Match"));
  if (r.status == 404) {
    return SendError(res, 404, "no such endpoint: " + req.path + " (see docs/api.md)");
  }
  for (const auto& [k, v] : r.headers) res.set_header(k.c_str(), v);
  res.status = r.status;
  if (r.status == 200) {
    res.set_content(r.body.data(), r.body.size(), r.content_type.c_str());
  }
}

void ApiServer::Ready(const httplib::Request&, httplib::Response& res) {
  auto metrics = storage_.ListMetrics();
  if (!metrics) return SendError(res, 503, "storage not ready: " + metrics.error().message());
  SendJson(res, 200, json{{"status", "ready"}});
}

void ApiServer::SelfMetrics(const httplib::Request&, httplib::Response& res) {
  Stats s = stats();
  std::string out;
  auto counter = [&out](std::string_view name, std::string_view help, uint64_t v) {
    out += fmt::format("# HELP {} {}\n# TYPE {} counter\n{} {}\n", name, help, name, name, v);
  };
  counter("warpscope_server_batches_total", "Agent batches stored.", s.batches);
  counter("warpscope_server_duplicate_batches_total",
          "Agent batches received again after being stored (retries), not stored twice.",
          s.duplicate_batches);
  counter("warpscope_server_series_windows_total", "Series windows stored.", s.series_windows);
  counter("warpscope_server_dropped_series_total",
          "New series refused by the per-host cardinality cap.", s.dropped_series);
  counter("warpscope_server_rejected_requests_total", "Ingest requests answered with a 4xx.",
          s.rejected);
  counter("warpscope_server_unauthorized_requests_total", "Requests answered with 401.",
          s.unauthorized);
  counter("warpscope_server_profiles_total", "Profiles stored.", s.profiles);
  counter("warpscope_server_queries_total", "Query API requests.", s.queries);
  counter("warpscope_server_otlp_requests_total", "OTLP/HTTP metrics requests stored.",
          s.otlp_requests);
  counter("warpscope_server_remote_write_requests_total",
          "Prometheus remote write requests stored.", s.remote_write_requests);
  counter("warpscope_server_skipped_points_total",
          "OTLP data points and remote write samples left out (NaN, stale marker, no value).",
          s.skipped_points);
  if (options_.trace_store != nullptr) AppendTraceMetrics(s, options_.trace_store->stats(), out);
  if (options_.alert_sender != nullptr) AppendAlertMetrics(*options_.alert_sender, out);
  res.status = 200;
  res.set_content(out, "text/plain; version=0.0.4; charset=utf-8");
}

}  // namespace warpscope::server

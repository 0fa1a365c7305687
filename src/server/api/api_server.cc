// SPDX-License-Identifier: Apache-2.0
// ApiServer's frame: routes (on server/http's front end), authorization, the web UI, health and the
// server's own metrics. The endpoints are in ingest_handlers.cc and query_handlers.cc.
#include "server/api/api_server.h"

#include <fmt/format.h>
#include <httplib.h>

#include <chrono>
#include <cstdlib>
#include <exception>
#include <nlohmann/json.hpp>

#include "base/listen_address.h"
#include "base/logging.h"
#include "server/alerts/alert_sender.h"
#include "server/api/http_reply.h"
#include "server/http/http_server.h"
#include "server/traces/trace_store.h"
#include "server/ui/ui_handler.h"
#include "web/assets.h"

namespace warpscope::server {
namespace {

// The front end's worker queues (ApiServer::Options ingest_threads, query_threads).
constexpr int kIngestQueue = 0;
constexpr int kQueryQueue = 1;
// Added to the ingest threads' nice value. Measured on 2 cores under remote-write load: about
// 8 % more samples a second than at 0 (docs/benchmarks.md).
constexpr int kIngestThreadNice = 5;

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

// The front end's connections and what its limits refused (server/http).
void AppendHttpMetrics(const http::HttpServerStats& h, std::string& out) {
  out +=
      "# HELP warpscope_server_http_open_connections HTTP connections open now.\n"
      "# TYPE warpscope_server_http_open_connections gauge\n";
  out += fmt::format("warpscope_server_http_open_connections {}\n", h.open_connections);
  auto counter = [&out](std::string_view name, std::string_view help, uint64_t v) {
    out += fmt::format("# HELP {} {}\n# TYPE {} counter\n{} {}\n", name, help, name, name, v);
  };
  counter("warpscope_server_http_connections_total", "HTTP connections accepted.",
          h.accepted_connections);
  counter("warpscope_server_http_requests_total", "HTTP requests answered.", h.requests);
  out +=
      "# HELP warpscope_server_http_refused_total Connections closed or requests refused by a "
      "front-end limit: max_connections, per_client (--http-max-connections[-per-client]), "
      "request_deadline (--http-request-deadline), idle (--http-keepalive-timeout), queue_full "
      "(503), body_too_large (413), bad_request (400).\n"
      "# TYPE warpscope_server_http_refused_total counter\n";
  const std::pair<const char*, uint64_t> reasons[] = {
      {"max_connections", h.refused_max_connections},
      {"per_client", h.refused_per_client},
      {"request_deadline", h.request_deadline_closed},
      {"idle", h.idle_closed},
      {"queue_full", h.queue_full},
      {"body_too_large", h.body_too_large},
      {"bad_request", h.bad_requests}};
  for (const auto& [reason, n] : reasons) {
    out += fmt::format("warpscope_server_http_refused_total{{reason=\"{}\"}} {}\n", reason, n);
  }
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
  auto bind = [this](Handler h) -> http::Handler {
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
  // Request bodies arrive whole in req.body: the front end reads them within --max-body-bytes
  // and inflates gzip/deflate bodies chunk by chunk, stopping at the limit (413 above it).
  // Ingest runs on its own queue, so that queries cannot starve it; /healthz needs no worker.
  http::Router& r = *router_;
  const int ingest = kIngestQueue;
  const int query = kQueryQueue;
  r.Add("POST", "/api/v1/ingest/batch", ingest, bind(&ApiServer::IngestBatch));
  r.Add("POST", "/api/v1/ingest/profile", ingest, bind(&ApiServer::IngestProfile));
  r.Add("POST", "/v1/metrics", ingest, bind(&ApiServer::OtlpMetrics));
  r.Add("POST", "/api/v1/otlp/v1/metrics", ingest, bind(&ApiServer::OtlpMetrics));
  r.Add("POST", "/api/v1/write", ingest, bind(&ApiServer::RemoteWrite));
  r.Add("POST", "/v1/traces", ingest, bind(&ApiServer::OtlpTraces));
  r.Add("POST", "/api/v1/otlp/v1/traces", ingest, bind(&ApiServer::OtlpTraces));
  r.Add("GET", "/api/v1/traces/models", query, bind(&ApiServer::TraceModels));
  r.Add("GET", "/api/v1/traces/breakdown", query, bind(&ApiServer::TraceBreakdown));
  r.Add("GET", "/api/v1/traces/requests", query, bind(&ApiServer::TraceRequests));
  r.Add("GET", R"(/api/v1/traces/([0-9A-Za-z]+))", query, bind(&ApiServer::TraceById));
  r.Add("GET", "/api/v1/metrics", query, bind(&ApiServer::Metrics));
  r.Add("GET", "/api/v1/entities", query, bind(&ApiServer::Entities));
  r.Add("GET", "/api/v1/query_range", query, bind(&ApiServer::QueryRange));
  r.Add("GET", "/api/v1/top", query, bind(&ApiServer::Top));
  r.Add("GET", "/api/v1/events", query, bind(&ApiServer::Events));
  r.Add("GET", "/api/v1/summary", query, bind(&ApiServer::Summary));
  r.Add("GET", "/api/v1/fleet", query, bind(&ApiServer::Fleet));
  r.Add("GET", "/api/v1/breakdown", query, bind(&ApiServer::Breakdown));
  r.Add("POST", "/api/v1/query_batch", query, bind(&ApiServer::QueryBatch));
  r.Add("GET", "/api/v1/profiles", query, bind(&ApiServer::Profiles));
  r.Add("GET", "/api/v1/profiles/merged", query, bind(&ApiServer::MergedProfile));
  r.Add("GET", R"(/api/v1/profiles/(\d+))", query, bind(&ApiServer::ProfileData));
  r.Add("GET", "/api/v1/insights", query, bind(&ApiServer::Insights));
  r.Add("GET", R"(/api/v1/insights/([A-Za-z0-9]+))", query, bind(&ApiServer::InsightById));
  r.Add("GET", "/api/v1/jobs", query, bind(&ApiServer::Jobs));
  r.Add("GET", R"(/api/v1/jobs/(.+))", query, bind(&ApiServer::JobById));
  r.Add("POST", "/mcp", query, bind(&ApiServer::Mcp));
  r.Add("GET", "/mcp", query, bind(&ApiServer::McpNotAllowed));
  r.Add("DELETE", "/mcp", query, bind(&ApiServer::McpNotAllowed));
  r.Add("GET", "/healthz", http::kInline, [](const httplib::Request&, httplib::Response& res) {
    SendJson(res, 200, json{{"status", "ok"}});
  });
  r.Add("GET", "/readyz", ingest, bind(&ApiServer::Ready));
  r.Add("GET", "/metrics", ingest, bind(&ApiServer::SelfMetrics));
  // Last: every other GET is the web UI (its files, or index.html for the app's own paths).
  // Paths without a route get the front end's JSON 404.
  if (options_.serve_ui) {
    r.Add("GET", R"(/.*)", query, bind(&ApiServer::Ui));
  }
}

base::Result<int> ApiServer::Start() {
  WARPSCOPE_ASSIGN_OR_RETURN(base::ListenAddress addr,
                             base::ParseListenAddress(options_.listen_address));
  http::HttpServerOptions ho;
  ho.host = addr.host;
  ho.port = addr.port;
  ho.tls_cert_file = options_.tls_cert_file;
  ho.tls_key_file = options_.tls_key_file;
  ho.max_body_bytes = options_.max_body_bytes;
  ho.request_deadline = options_.request_deadline;
  ho.keep_alive_timeout = options_.keep_alive_timeout;
  ho.max_requests_per_connection = options_.max_requests_per_connection;
  ho.max_connections = options_.max_connections;
  ho.max_connections_per_client = options_.max_connections_per_client;
  ho.io_threads = options_.io_threads;
  ho.queues.clear();
  ho.queues.resize(2);
  // Ingest requests decode, then wait for the storage's single writer: on a busy machine the
  // writer (and the query threads) get the CPU first (docs/design/http_front_end.md).
  ho.queues[kIngestQueue] = {.name = "ingest",
                             .threads = options_.ingest_threads,
                             .capacity = options_.queue_depth,
                             .nice = kIngestThreadNice};
  ho.queues[kQueryQueue] = {
      .name = "query", .threads = options_.query_threads, .capacity = options_.queue_depth};
  router_ = std::make_unique<http::Router>();
  InstallRoutes();
  http_ = std::make_unique<http::HttpServer>(std::move(ho), *router_);
  base::Result<int> port = http_->Start();
  if (!port) {
    http_.reset();
    if (port.error().code() == base::StatusCode::kInvalidArgument) return port;  // TLS files
    return base::Error(base::Unavailable(
        "cannot listen on {}: {}; the port is in use or the address is not local; stop the "
        "other process or pass --listen-address",
        options_.listen_address, port.error().message()));
  }
  port_ = *port;
  return port_;
}

void ApiServer::Stop() {
  if (http_) http_->Stop();
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
  if (http_ != nullptr) AppendHttpMetrics(http_->stats(), out);
  if (options_.trace_store != nullptr) AppendTraceMetrics(s, options_.trace_store->stats(), out);
  if (options_.alert_sender != nullptr) AppendAlertMetrics(*options_.alert_sender, out);
  res.status = 200;
  res.set_content(out, "text/plain; version=0.0.4; charset=utf-8");
}

}  // namespace warpscope::server

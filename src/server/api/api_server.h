// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_SERVER_API_API_SERVER_H_
#define WARPSCOPE_SERVER_API_API_SERVER_H_

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/status.h"
#include "base/time.h"
#include "server/ingest/otlp_ingest.h"
#include "server/ingest/request_body.h"
#include "server/storage/storage.h"

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace warpscope::server {
namespace http {
class HttpServer;
class Router;
}  // namespace http
namespace insights {
class InsightEngine;
}  // namespace insights
namespace alerts {
class AlertSender;
}  // namespace alerts
namespace traces {
class TraceStore;
struct RequestQuery;
}  // namespace traces

// The server's HTTP front: ingest endpoints, the JSON query API (docs/api.md), health and
// self-metrics. Request threads call the Storage (through server/query for the query API; both
// are thread-safe); nothing else is shared. Errors are JSON bodies {"error": "..."} with a 4xx
// status for bad requests. The handlers live in ingest_handlers.cc, query_handlers.cc and
// insights_handlers.cc. As OtlpIngest it also stores what the OTLP/gRPC receiver decodes, with
// the same token and counters.
class ApiServer : public OtlpIngest {
 public:
  struct Options {
    std::string listen_address = "127.0.0.1:9410";
    // Bearer token required on ingest endpoints when non-empty.
    std::string auth_token;
    // Also require the token on the read API (query endpoints, profiles download).
    bool auth_read = false;
    // https with this certificate chain and key (PEM files) when both are set.
    std::string tls_cert_file;
    std::string tls_key_file;
    // Request bodies larger than this get 413 (after decompression for gzip bodies).
    size_t max_body_bytes = 32u << 20;
    // The event-driven front end (server/http, docs/design/http_front_end.md). Connections are
    // held by `io_threads`; a complete request runs on a worker: ingest (and /readyz, /metrics)
    // on `ingest_threads`, queries, MCP and the UI on `query_threads`, so that a slow query
    // never holds up ingest. Each queue holds up to `queue_depth` waiting requests; more get
    // 503 with Retry-After. /healthz answers on the I/O threads.
    int io_threads = 2;
    int ingest_threads = 8;
    int query_threads = 8;
    size_t queue_depth = 1024;
    // Headers and body must arrive within this from a request's first byte.
    std::chrono::milliseconds request_deadline{30'000};
    // Idle keep-alive connections are closed after this; and after this many requests.
    std::chrono::milliseconds keep_alive_timeout{60'000};
    int max_requests_per_connection = 1000;
    // Connections over these are accepted and closed at once (counted in /metrics).
    int max_connections = 10'000;
    int max_connections_per_client = 512;
    // Prometheus remote write: the host of series without an instance/host/Hostname label.
    std::string remote_write_default_host = "prometheus";
    // Serve the embedded web UI (web/assets.h) on every GET path outside /api/.
    bool serve_ui = true;
    // The server's insights engine, answering /api/v1/insights; null when insights are off.
    // Must outlive the ApiServer.
    const insights::InsightEngine* insight_engine = nullptr;
    // Delivers findings to Alertmanager; its counters join /metrics. Null without
    // --alertmanager-url. Must outlive the ApiServer.
    const alerts::AlertSender* alert_sender = nullptr;
    // Keeps the request traces of inference servers (POST /v1/traces, /api/v1/traces/...); its
    // counters join /metrics. Null: traces are refused. Must outlive the ApiServer.
    traces::TraceStore* trace_store = nullptr;
  };
  struct Stats {
    uint64_t batches = 0;  // stored
    uint64_t duplicate_batches = 0;
    uint64_t series_windows = 0;  // stored
    uint64_t dropped_series = 0;  // over the cardinality cap
    uint64_t rejected = 0;        // 4xx answers on ingest endpoints
    uint64_t unauthorized = 0;    // 401 answers
    uint64_t profiles = 0;
    uint64_t queries = 0;
    uint64_t otlp_requests = 0;          // OTLP metrics requests stored (HTTP and gRPC)
    uint64_t remote_write_requests = 0;  // remote write requests stored
    // OTLP data points and remote write samples left out (NaN, stale markers, no value, ...).
    uint64_t skipped_points = 0;
    uint64_t trace_requests = 0;        // OTLP trace requests stored (HTTP and gRPC)
    uint64_t trace_spans_ignored = 0;   // spans of no inference request
    uint64_t trace_spans_rejected = 0;  // malformed spans (partial success)
  };

  ApiServer(Options options, Storage& storage, const base::Clock& clock);
  ~ApiServer() override;
  ApiServer(const ApiServer&) = delete;
  ApiServer& operator=(const ApiServer&) = delete;

  // Binds and starts serving on its own threads; returns the bound port (the listen address may
  // use port 0). Errors name the address and the remedy.
  [[nodiscard]] base::Result<int> Start();
  void Stop();
  // Replaces the bearer token (a reload after the token file changed); requests already being
  // checked use the old one. "" opens ingest to anyone who can reach the server.
  void SetAuthToken(std::string token);
  Stats stats() const;

  // OtlpIngest, for the OTLP/gRPC receiver (and the OTLP/HTTP handlers).
  [[nodiscard]] base::Status AuthorizeIngest(std::string_view authorization) override;
  [[nodiscard]] base::Status StoreOtlpMetrics(const DecodedOtlpMetrics& decoded) override;
  [[nodiscard]] base::Status StoreOtlpTraces(const DecodedOtlpTraces& decoded) override;
  void CountRejected() override { ++rejected_; }

 private:
  using Handler = void (ApiServer::*)(const httplib::Request&, httplib::Response&);
  void InstallRoutes();
  bool Authorized(const httplib::Request& req, httplib::Response& res, bool ingest);

  // Ingest endpoints (ingest_handlers.cc): decode with server/ingest, store, count.
  void IngestBatch(const httplib::Request& req, httplib::Response& res);
  void IngestProfile(const httplib::Request& req, httplib::Response& res);
  void OtlpMetrics(const httplib::Request& req, httplib::Response& res);
  void RemoteWrite(const httplib::Request& req, httplib::Response& res);
  // Request traces (trace_handlers.cc): POST /v1/traces into the trace store; GET
  // /api/v1/traces/models, /breakdown, /requests and /{trace_id}.
  void OtlpTraces(const httplib::Request& req, httplib::Response& res);
  // StartQuery, and a 404 when the server keeps no traces; false when it answered.
  bool StartTraceQuery(const httplib::Request& req, httplib::Response& res);
  // model=, host=, start=, end=, limit= and order= of the trace queries.
  [[nodiscard]] base::Result<traces::RequestQuery> ParseTraceQuery(const httplib::Request& req,
                                                                   size_t limit, size_t max_limit,
                                                                   bool model_required);
  void TraceModels(const httplib::Request& req, httplib::Response& res);
  void TraceBreakdown(const httplib::Request& req, httplib::Response& res);
  void TraceRequests(const httplib::Request& req, httplib::Response& res);
  void TraceById(const httplib::Request& req, httplib::Response& res);
  // Writes decoded batches in order; stops at the first error, answers it (RejectWrite) and
  // returns false (batches written before it are duplicates when the sender retries, as their
  // sequences are content hashes).
  [[nodiscard]] bool StoreBatches(const std::vector<server::IngestBatch>& batches,
                                  httplib::Response& res);
  // The same without an HTTP answer: the first write error.
  [[nodiscard]] base::Status WriteBatches(const std::vector<server::IngestBatch>& batches);
  // The encoding of an OTLP/HTTP body (protobuf or JSON by Content-Type) within the body limit;
  // nullopt when it answered the request with a 415 or 413 (Reject).
  std::optional<BodyEncoding> OtlpBodyEncoding(const httplib::Request& req, httplib::Response& res);
  // Answers an ingest request with a 4xx error and counts it in `rejected`.
  void Reject(httplib::Response& res, int status, std::string_view message);
  // Answers a failed write with the status for `error`, counted in `rejected` when it is the
  // sender's (4xx).
  void RejectWrite(httplib::Response& res, const base::Status& error);

  // Query endpoints (query_handlers.cc): parse the parameters, call server/query, answer.
  // Checks the token of a read request and counts the query; false when it answered 401.
  bool StartQuery(const httplib::Request& req, httplib::Response& res);
  void Metrics(const httplib::Request& req, httplib::Response& res);
  void Entities(const httplib::Request& req, httplib::Response& res);
  void QueryRange(const httplib::Request& req, httplib::Response& res);
  void Top(const httplib::Request& req, httplib::Response& res);
  void Events(const httplib::Request& req, httplib::Response& res);
  void Summary(const httplib::Request& req, httplib::Response& res);
  // GET /api/v1/fleet: per-host and fleet-wide GPU figures for the overview page.
  void Fleet(const httplib::Request& req, httplib::Response& res);
  // GET /api/v1/breakdown: a range query whose series are summed per entity attribute value
  // (per-process GPU metrics grouped by executable).
  void Breakdown(const httplib::Request& req, httplib::Response& res);
  // POST /api/v1/query_batch: up to 64 query_range / breakdown queries in one request, answered
  // in order, each as its GET would be or {"error", "status"}; run a few at a time.
  void QueryBatch(const httplib::Request& req, httplib::Response& res);
  void Profiles(const httplib::Request& req, httplib::Response& res);
  void ProfileData(const httplib::Request& req, httplib::Response& res);
  // GET /api/v1/profiles/merged: the profiles of a window merged, as a tree (JSON) or pprof.
  void MergedProfile(const httplib::Request& req, httplib::Response& res);

  // Insights endpoints (insights_handlers.cc): GET /api/v1/insights (the findings, filtered)
  // and GET /api/v1/insights/{id} (one, with its full evidence).
  void Insights(const httplib::Request& req, httplib::Response& res);
  void InsightById(const httplib::Request& req, httplib::Response& res);
  // Training endpoints (training_handlers.cc): GET /api/v1/jobs (the jobs with steps in the
  // range) and GET /api/v1/jobs/{job} (one job's analysis, ranks, steps, collectives, findings).
  void Jobs(const httplib::Request& req, httplib::Response& res);
  void JobById(const httplib::Request& req, httplib::Response& res);

  // MCP for AI agents (mcp_handlers.cc): POST /mcp answers JSON-RPC messages with
  // server/mcp; GET and DELETE /mcp get 405 (no SSE stream, no session state).
  void Mcp(const httplib::Request& req, httplib::Response& res);
  void McpNotAllowed(const httplib::Request& req, httplib::Response& res);

  // GET on any other path: the web UI (server/ui/ui_handler.h).
  void Ui(const httplib::Request& req, httplib::Response& res);
  void Ready(const httplib::Request& req, httplib::Response& res);
  void SelfMetrics(const httplib::Request& req, httplib::Response& res);

  Options options_;
  // The bearer token ingest (and, with auth_read, reads) need; "" for none. Starts as
  // options_.auth_token; SetAuthToken replaces it while requests are served.
  std::atomic<std::shared_ptr<const std::string>> auth_token_;
  Storage& storage_;
  const base::Clock& clock_;
  std::unique_ptr<http::Router> router_;
  std::unique_ptr<http::HttpServer> http_;
  int port_ = 0;

  std::atomic<uint64_t> batches_{0};
  std::atomic<uint64_t> duplicate_batches_{0};
  std::atomic<uint64_t> series_windows_{0};
  std::atomic<uint64_t> dropped_series_{0};
  std::atomic<uint64_t> rejected_{0};
  std::atomic<uint64_t> unauthorized_{0};
  std::atomic<uint64_t> profiles_{0};
  std::atomic<uint64_t> queries_{0};
  std::atomic<uint64_t> otlp_requests_{0};
  std::atomic<uint64_t> remote_write_requests_{0};
  std::atomic<uint64_t> skipped_points_{0};
  std::atomic<uint64_t> trace_requests_{0};
  std::atomic<uint64_t> trace_spans_ignored_{0};
  std::atomic<uint64_t> trace_spans_rejected_{0};
};

}  // namespace warpscope::server

#endif  // WARPSCOPE_SERVER_API_API_SERVER_H_

// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_SERVER_SERVER_CONFIG_H_
#define WARPSCOPE_SERVER_SERVER_CONFIG_H_

#include <chrono>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/time.h"
#include "server/insights/insight_config.h"

namespace warpscope::server {

// Everything `warpscope server` can be told (docs/design/config.md). Defaults live here.
struct ServerConfig {
  // HTTP address for ingest and the query API. Loopback unless told otherwise.
  std::string listen_address = "127.0.0.1:9410";
  // Where the embedded database lives (created if missing). With ClickHouse storage it still
  // holds the request traces and the insights' findings.
  std::string data_dir = "/var/lib/warpscope";
  // Where metrics, entities, events, profiles and training steps go: "sqlite" (the embedded
  // database under data_dir) or clickhouse://HOST[:PORT]/DATABASE (docs/design/storage.md).
  std::string storage = "sqlite";
  // ClickHouse's user, and a file holding its password (chmod 600; empty: no password).
  std::string storage_user = "default";
  std::string storage_password_file;
  // File holding the bearer token agents must send; empty = no auth (loopback use only).
  std::string auth_token_file;
  // Require the token on the read API too.
  bool auth_read = false;
  // Serve https with this certificate chain and private key (PEM); both or neither.
  std::string tls_cert_file;
  std::string tls_key_file;
  // The largest request body (after decompression): HTTP answers 413 above it, OTLP/gRPC
  // RESOURCE_EXHAUSTED.
  size_t max_body_bytes = 32u << 20;
  // The HTTP front end (docs/design/http_front_end.md): headers and body of a request must
  // arrive within `http_request_deadline` of its first byte; an idle keep-alive connection is
  // closed after `http_keepalive_timeout` and any connection after
  // `http_max_requests_per_connection` answers (0: no limit). Connections over
  // `http_max_connections` in total or `http_max_connections_per_client` from one address are
  // accepted and closed. `http_io_threads` hold the connections; handlers run on
  // `http_ingest_threads` (ingest, /readyz, /metrics) and `http_query_threads` (queries, MCP,
  // the UI), each queue holding up to `http_queue_depth` waiting requests (503 beyond).
  base::Duration http_request_deadline = std::chrono::seconds(30);
  base::Duration http_keepalive_timeout = std::chrono::seconds(60);
  int http_max_requests_per_connection = 1000;
  int http_max_connections = 10'000;
  int http_max_connections_per_client = 512;
  int http_io_threads = 2;
  int http_ingest_threads = 8;
  int http_query_threads = 8;
  size_t http_queue_depth = 1024;
  // OTLP/gRPC listener (MetricsService and TraceService Export, docs/api.md), e.g. ":4317";
  // empty: off. Shares the token, --tls-cert/--tls-key and --max-body-bytes with HTTP.
  std::string otlp_grpc_listen_address;
  // Host of remote-written series that carry no instance/host/Hostname label.
  std::string remote_write_default_host = "prometheus";
  size_t max_series_per_host = 50000;
  base::Duration raw_retention = std::chrono::hours(24 * 7);
  base::Duration minute_retention = std::chrono::hours(24 * 30);
  base::Duration hour_retention = std::chrono::hours(24 * 400);
  // How long training steps (one row per rank and step, docs/design/storage.md) are kept.
  base::Duration step_retention = std::chrono::hours(24 * 30);
  // Request traces of inference servers (POST /v1/traces; docs/design/inference.md): how long
  // they are kept, and how many spans at most (near the bound each model is sampled down to its
  // fair share; past it the oldest go).
  base::Duration trace_retention = std::chrono::hours(24);
  uint64_t trace_max_spans = 1'000'000;
  // How often rollups are built and retention applied.
  base::Duration compact_interval = std::chrono::minutes(1);
  // How often the insights engine evaluates its rules (docs/insights.md); 0 turns insights off.
  base::Duration insights_interval = std::chrono::seconds(10);
  // Price of one GPU-hour, for the cost of each finding's lost GPU time; 0: not priced.
  double gpu_hour_price = 0;
  // Alertmanagers (base URLs, "http://127.0.0.1:9093") that findings are pushed to as alerts
  // (docs/alerts.md); none: no alerts are sent.
  std::vector<std::string> alertmanager_urls;
  // The lowest severity of findings sent as alerts: "page" (the default), "ticket" or "info".
  std::string alert_severity = "page";
  // How often a firing (or recently resolved) alert is sent again.
  base::Duration alert_resend_interval = std::chrono::minutes(1);
  // The web UI's address as people reach it, for the links in alerts; empty: http:// and the
  // listen address.
  std::string external_url;
  // The insight rules' thresholds: the config file's [server.insights] section (gpu_hour_price
  // above is the one that counts; this one's is not used).
  insights::InsightConfig insights;

  [[nodiscard]] base::Status Validate() const;
};

}  // namespace warpscope::server

#endif  // WARPSCOPE_SERVER_SERVER_CONFIG_H_

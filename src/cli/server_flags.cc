// SPDX-License-Identifier: Apache-2.0
#include "cli/server_flags.h"

#include "server/alerts/alert_sender.h"
#include "server/storage/clickhouse/clickhouse_client.h"

namespace warpscope::cli {
namespace {

// CLI11's TOML reader, less the items of [server.insights] (and of its dotted keys), which go to
// `out`: CLI11 knows no nested section without a subcommand of that name.
class InsightSectionReader final : public CLI::ConfigTOML {
 public:
  explicit InsightSectionReader(
      std::shared_ptr<std::vector<std::pair<std::string, std::string>>> out)
      : out_(std::move(out)) {}

  std::vector<CLI::ConfigItem> from_config(std::istream& input) const override {
    std::vector<CLI::ConfigItem> items = CLI::ConfigTOML::from_config(input);
    std::erase_if(items, [&](const CLI::ConfigItem& item) {
      if (item.parents.size() < 2 || item.parents[0] != "server" || item.parents[1] != "insights") {
        return false;
      }
      // "++" and "--" open and close the section; a key of a deeper section is named in full.
      if (item.name == "++" || item.name == "--") return true;
      std::string key = item.name;
      for (size_t i = item.parents.size(); i > 2; --i) key = item.parents[i - 1] + "." + key;
      std::string value;
      for (const std::string& v : item.inputs) value += (value.empty() ? "" : ",") + v;
      out_->emplace_back(std::move(key), std::move(value));
      return true;
    });
    return items;
  }

 private:
  std::shared_ptr<std::vector<std::pair<std::string, std::string>>> out_;
};

}  // namespace

std::shared_ptr<CLI::Config> ServerFlags::ConfigReader() const {
  return std::make_shared<InsightSectionReader>(insight_settings_);
}

void ServerFlags::Register(CLI::App& sub) {
  sub.add_option("--listen-address", listen_address_,
                 "HTTP address for ingest and the query API (host:port; :port for every "
                 "interface)")
      ->envname("WARPSCOPE_SERVER_LISTEN_ADDRESS")
      ->capture_default_str();
  sub.add_option("--data-dir", data_dir_, "Directory of the embedded database (created if missing)")
      ->envname("WARPSCOPE_DATA_DIR")
      ->capture_default_str();
  sub.add_option("--storage", storage_,
                 "Where metrics go: sqlite (the embedded database under --data-dir) or "
                 "clickhouse://HOST[:PORT]/DATABASE, shared by any number of servers")
      ->envname("WARPSCOPE_STORAGE")
      ->capture_default_str();
  sub.add_option("--storage-user", storage_user_, "ClickHouse user (with clickhouse:// storage)")
      ->envname("WARPSCOPE_STORAGE_USER")
      ->capture_default_str();
  sub.add_option("--storage-password-file", storage_password_file_,
                 "File with the ClickHouse user's password (chmod 600); without it none is sent")
      ->envname("WARPSCOPE_STORAGE_PASSWORD_FILE");
  sub.add_option("--auth-token-file", auth_token_file_,
                 "File with the bearer token agents must send (chmod 600); without it ingest is "
                 "open")
      ->envname("WARPSCOPE_AUTH_TOKEN_FILE");
  sub.add_flag("--auth-read", auth_read_, "Require the token on the query API too")
      ->envname("WARPSCOPE_AUTH_READ");
  sub.add_option("--tls-cert", tls_cert_, "Serve https with this certificate chain (PEM)")
      ->envname("WARPSCOPE_TLS_CERT");
  sub.add_option("--tls-key", tls_key_, "Private key of --tls-cert (PEM)")
      ->envname("WARPSCOPE_TLS_KEY");
  sub.add_option("--remote-write-default-host", remote_write_default_host_,
                 "Host for remote-written series without an instance, host or Hostname label")
      ->envname("WARPSCOPE_REMOTE_WRITE_DEFAULT_HOST")
      ->capture_default_str();
  sub.add_option("--max-body-bytes", max_body_bytes_,
                 "Largest request body accepted, after decompression (HTTP 413 above; "
                 "RESOURCE_EXHAUSTED over OTLP/gRPC)")
      ->envname("WARPSCOPE_MAX_BODY_BYTES")
      ->capture_default_str();
  sub.add_option("--http-request-deadline", http_request_deadline_,
                 "Headers and body of an HTTP request must arrive within this from its first "
                 "byte (slow senders are cut)")
      ->envname("WARPSCOPE_HTTP_REQUEST_DEADLINE")
      ->capture_default_str();
  sub.add_option("--http-keepalive-timeout", http_keepalive_timeout_,
                 "Idle HTTP keep-alive connections are closed after this")
      ->envname("WARPSCOPE_HTTP_KEEPALIVE_TIMEOUT")
      ->capture_default_str();
  sub.add_option("--http-max-requests-per-connection", http_max_requests_per_connection_,
                 "HTTP connections are closed after this many requests (0: no limit)")
      ->envname("WARPSCOPE_HTTP_MAX_REQUESTS_PER_CONNECTION")
      ->capture_default_str();
  sub.add_option("--http-max-connections", http_max_connections_,
                 "Open HTTP connections at most; more are accepted and closed (keep the "
                 "descriptor limit above it)")
      ->envname("WARPSCOPE_HTTP_MAX_CONNECTIONS")
      ->capture_default_str();
  sub.add_option("--http-max-connections-per-client", http_max_connections_per_client_,
                 "Open HTTP connections from one client address at most; more are accepted and "
                 "closed")
      ->envname("WARPSCOPE_HTTP_MAX_CONNECTIONS_PER_CLIENT")
      ->capture_default_str();
  sub.add_option("--http-io-threads", http_io_threads_,
                 "Threads holding the HTTP connections (accept, TLS, parse, write)")
      ->envname("WARPSCOPE_HTTP_IO_THREADS")
      ->capture_default_str();
  sub.add_option("--http-ingest-threads", http_ingest_threads_,
                 "Threads running ingest requests (and /readyz, /metrics)")
      ->envname("WARPSCOPE_HTTP_INGEST_THREADS")
      ->capture_default_str();
  sub.add_option("--http-query-threads", http_query_threads_,
                 "Threads running queries, MCP and the web UI; apart from ingest's so that a "
                 "slow query never holds up ingest")
      ->envname("WARPSCOPE_HTTP_QUERY_THREADS")
      ->capture_default_str();
  sub.add_option("--http-queue-depth", http_queue_depth_,
                 "Requests waiting for an ingest or a query thread at most, each; more are "
                 "answered 503 with Retry-After")
      ->envname("WARPSCOPE_HTTP_QUEUE_DEPTH")
      ->capture_default_str();
  sub.add_option("--otlp-grpc-listen-address", otlp_grpc_listen_address_,
                 "Also receive OTLP over gRPC here (host:port, e.g. :4317, the OpenTelemetry "
                 "SDKs' default); off when empty. Uses the token, --tls-cert/--tls-key and "
                 "--max-body-bytes of the HTTP listener")
      ->envname("WARPSCOPE_OTLP_GRPC_LISTEN_ADDRESS");
  sub.add_option("--max-series-per-host", max_series_per_host_,
                 "Cardinality cap: active series per host; new series above it are dropped and "
                 "counted")
      ->envname("WARPSCOPE_MAX_SERIES_PER_HOST")
      ->capture_default_str();
  sub.add_option("--retention-raw", retention_raw_, "How long raw windows are kept")
      ->envname("WARPSCOPE_RETENTION_RAW")
      ->capture_default_str();
  sub.add_option("--retention-1m", retention_1m_, "How long 1-minute rollups are kept")
      ->envname("WARPSCOPE_RETENTION_1M")
      ->capture_default_str();
  sub.add_option("--retention-1h", retention_1h_, "How long 1-hour rollups are kept")
      ->envname("WARPSCOPE_RETENTION_1H")
      ->capture_default_str();
  sub.add_option("--step-retention", step_retention_,
                 "How long training steps (one record per rank and step) are kept")
      ->envname("WARPSCOPE_STEP_RETENTION")
      ->capture_default_str();
  sub.add_option("--trace-retention", trace_retention_,
                 "How long request traces (POST /v1/traces) are kept")
      ->envname("WARPSCOPE_TRACE_RETENTION")
      ->capture_default_str();
  sub.add_option("--trace-max-spans", trace_max_spans_,
                 "Most request-trace spans kept; near it each model is sampled to its fair share, "
                 "past it the oldest go")
      ->envname("WARPSCOPE_TRACE_MAX_SPANS")
      ->capture_default_str();
  sub.add_option("--compact-interval", compact_interval_,
                 "How often rollups are built and retention applied")
      ->envname("WARPSCOPE_COMPACT_INTERVAL")
      ->capture_default_str();
  sub.add_option("--insights-interval", insights_interval_,
                 "How often the insights engine evaluates its rules; 0s turns insights off")
      ->envname("WARPSCOPE_INSIGHTS_INTERVAL")
      ->capture_default_str();
  sub.add_option("--gpu-hour-price", gpu_hour_price_,
                 "Price of one GPU-hour, for the cost of the GPU time each finding loses")
      ->envname("WARPSCOPE_GPU_HOUR_PRICE")
      ->capture_default_str();
  sub.add_option("--alertmanager-url", alertmanager_urls_,
                 "Push findings as alerts to this Alertmanager (http://host:9093; repeatable)")
      ->envname("WARPSCOPE_ALERTMANAGER_URL")
      ->delimiter(',');
  sub.add_option("--alert-severity", alert_severity_,
                 "Lowest severity of findings sent as alerts: page, ticket or info")
      ->envname("WARPSCOPE_ALERT_SEVERITY")
      ->capture_default_str();
  sub.add_option("--alert-resend-interval", alert_resend_interval_,
                 "How often firing and recently resolved alerts are sent again")
      ->envname("WARPSCOPE_ALERT_RESEND_INTERVAL")
      ->capture_default_str();
  sub.add_option("--external-url", external_url_,
                 "The web UI's address as people reach it, for the links in alerts (default: "
                 "http:// and --listen-address)")
      ->envname("WARPSCOPE_EXTERNAL_URL");
}

server::insights::EngineOptions InsightEngineOptions(const server::ServerConfig& config) {
  server::insights::EngineOptions options;
  options.config = config.insights;
  options.config.gpu_hour_price = config.gpu_hour_price;
  return options;
}

base::Status ServerFlags::Finish(server::ServerConfig& config) const {
  config = defaults_;
  config.listen_address = listen_address_;
  config.data_dir = data_dir_;
  config.storage = storage_;
  config.storage_user = storage_user_;
  config.storage_password_file = storage_password_file_;
  if (config.storage != "sqlite") {
    auto url = server::clickhouse::ParseUrl(config.storage);  // names the expected form
    if (!url) return url.error();
  }
  config.auth_token_file = auth_token_file_;
  config.auth_read = auth_read_;
  config.tls_cert_file = tls_cert_;
  config.tls_key_file = tls_key_;
  config.remote_write_default_host = remote_write_default_host_;
  config.max_body_bytes = max_body_bytes_;
  config.otlp_grpc_listen_address = otlp_grpc_listen_address_;
  config.max_series_per_host = max_series_per_host_;
  config.http_max_requests_per_connection = http_max_requests_per_connection_;
  config.http_max_connections = http_max_connections_;
  config.http_max_connections_per_client = http_max_connections_per_client_;
  config.http_io_threads = http_io_threads_;
  config.http_ingest_threads = http_ingest_threads_;
  config.http_query_threads = http_query_threads_;
  config.http_queue_depth = http_queue_depth_;
  config.trace_max_spans = trace_max_spans_;
  config.gpu_hour_price = gpu_hour_price_;
  config.alertmanager_urls = alertmanager_urls_;
  config.alert_severity = alert_severity_;
  config.external_url = external_url_;
  for (const std::string& url : config.alertmanager_urls) {
    WARPSCOPE_RETURN_IF_ERROR(server::alerts::ValidateAlertmanagerUrl(url));
  }
  for (const auto& [key, value] : *insight_settings_) {
    WARPSCOPE_RETURN_IF_ERROR(server::insights::SetInsightConfig(config.insights, key, value));
  }
  struct {
    const std::string& text;
    const char* flag;
    base::Duration* out;
  } durations[] = {
      {retention_raw_, "--retention-raw", &config.raw_retention},
      {retention_1m_, "--retention-1m", &config.minute_retention},
      {retention_1h_, "--retention-1h", &config.hour_retention},
      {step_retention_, "--step-retention", &config.step_retention},
      {compact_interval_, "--compact-interval", &config.compact_interval},
      {trace_retention_, "--trace-retention", &config.trace_retention},
      {insights_interval_, "--insights-interval", &config.insights_interval},
      {alert_resend_interval_, "--alert-resend-interval", &config.alert_resend_interval},
      {http_request_deadline_, "--http-request-deadline", &config.http_request_deadline},
      {http_keepalive_timeout_, "--http-keepalive-timeout", &config.http_keepalive_timeout}};
  for (auto& d : durations) {
    auto parsed = base::ParseDuration(d.text);
    if (!parsed) return parsed.error().WithContext(d.flag);
    *d.out = *parsed;
  }
  return config.Validate();
}

}  // namespace warpscope::cli

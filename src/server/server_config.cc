// SPDX-License-Identifier: Apache-2.0
#include "server/server_config.h"

#include "base/listen_address.h"

namespace warpscope::server {

base::Status ServerConfig::Validate() const {
  auto addr = base::ParseListenAddress(listen_address);
  if (!addr) return addr.error().WithContext("--listen-address");
  if (!otlp_grpc_listen_address.empty()) {
    auto grpc = base::ParseListenAddress(otlp_grpc_listen_address);
    if (!grpc) return grpc.error().WithContext("--otlp-grpc-listen-address");
  }
  if (data_dir.empty()) {
    return base::InvalidArgument("--data-dir is empty: give a directory for the database");
  }
  if (tls_cert_file.empty() != tls_key_file.empty()) {
    return base::InvalidArgument("--tls-cert and --tls-key go together: give both or neither");
  }
  if (max_body_bytes < 1024) {
    return base::InvalidArgument("--max-body-bytes={}: must be at least 1024", max_body_bytes);
  }
  if (http_request_deadline < std::chrono::milliseconds(100) ||
      http_keepalive_timeout < std::chrono::milliseconds(100)) {
    return base::InvalidArgument(
        "--http-request-deadline={} and --http-keepalive-timeout={}: each must be at least 100ms",
        base::FormatDuration(http_request_deadline), base::FormatDuration(http_keepalive_timeout));
  }
  if (http_max_requests_per_connection < 0) {
    return base::InvalidArgument("--http-max-requests-per-connection must be 0 (no limit) or more");
  }
  if (http_max_connections < 1 || http_max_connections_per_client < 1 || http_io_threads < 1 ||
      http_ingest_threads < 1 || http_query_threads < 1 || http_queue_depth < 1) {
    return base::InvalidArgument(
        "--http-max-connections, --http-max-connections-per-client, --http-io-threads, "
        "--http-ingest-threads, --http-query-threads and --http-queue-depth must be at least 1");
  }
  if (max_series_per_host == 0) {
    return base::InvalidArgument("--max-series-per-host must be at least 1");
  }
  if (!(raw_retention <= minute_retention && minute_retention <= hour_retention)) {
    return base::InvalidArgument(
        "retention must grow with resolution: --retention-raw={} <= --retention-1m={} <= "
        "--retention-1h={}",
        base::FormatDuration(raw_retention), base::FormatDuration(minute_retention),
        base::FormatDuration(hour_retention));
  }
  if (raw_retention < std::chrono::hours(1)) {
    return base::InvalidArgument("--retention-raw={}: must be at least 1h",
                                 base::FormatDuration(raw_retention));
  }
  if (step_retention < std::chrono::hours(1)) {
    return base::InvalidArgument("--step-retention={}: must be at least 1h",
                                 base::FormatDuration(step_retention));
  }
  if (trace_retention < std::chrono::minutes(1)) {
    return base::InvalidArgument("--trace-retention={}: must be at least 1m",
                                 base::FormatDuration(trace_retention));
  }
  if (trace_max_spans < 1000) {
    return base::InvalidArgument("--trace-max-spans={}: must be at least 1000", trace_max_spans);
  }
  if (compact_interval < std::chrono::seconds(1)) {
    return base::InvalidArgument("--compact-interval must be at least 1s");
  }
  if (insights_interval != base::Duration::zero() &&
      (insights_interval < std::chrono::seconds(1) ||
       insights_interval > std::chrono::minutes(10))) {
    return base::InvalidArgument(
        "--insights-interval={}: use 1s to 10m, or 0s to turn insights off",
        base::FormatDuration(insights_interval));
  }
  if (!(gpu_hour_price >= 0 && gpu_hour_price <= 1e6)) {
    return base::InvalidArgument("--gpu-hour-price={}: give the price of one GPU-hour, 0 to 1e6",
                                 gpu_hour_price);
  }
  if (alert_severity != "page" && alert_severity != "ticket" && alert_severity != "info") {
    return base::InvalidArgument("--alert-severity={}: use page, ticket or info", alert_severity);
  }
  if (alert_resend_interval < std::chrono::seconds(1)) {
    return base::InvalidArgument("--alert-resend-interval must be at least 1s");
  }
  if (!alertmanager_urls.empty() && insights_interval == base::Duration::zero()) {
    return base::InvalidArgument(
        "--alertmanager-url needs the insights engine, which --insights-interval=0s turns off");
  }
  if (!external_url.empty() && !external_url.starts_with("http://") &&
      !external_url.starts_with("https://")) {
    return base::InvalidArgument(
        "--external-url={}: give the UI's address as people reach it, e.g. "
        "http://warpscope.example:9410",
        external_url);
  }
  return insights.Validate();
}

}  // namespace warpscope::server

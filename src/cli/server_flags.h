// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_CLI_SERVER_FLAGS_H_
#define WARPSCOPE_CLI_SERVER_FLAGS_H_

#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "server/insights/insight_engine.h"
#include "server/server_config.h"

namespace warpscope::cli {

// The `server` subcommand's flags, each with a WARPSCOPE_* environment twin, and the config
// file's `[server.insights]` section (the insight thresholds, one key each: too many for flags).
class ServerFlags {
 public:
  void Register(CLI::App& sub);
  // The reader of `--config` files, to set on the root app (app.config_formatter): CLI11's TOML
  // reader, except that it keeps `[server.insights]` aside for Finish.
  std::shared_ptr<CLI::Config> ConfigReader() const;
  [[nodiscard]] base::Status Finish(server::ServerConfig& config) const;

 private:
  // The (key, value) pairs of `[server.insights]`, in file order; filled by ConfigReader's.
  std::shared_ptr<std::vector<std::pair<std::string, std::string>>> insight_settings_ =
      std::make_shared<std::vector<std::pair<std::string, std::string>>>();
  server::ServerConfig defaults_;
  std::string listen_address_ = defaults_.listen_address;
  std::string data_dir_ = defaults_.data_dir;
  std::string storage_ = defaults_.storage;
  std::string storage_user_ = defaults_.storage_user;
  std::string storage_password_file_;
  std::string auth_token_file_;
  bool auth_read_ = false;
  std::string tls_cert_;
  std::string tls_key_;
  std::string remote_write_default_host_ = defaults_.remote_write_default_host;
  size_t max_body_bytes_ = defaults_.max_body_bytes;
  std::string otlp_grpc_listen_address_;
  size_t max_series_per_host_ = defaults_.max_series_per_host;
  std::string http_request_deadline_ = "30s";
  std::string http_keepalive_timeout_ = "60s";
  int http_max_requests_per_connection_ = defaults_.http_max_requests_per_connection;
  int http_max_connections_ = defaults_.http_max_connections;
  int http_max_connections_per_client_ = defaults_.http_max_connections_per_client;
  int http_io_threads_ = defaults_.http_io_threads;
  int http_ingest_threads_ = defaults_.http_ingest_threads;
  int http_query_threads_ = defaults_.http_query_threads;
  size_t http_queue_depth_ = defaults_.http_queue_depth;
  std::string retention_raw_ = "7d";
  std::string retention_1m_ = "30d";
  std::string retention_1h_ = "400d";
  std::string step_retention_ = "30d";
  std::string compact_interval_ = "1m";
  std::string trace_retention_ = "24h";
  uint64_t trace_max_spans_ = defaults_.trace_max_spans;
  std::string insights_interval_ = "10s";
  double gpu_hour_price_ = defaults_.gpu_hour_price;
  std::vector<std::string> alertmanager_urls_;
  std::string alert_severity_ = defaults_.alert_severity;
  std::string alert_resend_interval_ = "1m";
  std::string external_url_;
};

// The insights engine's options for `config`: its thresholds and the price of a GPU-hour.
server::insights::EngineOptions InsightEngineOptions(const server::ServerConfig& config);

}  // namespace warpscope::cli

#endif  // WARPSCOPE_CLI_SERVER_FLAGS_H_

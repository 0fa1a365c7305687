// SPDX-License-Identifier: Apache-2.0
// Wiring of `warpscope server`: storage, the insights engine, HTTP API; periodic compaction and
// insight evaluations on the main sequence.
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <set>
#include <thread>

#include "base/listen_address.h"
#include "base/logging.h"
#include "base/task_runner.h"
#include "base/token_file.h"
#include "cli/cli_app.h"
#include "cli/commands.h"
#include "cli/server_flags.h"
#include "server/alerts/alert_notifier.h"
#include "server/alerts/alert_sender.h"
#include "server/api/api_server.h"
#include "server/insights/finding_store.h"
#include "server/insights/insight_engine.h"
#include "server/otlp_grpc/otlp_grpc_server.h"
#include "server/storage/clickhouse/clickhouse_storage.h"
#include "server/storage/sqlite_storage.h"
#include "server/traces/trace_store.h"

namespace warpscope::cli {
namespace {

// Where people reach the UI, for the links in alerts: --external-url, else the listen address
// (this machine's name in place of an any-interface address; the port bound for port 0).
std::string ExternalUrl(const server::ServerConfig& config, int port) {
  if (!config.external_url.empty()) return config.external_url;
  auto addr = base::ParseListenAddress(config.listen_address);
  std::string host = addr ? addr->host : "127.0.0.1";
  if (host.empty() || host == "0.0.0.0" || host == "::") {
    char name[256] = {};
    host = gethostname(name, sizeof(name) - 1) == 0 && name[0] != '\0' ? name : "localhost";
  } else if (host.find(':') != std::string::npos) {
    host = "[" + host + "]";
  }
  const char* scheme = config.tls_cert_file.empty() ? "http" : "https";
  return fmt::format("{}://{}:{}", scheme, host, port);
}

// The metrics store --storage names: the embedded SQLite database under --data-dir, or a
// ClickHouse database that other servers may share.
base::Result<std::unique_ptr<server::Storage>> OpenStorage(const server::ServerConfig& config) {
  server::StorageOptions options;
  options.max_series_per_host = config.max_series_per_host;
  options.raw_retention = config.raw_retention;
  options.minute_retention = config.minute_retention;
  options.hour_retention = config.hour_retention;
  options.step_retention = config.step_retention;
  if (config.storage == "sqlite") {
    server::SqliteStorageOptions sqlite_options;
    sqlite_options.data_dir = config.data_dir;
    sqlite_options.storage = options;
    WARPSCOPE_ASSIGN_OR_RETURN(auto sqlite, server::SqliteStorage::Open(sqlite_options));
    return std::unique_ptr<server::Storage>(std::move(sqlite));
  }
  server::ClickHouseStorageOptions ch_options;
  ch_options.url = config.storage;
  ch_options.user = config.storage_user;
  ch_options.storage = options;
  if (!config.storage_password_file.empty()) {
    WARPSCOPE_ASSIGN_OR_RETURN(ch_options.password,
                               base::ReadTokenFile("--storage-password-file",
                                                   config.storage_password_file));
  }
  WARPSCOPE_ASSIGN_OR_RETURN(auto clickhouse, server::ClickHouseStorage::Open(ch_options));
  return std::unique_ptr<server::Storage>(std::move(clickhouse));
}

}  // namespace

base::Result<std::unique_ptr<ServerProcess>> ServerProcess::Start(
    const server::ServerConfig& config, base::TaskRunner& runner, const base::Clock& clock) {
  std::unique_ptr<ServerProcess> p(new ServerProcess(runner, clock));
  p->config_ = config;
  std::string token;
  if (!config.auth_token_file.empty()) {
    WARPSCOPE_ASSIGN_OR_RETURN(token,
                               base::ReadTokenFile("--auth-token-file", config.auth_token_file));
  }
  WARPSCOPE_ASSIGN_OR_RETURN(p->storage_, OpenStorage(config));
  // The request traces have their own database file, so that they never hold the metrics' lock.
  WARPSCOPE_ASSIGN_OR_RETURN(
      p->traces_, server::traces::TraceStore::Open({.path = config.data_dir + "/traces.db",
                                                    .retention = config.trace_retention,
                                                    .max_spans = config.trace_max_spans}));

  if (config.insights_interval != base::Duration::zero()) {
    p->finding_store_ =
        std::make_unique<server::insights::FileFindingStore>(config.data_dir + "/insights.json");
    server::insights::EngineOptions engine_options = InsightEngineOptions(config);
    WARPSCOPE_ASSIGN_OR_RETURN(p->insights_,
                               server::insights::InsightEngine::Create(*p->storage_, engine_options,
                                                                       p->finding_store_.get()));
  }

  if (p->insights_ && !config.alertmanager_urls.empty()) {
    WARPSCOPE_ASSIGN_OR_RETURN(
        p->alert_sender_, server::alerts::AlertSender::Create({.urls = config.alertmanager_urls}));
  }

  server::ApiServer::Options api_options;
  api_options.listen_address = config.listen_address;
  api_options.auth_token = token;
  api_options.auth_read = config.auth_read;
  api_options.tls_cert_file = config.tls_cert_file;
  api_options.tls_key_file = config.tls_key_file;
  api_options.remote_write_default_host = config.remote_write_default_host;
  api_options.max_body_bytes = config.max_body_bytes;
  api_options.request_deadline =
      std::chrono::duration_cast<std::chrono::milliseconds>(config.http_request_deadline);
  api_options.keep_alive_timeout =
      std::chrono::duration_cast<std::chrono::milliseconds>(config.http_keepalive_timeout);
  api_options.max_requests_per_connection = config.http_max_requests_per_connection;
  api_options.max_connections = config.http_max_connections;
  api_options.max_connections_per_client = config.http_max_connections_per_client;
  api_options.io_threads = config.http_io_threads;
  api_options.ingest_threads = config.http_ingest_threads;
  api_options.query_threads = config.http_query_threads;
  api_options.queue_depth = config.http_queue_depth;
  api_options.insight_engine = p->insights_.get();
  api_options.alert_sender = p->alert_sender_.get();
  api_options.trace_store = p->traces_.get();
  p->api_ = std::make_unique<server::ApiServer>(api_options, *p->storage_, clock);
  WARPSCOPE_ASSIGN_OR_RETURN(p->port_, p->api_->Start());
  if (token.empty()) {
    WARPSCOPE_LOG(WARNING, "ingest is open to anyone who can reach {}: pass --auth-token-file",
                  config.listen_address);
  }
  WARPSCOPE_LOG(INFO, "server listening on {} (port {}), data in {}{}", config.listen_address,
                p->port_, config.data_dir,
                config.storage == "sqlite" ? "" : ", metrics in " + config.storage);
  if (!config.otlp_grpc_listen_address.empty()) {
    // Logs "OTLP/gRPC listening on <address> (port N)".
    WARPSCOPE_ASSIGN_OR_RETURN(p->otlp_grpc_,
                               server::OtlpGrpcServer::Start(
                                   {.listen_address = config.otlp_grpc_listen_address,
                                    .tls_cert_file = config.tls_cert_file,
                                    .tls_key_file = config.tls_key_file,
                                    .max_message_bytes = config.max_body_bytes},
                                   *p->api_));
  }
  if (p->alert_sender_) {
    WARPSCOPE_ASSIGN_OR_RETURN(server::insights::Severity min_severity,
                               server::insights::ParseSeverity(config.alert_severity));
    p->alert_notifier_ = std::make_unique<server::alerts::AlertNotifier>(
        server::alerts::NotifierOptions{.min_severity = min_severity,
                                        .resend = config.alert_resend_interval,
                                        .evaluation_interval = config.insights_interval,
                                        .external_url = ExternalUrl(config, p->port_)});
    WARPSCOPE_LOG(INFO, "findings of severity {} and above go to Alertmanager at {}",
                  config.alert_severity, fmt::join(config.alertmanager_urls, ", "));
  }
  p->compact_interval_ = config.compact_interval;
  p->ScheduleCompaction();
  p->insights_interval_ = config.insights_interval;
  if (p->insights_) p->ScheduleInsights();
  return p;
}

ServerProcess::ServerProcess(base::TaskRunner& runner, const base::Clock& clock)
    : runner_(runner), clock_(clock) {}

ServerProcess::~ServerProcess() { Stop(); }

int ServerProcess::otlp_grpc_port() const { return otlp_grpc_ ? otlp_grpc_->port() : 0; }

void ServerProcess::ScheduleCompaction() {
  std::weak_ptr<bool> alive = alive_;
  runner_.PostDelayedTask(
      [this, alive] {
        auto a = alive.lock();
        if (!a || !*a) return;
        auto result = storage_->Compact(clock_.Now());
        if (!result) {
          WARPSCOPE_LOG_EVERY_N(ERROR, 10, "compaction failed: {}", result.error().message());
        }
        auto pruned = traces_->Prune(clock_.Now());
        if (!pruned) {
          WARPSCOPE_LOG_EVERY_N(ERROR, 10, "request trace retention failed: {}",
                                pruned.error().message());
        }
        ScheduleCompaction();
      },
      compact_interval_);
}

void ServerProcess::ScheduleInsights() {
  std::weak_ptr<bool> alive = alive_;
  runner_.PostDelayedTask(
      [this, alive] {
        auto a = alive.lock();
        if (!a || !*a) return;
        base::Status st = insights_->Evaluate(clock_.Now());
        if (!st.ok()) {
          WARPSCOPE_LOG_EVERY_N(ERROR, 10, "insights evaluation failed: {}", st.message());
        }
        NotifyAlerts();
        ScheduleInsights();
      },
      insights_interval_);
}

void ServerProcess::NotifyAlerts() {
  if (!alert_notifier_) return;
  std::vector<server::insights::Finding> findings = insights_->Findings();
  alert_sender_->Offer(alert_notifier_->Update(findings, clock_.Now()));
}

void ServerProcess::Stop() {
  *alive_ = false;
  // The gRPC receiver first: its calls store through the ApiServer.
  if (otlp_grpc_) otlp_grpc_->Stop();
  if (api_) api_->Stop();
  // Alerts still waiting get a moment; Alertmanager resolves the firing ones by itself when
  // their lease ends.
  if (alert_sender_) alert_sender_->Shutdown(std::chrono::seconds(2));
}

std::string ServerProcess::Reload(const server::ServerConfig& next,
                                  const std::vector<std::string>& changed) {
  std::vector<std::string> applied;
  std::vector<std::string> failed;
  // The token file is read again even when its name did not change: that is how a token is
  // rotated. A file that cannot be read keeps the token in use.
  if (next.auth_token_file.empty()) {
    if (!config_.auth_token_file.empty()) {
      api_->SetAuthToken("");
      WARPSCOPE_LOG(WARNING, "ingest is open to anyone who can reach {}: pass --auth-token-file",
                    config_.listen_address);
    }
    config_.auth_token_file.clear();
  } else {
    base::Result<std::string> token =
        base::ReadTokenFile("--auth-token-file", next.auth_token_file);
    if (token) {
      api_->SetAuthToken(*token);
      config_.auth_token_file = next.auth_token_file;
      applied.push_back("the bearer token");
    } else {
      failed.push_back(token.error().message() + " (the token in use stays)");
    }
  }
  if (insights_ && next.insights_interval != base::Duration::zero()) {
    base::Status st = insights_->Reconfigure(InsightEngineOptions(next));
    if (st.ok()) {
      config_.insights = next.insights;
      config_.gpu_hour_price = next.gpu_hour_price;
      insights_interval_ = config_.insights_interval = next.insights_interval;
      applied.push_back("the insight thresholds");
    } else {
      failed.push_back(st.message() + " (the thresholds in use stay)");
    }
  }
  compact_interval_ = config_.compact_interval = next.compact_interval;
  // Everything else is read once, at start.
  static const std::set<std::string> kReloadable = {"--auth-token-file", "--gpu-hour-price",
                                                    "--insights-interval", "--compact-interval"};
  std::vector<std::string> restart;
  for (const std::string& name : changed) {
    const bool insights_toggled = name == "--insights-interval" &&
                                  (next.insights_interval == base::Duration::zero()) != !insights_;
    if (!kReloadable.contains(name) || insights_toggled) restart.push_back(name);
  }
  for (const std::string& f : failed) WARPSCOPE_LOG(ERROR, "reload: {}", f);
  if (!restart.empty()) {
    WARPSCOPE_LOG(WARNING,
                  "reload: {} changed; that takes a restart (systemctl restart "
                  "warpscope-server)",
                  fmt::join(restart, ", "));
  }
  std::string line = applied.empty() ? std::string("nothing to apply")
                                     : fmt::format("applied {}", fmt::join(applied, ", "));
  WARPSCOPE_LOG(INFO, "configuration reloaded: {}", line);
  return line;
}

int RunServer(const server::ServerConfig& config, const Reloader& reloader) {
  const sigset_t signals = BlockTerminationSignals();

  base::RealClock& clock = base::RealClock::Get();
  base::ThreadTaskRunner runner(clock);
  auto server = ServerProcess::Start(config, runner, clock);
  if (!server) {
    std::fprintf(stderr, "warpscope server: %s\n", server.error().message().c_str());
    return 1;
  }
  std::function<void()> reload;
  if (reloader.parse_again) {
    reload = [&] {
      base::Result<std::unique_ptr<CliApp>> again = reloader.parse_again();
      server::ServerConfig next;
      base::Status st = again ? (*again)->server_flags.Finish(next) : again.error();
      if (!st.ok()) {
        WARPSCOPE_LOG(ERROR, "reload refused, the running configuration stays: {}", st.message());
        return;
      }
      (*server)->Reload(next,
                        ChangedOptions(*reloader.at_start->server_cmd, *(*again)->server_cmd));
    };
  }
  RunUntilSignal(
      runner, signals, [&] { (*server)->Stop(); }, std::move(reload));
  return 0;
}

sigset_t BlockTerminationSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  return signals;
}

void RunUntilSignal(base::ThreadTaskRunner& runner, const sigset_t& signals,
                    std::function<void()> on_stop, std::function<void()> on_reload) {
  std::jthread signal_thread([&](std::stop_token stop) {
    while (!stop.stop_requested()) {
      timespec timeout{0, 200 * 1000 * 1000};
      int sig = sigtimedwait(&signals, nullptr, &timeout);
      if (sig == SIGHUP) {
        if (on_reload) {
          WARPSCOPE_LOG(INFO, "received SIGHUP, reloading the configuration");
          runner.PostTask([&] { on_reload(); });
        } else {
          WARPSCOPE_LOG(INFO, "received SIGHUP: nothing to reload here");
        }
        continue;
      }
      if (sig == SIGINT || sig == SIGTERM) {
        WARPSCOPE_LOG(INFO, "received signal {}, shutting down", sig);
        runner.PostTask([&] {
          on_stop();
          runner.Quit();
        });
        return;
      }
    }
  });
  runner.Run();
  signal_thread.request_stop();
}

}  // namespace warpscope::cli

// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_CLI_COMMANDS_H_
#define WARPSCOPE_CLI_COMMANDS_H_

#include <signal.h>

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "agent/agent_config.h"
#include "base/task_runner.h"
#include "cli/simulation.h"
#include "model/metric.h"
#include "profiling/window_profile.h"
#include "server/server_config.h"

namespace warpscope::agent {
class Agent;
class ProcfsProcessResolver;
namespace kubernetes {
class PodDirectory;
}  // namespace kubernetes
}  // namespace warpscope::agent
namespace warpscope::model {
class ProcessResolver;
}  // namespace warpscope::model
namespace warpscope::exporters {
class MetricsHttpServer;
class MetricsSnapshotStore;
class ServerExporter;
}  // namespace warpscope::exporters
namespace warpscope::server {
class ApiServer;
class OtlpGrpcServer;
class Storage;
namespace insights {
class FindingStore;
class InsightEngine;
}  // namespace insights
namespace traces {
class TraceStore;
}  // namespace traces
namespace alerts {
class AlertNotifier;
class AlertSender;
}  // namespace alerts
}  // namespace warpscope::server

namespace warpscope::cli {

inline constexpr std::string_view kVersion = "0.1.0";

struct CliApp;

// What a daemon needs to reload its configuration on SIGHUP: the command line as parsed at
// start and a way to parse it again (cli_app.h, ParseAgain), the config file and environment
// read afresh. A Reloader without `parse_again` makes SIGHUP a logged no-op.
struct Reloader {
  const CliApp* at_start = nullptr;
  std::function<base::Result<std::unique_ptr<CliApp>>()> parse_again;
};

// `warpscope agent`: runs until SIGINT/SIGTERM (or, with `once`, collects two cycles one collect
// interval apart, prints the Prometheus exposition and returns). Returns the exit code.
// SIGHUP applies a new log level and names the changed settings that need a restart.
int RunAgent(const agent::AgentConfig& config, bool once, const Reloader& reloader = {});

// `warpscope server`: runs until SIGINT/SIGTERM; SIGHUP reloads what can change at run time
// (ServerProcess::Reload). Returns the exit code.
int RunServer(const server::ServerConfig& config, const Reloader& reloader = {});

// `warpscope up`: server + local agent in one process (see up_main.cc).
struct UpOptions {
  std::string simulate;  // scenario name or path; "" = real NVML only with enable_gpu_metrics
  bool enable_gpu_metrics = false;
  bool cpu_profiler = true;  // --no-cpu-profiler turns it off
  // CUDA PC sampling (stall reasons): on with `simulate` unless --no-cuda-pc-sampling, else
  // only with --cuda-pc-sampling (a real GPU needs the driver's profiling permission).
  bool cuda_pc_sampling = false;
  bool no_cuda_pc_sampling = false;
  std::string data_dir;
  int server_port = 9410;
  int agent_port = 9400;
  // With `simulate`: the scenario's demo workloads to run, "all", "none" or GPU indices.
  std::string workloads = "all";
  // Alertmanagers the server pushes findings to (docs/alerts.md).
  std::vector<std::string> alertmanager_urls;
};
int RunUp(const UpOptions& options);
std::string DefaultUpDataDir();

// `warpscope profile -- CMD ARGS...`: runs CMD with the CUDA library injected and the CPU
// profiler on its process tree, writes the offline report (profile_main.cc, docs/profile.md).
struct ProfileOptions {
  std::vector<std::string> command;  // CMD and its arguments
  std::string output;                // "" = ./warpscope-profile-<time>
  double duration_s = 0;             // > 0: stop profiling after this long (CMD keeps running)
  int cpu_frequency = 99;            // Hz per CPU: one program, often a short run
  bool cpu_profiler = true;
  bool cuda_profiler = true;
  std::string cupti_library;  // "" = OwnInstallLayout().cupti_inject
  // The run's trace: trace.perfetto-trace, or trace.json (Chrome JSON).
  profiling::TraceFormat trace_format = profiling::TraceFormat::kPerfetto;
};
// Returns CMD's exit status (128+N for a signal), 2 for bad input, 126/127 when CMD cannot run.
int RunProfile(const ProfileOptions& options);

// `warpscope top`: a live terminal view of the GPUs, their processes and findings (top_main.cc,
// docs/top.md). Local (NVML, or the simulator with `simulate`) or one host of a server.
struct TopOptions {
  std::string interval = "1s";  // refresh interval, a duration of at least 100ms
  std::string simulate;         // scenario name or path
  std::string nvml_path;        // libnvidia-ml.so.1 to open; "" = the loader's search
  std::string server;           // "" = this host; else a server URL (needs `host`)
  std::string host;
  std::string auth_token_file;
  std::string tls_ca_file;
};
// Returns 0 after q, 130 after SIGINT/SIGTERM, 2 for bad flags or no terminal, 1 when NVML or
// the server cannot be used.
int RunTop(const TopOptions& options);

// One catalog of metrics the agent can write, with its section of the reference.
struct MetricCatalog {
  std::string_view title;
  std::string_view intro;
  std::span<const model::MetricDesc* const> metrics;
};
// Every catalog, in the order of the reference: the one list the reference and its tests use.
std::vector<MetricCatalog> AllMetricCatalogs();

// `warpscope metrics`: the reference of every metric (docs/metrics.md is this output).
std::string MetricsReference(std::string_view format);

// The agent's parts in one process: sources, exporters, the /metrics server; started on
// `runner` (cycles run there). `force_prometheus_exporter` renders /metrics text even when no
// listen address is set (for --once).
class AgentProcess {
 public:
  [[nodiscard]] static base::Result<std::unique_ptr<AgentProcess>> Start(
      const agent::AgentConfig& config, base::TaskRunner& runner, const base::Clock& clock,
      bool force_prometheus_exporter = false);
  ~AgentProcess();
  // Stops sources, flushes a final window to the push exporters, stops /metrics.
  void Stop();
  agent::Agent& agent() { return *agent_; }
  // The exporter pushing windows to --server; null without one.
  const exporters::ServerExporter* server_exporter() const { return server_exporter_; }
  // The port /metrics listens on (the one bound for port 0); 0 without one.
  int metrics_port() const;
  // The last cycle in the Prometheus text format.
  const std::string& LatestExposition() const;

 private:
  AgentProcess();
  std::optional<Simulation> simulation_;  // --simulate: owns the simulated host's directory
  // --kubernetes: the node's pods (its watcher thread); stopped before the sources.
  std::unique_ptr<agent::kubernetes::PodDirectory> pods_;
  std::shared_ptr<model::ProcessResolver> resolver_;       // main sequence (NVML's Finish)
  std::shared_ptr<model::ProcessResolver> host_resolver_;  // the host source's worker
  std::unique_ptr<agent::Agent> agent_;
  std::shared_ptr<exporters::MetricsSnapshotStore> store_;
  std::unique_ptr<exporters::MetricsHttpServer> http_;
  exporters::ServerExporter* server_exporter_ = nullptr;  // owned by agent_
};

// The server's parts in one process: storage, HTTP API, compaction scheduled on `runner`.
class ServerProcess {
 public:
  [[nodiscard]] static base::Result<std::unique_ptr<ServerProcess>> Start(
      const server::ServerConfig& config, base::TaskRunner& runner, const base::Clock& clock);
  ~ServerProcess();
  void Stop();
  int port() const { return port_; }
  // The OTLP/gRPC listener's bound port; 0 when it is off.
  int otlp_grpc_port() const;
  // Applies what `next` (the configuration parsed again on SIGHUP) changes and can change at
  // run time: the bearer token (the token file is read again, so a rotated token is picked up),
  // the insight thresholds of [server.insights], --gpu-hour-price, --insights-interval and
  // --compact-interval. `changed` names the options that differ from those at start; the ones
  // of them that need a restart are logged as such. Returns a line saying what was applied. On
  // the main sequence.
  std::string Reload(const server::ServerConfig& next, const std::vector<std::string>& changed);

 private:
  ServerProcess(base::TaskRunner& runner, const base::Clock& clock);
  void ScheduleCompaction();
  void ScheduleInsights();
  // After an evaluation: the alerts due now go to Alertmanager.
  void NotifyAlerts();

  base::TaskRunner& runner_;
  const base::Clock& clock_;
  server::ServerConfig config_;  // as started, but for what Reload applied
  std::unique_ptr<server::Storage> storage_;  // --storage: SQLite or ClickHouse
  std::unique_ptr<server::traces::TraceStore> traces_;
  std::unique_ptr<server::insights::FindingStore> finding_store_;
  std::unique_ptr<server::insights::InsightEngine> insights_;  // null when insights are off
  // Null without --alertmanager-url.
  std::unique_ptr<server::alerts::AlertNotifier> alert_notifier_;
  std::unique_ptr<server::alerts::AlertSender> alert_sender_;
  std::unique_ptr<server::ApiServer> api_;
  // Null without --otlp-grpc-listen-address.
  std::unique_ptr<server::OtlpGrpcServer> otlp_grpc_;
  int port_ = 0;
  base::Duration compact_interval_{0};
  base::Duration insights_interval_{0};
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

// Blocks SIGINT, SIGTERM and SIGHUP in the calling thread (and so in every thread it starts later),
// so that only RunUntilSignal's sigwait receives them. Call before starting any thread.
sigset_t BlockTerminationSignals();

// Runs `runner` until SIGINT or SIGTERM (which must be blocked in every thread, see
// pthread_sigmask), then runs `on_stop` on the runner and returns. SIGHUP (blocked too, so it
// never ends the process) runs `on_reload` on the runner, or is logged as ignored without one.
void RunUntilSignal(base::ThreadTaskRunner& runner, const sigset_t& signals,
                    std::function<void()> on_stop, std::function<void()> on_reload = {});

}  // namespace warpscope::cli

#endif  // WARPSCOPE_CLI_COMMANDS_H_

// SPDX-License-Identifier: Apache-2.0
// `warpscope`: one binary, one subcommand per role. Parses flags, wires objects, runs the loop.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>

#include "agent/agent_config.h"
#include "base/logging.h"
#include "cli/agent_flags.h"
#include "cli/commands.h"
#include "cli/completion.h"
#include "cli/export_flags.h"
#include "cli/mcp_main.h"
#include "cli/profile_flags.h"
#include "cli/server_flags.h"
#include "server/alerts/alert_sender.h"

namespace {

warpscope::base::LogSeverity SeverityFromName(const std::string& name) {
  using warpscope::base::LogSeverity;
  if (name == "error") return LogSeverity::kError;
  if (name == "warning") return LogSeverity::kWarning;
  if (name == "verbose") return LogSeverity::kVerbose;
  return LogSeverity::kInfo;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("warpscope: GPU metrics, CUDA kernel profiles and insights in one place");
  app.require_subcommand(1);
  app.set_config("--config", "",
                 "Read options from this TOML file (sections per subcommand, e.g. [agent]); "
                 "flags and WARPSCOPE_* environment variables override it");
  app.set_version_flag("--version", std::string(warpscope::cli::kVersion));
  // A misspelt key in the config file is an error, not silently ignored.
  app.allow_config_extras(CLI::config_extras_mode::error);

  CLI::App* agent_cmd = app.add_subcommand(
      "agent", "Per-host daemon: GPU (NVML) and host metrics, served on /metrics and pushed");
  warpscope::cli::AgentFlags agent_flags;
  agent_flags.Register(*agent_cmd);

  CLI::App* server_cmd = app.add_subcommand(
      "server", "Ingest, embedded storage and the query API for a fleet of agents");
  warpscope::cli::ServerFlags server_flags;
  server_flags.Register(*server_cmd);
  // The insight thresholds come from the config file's [server.insights] section.
  app.config_formatter(server_flags.ConfigReader());

  CLI::App* up_cmd = app.add_subcommand(
      "up", "Everything on this machine: a server and a local agent pushing to it, on loopback");
  warpscope::cli::UpOptions up_options;
  up_options.data_dir = warpscope::cli::DefaultUpDataDir();
  up_cmd
      ->add_option("--simulate", up_options.simulate,
                   "Run the agent on the NVML simulator with this scenario (e.g. "
                   "healthy-8xh100)")
      ->envname("WARPSCOPE_SIMULATE");
  up_cmd->add_flag("--enable-gpu-metrics", up_options.enable_gpu_metrics,
                   "Collect real GPU metrics through NVML");
  up_cmd->add_flag("!--no-cpu-profiler", up_options.cpu_profiler,
                   "Do not sample this machine's CPUs (the CPU profiler is on by default)");
  auto* pc_on = up_cmd->add_flag(
      "--cuda-pc-sampling", up_options.cuda_pc_sampling,
      "PC sampling (warp stall reasons per SASS instruction) in the CUDA profiles of injected "
      "applications; on by default with --simulate");
  up_cmd
      ->add_flag("--no-cuda-pc-sampling", up_options.no_cuda_pc_sampling,
                 "No PC sampling, not even with --simulate")
      ->excludes(pc_on);
  up_cmd->add_option("--data-dir", up_options.data_dir, "Database, token and spool")
      ->envname("WARPSCOPE_UP_DATA_DIR")
      ->capture_default_str();
  up_cmd->add_option("--port", up_options.server_port, "Server (API) port on 127.0.0.1")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  up_cmd->add_option("--agent-port", up_options.agent_port, "Agent /metrics port on 127.0.0.1")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  up_cmd
      ->add_option("--workloads", up_options.workloads,
                   "With --simulate: the demo workloads to run (all, none, or GPU indices such "
                   "as 0,3)")
      ->envname("WARPSCOPE_UP_WORKLOADS")
      ->capture_default_str();
  up_cmd
      ->add_option("--alertmanager-url", up_options.alertmanager_urls,
                   "Push findings as alerts to this Alertmanager (http://host:9093; repeatable)")
      ->envname("WARPSCOPE_ALERTMANAGER_URL")
      ->delimiter(',');

  CLI::App* profile_cmd = app.add_subcommand(
      "profile",
      "Run a command with the CPU and CUDA profilers on it and write an offline report "
      "(warpscope profile [options] -- CMD ARGS...)");
  warpscope::cli::ProfileFlags profile_flags;
  profile_flags.Register(*profile_cmd);

  CLI::App* export_cmd = app.add_subcommand(
      "export",
      "Prometheus alerting rules and Grafana dashboards for an existing monitoring stack");
  warpscope::cli::ExportFlags export_flags;
  export_flags.Register(*export_cmd);

  CLI::App* metrics_cmd =
      app.add_subcommand("metrics", "Print the reference of every metric warpscope can produce");
  std::string metrics_format = "markdown";
  metrics_cmd->add_option("--format", metrics_format, "markdown or tsv")
      ->check(CLI::IsMember({"markdown", "tsv"}))
      ->capture_default_str();

  CLI::App* mcp_cmd = app.add_subcommand(
      "mcp",
      "MCP over stdio for AI agents: one JSON-RPC message per line, forwarded to a "
      "server's /mcp (docs/mcp.md)");
  warpscope::cli::McpOptions mcp_options;
  mcp_cmd->add_option("--server", mcp_options.server, "The warpscope server's URL")
      ->envname("WARPSCOPE_SERVER")
      ->capture_default_str();
  mcp_cmd->add_option("--auth-token-file", mcp_options.auth_token_file,
                      "File with the server's bearer token (needed when it has one)");
  mcp_cmd->add_option("--tls-ca-file", mcp_options.tls_ca_file,
                      "PEM file of the CAs to trust for an https server");

  CLI::App* top_cmd = app.add_subcommand(
      "top",
      "Live terminal view of this host's GPUs, their processes and findings, like nvtop "
      "(keys: q quit, h help; docs/top.md)");
  warpscope::cli::TopOptions top_options;
  top_cmd->add_option("--interval", top_options.interval, "Refresh interval (e.g. 1s, 500ms)")
      ->capture_default_str();
  top_cmd
      ->add_option("--simulate", top_options.simulate,
                   "Show the NVML simulator running this scenario (e.g. healthy-8xh100) instead "
                   "of this host's GPUs")
      ->envname("WARPSCOPE_SIMULATE");
  top_cmd->add_option("--nvml-path", top_options.nvml_path,
                      "libnvidia-ml.so.1 to open (default: the dynamic loader's search)");
  auto* top_server =
      top_cmd
          ->add_option("--server", top_options.server,
                       "Show a host of this warpscope server (its latest metrics, processes and "
                       "open findings) instead of this host")
          ->envname("WARPSCOPE_SERVER");
  top_cmd->add_option("--host", top_options.host, "With --server: the host to show")
      ->needs(top_server);
  top_cmd->add_option("--auth-token-file", top_options.auth_token_file,
                      "File with the server's bearer token (needed with --auth-read)");
  top_cmd->add_option("--tls-ca-file", top_options.tls_ca_file,
                      "PEM file of the CAs to trust for an https server");

  CLI::App* completion_cmd = app.add_subcommand(
      "completion",
      "Print the bash completion script of every subcommand and flag (the package installs it "
      "as /usr/share/bash-completion/completions/warpscope)");
  std::string completion_shell = "bash";
  completion_cmd->add_option("shell", completion_shell, "The shell: bash")
      ->check(CLI::IsMember({"bash"}))
      ->capture_default_str();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    if (rc != 0) {
      std::fprintf(stderr, "Run '%s --help' for the options.\n", argv[0]);
    }
    return rc;
  }

  if (*completion_cmd) {
    std::cout << warpscope::cli::BashCompletion(app, "warpscope");
    return 0;
  }
  if (*top_cmd) {
    return warpscope::cli::RunTop(top_options);
  }
  if (*mcp_cmd) {
    return warpscope::cli::RunMcp(mcp_options, std::cin, std::cout);
  }
  if (*export_cmd) {
    return warpscope::cli::RunExport(export_flags, server_flags, std::cout, std::cerr);
  }
  if (*metrics_cmd) {
    std::cout << warpscope::cli::MetricsReference(metrics_format);
    return 0;
  }
  if (*profile_cmd) {
    warpscope::base::SetMinLogSeverity(SeverityFromName(profile_flags.log_level));
    warpscope::cli::ProfileOptions options;
    warpscope::base::Status st = profile_flags.Finish(
        *profile_cmd, warpscope::cli::ProfileFlags::SeparatorBeforeCommand(argc, argv), options);
    if (!st.ok()) {
      std::fprintf(stderr, "warpscope profile: %s\n", st.message().c_str());
      return 2;
    }
    return warpscope::cli::RunProfile(options);
  }
  if (*up_cmd) {
    for (const std::string& url : up_options.alertmanager_urls) {
      warpscope::base::Status st = warpscope::server::alerts::ValidateAlertmanagerUrl(url);
      if (!st.ok()) {
        std::fprintf(stderr, "warpscope up: %s\n", st.message().c_str());
        return 2;
      }
    }
    return warpscope::cli::RunUp(up_options);
  }
  if (*server_cmd) {
    warpscope::server::ServerConfig config;
    warpscope::base::Status st = server_flags.Finish(config);
    if (!st.ok()) {
      std::fprintf(stderr, "warpscope server: %s\n", st.message().c_str());
      return 2;
    }
    return warpscope::cli::RunServer(config);
  }
  if (*agent_cmd) {
    warpscope::base::SetMinLogSeverity(SeverityFromName(agent_flags.log_level));
    warpscope::base::SetVerboseLevel(agent_flags.verbosity);
    warpscope::agent::AgentConfig config;
    warpscope::base::Status st = agent_flags.Finish(config);
    if (!st.ok()) {
      std::fprintf(stderr, "warpscope agent: %s\n", st.message().c_str());
      return 2;
    }
    return warpscope::cli::RunAgent(config, agent_flags.once);
  }
  return 0;
}

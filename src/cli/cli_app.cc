// SPDX-License-Identifier: Apache-2.0
#include "cli/cli_app.h"

#include <utility>

namespace warpscope::cli {

base::LogSeverity LogSeverityFromName(const std::string& name) {
  if (name == "error") return base::LogSeverity::kError;
  if (name == "warning") return base::LogSeverity::kWarning;
  if (name == "verbose") return base::LogSeverity::kVerbose;
  return base::LogSeverity::kInfo;
}

std::unique_ptr<CliApp> MakeCliApp() {
  auto made = std::make_unique<CliApp>();
  CliApp& c = *made;
  c.app.require_subcommand(1);
  c.app.set_config("--config", "",
                   "Read options from this TOML file (sections per subcommand, e.g. [agent]); "
                   "flags and WARPSCOPE_* environment variables override it");
  c.app.set_version_flag("--version", std::string(kVersion));
  // A misspelt key in the config file is an error, not silently ignored.
  c.app.allow_config_extras(CLI::config_extras_mode::error);

  c.agent_cmd = c.app.add_subcommand(
      "agent", "Per-host daemon: GPU (NVML) and host metrics, served on /metrics and pushed");
  c.agent_flags.Register(*c.agent_cmd);

  c.server_cmd = c.app.add_subcommand(
      "server", "Ingest, embedded storage and the query API for a fleet of agents");
  c.server_flags.Register(*c.server_cmd);
  // The insight thresholds come from the config file's [server.insights] section.
  c.app.config_formatter(c.server_flags.ConfigReader());

  c.up_cmd = c.app.add_subcommand(
      "up", "Everything on this machine: a server and a local agent pushing to it, on loopback");
  c.up_options.data_dir = DefaultUpDataDir();
  c.up_cmd
      ->add_option("--simulate", c.up_options.simulate,
                   "Run the agent on the NVML simulator with this scenario (e.g. "
                   "healthy-8xh100)")
      ->envname("WARPSCOPE_SIMULATE");
  c.up_cmd->add_flag("--enable-gpu-metrics", c.up_options.enable_gpu_metrics,
                     "Collect real GPU metrics through NVML");
  c.up_cmd->add_flag("!--no-cpu-profiler", c.up_options.cpu_profiler,
                     "Do not sample this machine's CPUs (the CPU profiler is on by default)");
  auto* pc_on = c.up_cmd->add_flag(
      "--cuda-pc-sampling", c.up_options.cuda_pc_sampling,
      "PC sampling (warp stall reasons per SASS instruction) in the CUDA profiles of injected "
      "applications; on by default with --simulate");
  c.up_cmd
      ->add_flag("--no-cuda-pc-sampling", c.up_options.no_cuda_pc_sampling,
                 "No PC sampling, not even with --simulate")
      ->excludes(pc_on);
  c.up_cmd->add_option("--data-dir", c.up_options.data_dir, "Database, token and spool")
      ->envname("WARPSCOPE_UP_DATA_DIR")
      ->capture_default_str();
  c.up_cmd->add_option("--port", c.up_options.server_port, "Server (API) port on 127.0.0.1")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  c.up_cmd->add_option("--agent-port", c.up_options.agent_port, "Agent /metrics port on 127.0.0.1")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  c.up_cmd
      ->add_option("--workloads", c.up_options.workloads,
                   "With --simulate: the demo workloads to run (all, none, or GPU indices such "
                   "as 0,3)")
      ->envname("WARPSCOPE_UP_WORKLOADS")
      ->capture_default_str();
  c.up_cmd
      ->add_option("--alertmanager-url", c.up_options.alertmanager_urls,
                   "Push findings as alerts to this Alertmanager (http://host:9093; repeatable)")
      ->envname("WARPSCOPE_ALERTMANAGER_URL")
      ->delimiter(',');

  c.profile_cmd = c.app.add_subcommand(
      "profile",
      "Run a command with the CPU and CUDA profilers on it and write an offline report "
      "(warpscope profile [options] -- CMD ARGS...)");
  c.profile_flags.Register(*c.profile_cmd);

  c.export_cmd = c.app.add_subcommand(
      "export",
      "Prometheus alerting rules and Grafana dashboards for an existing monitoring stack");
  c.export_flags.Register(*c.export_cmd);

  c.metrics_cmd =
      c.app.add_subcommand("metrics", "Print the reference of every metric warpscope can produce");
  c.metrics_cmd->add_option("--format", c.metrics_format, "markdown or tsv")
      ->check(CLI::IsMember({"markdown", "tsv"}))
      ->capture_default_str();

  c.mcp_cmd = c.app.add_subcommand(
      "mcp",
      "MCP over stdio for AI agents: one JSON-RPC message per line, forwarded to a "
      "server's /mcp (docs/mcp.md)");
  c.mcp_cmd->add_option("--server", c.mcp_options.server, "The warpscope server's URL")
      ->envname("WARPSCOPE_SERVER")
      ->capture_default_str();
  c.mcp_cmd->add_option("--auth-token-file", c.mcp_options.auth_token_file,
                        "File with the server's bearer token (needed when it has one)");
  c.mcp_cmd->add_option("--tls-ca-file", c.mcp_options.tls_ca_file,
                        "PEM file of the CAs to trust for an https server");

  c.top_cmd = c.app.add_subcommand(
      "top",
      "Live terminal view of this host's GPUs, their processes and findings, like nvtop "
      "(keys: q quit, h help; docs/top.md)");
  c.top_cmd->add_option("--interval", c.top_options.interval, "Refresh interval (e.g. 1s, 500ms)")
      ->capture_default_str();
  c.top_cmd
      ->add_option("--simulate", c.top_options.simulate,
                   "Show the NVML simulator running this scenario (e.g. healthy-8xh100) instead "
                   "of this host's GPUs")
      ->envname("WARPSCOPE_SIMULATE");
  c.top_cmd->add_option("--nvml-path", c.top_options.nvml_path,
                        "libnvidia-ml.so.1 to open (default: the dynamic loader's search)");
  auto* top_server =
      c.top_cmd
          ->add_option("--server", c.top_options.server,
                       "Show a host of this warpscope server (its latest metrics, processes and "
                       "open findings) instead of this host")
          ->envname("WARPSCOPE_SERVER");
  c.top_cmd->add_option("--host", c.top_options.host, "With --server: the host to show")
      ->needs(top_server);
  c.top_cmd->add_option("--auth-token-file", c.top_options.auth_token_file,
                        "File with the server's bearer token (needed with --auth-read)");
  c.top_cmd->add_option("--tls-ca-file", c.top_options.tls_ca_file,
                        "PEM file of the CAs to trust for an https server");

  c.completion_cmd = c.app.add_subcommand(
      "completion",
      "Print the bash completion script of every subcommand and flag (the package installs it "
      "as /usr/share/bash-completion/completions/warpscope)");
  c.completion_cmd->add_option("shell", c.completion_shell, "The shell: bash")
      ->check(CLI::IsMember({"bash"}))
      ->capture_default_str();

  return made;
}

base::Result<std::unique_ptr<CliApp>> ParseAgain(int argc, const char* const* argv) {
  std::unique_ptr<CliApp> cli = MakeCliApp();
  try {
    cli->app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return base::Error(base::InvalidArgument("{}", e.what()));
  }
  return cli;
}

std::vector<std::string> ChangedOptions(const CLI::App& before, const CLI::App& after) {
  std::vector<std::string> changed;
  for (const CLI::Option* opt : before.get_options()) {
    const std::string name = opt->get_name();
    const CLI::Option* other = after.get_option_no_throw(name);
    if (other == nullptr) continue;
    // An option given neither time keeps its default; one given gets its values compared as
    // written (a flag's count included).
    if (opt->count() != other->count() || opt->results() != other->results()) {
      const std::vector<std::string>& long_names = opt->get_lnames();
      changed.push_back(long_names.empty() ? opt->get_name() : "--" + long_names.front());
    }
  }
  return changed;
}

}  // namespace warpscope::cli

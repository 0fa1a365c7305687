// SPDX-License-Identifier: Apache-2.0
// `warpscope`: one binary, one subcommand per role. Parses flags, wires objects, runs the loop.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>

#include "agent/agent_config.h"
#include "base/logging.h"
#include "cli/cli_app.h"
#include "cli/commands.h"
#include "cli/completion.h"
#include "server/alerts/alert_sender.h"

int main(int argc, char** argv) {
  std::unique_ptr<warpscope::cli::CliApp> cli = warpscope::cli::MakeCliApp();
  try {
    cli->app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = cli->app.exit(e);
    if (rc != 0) {
      std::fprintf(stderr, "Run '%s --help' for the options.\n", argv[0]);
    }
    return rc;
  }

  // SIGHUP: the daemons parse the same command line again (config file and environment as
  // they are then) and apply what can change while they run.
  const warpscope::cli::Reloader reloader{.at_start = cli.get(), .parse_again = [argc, argv] {
                                            return warpscope::cli::ParseAgain(argc, argv);
                                          }};

  if (*cli->completion_cmd) {
    std::cout << warpscope::cli::BashCompletion(cli->app, "warpscope");
    return 0;
  }
  if (*cli->top_cmd) {
    return warpscope::cli::RunTop(cli->top_options);
  }
  if (*cli->mcp_cmd) {
    return warpscope::cli::RunMcp(cli->mcp_options, std::cin, std::cout);
  }
  if (*cli->export_cmd) {
    return warpscope::cli::RunExport(cli->export_flags, cli->server_flags, std::cout, std::cerr);
  }
  if (*cli->metrics_cmd) {
    std::cout << warpscope::cli::MetricsReference(cli->metrics_format);
    return 0;
  }
  if (*cli->profile_cmd) {
    warpscope::base::SetMinLogSeverity(
        warpscope::cli::LogSeverityFromName(cli->profile_flags.log_level));
    warpscope::cli::ProfileOptions options;
    warpscope::base::Status st = cli->profile_flags.Finish(
        *cli->profile_cmd, warpscope::cli::ProfileFlags::SeparatorBeforeCommand(argc, argv),
        options);
    if (!st.ok()) {
      std::fprintf(stderr, "warpscope profile: %s\n", st.message().c_str());
      return 2;
    }
    return warpscope::cli::RunProfile(options);
  }
  if (*cli->up_cmd) {
    for (const std::string& url : cli->up_options.alertmanager_urls) {
      warpscope::base::Status st = warpscope::server::alerts::ValidateAlertmanagerUrl(url);
      if (!st.ok()) {
        std::fprintf(stderr, "warpscope up: %s\n", st.message().c_str());
        return 2;
      }
    }
    return warpscope::cli::RunUp(cli->up_options);
  }
  if (*cli->server_cmd) {
    warpscope::server::ServerConfig config;
    warpscope::base::Status st = cli->server_flags.Finish(config);
    if (!st.ok()) {
      std::fprintf(stderr, "warpscope server: %s\n", st.message().c_str());
      return 2;
    }
    return warpscope::cli::RunServer(config, reloader);
  }
  if (*cli->agent_cmd) {
    warpscope::base::SetMinLogSeverity(
        warpscope::cli::LogSeverityFromName(cli->agent_flags.log_level));
    warpscope::base::SetVerboseLevel(cli->agent_flags.verbosity);
    warpscope::agent::AgentConfig config;
    warpscope::base::Status st = cli->agent_flags.Finish(config);
    if (!st.ok()) {
      std::fprintf(stderr, "warpscope agent: %s\n", st.message().c_str());
      return 2;
    }
    return warpscope::cli::RunAgent(config, cli->agent_flags.once, reloader);
  }
  return 0;
}

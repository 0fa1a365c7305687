// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_CLI_CLI_APP_H_
#define WARPSCOPE_CLI_CLI_APP_H_

#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "base/logging.h"
#include "base/status.h"
#include "cli/agent_flags.h"
#include "cli/commands.h"
#include "cli/export_flags.h"
#include "cli/mcp_main.h"
#include "cli/profile_flags.h"
#include "cli/server_flags.h"

namespace warpscope::cli {

// The `warpscope` command line: every subcommand, its flags and the variables they fill. Built
// once by main, and again when a daemon reloads on SIGHUP (the config file and the environment
// read afresh). Options are bound to its members, so it lives where it was made.
struct CliApp {
  CliApp() = default;
  CliApp(const CliApp&) = delete;
  CliApp& operator=(const CliApp&) = delete;

  CLI::App app{"warpscope: GPU metrics, CUDA kernel profiles and insights in one place"};
  CLI::App* agent_cmd = nullptr;
  AgentFlags agent_flags;
  CLI::App* server_cmd = nullptr;
  ServerFlags server_flags;
  CLI::App* up_cmd = nullptr;
  UpOptions up_options;
  CLI::App* profile_cmd = nullptr;
  ProfileFlags profile_flags;
  CLI::App* export_cmd = nullptr;
  ExportFlags export_flags;
  CLI::App* metrics_cmd = nullptr;
  std::string metrics_format = "markdown";
  CLI::App* mcp_cmd = nullptr;
  McpOptions mcp_options;
  CLI::App* top_cmd = nullptr;
  TopOptions top_options;
  CLI::App* completion_cmd = nullptr;
  std::string completion_shell = "bash";
};

std::unique_ptr<CliApp> MakeCliApp();

// --log-level's value as a severity ("info" for anything it does not know).
base::LogSeverity LogSeverityFromName(const std::string& name);

// The command line `argv` parsed again by a new CliApp: what a daemon's settings are now that
// its config file may have changed. InvalidArgument with CLI11's message on a parse error.
[[nodiscard]] base::Result<std::unique_ptr<CliApp>> ParseAgain(int argc, const char* const* argv);

// The long names of the options of `before` whose values differ in `after` (both parsed, `after`
// by ParseAgain from the same argv), e.g. {"--listen-address"}; [section] keys of the config
// file that are not options are not compared.
std::vector<std::string> ChangedOptions(const CLI::App& before, const CLI::App& after);

}  // namespace warpscope::cli

#endif  // WARPSCOPE_CLI_CLI_APP_H_

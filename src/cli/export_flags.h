// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_CLI_EXPORT_FLAGS_H_
#define WARPSCOPE_CLI_EXPORT_FLAGS_H_

#include <CLI/CLI.hpp>
#include <ostream>
#include <string>

#include "cli/server_flags.h"
#include "integrations/prometheus_rules.h"

namespace warpscope::cli {

// `warpscope export prometheus-rules` and `warpscope export grafana`: what warpscope writes for
// an existing Prometheus and Grafana (docs/alerts.md). The thresholds of the rules are the
// `[server.insights]` section of the config file the server reads (`--config FILE`, accepted
// before `export` or after the export's name).
class ExportFlags {
 public:
  // Adds the two exports to `export_cmd`, the `export` subcommand.
  void Register(CLI::App& export_cmd);

 private:
  friend int RunExport(const ExportFlags& flags, const ServerFlags& server_flags, std::ostream& out,
                       std::ostream& err);
  CLI::App* rules_cmd_ = nullptr;
  CLI::App* grafana_cmd_ = nullptr;
  std::string rules_output_;  // "" or "-": stdout
  integrations::PrometheusRulesOptions rules_options_;
  bool no_keep_firing_for_ = false;
  std::string grafana_output_dir_ = ".";
};

// Runs the export the command line chose; `server_flags` holds the config file's insight
// thresholds. Returns 0, or 2 with a message on `err` for a bad config or an unwritable output.
int RunExport(const ExportFlags& flags, const ServerFlags& server_flags, std::ostream& out,
              std::ostream& err);

}  // namespace warpscope::cli

#endif  // WARPSCOPE_CLI_EXPORT_FLAGS_H_

// SPDX-License-Identifier: Apache-2.0
// `warpscope export`: the insight rules as Prometheus alerting rules and the Grafana
// dashboards, for a monitoring stack that already scrapes the agents (docs/alerts.md).
#include <filesystem>
#include <system_error>

#include "base/file_util.h"
#include "cli/export_flags.h"
#include "integrations/grafana_dashboards.h"

namespace warpscope::cli {

void ExportFlags::Register(CLI::App& export_cmd) {
  export_cmd.require_subcommand(1);
  rules_cmd_ = export_cmd.add_subcommand(
      "prometheus-rules",
      "Print (or --output) a Prometheus alerting-rules file: the insight rules PromQL can "
      "express, with the thresholds of the config file's [server.insights]");
  rules_cmd_->add_option("--output", rules_output_, "Write the rules to this file, not stdout");
  rules_cmd_
      ->add_option("--runbook-base-url", rules_options_.runbook_base_url,
                   "Where docs/insights.md is served: each alert's runbook_url is this with "
                   "#rules")
      ->capture_default_str();
  rules_cmd_->add_flag("--no-keep-firing-for", no_keep_firing_for_,
                       "Leave out keep_firing_for (for Prometheus before 2.42)");

  grafana_cmd_ = export_cmd.add_subcommand(
      "grafana",
      "Write the Grafana dashboards (fleet, host, GPU; linked to each other) as JSON files");
  grafana_cmd_
      ->add_option("--output-dir", grafana_output_dir_,
                   "Directory for the dashboard files (created if missing)")
      ->capture_default_str();
  // `--config FILE` after the export's name reaches the root's option.
  export_cmd.fallthrough();
  rules_cmd_->fallthrough();
  grafana_cmd_->fallthrough();
}

namespace {

base::Status WriteDashboards(const std::string& dir, std::ostream& out) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return base::InvalidArgument("--output-dir {}: cannot create it: {}", dir, ec.message());
  }
  for (const integrations::GrafanaDashboard& d : integrations::GrafanaDashboards()) {
    const std::string path = (std::filesystem::path(dir) / d.file_name).string();
    WARPSCOPE_RETURN_IF_ERROR(base::WriteFile(path, d.json.dump(2) + "\n"));
    out << path << "\n";
  }
  return base::OkStatus();
}

}  // namespace

int RunExport(const ExportFlags& flags, const ServerFlags& server_flags, std::ostream& out,
              std::ostream& err) {
  if (flags.grafana_cmd_ != nullptr && *flags.grafana_cmd_) {
    if (base::Status st = WriteDashboards(flags.grafana_output_dir_, out); !st.ok()) {
      err << "warpscope export grafana: " << st.message() << "\n";
      return 2;
    }
    return 0;
  }
  server::ServerConfig config;
  if (base::Status st = server_flags.Finish(config); !st.ok()) {
    err << "warpscope export prometheus-rules: " << st.message() << "\n";
    return 2;
  }
  integrations::PrometheusRulesOptions options = flags.rules_options_;
  options.keep_firing_for = !flags.no_keep_firing_for_;
  const std::string yaml = integrations::PrometheusRulesYaml(config.insights, options);
  if (flags.rules_output_.empty() || flags.rules_output_ == "-") {
    out << yaml;
    return 0;
  }
  if (base::Status st = base::WriteFile(flags.rules_output_, yaml); !st.ok()) {
    err << "warpscope export prometheus-rules: --output " << flags.rules_output_ << ": "
        << st.message() << "\n";
    return 2;
  }
  return 0;
}

}  // namespace warpscope::cli

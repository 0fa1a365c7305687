// SPDX-License-Identifier: Apache-2.0
// The insight rules that PromQL can express, as a Prometheus alerting-rules file over the names
// the agent serves on /metrics (dcgm-exporter's and warpscope_*). Thresholds and windows come
// from an InsightConfig and severities, `for` and clear durations from the engine's rules, so
// the exported alerts and the engine's findings agree (docs/alerts.md).
#ifndef WARPSCOPE_INTEGRATIONS_PROMETHEUS_RULES_H_
#define WARPSCOPE_INTEGRATIONS_PROMETHEUS_RULES_H_

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/time.h"
#include "server/insights/insight_config.h"

namespace warpscope::integrations {

// One alerting rule: an engine rule (or one of its conditions) in PromQL.
struct AlertRule {
  std::string alert;                 // the alert's name: "GpuCoolingFailure"
  std::string_view rule;             // the engine's rule: "cooling_failure"
  std::string_view severity;         // "page", "ticket" or "info", as the engine's
  base::Duration hold_for{};         // `for`: the engine's hold
  base::Duration keep_firing_for{};  // `keep_firing_for`: the engine's clear duration
  std::string expr;                  // its value is the figure the description quotes
  std::string summary;               // Prometheus templates ({{ $labels.Hostname }}, ...)
  std::string description;
};

// An engine rule without a PromQL twin, and why.
struct UnexportedRule {
  std::string_view rule;
  std::string_view reason;
};

struct PrometheusRulesOptions {
  // Each alert's runbook_url is this with "#rules": where docs/insights.md is served.
  std::string runbook_base_url = "docs/insights.md";
  // Writes `keep_firing_for` (Prometheus 2.42 and later) with the engine's clear durations.
  bool keep_firing_for = true;
};

// Every exported alert for `config`, in the engine's rule order.
std::vector<AlertRule> PrometheusAlertRules(const server::insights::InsightConfig& config);

// The engine rules that are not exported, with the reason (the file's header says them too).
std::span<const UnexportedRule> UnexportedRules();

// The rules file: a header comment, then one group `warpscope` with every alert.
std::string PrometheusRulesYaml(const server::insights::InsightConfig& config,
                                const PrometheusRulesOptions& options);

// A duration as PromQL writes it: "10m", "30s", "3m20s", "1500ms".
std::string PromDuration(base::Duration d);

}  // namespace warpscope::integrations

#endif  // WARPSCOPE_INTEGRATIONS_PROMETHEUS_RULES_H_

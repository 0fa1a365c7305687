// SPDX-License-Identifier: Apache-2.0
#include "integrations/prometheus_rules.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <map>
#include <set>

#include "server/insights/finding.h"
#include "server/insights/rule.h"

namespace warpscope::integrations {
namespace {

using server::insights::InsightConfig;
using ::testing::HasSubstr;
using ::testing::Not;

YAML::Node Parse(const std::string& text) {
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    ADD_FAILURE() << "not YAML: " << e.what() << "\n" << text;
    return YAML::Node();
  }
}

const AlertRule& Find(const std::vector<AlertRule>& rules, std::string_view alert) {
  for (const AlertRule& r : rules) {
    if (r.alert == alert) return r;
  }
  static const AlertRule kNone;
  ADD_FAILURE() << "no alert " << alert;
  return kNone;
}

TEST(PromDurationTest, WritesPromqlDurations) {
  EXPECT_EQ(PromDuration(std::chrono::minutes(10)), "10m");
  EXPECT_EQ(PromDuration(std::chrono::seconds(30)), "30s");
  EXPECT_EQ(PromDuration(std::chrono::seconds(200)), "3m20s");
  EXPECT_EQ(PromDuration(std::chrono::hours(1) + std::chrono::minutes(5)), "1h5m");
  EXPECT_EQ(PromDuration(std::chrono::milliseconds(1500)), "1s500ms");
  EXPECT_EQ(PromDuration(base::Duration::zero()), "0s");
}

TEST(PrometheusRulesTest, EveryRuleHasItsLabelsAndAnnotations) {
  PrometheusRulesOptions options;
  options.runbook_base_url = "https://docs.example/insights.md";
  YAML::Node doc = Parse(PrometheusRulesYaml(InsightConfig{}, options));
  ASSERT_TRUE(doc["groups"].IsSequence());
  ASSERT_EQ(doc["groups"].size(), 1u);
  EXPECT_EQ(doc["groups"][0]["name"].as<std::string>(), "warpscope");
  const YAML::Node rules = doc["groups"][0]["rules"];
  ASSERT_TRUE(rules.IsSequence());
  EXPECT_EQ(rules.size(), PrometheusAlertRules(InsightConfig{}).size());

  std::set<std::string> engine_rules;
  for (const auto& r : server::insights::DefaultRules()) engine_rules.emplace(r->info().name);
  std::set<std::string> alerts;
  for (const YAML::Node& r : rules) {
    const std::string alert = r["alert"].as<std::string>();
    SCOPED_TRACE(alert);
    EXPECT_TRUE(alerts.insert(alert).second) << "duplicate alert name";
    EXPECT_FALSE(r["expr"].as<std::string>().empty());
    EXPECT_THAT(std::set<std::string>({"page", "ticket", "info"}),
                ::testing::Contains(r["labels"]["severity"].as<std::string>()));
    EXPECT_TRUE(engine_rules.contains(r["labels"]["rule"].as<std::string>()));
    const std::string summary = r["annotations"]["summary"].as<std::string>();
    EXPECT_THAT(summary, HasSubstr("{{ $labels.Hostname }}"));
    const std::string description = r["annotations"]["description"].as<std::string>();
    EXPECT_TRUE(description.find("$value") != std::string::npos ||
                description.find("$labels.xid") != std::string::npos ||
                alert == "GpuRowRemapFailure")
        << description;
    EXPECT_EQ(r["annotations"]["runbook_url"].as<std::string>(),
              "https://docs.example/insights.md#rules");
  }
}

TEST(PrometheusRulesTest, SeveritiesAndDurationsAreTheEngines) {
  const InsightConfig config;
  const auto alerts = PrometheusAlertRules(config);
  for (const auto& rule : server::insights::DefaultRules()) {
    for (const AlertRule& a : alerts) {
      if (a.rule != rule->info().name) continue;
      SCOPED_TRACE(a.alert);
      if (a.alert != "GpuApplicationXid") {
        EXPECT_EQ(a.severity, server::insights::SeverityName(rule->info().severity));
      }
      EXPECT_EQ(a.hold_for, rule->HoldFor(config));
      EXPECT_EQ(a.keep_firing_for, rule->info().clear_after);
    }
  }
  EXPECT_EQ(Find(alerts, "GpuCoolingFailure").severity, "page");
  EXPECT_EQ(Find(alerts, "GpuApplicationXid").severity, "ticket");
  EXPECT_EQ(Find(alerts, "GpuXidError").severity, "page");
  EXPECT_EQ(Find(alerts, "GpuIdleAllocated").severity, "ticket");

  YAML::Node doc = Parse(PrometheusRulesYaml(config, {}));
  for (const YAML::Node& r : doc["groups"][0]["rules"]) {
    const std::string alert = r["alert"].as<std::string>();
    if (alert == "GpuCoolingFailure") {
      EXPECT_FALSE(r["for"]) << "the engine fires a cooling failure at once";
      EXPECT_EQ(r["keep_firing_for"].as<std::string>(), "2m");
    }
    if (alert == "GpuThermalOutlier") {
      EXPECT_EQ(r["for"].as<std::string>(), "2m");
      EXPECT_EQ(r["keep_firing_for"].as<std::string>(), "5m");
    }
  }
  PrometheusRulesOptions old_prometheus;
  old_prometheus.keep_firing_for = false;
  EXPECT_THAT(PrometheusRulesYaml(config, old_prometheus), Not(HasSubstr("keep_firing_for:")));
}

TEST(PrometheusRulesTest, ThresholdsFollowTheConfig) {
  InsightConfig c;
  auto defaults = PrometheusAlertRules(c);
  EXPECT_THAT(Find(defaults, "GpuCoolingFailure").expr,
              HasSubstr("deriv(DCGM_FI_DEV_GPU_TEMP[1m]) * 60 > 10"));
  EXPECT_THAT(Find(defaults, "GpuIdleAllocated").expr, HasSubstr("DCGM_FI_DEV_FB_USED > 1024"));
  EXPECT_THAT(Find(defaults, "GpuIdleAllocated").expr,
              HasSubstr("avg_over_time(DCGM_FI_DEV_GPU_UTIL[10m]) < 2"));

  c.cooling_rate_c_per_min = 7.5;
  c.cooling_min_rise_c = 4;
  c.cooling_window = std::chrono::seconds(90);
  c.idle_min_memory_bytes = 2.0 * 1024 * 1024 * 1024;
  c.idle_utilization = 0.05;
  c.idle_window = std::chrono::minutes(20);
  c.thermal_outlier_c = 7;
  c.thermal_min_peers = 5;
  c.power_drop_watts = 350;
  c.hardware_hold = std::chrono::minutes(5);
  c.leak_window = std::chrono::minutes(30);
  c.underpowered_watts = 420;
  c.fleet_hold = std::chrono::minutes(9);
  const auto rules = PrometheusAlertRules(c);
  EXPECT_THAT(Find(rules, "GpuCoolingFailure").expr,
              HasSubstr("deriv(DCGM_FI_DEV_GPU_TEMP[1m30s]) * 60 > 7.5"));
  EXPECT_THAT(Find(rules, "GpuCoolingFailure").expr,
              HasSubstr("min_over_time(DCGM_FI_DEV_GPU_TEMP[1m30s]) >= 4"));
  EXPECT_THAT(Find(rules, "GpuCoolingFailure").description, HasSubstr("7.5 °C/min"));
  EXPECT_THAT(Find(rules, "GpuIdleAllocated").expr, HasSubstr("DCGM_FI_DEV_FB_USED > 2048"));
  EXPECT_THAT(Find(rules, "GpuIdleAllocated").expr,
              HasSubstr("avg_over_time(DCGM_FI_DEV_GPU_UTIL[20m]) < 5"));
  EXPECT_THAT(Find(rules, "GpuThermalOutlier").expr, HasSubstr("> 7\n"));
  EXPECT_THAT(Find(rules, "GpuThermalOutlier").expr, HasSubstr("(DCGM_FI_DEV_GPU_TEMP) > 5)"));
  EXPECT_THAT(Find(rules, "GpuPowerDrop").expr,
              HasSubstr("> 350 / 700 * DCGM_FI_DEV_POWER_MGMT_LIMIT"));
  EXPECT_THAT(Find(rules, "GpuUnderpowered").expr,
              HasSubstr("< 420 / 700 * DCGM_FI_DEV_POWER_MGMT_LIMIT"));
  EXPECT_THAT(Find(rules, "GpuXidError").expr, HasSubstr("[5m]"));
  EXPECT_THAT(Find(rules, "GpuUncorrectableEccErrors").expr,
              HasSubstr("increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL[5m]) > 0"));
  EXPECT_THAT(Find(rules, "GpuProcessMemoryLeak").expr,
              HasSubstr("max_over_time(warpscope_gpu_process_memory_used_bytes[30m])"));
  EXPECT_THAT(Find(rules, "GpuProcessMemoryLeak").expr, HasSubstr("offset 10m"));  // tail third
  EXPECT_THAT(Find(rules, "GpuProcessMemoryLeak").expr, HasSubstr("offset 33m"));  // + warm-up
}

TEST(PrometheusRulesTest, InferenceAlertsReadTheServedNamesWithTheConfigsThresholds) {
  InsightConfig c;
  auto defaults = PrometheusAlertRules(c);
  const AlertRule& over = Find(defaults, "InferenceOverprovisioned");
  EXPECT_EQ(over.severity, "ticket");
  EXPECT_THAT(over.expr,
              HasSubstr("(max without (basis) (warpscope_inference_batch_efficiency_ratio))[10m:]"));
  EXPECT_THAT(over.expr, HasSubstr("quantile_over_time(0.8, "));
  EXPECT_THAT(over.expr, HasSubstr(") < 0.3"));
  EXPECT_THAT(over.summary, HasSubstr("{{ $labels.model }}"));
  EXPECT_THAT(Find(defaults, "InferenceQueueing").expr,
              HasSubstr("avg_over_time(warpscope_inference_requests_waiting[10m]) >= 1"));
  const AlertRule& ttft = Find(defaults, "InferenceSlowFirstToken");
  EXPECT_EQ(ttft.severity, "page");
  EXPECT_THAT(ttft.expr, HasSubstr(R"(warpscope_inference_time_to_first_token_seconds{quantile="0.95"}[5m])"));
  EXPECT_THAT(ttft.expr, HasSubstr("> 0.5"));
  EXPECT_THAT(Find(defaults, "InferenceMemoryBound").expr,
              HasSubstr("warpscope_inference_kv_cache_usage_ratio[10m]) >= 0.9"));

  c.inference_low_efficiency = 0.2;
  c.inference_sustained_share = 0.9;
  c.inference_window = std::chrono::minutes(15);
  c.inference_ttft_target_s = 2;
  const auto rules = PrometheusAlertRules(c);
  EXPECT_THAT(Find(rules, "InferenceOverprovisioned").expr, HasSubstr("[15m:]"));
  EXPECT_THAT(Find(rules, "InferenceOverprovisioned").expr,
              HasSubstr("quantile_over_time(0.9, "));
  EXPECT_THAT(Find(rules, "InferenceOverprovisioned").expr, HasSubstr(") < 0.2"));
  EXPECT_THAT(Find(rules, "InferenceSlowFirstToken").expr, HasSubstr("> 2"));
  EXPECT_THAT(Find(rules, "InferenceMemoryBound").expr, HasSubstr("[5m] offset 10m"));
}

TEST(PrometheusRulesTest, AlertNamesAreTheOnesAlertmanagerGetsFromTheEngine) {
  // A rule exported as one alert has the engine's alertname, so that routes and silences match
  // both; hardware_errors is split by kind under the same `rule` label.
  std::map<std::string_view, int> per_rule;
  const auto alerts = PrometheusAlertRules(InsightConfig{});
  for (const AlertRule& a : alerts) ++per_rule[a.rule];
  for (const AlertRule& a : alerts) {
    if (per_rule[a.rule] == 1) {
      EXPECT_EQ(a.alert, server::insights::AlertName(a.rule));
    }
  }
  EXPECT_EQ(server::insights::AlertName("cooling_failure"), "GpuCoolingFailure");
  EXPECT_EQ(server::insights::AlertName("hardware_errors"), "GpuHardwareError");
  EXPECT_GT(per_rule["hardware_errors"], 1);
}

TEST(PrometheusRulesTest, ApplicationXidsAreTicketsAndTheRestPages) {
  const auto rules = PrometheusAlertRules(InsightConfig{});
  EXPECT_THAT(Find(rules, "GpuApplicationXid").expr, HasSubstr(R"(xid=~"13|31|43|45|68")"));
  EXPECT_THAT(Find(rules, "GpuXidError").expr, HasSubstr(R"(xid!~"13|31|43|45|68")"));
}

TEST(PrometheusRulesTest, EveryEngineRuleIsExportedOrSaysWhyNot) {
  std::set<std::string_view> exported;
  for (const AlertRule& a : PrometheusAlertRules(InsightConfig{})) exported.insert(a.rule);
  const std::string yaml = PrometheusRulesYaml(InsightConfig{}, {});
  for (const auto& rule : server::insights::DefaultRules()) {
    const std::string_view name = rule->info().name;
    bool unexported = false;
    for (const UnexportedRule& u : UnexportedRules()) unexported = unexported || u.rule == name;
    EXPECT_NE(exported.contains(name), unexported) << name;
    if (unexported) {
      EXPECT_THAT(yaml, HasSubstr("#   " + std::string(name) + ": ")) << "header names " << name;
    }
  }
}

}  // namespace
}  // namespace warpscope::integrations

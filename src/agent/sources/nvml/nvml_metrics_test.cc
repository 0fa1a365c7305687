// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/nvml/nvml_metrics.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace warpscope::agent::nvml_metrics {
namespace {

bool IsPromNameChar(char c, bool first) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
         (!first && c >= '0' && c <= '9');
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

TEST(NvmlMetricsTest, KeysAndPrometheusNamesAreUnique) {
  std::set<std::string_view> keys;
  std::set<std::string_view> prom;
  for (const model::MetricDesc* d : AllNvmlMetrics()) {
    EXPECT_TRUE(keys.insert(d->key).second) << d->key;
    EXPECT_TRUE(prom.insert(d->prom_name).second) << d->prom_name;
  }
  EXPECT_GE(keys.size(), 60u);
}

TEST(NvmlMetricsTest, EveryDescriptionIsComplete) {
  for (const model::MetricDesc* d : AllNvmlMetrics()) {
    SCOPED_TRACE(std::string(d->key));
    EXPECT_FALSE(d->unit.empty());
    EXPECT_GT(d->help.size(), 30u);
    EXPECT_FALSE(d->otel_name.empty());
    EXPECT_NE(d->prom_scale, 0.0);
    ASSERT_FALSE(d->prom_name.empty());
    for (size_t i = 0; i < d->prom_name.size(); ++i) {
      EXPECT_TRUE(IsPromNameChar(d->prom_name[i], i == 0)) << d->prom_name;
    }
  }
}

// Our own names follow the Prometheus conventions: base unit in the name, _total on counters.
TEST(NvmlMetricsTest, WarpscopeNamesFollowPrometheusConventions) {
  for (const model::MetricDesc* d : AllNvmlMetrics()) {
    std::string_view name = d->prom_name;
    if (name.substr(0, 10) != "warpscope_") {
      EXPECT_EQ(name.substr(0, 5), "DCGM_") << name;
      continue;
    }
    SCOPED_TRACE(std::string(name));
    EXPECT_EQ(d->prom_scale, 1.0);
    EXPECT_EQ(d->kind == model::MetricKind::kCounter, EndsWith(name, "_total"));
    if (d->unit == "By") {
      EXPECT_TRUE(EndsWith(name, "_bytes") || EndsWith(name, "_bytes_total"));
    } else if (d->unit == "By/s") {
      EXPECT_TRUE(EndsWith(name, "_bytes_per_second"));
    }
  }
}

// Metrics that share an OpenTelemetry name differ in their fixed attributes.
TEST(NvmlMetricsTest, OtelNameAndAttributesTellMetricsApart) {
  std::set<std::string> seen;
  for (const model::MetricDesc* d : AllNvmlMetrics()) {
    std::string id = std::string(d->otel_name) + "{" + std::string(d->otel_attrs) + "}";
    EXPECT_TRUE(seen.insert(id).second) << id << " (" << d->key << ")";
  }
}

TEST(NvmlMetricsTest, DcgmScalesConvertBaseUnitsToDcgmUnits) {
  EXPECT_EQ(kGpuUtilization.prom_scale, 100);                 // ratio -> %
  EXPECT_DOUBLE_EQ(kMemoryUsed.prom_scale * 1048576.0, 1.0);  // bytes -> MiB
  EXPECT_EQ(kEnergyConsumed.prom_scale, 1000);                // J -> mJ
  EXPECT_DOUBLE_EQ(kSmClock.prom_scale * 1e6, 1.0);           // Hz -> MHz
  EXPECT_EQ(kSmActive.prom_scale, 1);                         // DCGM PROF ratios
  EXPECT_EQ(kProfPcieTransmitRate.prom_scale, 1);             // DCGM PROF bytes/s
  EXPECT_EQ(kEnergyConsumed.kind, model::MetricKind::kCounter);
  EXPECT_EQ(kProcessMemoryUsed.entity, model::EntityKind::kProcess);
  EXPECT_EQ(kExecutableMemoryUsed.entity, model::EntityKind::kExecutable);
}

TEST(NvmlMetricsTest, OtelSemanticConventionsWhereTheyExist) {
  EXPECT_EQ(kGpuUtilization.otel_name, "hw.gpu.utilization");
  EXPECT_NE(kGpuUtilization.otel_attrs.find("hw.gpu.task=general"), std::string_view::npos);
  EXPECT_EQ(kMemoryUsed.otel_name, "hw.gpu.memory.usage");
  EXPECT_EQ(kMemoryTotal.otel_name, "hw.gpu.memory.limit");
  EXPECT_EQ(kMemoryUtilization.otel_name, "hw.gpu.memory.utilization");
  EXPECT_EQ(kPowerUsage.otel_name, "hw.power");
  EXPECT_EQ(kEnergyConsumed.otel_name, "hw.energy");
  EXPECT_EQ(kTemperature.otel_name, "hw.temperature");
  EXPECT_EQ(kEccCorrectedVolatile.otel_name, "hw.errors");
  EXPECT_NE(kEccUncorrectedVolatile.otel_attrs.find("error.type=uncorrected"),
            std::string_view::npos);
  EXPECT_EQ(kNvlinkReceiveBytes.otel_name, "hw.gpu.io");
  for (const model::MetricDesc* d : {&kTemperatureSlowdown, &kTemperatureShutdown,
                                     &kTemperatureMaxOperating, &kMemoryTemperatureMax}) {
    EXPECT_EQ(d->otel_name, "hw.temperature.limit") << d->key;
    EXPECT_NE(d->otel_attrs.find("hw.limit_type="), std::string_view::npos) << d->key;
  }
  EXPECT_NE(kTemperatureSlowdown.otel_attrs.find("hw.limit_type=throttled"),
            std::string_view::npos);
  EXPECT_NE(kMemoryTemperatureMax.otel_attrs.find("hw.sensor_location=memory"),
            std::string_view::npos);
  for (const model::MetricDesc* d : AllNvmlMetrics()) {
    std::string_view n = d->otel_name;
    EXPECT_TRUE(n.substr(0, 3) == "hw." || n.substr(0, 14) == "warpscope.gpu.") << n;
  }
}

}  // namespace
}  // namespace warpscope::agent::nvml_metrics

// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/procfs/host_metrics.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace warpscope::agent::host_metrics {
namespace {

using model::EntityKind;
using model::MetricKind;

TEST(HostMetricsTest, KeysAndPrometheusNamesAreUnique) {
  std::set<std::string_view> keys;
  std::set<std::string_view> prom;
  for (const model::MetricDesc* m : AllHostMetrics()) {
    ASSERT_NE(m, nullptr);
    EXPECT_TRUE(keys.insert(m->key).second) << m->key;
    EXPECT_TRUE(prom.insert(m->prom_name).second) << m->prom_name;
  }
  EXPECT_EQ(keys.size(), 31u);
}

TEST(HostMetricsTest, PrometheusNamesFollowNamingRules) {
  for (const model::MetricDesc* m : AllHostMetrics()) {
    std::string_view name = m->prom_name;
    SCOPED_TRACE(std::string(name));
    EXPECT_TRUE(name.starts_with("warpscope_host_"));
    EXPECT_EQ(name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_"),
              std::string_view::npos);
    EXPECT_EQ(m->kind == MetricKind::kCounter, name.ends_with("_total"));
    if (m->unit == "By") {
      EXPECT_TRUE(name.ends_with(m->kind == MetricKind::kCounter ? "_bytes_total" : "_bytes"));
    }
    if (m->unit == "s") {
      EXPECT_TRUE(name.ends_with("_seconds_total"));
    }
    if (m->unit == "1") {
      EXPECT_TRUE(name.ends_with("_ratio"));
    }
    EXPECT_DOUBLE_EQ(m->prom_scale, 1.0);  // base units throughout
  }
}

TEST(HostMetricsTest, EveryMetricIsDocumented) {
  for (const model::MetricDesc* m : AllHostMetrics()) {
    SCOPED_TRACE(std::string(m->key));
    EXPECT_GT(m->help.size(), 40u);
    EXPECT_NE(m->help.find("/proc"), std::string_view::npos) << "help must name its source";
    EXPECT_FALSE(m->otel_name.empty());
    EXPECT_FALSE(m->unit.empty());
  }
}

TEST(HostMetricsTest, EntityKindFollowsKeyPrefix) {
  for (const model::MetricDesc* m : AllHostMetrics()) {
    SCOPED_TRACE(std::string(m->key));
    EntityKind expected = m->key.starts_with("process.") ? EntityKind::kProcess : EntityKind::kHost;
    EXPECT_EQ(m->entity, expected);
  }
}

TEST(HostMetricsTest, SemanticConventionNames) {
  EXPECT_EQ(kCpuTime.otel_name, "system.cpu.time");
  EXPECT_EQ(kCpuCoreUtilization.otel_name, "system.cpu.utilization");
  EXPECT_EQ(kMemoryUsed.otel_name, "system.memory.usage");
  EXPECT_EQ(kMemoryUsed.otel_attrs, "system.memory.state=used");
  EXPECT_EQ(kMemoryAvailable.otel_name, "system.linux.memory.available");
  EXPECT_EQ(kSwapUsed.otel_name, "system.paging.usage");
  EXPECT_EQ(kDiskIo.otel_name, "system.disk.io");
  EXPECT_EQ(kNetworkIo.otel_name, "system.network.io");
  EXPECT_EQ(kLoad1m.otel_name, "system.cpu.load_average.1m");
  EXPECT_EQ(kProcessCpuTime.otel_name, "process.cpu.time");
  EXPECT_EQ(kProcessMemoryRss.otel_name, "process.memory.usage");
}

TEST(HostMetricsTest, OtelAttributeKeys) {
  EXPECT_EQ(OtelAttributeKey(kCpuCoreTime, "cpu"), "cpu.logical_number");
  EXPECT_EQ(OtelAttributeKey(kCpuTime, "mode"), "cpu.mode");
  EXPECT_EQ(OtelAttributeKey(kDiskIo, "direction"), "disk.io.direction");
  EXPECT_EQ(OtelAttributeKey(kNetworkIo, "direction"), "network.io.direction");
  EXPECT_EQ(OtelAttributeKey(kNetworkIo, "interface"), "network.interface.name");
  EXPECT_EQ(OtelAttributeKey(kDiskIo, "device"), "system.device");
}

}  // namespace
}  // namespace warpscope::agent::host_metrics

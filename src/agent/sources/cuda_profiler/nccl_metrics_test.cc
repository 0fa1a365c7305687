// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/cuda_profiler/nccl_metrics.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace warpscope::agent::nccl_metrics {
namespace {

TEST(NcclMetricsTest, KeysAndNamesAreUniqueAndComplete) {
  std::set<std::string_view> keys;
  std::set<std::string_view> prom;
  for (const model::MetricDesc* m : AllNcclMetrics()) {
    EXPECT_TRUE(keys.insert(m->key).second) << m->key;
    EXPECT_TRUE(prom.insert(m->prom_name).second) << m->prom_name;
    EXPECT_FALSE(m->help.empty()) << m->key;
    EXPECT_FALSE(m->otel_name.empty()) << m->key;
    EXPECT_EQ(m->entity, model::EntityKind::kProcess) << m->key;
    if (m->kind == model::MetricKind::kCounter) {
      EXPECT_TRUE(std::string(m->prom_name).ends_with("_total")) << m->prom_name;
    }
  }
  EXPECT_EQ(keys.size(), 11u);
}

TEST(NcclMetricsTest, InspectorNamesKeepInspectorsUnitsAndLabels) {
  EXPECT_EQ(kInspectorBusBandwidth.prom_name, "nccl_bus_bandwidth_gbs");
  EXPECT_EQ(kInspectorBusBandwidth.prom_scale, 1e-9);
  EXPECT_EQ(kInspectorExecTime.prom_name, "nccl_collective_exec_time_microseconds");
  EXPECT_EQ(kInspectorExecTime.prom_scale, 1e6);
  for (const model::MetricDesc* m : {&kInspectorBusBandwidth, &kInspectorExecTime}) {
    for (std::string_view label :
         {"collective", "message_size", "algo_proto", "comm_name", "nranks"}) {
      EXPECT_NE(m->labels.find(label), std::string_view::npos) << m->key << " " << label;
    }
  }
}

}  // namespace
}  // namespace warpscope::agent::nccl_metrics

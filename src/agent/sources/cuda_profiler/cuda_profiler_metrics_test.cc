// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/cuda_profiler/cuda_profiler_metrics.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace warpscope::agent::cuda_profiler_metrics {
namespace {

TEST(CuptiMetricsTest, KeysAndNamesAreUniqueAndComplete) {
  std::set<std::string_view> keys;
  std::set<std::string_view> prom;
  for (const model::MetricDesc* m : AllCudaProfilerMetrics()) {
    EXPECT_TRUE(keys.insert(m->key).second) << m->key;
    EXPECT_TRUE(prom.insert(m->prom_name).second) << m->prom_name;
    EXPECT_FALSE(m->help.empty()) << m->key;
    EXPECT_FALSE(m->otel_name.empty()) << m->key;
    EXPECT_EQ(m->entity, model::EntityKind::kProcess) << m->key;
    if (m->kind == model::MetricKind::kCounter) {
      EXPECT_TRUE(std::string(m->prom_name).ends_with("_total")) << m->prom_name;
    }
  }
  EXPECT_EQ(keys.size(), 21u);
}

}  // namespace
}  // namespace warpscope::agent::cuda_profiler_metrics

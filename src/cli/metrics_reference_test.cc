// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <set>

#include "agent/self_stats.h"
#include "agent/sources/nvml/nvml_metrics.h"
#include "agent/sources/procfs/host_metrics.h"
#include "base/file_util.h"
#include "cli/commands.h"

namespace warpscope::cli {
namespace {

TEST(MetricsReferenceTest, DocsMatchTheCatalogs) {
  auto doc = base::ReadFile(std::string(WARPSCOPE_SOURCE_DIR) + "/docs/metrics.md");
  ASSERT_TRUE(doc) << doc.error().message();
  EXPECT_EQ(*doc, MetricsReference("markdown"))
      << "docs/metrics.md is stale: run build/dev/bin/warpscope metrics > docs/metrics.md";
}

TEST(MetricsReferenceTest, NamesAndKeysAreUniqueAcrossCatalogs) {
  std::set<std::string_view> keys;
  std::set<std::string_view> prom;
  for (auto catalog : {agent::nvml_metrics::AllNvmlMetrics(), agent::host_metrics::AllHostMetrics(),
                       agent::AllSelfMetrics()}) {
    for (const model::MetricDesc* m : catalog) {
      EXPECT_TRUE(keys.insert(m->key).second) << "duplicate key " << m->key;
      EXPECT_TRUE(prom.insert(m->prom_name).second) << "duplicate prom name " << m->prom_name;
      EXPECT_FALSE(m->help.empty()) << m->key;
      EXPECT_FALSE(m->otel_name.empty()) << m->key;
    }
  }
}

}  // namespace
}  // namespace warpscope::cli

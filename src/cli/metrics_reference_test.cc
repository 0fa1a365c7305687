// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "agent/self_stats.h"
#include "agent/sources/cpu_profiler/cpu_profiler_metrics.h"
#include "agent/sources/cuda_profiler/cuda_profiler_metrics.h"
#include "agent/sources/cuda_profiler/training_metrics.h"
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
  for (const MetricCatalog& catalog : AllMetricCatalogs()) {
    for (const model::MetricDesc* m : catalog.metrics) {
      EXPECT_TRUE(keys.insert(m->key).second) << "duplicate key " << m->key;
      EXPECT_TRUE(prom.insert(m->prom_name).second) << "duplicate prom name " << m->prom_name;
      EXPECT_FALSE(m->help.empty()) << m->key;
      EXPECT_FALSE(m->otel_name.empty()) << m->key;
    }
  }
}

TEST(MetricsReferenceTest, NoOtelNameIsAnotherGaugesWindowExtreme) {
  // The OTLP encoder sends a gauge's window minimum and maximum as `<otel_name>.min` and
  // `.max`: a metric under such a name would share their series, and the receiver would refuse
  // the request's points as duplicates.
  std::set<std::string> names;
  for (const MetricCatalog& catalog : AllMetricCatalogs()) {
    for (const model::MetricDesc* m : catalog.metrics) names.insert(std::string(m->otel_name));
  }
  for (const MetricCatalog& catalog : AllMetricCatalogs()) {
    for (const model::MetricDesc* m : catalog.metrics) {
      if (m->kind != model::MetricKind::kGauge) continue;
      for (const char* suffix : {".min", ".max"}) {
        EXPECT_EQ(names.count(std::string(m->otel_name) + suffix), 0u)
            << m->key << ": another metric is named " << m->otel_name << suffix;
      }
    }
  }
}

TEST(MetricsReferenceTest, EveryCatalogIsInTheReference) {
  // Each catalog of the agent, named here on its own, is one of AllMetricCatalogs(): a new
  // catalog must be added there (and so to docs/metrics.md and the uniqueness check).
  const std::span<const model::MetricDesc* const> catalogs[] = {
      agent::nvml_metrics::AllNvmlMetrics(), agent::host_metrics::AllHostMetrics(),
      agent::cuda_profiler_metrics::AllCudaProfilerMetrics(),
      agent::cpu_profiler_metrics::AllCpuProfilerMetrics(),
      agent::training_metrics::AllTrainingMetrics(), agent::AllSelfMetrics()};
  const std::vector<MetricCatalog> listed = AllMetricCatalogs();
  for (const auto& catalog : catalogs) {
    ASSERT_FALSE(catalog.empty());
    bool found = false;
    for (const MetricCatalog& c : listed) found |= c.metrics.data() == catalog.data();
    EXPECT_TRUE(found) << "a catalog starting with " << catalog[0]->key
                       << " is missing from AllMetricCatalogs()";
  }
  const std::string reference = MetricsReference("markdown");
  for (const auto& catalog : catalogs) {
    for (const model::MetricDesc* m : catalog) {
      EXPECT_NE(reference.find(std::string(m->prom_name)), std::string::npos) << m->key;
    }
  }
}

}  // namespace
}  // namespace warpscope::cli

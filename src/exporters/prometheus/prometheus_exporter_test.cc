// SPDX-License-Identifier: Apache-2.0
#include "exporters/prometheus/prometheus_exporter.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/gzip.h"
#include "exporters/testing/sample_frame.h"

namespace warpscope::exporters {
namespace {

using ::testing::HasSubstr;

TEST(MetricsSnapshotStoreTest, StartsWithAnEmptyExposition) {
  MetricsSnapshotStore store;
  auto snap = store.Get();
  ASSERT_NE(snap, nullptr);
  EXPECT_EQ(snap->body(ExpositionFormat::kText004), "");
  EXPECT_EQ(snap->body(ExpositionFormat::kOpenMetrics1), "# EOF\n");
  EXPECT_EQ(snap->sequence(), 0u);
}

TEST(PrometheusExporterTest, ExportPublishesBothFormats) {
  auto store = std::make_shared<MetricsSnapshotStore>();
  PrometheusExporter exporter({}, store);
  model::Frame frame = sample::MakeSampleFrame({.gpus = 2, .processes = 2});
  frame.sequence = 42;

  EXPECT_EQ(exporter.Export(frame), ExportResult::kSuccess);

  auto snap = store->Get();
  EXPECT_EQ(snap->sequence(), 42u);
  EXPECT_EQ(snap->time(), frame.end);
  EXPECT_THAT(snap->body(ExpositionFormat::kText004),
              HasSubstr("# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n"));
  EXPECT_THAT(snap->body(ExpositionFormat::kOpenMetrics1), HasSubstr("# EOF\n"));
}

TEST(PrometheusExporterTest, GzipBodyInflatesToThePlainBody) {
  auto store = std::make_shared<MetricsSnapshotStore>();
  PrometheusExporter exporter({}, store);
  ASSERT_EQ(exporter.Export(sample::MakeSampleFrame()), ExportResult::kSuccess);
  auto snap = store->Get();
  for (auto format : {ExpositionFormat::kText004, ExpositionFormat::kOpenMetrics1}) {
    const std::string* gz = snap->gzipped(format);
    ASSERT_NE(gz, nullptr);
    EXPECT_EQ(gz, snap->gzipped(format));  // computed once
    auto plain = base::GzipDecompress(*gz);
    ASSERT_TRUE(plain.has_value());
    EXPECT_EQ(*plain, snap->body(format));
  }
}

TEST(PrometheusExporterTest, ReadersKeepTheirSnapshotAcrossPublishes) {
  auto store = std::make_shared<MetricsSnapshotStore>();
  PrometheusExporter exporter({}, store);
  model::Frame a = sample::MakeSampleFrame({.gpus = 1, .processes = 0});
  a.sequence = 1;
  ASSERT_EQ(exporter.Export(a), ExportResult::kSuccess);
  auto held = store->Get();
  std::string before = held->body(ExpositionFormat::kText004);

  model::Frame b = sample::MakeSampleFrame({.gpus = 3, .processes = 0});
  b.sequence = 2;
  ASSERT_EQ(exporter.Export(b), ExportResult::kSuccess);

  EXPECT_EQ(held->body(ExpositionFormat::kText004), before);
  EXPECT_EQ(store->Get()->sequence(), 2u);
}

TEST(PrometheusExporterTest, ExportAfterShutdownIsDropped) {
  auto store = std::make_shared<MetricsSnapshotStore>();
  PrometheusExporter exporter({}, store);
  exporter.Shutdown(std::chrono::seconds(1));
  EXPECT_EQ(exporter.Export(sample::MakeSampleFrame()), ExportResult::kDropped);
  EXPECT_EQ(store->Get()->sequence(), 0u);
}

TEST(PrometheusExporterTest, CreatesItsOwnStoreWhenNoneIsGiven) {
  PrometheusExporter exporter({}, nullptr);
  ASSERT_NE(exporter.store(), nullptr);
  EXPECT_EQ(exporter.name(), "prometheus");
}

}  // namespace
}  // namespace warpscope::exporters

// SPDX-License-Identifier: Apache-2.0
#include "exporters/prometheus/prometheus_exporter.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>
#include <vector>

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

TEST(PrometheusExporterTest, ExportRendersNothingUntilAFormatIsAskedFor) {
  auto store = std::make_shared<MetricsSnapshotStore>();
  PrometheusExporter exporter({}, store);
  ASSERT_EQ(exporter.Export(sample::MakeSampleFrame({.gpus = 2, .processes = 2})),
            ExportResult::kSuccess);
  auto snap = store->Get();
  EXPECT_FALSE(snap->rendered(ExpositionFormat::kText004));
  EXPECT_FALSE(snap->rendered(ExpositionFormat::kOpenMetrics1));

  const std::string& text = snap->body(ExpositionFormat::kText004);
  EXPECT_TRUE(snap->rendered(ExpositionFormat::kText004));
  EXPECT_FALSE(snap->rendered(ExpositionFormat::kOpenMetrics1));
  EXPECT_EQ(&snap->body(ExpositionFormat::kText004), &text);  // rendered once, then cached
}

// Each snapshot renders its own frame, whatever the exporter published since and whichever
// recycled frame the copy went into.
TEST(PrometheusExporterTest, EverySnapshotRendersTheFrameItWasGiven) {
  auto store = std::make_shared<MetricsSnapshotStore>();
  PrometheusExporter exporter({}, store);
  TextRenderer reference({});
  for (int gpus : {8, 1, 3, 8, 2, 2}) {
    model::Frame frame = sample::MakeSampleFrame({.gpus = gpus, .processes = gpus * 2});
    frame.sequence = static_cast<uint64_t>(gpus);
    ASSERT_EQ(exporter.Export(frame), ExportResult::kSuccess);
    frame.series.clear();  // the snapshot holds a copy
    auto snap = store->Get();
    EXPECT_EQ(snap->body(ExpositionFormat::kOpenMetrics1),
              reference.Render(sample::MakeSampleFrame({.gpus = gpus, .processes = gpus * 2}),
                               ExpositionFormat::kOpenMetrics1))
        << gpus << " GPUs";
  }
}

TEST(PrometheusExporterTest, TheLastSnapshotOutlivesTheExporter) {
  auto store = std::make_shared<MetricsSnapshotStore>();
  {
    PrometheusExporter exporter({}, store);
    ASSERT_EQ(exporter.Export(sample::MakeSampleFrame({.gpus = 1, .processes = 0})),
              ExportResult::kSuccess);
    exporter.Shutdown(std::chrono::seconds(1));
  }
  EXPECT_THAT(store->Get()->body(ExpositionFormat::kText004),
              HasSubstr("# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n"));
}

TEST(PrometheusExporterTest, ConcurrentReadersGetOneRendering) {
  auto store = std::make_shared<MetricsSnapshotStore>();
  PrometheusExporter exporter({}, store);
  ASSERT_EQ(exporter.Export(sample::MakeSampleFrame()), ExportResult::kSuccess);
  auto snap = store->Get();
  std::vector<const std::string*> seen(4);
  std::vector<std::thread> readers;
  for (size_t i = 0; i < seen.size(); ++i) {
    readers.emplace_back([&, i] {
      const auto format = i % 2 == 0 ? ExpositionFormat::kText004 : ExpositionFormat::kOpenMetrics1;
      seen[i] = &snap->body(format);
      ASSERT_NE(snap->gzipped(format), nullptr);
    });
  }
  for (auto& t : readers) {
    t.join();
  }
  EXPECT_EQ(seen[0], seen[2]);
  EXPECT_EQ(seen[1], seen[3]);
  EXPECT_THAT(*seen[1], HasSubstr("# EOF\n"));
}

}  // namespace
}  // namespace warpscope::exporters

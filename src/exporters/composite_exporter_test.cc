// SPDX-License-Identifier: Apache-2.0
#include "exporters/composite_exporter.h"

#include <gtest/gtest.h>

#include "exporters/testing/in_memory_exporter.h"

namespace warpscope::exporters {
namespace {

struct Children {
  InMemoryExporter* a;
  InMemoryExporter* b;
};

Children AddTwo(CompositeExporter& c) {
  auto a = std::make_unique<InMemoryExporter>("a");
  auto b = std::make_unique<InMemoryExporter>("b");
  Children out{a.get(), b.get()};
  c.Add(std::move(a));
  c.Add(std::move(b));
  return out;
}

TEST(CompositeExporterTest, FansOutEveryFrameToEveryChild) {
  CompositeExporter composite;
  Children kids = AddTwo(composite);
  model::Frame frame;
  frame.sequence = 7;

  EXPECT_EQ(composite.Export(frame), ExportResult::kSuccess);

  ASSERT_EQ(kids.a->frames().size(), 1u);
  ASSERT_EQ(kids.b->frames().size(), 1u);
  EXPECT_EQ(kids.b->frames()[0].sequence, 7u);
}

TEST(CompositeExporterTest, ReportsTheWorstChildResult) {
  CompositeExporter composite;
  Children kids = AddTwo(composite);
  kids.a->set_result(ExportResult::kDropped);
  EXPECT_EQ(composite.Export(model::Frame{}), ExportResult::kDropped);
  kids.b->set_result(ExportResult::kFailure);
  EXPECT_EQ(composite.Export(model::Frame{}), ExportResult::kFailure);
}

TEST(CompositeExporterTest, EmptyCompositeSucceeds) {
  CompositeExporter composite;
  EXPECT_EQ(composite.Export(model::Frame{}), ExportResult::kSuccess);
  EXPECT_EQ(composite.size(), 0u);
}

TEST(CompositeExporterTest, ShutdownReachesEveryChildAndLaterExportsAreDropped) {
  CompositeExporter composite;
  Children kids = AddTwo(composite);
  composite.Shutdown(std::chrono::seconds(2));
  EXPECT_TRUE(kids.a->shut_down());
  EXPECT_TRUE(kids.b->shut_down());
  EXPECT_LE(kids.b->last_shutdown_timeout(), std::chrono::seconds(2));
  EXPECT_EQ(composite.Export(model::Frame{}), ExportResult::kDropped);
}

TEST(ExportResultTest, NamesAreStableLabelValues) {
  EXPECT_EQ(ExportResultName(ExportResult::kSuccess), "success");
  EXPECT_EQ(ExportResultName(ExportResult::kFailure), "failure");
  EXPECT_EQ(ExportResultName(ExportResult::kDropped), "dropped");
}

}  // namespace
}  // namespace warpscope::exporters

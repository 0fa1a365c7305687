// SPDX-License-Identifier: Apache-2.0
#include "exporters/exporter.h"

#include <gtest/gtest.h>

namespace warpscope::exporters {
namespace {

TEST(ExportResultTest, NamesAreStableLabelValues) {
  EXPECT_EQ(ExportResultName(ExportResult::kSuccess), "success");
  EXPECT_EQ(ExportResultName(ExportResult::kFailure), "failure");
  EXPECT_EQ(ExportResultName(ExportResult::kDropped), "dropped");
}

}  // namespace
}  // namespace warpscope::exporters

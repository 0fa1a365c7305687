// SPDX-License-Identifier: Apache-2.0
#include "model/xid.h"

#include <gtest/gtest.h>

namespace warpscope::model {
namespace {

TEST(XidDescriptionTest, CommonXidsHaveText) {
  EXPECT_EQ(XidDescription(79), "GPU has fallen off the bus");
  EXPECT_EQ(XidDescription(48), "Double Bit ECC Error");
  EXPECT_EQ(XidDescription(94), "Contained ECC error");
  EXPECT_EQ(XidDescription(12345), "");
}

}  // namespace
}  // namespace warpscope::model

// SPDX-License-Identifier: Apache-2.0
#include "model/labels.h"

#include <gtest/gtest.h>

namespace warpscope::model {
namespace {

TEST(LabelsTest, KeepsKeysSortedAndUnique) {
  Labels l{{"b", "2"}, {"a", "1"}};
  l.Set("b", "3");
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(l.pairs()[0].first, "a");
  EXPECT_EQ(l.Get("b"), "3");
  EXPECT_TRUE(l.Has("a"));
  EXPECT_FALSE(l.Has("c"));
  EXPECT_EQ(l.Get("c"), "");
}

TEST(LabelsTest, EqualityIgnoresInsertionOrder) {
  Labels x{{"a", "1"}, {"b", "2"}};
  Labels y{{"b", "2"}, {"a", "1"}};
  EXPECT_EQ(x, y);
}

}  // namespace
}  // namespace warpscope::model

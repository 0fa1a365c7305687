// SPDX-License-Identifier: Apache-2.0
#include "server/storage/label_codec.h"

#include <gtest/gtest.h>

namespace warpscope::server {
namespace {

TEST(LabelCodecTest, EncodesSortedPairs) {
  EXPECT_EQ(EncodeLabels({{"mode", "user"}, {"cpu", "3"}}), "cpu=3,mode=user");
  EXPECT_EQ(EncodeLabels({}), "");
}

TEST(LabelCodecTest, RoundTripsSeparatorsAndBackslashes) {
  model::Labels labels{{"a=b", "c,d"}, {"back\\slash", "=,\\"}, {"empty", ""}};
  EXPECT_EQ(DecodeLabels(EncodeLabels(labels)), labels);
}

TEST(LabelCodecTest, DecodesEmptyTextToNoLabels) { EXPECT_TRUE(DecodeLabels("").empty()); }

TEST(LabelCodecTest, EqualSetsEncodeEqually) {
  model::Labels a{{"x", "1"}, {"y", "2"}};
  model::Labels b{{"y", "2"}, {"x", "1"}};
  EXPECT_EQ(EncodeLabels(a), EncodeLabels(b));
}

}  // namespace
}  // namespace warpscope::server

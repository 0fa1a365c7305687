// SPDX-License-Identifier: Apache-2.0
#include "base/gzip.h"

#include <gtest/gtest.h>

namespace warpscope::base {
namespace {

TEST(GzipTest, RoundTrips) {
  std::string text;
  for (int i = 0; i < 1000; ++i) {
    text += "DCGM_FI_DEV_GPU_TEMP{gpu=\"" + std::to_string(i) + "\"} 42\n";
  }
  auto gz = GzipCompress(text);
  ASSERT_TRUE(gz.has_value()) << gz.error().ToString();
  EXPECT_LT(gz->size(), text.size() / 4);
  EXPECT_EQ(static_cast<unsigned char>((*gz)[0]), 0x1f);  // gzip magic
  EXPECT_EQ(static_cast<unsigned char>((*gz)[1]), 0x8b);
  auto back = GzipDecompress(*gz);
  ASSERT_TRUE(back.has_value()) << back.error().ToString();
  EXPECT_EQ(*back, text);
}

TEST(GzipTest, RoundTripsEmptyInput) {
  auto gz = GzipCompress("");
  ASSERT_TRUE(gz.has_value());
  auto back = GzipDecompress(*gz);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, "");
}

TEST(GzipTest, RejectsCorruptInput) {
  auto back = GzipDecompress("definitely not gzip");
  ASSERT_FALSE(back.has_value());
  EXPECT_EQ(back.error().code(), StatusCode::kInvalidArgument);
}

TEST(GzipTest, RejectsTruncatedInput) {
  auto gz = GzipCompress(std::string(10000, 'x'));
  ASSERT_TRUE(gz.has_value());
  auto back = GzipDecompress(std::string_view(*gz).substr(0, gz->size() / 2));
  EXPECT_FALSE(back.has_value());
}

TEST(GzipTest, EnforcesTheSizeLimit) {
  auto gz = GzipCompress(std::string(100000, 'x'));
  ASSERT_TRUE(gz.has_value());
  auto back = GzipDecompress(*gz, 1000);
  ASSERT_FALSE(back.has_value());
  EXPECT_EQ(back.error().code(), StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace warpscope::base

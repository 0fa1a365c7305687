// SPDX-License-Identifier: Apache-2.0
#include "base/status.h"

#include <gtest/gtest.h>

namespace warpscope::base {
namespace {

Result<int> Half(int x) {
  if (x % 2 != 0) return Error(InvalidArgument("{} is odd", x));
  return x / 2;
}

Result<int> Quarter(int x) {
  WARPSCOPE_ASSIGN_OR_RETURN(int h, Half(x));
  return Half(h);
}

TEST(StatusTest, OkByDefault) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.ToString(), "OK");
}

TEST(StatusTest, ErrorCarriesCodeAndMessage) {
  Status s = NotFound("device {} missing", 3);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.ToString(), "NotFound: device 3 missing");
  EXPECT_EQ(s.WithContext("nvml").message(), "nvml: device 3 missing");
}

TEST(StatusTest, AssignOrReturnPropagates) {
  EXPECT_EQ(*Quarter(8), 2);
  auto r = Quarter(6);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message(), "3 is odd");
}

}  // namespace
}  // namespace warpscope::base

// SPDX-License-Identifier: Apache-2.0
#include "base/listen_address.h"

#include <gtest/gtest.h>

namespace warpscope::base {
namespace {

TEST(ParseListenAddressTest, AcceptsTheUsualForms) {
  auto a = ParseListenAddress(":9400");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->host, "0.0.0.0");
  EXPECT_EQ(a->port, 9400);
  auto b = ParseListenAddress("127.0.0.1:0");
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->host, "127.0.0.1");
  EXPECT_EQ(b->port, 0);
  auto c = ParseListenAddress("[::1]:9400");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->host, "::1");
  auto d = ParseListenAddress("localhost:80");
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->host, "localhost");
}

TEST(ParseListenAddressTest, RejectsBadForms) {
  for (const char* bad : {"", "9400", "host:", "host:65536", "host:-1", "host:12ab", "::1:9400",
                          "[::1]9400", ":", ":-0", "[::1]:-0", "[[]:80", "a b:80", "\n:80"}) {
    auto r = ParseListenAddress(bad);
    EXPECT_FALSE(r.has_value()) << bad;
    if (!r) {
      EXPECT_EQ(r.error().code(), base::StatusCode::kInvalidArgument) << bad;
    }
  }
}

}  // namespace
}  // namespace warpscope::base

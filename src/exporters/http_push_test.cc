// SPDX-License-Identifier: Apache-2.0
#include "exporters/http_push.h"

#include <gtest/gtest.h>
#include <httplib.h>

namespace warpscope::exporters {
namespace {

using std::chrono::seconds;

TEST(ParseHttpEndpointTest, SplitsSchemeHostPortAndPath) {
  auto e = ParseHttpEndpoint("https://srv.example:8443/prefix/", "--server", "http://h:1");
  ASSERT_TRUE(e.has_value()) << e.error().ToString();
  EXPECT_EQ(e->scheme_host_port, "https://srv.example:8443");
  EXPECT_EQ(e->path, "/prefix/");
  auto bare = ParseHttpEndpoint("http://[::1]:7070", "--server", "http://h:1");
  ASSERT_TRUE(bare.has_value());
  EXPECT_EQ(bare->scheme_host_port, "http://[::1]:7070");
  EXPECT_EQ(bare->path, "");
}

TEST(ParseHttpEndpointTest, ErrorsNameTheSetting) {
  auto e = ParseHttpEndpoint("ftp://h", "--server", "http://warpscope:7070");
  ASSERT_FALSE(e.has_value());
  EXPECT_EQ(e.error().code(), base::StatusCode::kInvalidArgument);
  EXPECT_NE(e.error().message().find("--server"), std::string::npos);
  EXPECT_NE(e.error().message().find("http://warpscope:7070"), std::string::npos);
  EXPECT_FALSE(ParseHttpEndpoint("http://h:70000", "--server", "x").has_value());
}

TEST(RetryAfterTest, ReadsSecondsOnly) {
  httplib::Response r;
  EXPECT_FALSE(RetryAfter(r).has_value());
  r.set_header("Retry-After", "7");
  EXPECT_EQ(RetryAfter(r), seconds(7));
  httplib::Response date;
  date.set_header("Retry-After", "Wed, 21 Oct 2015 07:28:00 GMT");
  EXPECT_FALSE(RetryAfter(date).has_value());
}

TEST(HeaderCheckTest, RejectsWhatWouldSplitAHeader) {
  EXPECT_TRUE(IsValidHeaderName("Authorization"));
  EXPECT_FALSE(IsValidHeaderName(""));
  EXPECT_FALSE(IsValidHeaderName("Bad Header"));
  EXPECT_FALSE(IsValidHeaderName("a:b"));
  EXPECT_TRUE(IsValidHeaderValue("Bearer abc.def"));
  EXPECT_FALSE(IsValidHeaderValue("abc\r\nX-Evil: 1"));
  EXPECT_FALSE(IsValidHeaderValue(std::string_view("a\0b", 3)));
}

TEST(BodySnippetTest, CutsLongBodies) {
  EXPECT_EQ(BodySnippet("short"), "short");
  EXPECT_EQ(BodySnippet(std::string(500, 'x')).size(), 203u);
}

}  // namespace
}  // namespace warpscope::exporters

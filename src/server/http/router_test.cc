// SPDX-License-Identifier: Apache-2.0
#include "server/http/router.h"

#include <gtest/gtest.h>

#include "base/gzip.h"

namespace warpscope::server::http {
namespace {

TEST(RouterTest, FirstMatchingRouteWinsAndFillsMatches) {
  Router router;
  int hit = 0;
  router.Add("GET", "/api/v1/profiles/merged", 1, [&](const auto&, auto&) { hit = 1; });
  router.Add("GET", R"(/api/v1/profiles/(\d+))", 1, [&](const auto&, auto&) { hit = 2; });
  router.Add("POST", "/ingest", 0, [&](const auto&, auto&) { hit = 3; });
  httplib::Request req;
  req.method = "GET";
  req.path = "/api/v1/profiles/42";
  const Route* route = router.Match(req);
  ASSERT_NE(route, nullptr);
  route->handler(req, *std::make_unique<httplib::Response>());
  EXPECT_EQ(hit, 2);
  ASSERT_EQ(req.matches.size(), 2u);
  EXPECT_EQ(req.matches[1].str(), "42");
  req.method = "HEAD";
  EXPECT_NE(router.Match(req), nullptr);
  req.method = "POST";
  EXPECT_EQ(router.Match(req), nullptr);
  req.path = "/ingest";
  ASSERT_NE(router.Match(req), nullptr);
  EXPECT_EQ(router.Match(req)->queue, 0);
}

TEST(RouterTest, QueryParametersAreDecoded) {
  httplib::Params params;
  ParseQuery("a=1&b=x%20y+z&&c&d=%zz", params);
  ASSERT_EQ(params.size(), 4u);
  EXPECT_EQ(params.find("a")->second, "1");
  EXPECT_EQ(params.find("b")->second, "x y z");
  EXPECT_EQ(params.find("c")->second, "");
  EXPECT_EQ(params.find("d")->second, "%zz");
  EXPECT_EQ(DecodeUrl("/jobs/a%2Fb+c", false), "/jobs/a/b+c");
}

TEST(RouterTest, InflationStopsAtTheLimit) {
  const std::string data(100'000, 'x');
  base::Result<std::string> gz = base::GzipCompress(data);
  ASSERT_TRUE(gz);
  base::Result<std::string> whole = InflateBounded(*gz, data.size());
  ASSERT_TRUE(whole) << whole.error().message();
  EXPECT_EQ(*whole, data);
  base::Result<std::string> over = InflateBounded(*gz, data.size() - 1);
  ASSERT_FALSE(over);
  EXPECT_EQ(over.error().code(), base::StatusCode::kResourceExhausted);
  EXPECT_FALSE(InflateBounded(gz->substr(0, gz->size() / 2), 1u << 20));
  EXPECT_FALSE(InflateBounded("not gzip", 1u << 20));
}

TEST(RouterTest, BrotliStopsAtTheLimit) {
  // "hello" as brotli (quality 11), from the reference encoder.
  const std::string hello("\x0b\x02\x80\x68\x65\x6c\x6c\x6f\x03", 9);
  base::Result<std::string> whole = BrotliDecodeBounded(hello, 5);
  ASSERT_TRUE(whole) << whole.error().message();
  EXPECT_EQ(*whole, "hello");
  base::Result<std::string> over = BrotliDecodeBounded(hello, 4);
  ASSERT_FALSE(over);
  EXPECT_EQ(over.error().code(), base::StatusCode::kResourceExhausted);
  EXPECT_FALSE(BrotliDecodeBounded(hello.substr(0, 4), 100));
}

TEST(RouterTest, GzipOffersAndTypes) {
  EXPECT_TRUE(AcceptsGzip("gzip, deflate, br, zstd"));
  EXPECT_TRUE(AcceptsGzip("br;q=1.0, GZIP;q=0.5"));
  EXPECT_FALSE(AcceptsGzip("br"));
  EXPECT_FALSE(AcceptsGzip("gzip;q=0"));
  EXPECT_FALSE(AcceptsGzip(""));
  EXPECT_TRUE(CompressibleType("application/json"));
  EXPECT_TRUE(CompressibleType("text/html; charset=utf-8"));
  EXPECT_FALSE(CompressibleType("image/png"));
}

}  // namespace
}  // namespace warpscope::server::http

// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include "exporters/otlp/otlp_exporter.h"

namespace warpscope::exporters {
namespace {

TEST(ParseOtlpEndpointTest, AppendsTheMetricsPathToABaseUrl) {
  auto e = ParseOtlpEndpoint("http://127.0.0.1:4318");
  ASSERT_TRUE(e.has_value()) << e.error().ToString();
  EXPECT_EQ(e->scheme_host_port, "http://127.0.0.1:4318");
  EXPECT_EQ(e->path, "/v1/metrics");
  auto slash = ParseOtlpEndpoint("https://collector.example:443/");
  ASSERT_TRUE(slash.has_value());
  EXPECT_EQ(slash->scheme_host_port, "https://collector.example:443");
  EXPECT_EQ(slash->path, "/v1/metrics");
}

TEST(ParseOtlpEndpointTest, KeepsAnExplicitPath) {
  auto e = ParseOtlpEndpoint("http://gw:8080/otlp/v1/metrics");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->scheme_host_port, "http://gw:8080");
  EXPECT_EQ(e->path, "/otlp/v1/metrics");
}

TEST(ParseOtlpEndpointTest, AcceptsHostsWithoutPortAndIpv6) {
  EXPECT_TRUE(ParseOtlpEndpoint("http://collector").has_value());
  auto v6 = ParseOtlpEndpoint("http://[::1]:4318");
  ASSERT_TRUE(v6.has_value());
  EXPECT_EQ(v6->scheme_host_port, "http://[::1]:4318");
}

TEST(ParseOtlpEndpointTest, RejectsWhatCannotWork) {
  for (const char* bad : {"", "127.0.0.1:4318", "ftp://h:1", "http://", "http://h:0",
                          "http://h:99999", "http://h:x", "http://user@h:1"}) {
    auto e = ParseOtlpEndpoint(bad);
    EXPECT_FALSE(e.has_value()) << bad;
    if (!e) {
      EXPECT_EQ(e.error().code(), base::StatusCode::kInvalidArgument) << bad;
    }
  }
}

TEST(OtlpExporterCreateTest, RejectsInvalidOptions) {
  OtlpExporter::Options o;
  o.endpoint = "nope";
  EXPECT_FALSE(OtlpExporter::Create(o).has_value());
  o.endpoint = "http://127.0.0.1:4318";
  o.max_queue = 0;
  EXPECT_FALSE(OtlpExporter::Create(o).has_value());
  o.max_queue = 1;
  o.headers = {{"Bad Header", "x"}};
  EXPECT_FALSE(OtlpExporter::Create(o).has_value());
}

}  // namespace
}  // namespace warpscope::exporters

// SPDX-License-Identifier: Apache-2.0
#include "exporters/prometheus/metrics_http_server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include "base/gzip.h"
#include "exporters/testing/sample_frame.h"

namespace warpscope::exporters {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr const char* kPrometheusAccept =
    "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;"
    "q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

class MetricsHttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = std::make_shared<MetricsSnapshotStore>();
    exporter_ = std::make_unique<PrometheusExporter>(PrometheusExporter::Options{}, store_);
    ASSERT_EQ(exporter_->Export(sample::MakeSampleFrame({.gpus = 2, .processes = 4})),
              ExportResult::kSuccess);
  }

  // Starts a server on 127.0.0.1:0 and a client for it.
  void StartServer(MetricsHttpServer::Options options = {}) {
    options.listen_address = "127.0.0.1:0";
    server_ = std::make_unique<MetricsHttpServer>(options, store_);
    auto port = server_->Start();
    ASSERT_TRUE(port.has_value()) << port.error().ToString();
    ASSERT_GT(*port, 0);
    client_ = std::make_unique<httplib::Client>("127.0.0.1", *port);
    client_->set_decompress(false);  // see the bytes on the wire
  }

  std::string Body(ExpositionFormat f) { return store_->Get()->body(f); }

  std::shared_ptr<MetricsSnapshotStore> store_;
  std::unique_ptr<PrometheusExporter> exporter_;
  std::unique_ptr<MetricsHttpServer> server_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(MetricsHttpServerTest, ServesText004ByDefault) {
  StartServer();
  auto res = client_->Get("/metrics");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_FALSE(res->has_header("Content-Encoding"));
  EXPECT_EQ(res->body, Body(ExpositionFormat::kText004));
  EXPECT_EQ(server_->stats().metrics_text, 1u);
}

TEST_F(MetricsHttpServerTest, ServesOpenMetricsToPrometheusAccept) {
  StartServer();
  auto res = client_->Get("/metrics", {{"Accept", kPrometheusAccept}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->get_header_value("Content-Type"),
            "application/openmetrics-text; version=1.0.0; charset=utf-8");
  EXPECT_EQ(res->body, Body(ExpositionFormat::kOpenMetrics1));
  EXPECT_EQ(server_->stats().metrics_openmetrics, 1u);
}

TEST_F(MetricsHttpServerTest, ServesTextWhenOpenMetricsIsDisabled) {
  MetricsHttpServer::Options o;
  o.openmetrics = false;
  StartServer(o);
  auto res = client_->Get("/metrics", {{"Accept", kPrometheusAccept}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
}

TEST_F(MetricsHttpServerTest, GzipsWhenAsked) {
  StartServer();
  for (auto [accept, format] :
       {std::pair<const char*, ExpositionFormat>{"text/plain", ExpositionFormat::kText004},
        {kPrometheusAccept, ExpositionFormat::kOpenMetrics1}}) {
    auto res = client_->Get("/metrics", {{"Accept", accept}, {"Accept-Encoding", "gzip"}});
    ASSERT_TRUE(res);
    EXPECT_EQ(res->get_header_value("Content-Encoding"), "gzip");
    auto plain = base::GzipDecompress(res->body);
    ASSERT_TRUE(plain.has_value()) << plain.error().ToString();
    EXPECT_EQ(*plain, Body(format));  // compressed exactly once
  }
  EXPECT_EQ(server_->stats().metrics_gzip, 2u);
}

TEST_F(MetricsHttpServerTest, HttplibClientDecompressionSeesThePlainBody) {
  StartServer();
  client_->set_decompress(true);
  auto res = client_->Get("/metrics", {{"Accept-Encoding", "gzip"}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->body, Body(ExpositionFormat::kText004));
}

TEST_F(MetricsHttpServerTest, HealthzAnswersJson) {
  StartServer();
  auto res = client_->Get("/healthz");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type"), "application/json");
  EXPECT_THAT(res->body, HasSubstr("\"status\":\"ok\""));
}

TEST_F(MetricsHttpServerTest, UnknownPathIs404Json) {
  StartServer();
  auto res = client_->Get("/nope");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
  EXPECT_EQ(res->get_header_value("Content-Type"), "application/json");
  EXPECT_THAT(res->body, StartsWith("{\"error\":"));
  EXPECT_THAT(res->body, HasSubstr("/nope"));
  EXPECT_EQ(server_->stats().errors, 1u);
}

TEST_F(MetricsHttpServerTest, OtherMethodsAre405) {
  StartServer();
  auto post = client_->Post("/metrics", "x", "text/plain");
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 405);
  EXPECT_EQ(post->get_header_value("Allow"), "GET, HEAD");
  EXPECT_THAT(post->body, StartsWith("{\"error\":"));
  auto del = client_->Delete("/healthz");
  ASSERT_TRUE(del);
  EXPECT_EQ(del->status, 405);
  auto post_other = client_->Post("/elsewhere", "x", "text/plain");
  ASSERT_TRUE(post_other);
  EXPECT_EQ(post_other->status, 404);
}

TEST_F(MetricsHttpServerTest, ServesTheLatestSnapshot) {
  StartServer();
  model::Frame next = sample::MakeSampleFrame({.gpus = 1, .processes = 0, .host = "other"});
  ASSERT_EQ(exporter_->Export(next), ExportResult::kSuccess);
  auto res = client_->Get("/metrics");
  ASSERT_TRUE(res);
  EXPECT_THAT(res->body, HasSubstr("Hostname=\"other\""));
}

TEST_F(MetricsHttpServerTest, HeadAnswersWithoutABody) {
  StartServer();
  auto res = client_->Head("/metrics");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_TRUE(res->body.empty());
}

TEST_F(MetricsHttpServerTest, ScrapesDuringPublishesSeeWholeExpositions) {
  StartServer();
  std::jthread publisher([this](std::stop_token stop) {
    uint64_t seq = 100;
    while (!stop.stop_requested()) {
      model::Frame f =
          sample::MakeSampleFrame({.gpus = 1 + static_cast<int>(seq % 3), .processes = 2});
      f.sequence = ++seq;
      (void)exporter_->Export(f);
    }
  });
  for (int i = 0; i < 20; ++i) {
    auto res = client_->Get("/metrics", {{"Accept", kPrometheusAccept}});
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200);
    EXPECT_THAT(res->body, ::testing::EndsWith("# EOF\n"));
    EXPECT_EQ(res->body.find("# EOF"), res->body.size() - 6);
  }
}

TEST_F(MetricsHttpServerTest, SecondServerOnTheSamePortFailsWithAClearError) {
  StartServer();
  MetricsHttpServer::Options o;
  o.listen_address = "127.0.0.1:" + std::to_string(server_->port());
  MetricsHttpServer second(o, store_);
  auto port = second.Start();
  ASSERT_FALSE(port.has_value());
  EXPECT_EQ(port.error().code(), base::StatusCode::kUnavailable);
  EXPECT_THAT(
      port.error().message(),
      HasSubstr(o.listen_address + " is in use: stop the other exporter or pass --listen-address"));
}

TEST_F(MetricsHttpServerTest, StopClosesTheListenerAndIsIdempotent) {
  StartServer();
  const int port = server_->port();
  ASSERT_TRUE(client_->Get("/healthz"));
  server_->Stop();
  server_->Stop();
  httplib::Client fresh("127.0.0.1", port);
  fresh.set_connection_timeout(1, 0);
  EXPECT_FALSE(fresh.Get("/healthz"));
  // The port is free again.
  MetricsHttpServer::Options o;
  o.listen_address = "127.0.0.1:" + std::to_string(port);
  MetricsHttpServer again(o, store_);
  auto bound = again.Start();
  ASSERT_TRUE(bound.has_value()) << bound.error().ToString();
  EXPECT_EQ(*bound, port);
}

TEST_F(MetricsHttpServerTest, StopRightAfterStartReturns) {
  MetricsHttpServer server({.listen_address = "127.0.0.1:0"}, store_);
  ASSERT_TRUE(server.Start().has_value());
  server.Stop();
}

TEST_F(MetricsHttpServerTest, MalformedAddressIsInvalidArgument) {
  MetricsHttpServer server({.listen_address = "localhost"}, store_);
  auto port = server.Start();
  ASSERT_FALSE(port.has_value());
  EXPECT_EQ(port.error().code(), base::StatusCode::kInvalidArgument);
}

TEST(NegotiationTest, PicksOpenMetricsOnlyWhenPreferred) {
  EXPECT_EQ(NegotiateExpositionFormat(kPrometheusAccept, true), ExpositionFormat::kOpenMetrics1);
  EXPECT_EQ(NegotiateExpositionFormat("application/openmetrics-text", true),
            ExpositionFormat::kOpenMetrics1);
  EXPECT_EQ(NegotiateExpositionFormat("", true), ExpositionFormat::kText004);
  EXPECT_EQ(NegotiateExpositionFormat("*/*", true), ExpositionFormat::kText004);
  EXPECT_EQ(NegotiateExpositionFormat("text/plain;q=1,application/openmetrics-text;q=0.5", true),
            ExpositionFormat::kText004);
  EXPECT_EQ(NegotiateExpositionFormat("application/openmetrics-text;q=0", true),
            ExpositionFormat::kText004);
  EXPECT_EQ(NegotiateExpositionFormat(kPrometheusAccept, false), ExpositionFormat::kText004);
}

TEST(NegotiationTest, GzipOnlyWhenListedWithPositiveQ) {
  EXPECT_TRUE(AcceptsGzip("gzip"));
  EXPECT_TRUE(AcceptsGzip("deflate, GZIP;q=0.5, br"));
  EXPECT_FALSE(AcceptsGzip(""));
  EXPECT_FALSE(AcceptsGzip("identity"));
  EXPECT_FALSE(AcceptsGzip("gzip;q=0"));
}

}  // namespace
}  // namespace warpscope::exporters

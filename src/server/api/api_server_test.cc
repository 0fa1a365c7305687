// SPDX-License-Identifier: Apache-2.0
#include "server/api/api_server.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <stdlib.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/testing/temp_dir.h"
#include "profiling/pprof.h"
#include "server/ui/ui_handler.h"
#include "web/assets.h"
#include "server/storage/sqlite_storage.h"
#include "support/self_signed_cert.h"
#include <google/protobuf/util/json_util.h>

#include "warpscope/v1/batch.pb.h"
#include "opentelemetry/proto/collector/metrics/v1/metrics_service.pb.h"
#include "prometheus/remote.pb.h"
#include <snappy.h>

namespace warpscope::server {
namespace {

using nlohmann::json;
constexpr char kToken[] = "s3cret-token";
const int64_t kT0 = 1'700'000'000'000'000'000;  // ns

warpscope::v1::Batch MakeBatch(uint64_t sequence, int64_t start_ns, double util) {
  warpscope::v1::Batch b;
  b.set_version(1);
  b.set_agent_id("agent-1");
  b.set_sequence(sequence);
  b.set_start_unix_nano(start_ns);
  b.set_end_unix_nano(start_ns + 10'000'000'000);
  b.set_host("node1");
  auto* host = b.add_entities();
  host->set_kind(warpscope::v1::ENTITY_KIND_HOST);
  host->set_id("node1");
  auto* gpu = b.add_entities();
  gpu->set_kind(warpscope::v1::ENTITY_KIND_GPU);
  gpu->set_id("GPU-a");
  auto* attr = gpu->add_attributes();
  attr->set_key("gpu.index");
  attr->set_value("0");
  auto* m = b.add_metrics();
  m->set_key("gpu.utilization");
  m->set_kind(warpscope::v1::METRIC_KIND_GAUGE);
  m->set_unit("1");
  m->set_prom_name("DCGM_FI_DEV_GPU_UTIL");
  m->set_prom_scale(100);
  m->set_entity_kind(warpscope::v1::ENTITY_KIND_GPU);
  auto* s = b.add_series();
  s->set_metric(0);
  s->set_entity("GPU-a");
  s->set_avg(util);
  s->set_min(util - 0.1);
  s->set_max(util + 0.1);
  s->set_last(util);
  s->set_count(10);
  auto* e = b.add_events();
  e->set_time_unix_nano(start_ns + 1'000'000'000);
  e->set_entity("GPU-a");
  e->set_kind("xid");
  e->set_code(79);
  e->set_message("GPU has fallen off the bus");
  return b;
}

class ApiServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(tmp_.path().empty());
    dir_ = tmp_.path();
    SqliteStorageOptions so;
    so.data_dir = dir_;
    auto storage = SqliteStorage::Open(so);
    ASSERT_TRUE(storage) << storage.error().message();
    storage_ = std::move(*storage);
    ApiServer::Options opts;
    opts.listen_address = "127.0.0.1:0";
    opts.auth_token = kToken;
    opts.max_body_bytes = 64 * 1024;
    api_ = std::make_unique<ApiServer>(opts, *storage_, clock_);
    auto port = api_->Start();
    ASSERT_TRUE(port) << port.error().message();
    client_ = std::make_unique<httplib::Client>("127.0.0.1", *port);
  }
  void TearDown() override {
    api_.reset();
    storage_.reset();
  }

  httplib::Result Post(const std::string& body, const std::string& type = "application/x-protobuf",
                       const std::string& token = kToken) {
    httplib::Headers h;
    if (!token.empty()) h.emplace("Authorization", "Bearer " + token);
    return client_->Post("/api/v1/ingest/batch", h, body, type.c_str());
  }

  base::FakeClock clock_{base::FromUnixNanos(kT0 + 3'600'000'000'000)};
  base::TempDir tmp_;  // removed after everything below
  std::string dir_;
  std::unique_ptr<SqliteStorage> storage_;
  std::unique_ptr<ApiServer> api_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(ApiServerTest, StoresABatchOnceAndAnswersQueries) {
  auto res = Post(MakeBatch(1, kT0, 0.9).SerializeAsString());
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  warpscope::v1::BatchResponse reply;
  ASSERT_TRUE(reply.ParseFromString(res->body));
  EXPECT_EQ(reply.accepted_sequence(), 1u);
  EXPECT_FALSE(reply.duplicate());

  auto again = Post(MakeBatch(1, kT0, 0.9).SerializeAsString());
  ASSERT_EQ(again->status, 200);
  ASSERT_TRUE(reply.ParseFromString(again->body));
  EXPECT_TRUE(reply.duplicate());
  EXPECT_EQ(api_->stats().batches, 1u);
  EXPECT_EQ(api_->stats().duplicate_batches, 1u);

  auto range = client_->Get(
      "/api/v1/query_range?metric=gpu.utilization&start=1700000000&end=1700000060&step=60s&"
      "kind=gpu&agg=max");
  ASSERT_EQ(range->status, 200) << range->body;
  json r = json::parse(range->body);
  ASSERT_EQ(r["series"].size(), 1u);
  EXPECT_EQ(r["series"][0]["entity"], "GPU-a");
  EXPECT_EQ(r["series"][0]["attributes"]["gpu.index"], "0");
  EXPECT_NEAR(r["series"][0]["points"][0][1].get<double>(), 1.0, 1e-9);
  EXPECT_EQ(r["metric"]["prom_name"], "DCGM_FI_DEV_GPU_UTIL");

  json entities = json::parse(client_->Get("/api/v1/entities?kind=gpu")->body);
  ASSERT_EQ(entities["entities"].size(), 1u);
  EXPECT_EQ(entities["entities"][0]["id"], "GPU-a");

  json top = json::parse(
      client_->Get("/api/v1/top?metric=gpu.utilization&kind=gpu&start=1700000000&end=1700000060")
          ->body);
  ASSERT_EQ(top["entries"].size(), 1u);
  EXPECT_NEAR(top["entries"][0]["value"].get<double>(), 0.9, 1e-9);

  json events =
      json::parse(client_->Get("/api/v1/events?start=1700000000&end=1700000060")->body);
  ASSERT_EQ(events["events"].size(), 1u);
  EXPECT_EQ(events["events"][0]["code"], 79);

  json metrics = json::parse(client_->Get("/api/v1/metrics")->body);
  EXPECT_EQ(metrics["metrics"][0]["key"], "gpu.utilization");
}

TEST_F(ApiServerTest, StopRightAfterStartReturns) {
  // A stop() that httplib received before its accept loop started used to be lost, and Stop()
  // then waited for ever; ctest's timeout is the failure here.
  for (int i = 0; i < 20; ++i) {
    ApiServer::Options opts;
    opts.listen_address = "127.0.0.1:0";
    ApiServer server(opts, *storage_, clock_);
    ASSERT_TRUE(server.Start().has_value());
    server.Stop();
  }
}

TEST_F(ApiServerTest, JsonBatchesWork) {
  std::string body;
  ASSERT_TRUE(google::protobuf::util::MessageToJsonString(MakeBatch(7, kT0, 0.5), &body).ok());
  auto res = Post(body, "application/json");
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(json::parse(res->body)["accepted_sequence"], 7);
}

TEST_F(ApiServerTest, RejectsMissingAndWrongTokens) {
  std::string body = MakeBatch(1, kT0, 0.9).SerializeAsString();
  auto none = Post(body, "application/x-protobuf", "");
  ASSERT_EQ(none->status, 401);
  EXPECT_NE(json::parse(none->body)["error"].get<std::string>().find("bearer token"),
            std::string::npos);
  EXPECT_EQ(Post(body, "application/x-protobuf", "wrong")->status, 401);
  EXPECT_EQ(api_->stats().unauthorized, 2u);
  EXPECT_EQ(api_->stats().batches, 0u);
}

TEST_F(ApiServerTest, ARotatedTokenReplacesTheOldOne) {
  std::string body = MakeBatch(1, kT0, 0.9).SerializeAsString();
  api_->SetAuthToken("rotated-token");
  EXPECT_EQ(Post(body, "application/x-protobuf", kToken)->status, 401);
  EXPECT_EQ(Post(body, "application/x-protobuf", "rotated-token")->status, 200);
  api_->SetAuthToken("");  // no token: ingest is open
  EXPECT_EQ(Post(body, "application/x-protobuf", "")->status, 200);
}

TEST_F(ApiServerTest, MalformedBodiesGetAClearJsonError) {
  auto garbage = Post("\xff\xff\xff not a protobuf");
  ASSERT_EQ(garbage->status, 400);
  EXPECT_FALSE(json::parse(garbage->body)["error"].get<std::string>().empty());

  auto bad_json = Post("{\"version\": 1, \"agentId\": ", "application/json");
  ASSERT_EQ(bad_json->status, 400);

  warpscope::v1::Batch future = MakeBatch(1, kT0, 0.9);
  future.set_version(99);
  auto version = Post(future.SerializeAsString());
  ASSERT_EQ(version->status, 400);
  EXPECT_NE(json::parse(version->body)["error"].get<std::string>().find("version"),
            std::string::npos);

  auto type = Post("x", "text/plain");
  EXPECT_EQ(type->status, 415);
  // Nothing above was stored.
  EXPECT_EQ(api_->stats().batches, 0u);
}

TEST_F(ApiServerTest, OversizedBodyIs413WithJson) {
  auto res = Post(std::string(128 * 1024, 'x'));
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 413);
  EXPECT_NE(res->body.find("too large"), std::string::npos);
}

TEST_F(ApiServerTest, BadQueriesAre400AndUnknownPathsAre404) {
  EXPECT_EQ(client_->Get("/api/v1/query_range")->status, 400);
  EXPECT_EQ(client_->Get("/api/v1/query_range?metric=x&start=yesterday")->status, 400);
  EXPECT_EQ(client_->Get("/api/v1/entities?kind=toaster")->status, 400);
  auto unknown = client_->Get("/api/v1/query_range?metric=no.such.metric");
  EXPECT_EQ(unknown->status, 404);
  auto nowhere = client_->Get("/api/v1/nowhere");
  EXPECT_EQ(nowhere->status, 404);
  EXPECT_TRUE(json::parse(nowhere->body).contains("error"));
}

TEST_F(ApiServerTest, ProfilesRoundTrip) {
  httplib::Headers h{{"Authorization", std::string("Bearer ") + kToken}};
  std::string pprof = "\x1f\x8b\x08\x00fake-pprof-bytes";
  auto res = client_->Post(
      "/api/v1/ingest/profile?host=node1&kind=gpu&pid=42&executable=python3&start=1700000000&"
      "end=1700000060",
      h, pprof, "application/octet-stream");
  ASSERT_EQ(res->status, 200) << res->body;
  int64_t id = json::parse(res->body)["id"];
  json list = json::parse(
      client_->Get("/api/v1/profiles?host=node1&start=1700000000&end=1700000100")->body);
  ASSERT_EQ(list["profiles"].size(), 1u);
  EXPECT_EQ(list["profiles"][0]["executable"], "python3");
  auto data = client_->Get("/api/v1/profiles/" + std::to_string(id));
  ASSERT_EQ(data->status, 200);
  EXPECT_EQ(data->body, pprof);
  EXPECT_EQ(client_->Get("/api/v1/profiles/999999")->status, 404);
  EXPECT_EQ(client_->Post("/api/v1/ingest/profile?kind=cpu", h, pprof, "application/octet-stream")
                ->status,
            400);
}

TEST_F(ApiServerTest, HealthReadinessAndSelfMetrics) {
  EXPECT_EQ(client_->Get("/healthz")->status, 200);
  EXPECT_EQ(client_->Get("/readyz")->status, 200);
  auto m = client_->Get("/metrics");
  ASSERT_EQ(m->status, 200);
  EXPECT_NE(m->body.find("warpscope_server_batches_total 0"), std::string::npos);
}

}  // namespace
}  // namespace warpscope::server

namespace warpscope::server {
namespace {

TEST(ApiServerTlsTest, ServesHttpsAndAgentsVerifyIt) {
  base::TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  const std::string dir = tmp.path();
  ASSERT_TRUE(test::MakeSelfSignedCert(dir + "/cert.pem", dir + "/key.pem"));
  SqliteStorageOptions so;
  so.data_dir = dir + "/db";
  auto storage = SqliteStorage::Open(so);
  ASSERT_TRUE(storage);
  base::FakeClock clock;
  ApiServer::Options opts;
  opts.listen_address = "127.0.0.1:0";
  opts.tls_cert_file = dir + "/cert.pem";
  opts.tls_key_file = dir + "/key.pem";
  ApiServer api(opts, **storage, clock);
  auto port = api.Start();
  ASSERT_TRUE(port) << port.error().message();

  httplib::SSLClient trusted("127.0.0.1", *port);
  trusted.set_ca_cert_path((dir + "/cert.pem").c_str());
  trusted.enable_server_certificate_verification(true);
  auto ok = trusted.Get("/healthz");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);

  httplib::SSLClient untrusted("127.0.0.1", *port);
  untrusted.enable_server_certificate_verification(true);
  EXPECT_FALSE(untrusted.Get("/healthz"));  // self-signed, not in the system CAs
  api.Stop();
}

TEST(ApiServerTlsTest, BadCertificateIsAClearError) {
  SqliteStorageOptions so;
  base::TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  so.data_dir = tmp.path();
  auto storage = SqliteStorage::Open(so);
  ASSERT_TRUE(storage);
  base::FakeClock clock;
  ApiServer::Options opts;
  opts.listen_address = "127.0.0.1:0";
  opts.tls_cert_file = "/nonexistent/cert.pem";
  opts.tls_key_file = "/nonexistent/key.pem";
  ApiServer api(opts, **storage, clock);
  auto port = api.Start();
  ASSERT_FALSE(port);
  EXPECT_NE(port.error().message().find("--tls-cert"), std::string::npos);
}

// --- OTLP/HTTP metrics and Prometheus remote write ---------------------------------------------

namespace otlp = ::opentelemetry::proto::collector::metrics::v1;

otlp::ExportMetricsServiceRequest MakeOtlpRequest(double util, const std::string& host = "node9") {
  otlp::ExportMetricsServiceRequest req;
  auto* rm = req.add_resource_metrics();
  if (!host.empty()) {
    auto* h = rm->mutable_resource()->add_attributes();
    h->set_key("host.name");
    h->mutable_value()->set_string_value(host);
  }
  auto* m = rm->add_scope_metrics()->add_metrics();
  m->set_name("hw.gpu.utilization");
  m->set_unit("1");
  m->set_description("GPU busy ratio");
  auto* p = m->mutable_gauge()->add_data_points();
  p->set_time_unix_nano(kT0 + 5'000'000'000);
  p->set_as_double(util);
  auto* id = p->add_attributes();
  id->set_key("hw.id");
  id->mutable_value()->set_string_value("GPU-otlp");
  auto* type = p->add_attributes();
  type->set_key("hw.type");
  type->mutable_value()->set_string_value("gpu");
  return req;
}

std::string SnappyWriteRequest(const std::string& name, double value, int64_t ms,
                               const std::string& instance = "node5:9100") {
  prometheus::WriteRequest req;
  auto* ts = req.add_timeseries();
  auto* n = ts->add_labels();
  n->set_name("__name__");
  n->set_value(name);
  if (!instance.empty()) {
    auto* i = ts->add_labels();
    i->set_name("instance");
    i->set_value(instance);
  }
  auto* job = ts->add_labels();
  job->set_name("job");
  job->set_value("node");
  auto* s = ts->add_samples();
  s->set_value(value);
  s->set_timestamp(ms);
  std::string raw = req.SerializeAsString();
  std::string out;
  snappy::Compress(raw.data(), raw.size(), &out);
  return out;
}

httplib::Headers IngestHeaders(httplib::Headers extra = {}) {
  extra.emplace("Authorization", std::string("Bearer ") + kToken);
  return extra;
}

httplib::Headers RemoteWriteHeaders() {
  return IngestHeaders({{"Content-Encoding", "snappy"},
                        {"X-Prometheus-Remote-Write-Version", "0.1.0"}});
}

TEST_F(ApiServerTest, OtlpProtobufIsStoredOnceAndQueryable) {
  std::string body = MakeOtlpRequest(0.8).SerializeAsString();
  auto res = client_->Post("/v1/metrics", IngestHeaders(), body, "application/x-protobuf");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(res->get_header_value("Content-Type"), "application/x-protobuf");
  otlp::ExportMetricsServiceResponse reply;
  ASSERT_TRUE(reply.ParseFromString(res->body));
  EXPECT_FALSE(reply.has_partial_success());
  auto again = client_->Post("/v1/metrics", IngestHeaders(), body, "application/x-protobuf");
  ASSERT_EQ(again->status, 200);
  EXPECT_EQ(api_->stats().otlp_requests, 2u);
  EXPECT_EQ(api_->stats().duplicate_batches, 1u);
  EXPECT_EQ(api_->stats().series_windows, 1u);

  auto range = client_->Get(
      "/api/v1/query_range?metric=hw.gpu.utilization&start=1700000000&end=1700000060&step=60s&"
      "kind=gpu&host=node9");
  ASSERT_EQ(range->status, 200) << range->body;
  json r = json::parse(range->body);
  ASSERT_EQ(r["series"].size(), 1u);
  EXPECT_EQ(r["series"][0]["entity"], "GPU-otlp");
  EXPECT_EQ(r["series"][0]["attributes"]["gpu.uuid"], "GPU-otlp");
  EXPECT_NEAR(r["series"][0]["points"][0][1].get<double>(), 0.8, 1e-9);
  EXPECT_EQ(r["metric"]["help"], "GPU busy ratio");
}

TEST_F(ApiServerTest, OtlpJsonOnTheAlternativePathReportsRejectedPoints) {
  const std::string body = R"({"resourceMetrics":[{"resource":{"attributes":[
      {"key":"host.name","value":{"stringValue":"h1"}}]},
    "scopeMetrics":[{"metrics":[{"name":"m","gauge":{"dataPoints":[
      {"timeUnixNano":"1700000000000000000","asDouble":1},
      {"timeUnixNano":"1700000000000000000","asDouble":"NaN",
       "attributes":[{"key":"k","value":{"stringValue":"v"}}]}]}}]}]}]})";
  auto res = client_->Post("/api/v1/otlp/v1/metrics", IngestHeaders(), body, "application/json");
  ASSERT_EQ(res->status, 200) << res->body;
  json reply = json::parse(res->body);
  EXPECT_EQ(reply["partialSuccess"]["rejectedDataPoints"], "1");
  EXPECT_NE(reply["partialSuccess"]["errorMessage"].get<std::string>().find("finite"),
            std::string::npos);
  EXPECT_EQ(api_->stats().skipped_points, 1u);
  EXPECT_EQ(api_->stats().series_windows, 1u);
}

TEST_F(ApiServerTest, OtlpGzipBodiesAreInflated) {
  client_->set_compress(true);
  auto res = client_->Post("/v1/metrics", IngestHeaders(), MakeOtlpRequest(0.5).SerializeAsString(),
                           "application/x-protobuf");
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(api_->stats().series_windows, 1u);
}

TEST_F(ApiServerTest, OtlpBadRequestsGetJsonErrors) {
  std::string no_host = MakeOtlpRequest(0.5, "").SerializeAsString();
  auto res = client_->Post("/v1/metrics", IngestHeaders(), no_host, "application/x-protobuf");
  ASSERT_EQ(res->status, 400);
  EXPECT_NE(json::parse(res->body)["error"].get<std::string>().find("host.name"),
            std::string::npos);
  auto garbage =
      client_->Post("/v1/metrics", IngestHeaders(), "\xff\xff not otlp", "application/x-protobuf");
  EXPECT_EQ(garbage->status, 400);
  auto type = client_->Post("/v1/metrics", IngestHeaders(), "x", "text/plain");
  EXPECT_EQ(type->status, 415);
  auto unauthorized = client_->Post("/v1/metrics", MakeOtlpRequest(0.5).SerializeAsString(),
                                    "application/x-protobuf");
  EXPECT_EQ(unauthorized->status, 401);
  auto big = client_->Post("/v1/metrics", IngestHeaders(), std::string(128 * 1024, 'x'),
                           "application/x-protobuf");
  EXPECT_EQ(big->status, 413);  // refused by httplib before the handler: not counted
  EXPECT_EQ(api_->stats().rejected, 3u);
  EXPECT_EQ(api_->stats().series_windows, 0u);
}

TEST_F(ApiServerTest, RemoteWriteIsStoredAndAnswers204) {
  auto res = client_->Post("/api/v1/write", RemoteWriteHeaders(),
                           SnappyWriteRequest("node_load1", 1.25, 1'700'000'010'000),
                           "application/x-protobuf");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 204) << res->body;
  EXPECT_EQ(api_->stats().remote_write_requests, 1u);
  auto range = client_->Get(
      "/api/v1/query_range?metric=node_load1&start=1700000000&end=1700000060&step=60s");
  ASSERT_EQ(range->status, 200) << range->body;
  json r = json::parse(range->body);
  ASSERT_EQ(r["series"].size(), 1u);
  EXPECT_EQ(r["series"][0]["host"], "node5:9100");
  EXPECT_EQ(r["series"][0]["labels"]["job"], "node");
  EXPECT_NEAR(r["series"][0]["points"][0][1].get<double>(), 1.25, 1e-9);
}

TEST_F(ApiServerTest, RemoteWriteBadRequestsGetJsonErrors) {
  auto not_snappy = client_->Post("/api/v1/write", RemoteWriteHeaders(), "\xff\xff\xff\xff\xff",
                                  "application/x-protobuf");
  ASSERT_EQ(not_snappy->status, 400);
  EXPECT_NE(json::parse(not_snappy->body)["error"].get<std::string>().find("snappy"),
            std::string::npos);
  auto no_name = client_->Post("/api/v1/write", RemoteWriteHeaders(),
                               SnappyWriteRequest("", 1, 1'700'000'010'000),
                               "application/x-protobuf");
  ASSERT_EQ(no_name->status, 400);
  EXPECT_NE(no_name->body.find("__name__"), std::string::npos);
  auto v2 = client_->Post(
      "/api/v1/write",
      IngestHeaders(
          {{"Content-Encoding", "snappy"}, {"X-Prometheus-Remote-Write-Version", "2.0.0"}}),
      SnappyWriteRequest("up", 1, 1'700'000'010'000), "application/x-protobuf");
  EXPECT_EQ(v2->status, 400);
  auto v2_type = client_->Post("/api/v1/write", RemoteWriteHeaders(),
                               SnappyWriteRequest("up", 1, 1'700'000'010'000),
                               "application/x-protobuf;proto=io.prometheus.write.v2.Request");
  EXPECT_EQ(v2_type->status, 415);
  // 128 KiB of zeros compress to a few KiB but inflate past the 64 KiB limit.
  std::string zeros(128 * 1024, '\0');
  std::string bomb;
  snappy::Compress(zeros.data(), zeros.size(), &bomb);
  auto big = client_->Post("/api/v1/write", RemoteWriteHeaders(), bomb, "application/x-protobuf");
  EXPECT_EQ(big->status, 413);
  EXPECT_TRUE(json::parse(big->body).contains("error"));
  EXPECT_EQ(api_->stats().remote_write_requests, 0u);
  EXPECT_EQ(api_->stats().rejected, 5u);
}

}  // namespace
}  // namespace warpscope::server

namespace warpscope::server {
namespace {

// A CPU profile: main -> work (`work` samples) and main -> idle (`idle` samples), 1 ms each.
std::string CpuPprof(int64_t work, int64_t idle) {
  profiling::ProfileAggregator p(
      std::vector<profiling::ValueType>{{"samples", "count"}, {"cpu", "nanoseconds"}});
  uint32_t main = p.InternFrame({"main", "main.cc", 1});
  uint32_t work_fn = p.InternFrame({"work", "work.cc", 2});
  uint32_t idle_fn = p.InternFrame({"idle", "main.cc", 3});
  const int64_t work_values[] = {work, work * 1'000'000};
  const int64_t idle_values[] = {idle, idle * 1'000'000};
  p.Add(std::vector<uint32_t>{main, work_fn}, work_values);
  p.Add(std::vector<uint32_t>{main, idle_fn}, idle_values);
  return profiling::EncodePprof(p.profile()).value();
}

class MergedProfileTest : public ApiServerTest {
 protected:
  void Upload(const std::string& pprof, const std::string& kind, int64_t start,
              const std::string& extra = "") {
    httplib::Headers h{{"Authorization", std::string("Bearer ") + kToken}};
    auto res = client_->Post("/api/v1/ingest/profile?host=node1&kind=" + kind + extra +
                                 "&start=" + std::to_string(start) +
                                 "&end=" + std::to_string(start + 60),
                             h, pprof, "application/octet-stream");
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200) << res->body;
  }
  static constexpr char kWindow[] = "host=node1&start=1700000000&end=1700001000";
};

TEST_F(MergedProfileTest, TreeSumsTheProfilesOfTheWindow) {
  Upload(CpuPprof(10, 5), "cpu", 1700000000);
  Upload(CpuPprof(30, 1), "cpu", 1700000100);
  auto res = client_->Get(std::string("/api/v1/profiles/merged?kind=cpu&value=cpu&") + kWindow);
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  json body = json::parse(res->body);
  EXPECT_EQ(body["profiles"], 2);
  EXPECT_EQ(body["value"], 1);
  EXPECT_EQ(body["sample_types"][1]["type"], "cpu");
  EXPECT_EQ(body["root"]["total"][0], 46);
  const json& main = body["root"]["children"][0];
  EXPECT_EQ(main["name"], "main");
  EXPECT_EQ(main["children"][0]["name"], "work");
  EXPECT_EQ(main["children"][0]["total"][0], 40);
  EXPECT_EQ(main["children"][0]["total"][1], 40'000'000);
  EXPECT_EQ(main["children"][1]["total"][0], 6);
}

TEST_F(MergedProfileTest, PprofFormatDecodesBack) {
  Upload(CpuPprof(10, 5), "cpu", 1700000000);
  Upload(CpuPprof(30, 1), "cpu", 1700000100);
  auto res = client_->Get(std::string("/api/v1/profiles/merged?format=pprof&") + kWindow);
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(res->get_header_value("Content-Type"), "application/octet-stream");
  auto merged = profiling::DecodePprof(res->body);
  ASSERT_TRUE(merged) << merged.error().message();
  ASSERT_EQ(merged->samples.size(), 2u);
  EXPECT_EQ(merged->samples[0].values, (std::vector<int64_t>{40, 40'000'000}));
  EXPECT_EQ(merged->samples[1].values, (std::vector<int64_t>{6, 6'000'000}));
}

TEST_F(MergedProfileTest, EmptyWindowIs404SayingWhatToEnable) {
  auto res = client_->Get(std::string("/api/v1/profiles/merged?") + kWindow);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
  EXPECT_NE(json::parse(res->body)["error"].get<std::string>().find("run the CPU or CUDA profiler"),
            std::string::npos);
}

TEST_F(MergedProfileTest, DifferentSampleTypesAndBadParametersAre400) {
  Upload(CpuPprof(10, 5), "cpu", 1700000000);
  profiling::ProfileAggregator gpu(
      std::vector<profiling::ValueType>{{"launches", "count"}, {"gpu_time", "nanoseconds"}});
  const int64_t gpu_values[] = {1, 100};
  gpu.Add(std::vector<uint32_t>{gpu.InternFrame({"kernel", "", 0})}, gpu_values);
  Upload(profiling::EncodePprof(gpu.profile()).value(), "gpu", 1700000100);
  auto mixed = client_->Get(std::string("/api/v1/profiles/merged?") + kWindow);
  ASSERT_TRUE(mixed);
  EXPECT_EQ(mixed->status, 400);
  EXPECT_NE(mixed->body.find("launches/count"), std::string::npos) << mixed->body;
  EXPECT_EQ(client_->Get(std::string("/api/v1/profiles/merged?kind=gpu&format=svg&") + kWindow)
                ->status,
            400);
  EXPECT_EQ(client_->Get(std::string("/api/v1/profiles/merged?kind=gpu&value=alloc&") + kWindow)
                ->status,
            400);
  EXPECT_EQ(client_->Get(std::string("/api/v1/profiles/merged?kind=gpu&value=gpu_time&") + kWindow)
                ->status,
            200);
}

// A CPU profile as the CPU profiler writes it (kinds, tid and thread_name labels): python3 ->
// step (train.py) on thread 7 "python3", python3 -> next (loader.py) on thread 8 "DataLoader".
std::string ThreadedCpuPprof(int64_t main_ms, int64_t loader_ms) {
  using profiling::FrameKind;
  profiling::ProfileAggregator p(
      std::vector<profiling::ValueType>{{"samples", "count"}, {"cpu", "nanoseconds"}});
  const uint32_t process =
      p.InternFrame({"python3", "/usr/bin/python3", 0, "", "", "", FrameKind::kProcess});
  const uint32_t step = p.InternFrame({"step", "train.py", 3, "", "", "", FrameKind::kPython});
  const uint32_t next = p.InternFrame({"next", "loader.py", 9, "", "", "", FrameKind::kPython});
  const int64_t m[] = {main_ms, main_ms * 1'000'000};
  const int64_t l[] = {loader_ms, loader_ms * 1'000'000};
  p.Add(std::vector<uint32_t>{process, step}, m,
        std::vector<profiling::Label>{{"tid", "", 7}, {"thread_name", "python3", 0}});
  p.Add(std::vector<uint32_t>{process, next}, l,
        std::vector<profiling::Label>{{"tid", "", 8}, {"thread_name", "DataLoader", 0}});
  return profiling::EncodePprof(p.profile()).value();
}

// A GPU profile of the same process: python3 -> step -> cudaLaunchKernel -> gemm.
std::string GpuPprof(int64_t gpu_ns) {
  using profiling::FrameKind;
  profiling::ProfileAggregator p(
      std::vector<profiling::ValueType>{{"gpu_time", "nanoseconds"}, {"launches", "count"}});
  std::vector<uint32_t> stack = {
      p.InternFrame({"python3", "/usr/bin/python3", 0, "", "", "", FrameKind::kProcess}),
      p.InternFrame({"step", "train.py", 3, "", "", "", FrameKind::kPython}),
      p.InternFrame({"cudaLaunchKernel", "", 0, "", "", "", FrameKind::kLaunch}),
      p.InternFrame({"gemm", "", 0, "", "", "", FrameKind::kKernel})};
  const int64_t v[] = {gpu_ns, 2};
  p.Add(stack, v);
  return profiling::EncodePprof(p.profile()).value();
}

TEST_F(MergedProfileTest, NodesCarryKindsAndTheThreadFilterNarrowsTheTree) {
  Upload(ThreadedCpuPprof(30, 10), "cpu", 1700000000, "&pid=42");
  auto res = client_->Get(std::string("/api/v1/profiles/merged?kind=cpu&value=cpu&") + kWindow);
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  json body = json::parse(res->body);
  EXPECT_EQ(body["root"]["kind"], "unknown");
  EXPECT_EQ(body["root"]["children"][0]["kind"], "process");
  EXPECT_EQ(body["root"]["children"][0]["children"][0]["kind"], "python");
  ASSERT_EQ(body["threads"].size(), 2u);
  EXPECT_EQ(body["threads"][0],
            json({{"tid", 7}, {"name", "python3"}, {"total", {30, 30'000'000}}}));
  EXPECT_EQ(body["cpu"]["value"], 1);
  EXPECT_TRUE(body["cpu"]["cores"].is_null()) << "no host.cpu.logical_count received";

  for (std::string thread : {"8", "DataLoader"}) {
    auto one = client_->Get("/api/v1/profiles/merged?kind=cpu&thread=" + thread + "&" + kWindow);
    ASSERT_TRUE(one);
    ASSERT_EQ(one->status, 200) << one->body;
    json t = json::parse(one->body);
    EXPECT_EQ(t["root"]["total"][0], 10) << thread;
    EXPECT_EQ(t["threads"].size(), 2u);
  }
  auto empty = client_->Get(std::string("/api/v1/profiles/merged?kind=cpu&thread=&") + kWindow);
  ASSERT_TRUE(empty);
  EXPECT_EQ(empty->status, 400);
  EXPECT_NE(json::parse(empty->body)["error"].get<std::string>().find("thread=4242"),
            std::string::npos);
  auto by_pid = client_->Get(std::string("/api/v1/profiles?pid=42&") + kWindow);
  ASSERT_TRUE(by_pid);
  EXPECT_EQ(json::parse(by_pid->body)["profiles"].size(), 1u);
  auto other_pid = client_->Get(std::string("/api/v1/profiles?pid=43&") + kWindow);
  ASSERT_TRUE(other_pid);
  EXPECT_EQ(json::parse(other_pid->body)["profiles"].size(), 0u);
}

TEST_F(MergedProfileTest, CpuPlusGpuMergesOneProcessUnderTheUnionOfSampleTypes) {
  Upload(ThreadedCpuPprof(30, 10), "cpu", 1700000000, "&pid=42");
  Upload(GpuPprof(9'000'000), "gpu", 1700000000, "&pid=42");
  Upload(ThreadedCpuPprof(500, 500), "cpu", 1700000000, "&pid=43");
  // '+' is a space once URL-decoded; %2B and ',' are accepted too.
  for (std::string kinds : {"cpu+gpu", "cpu%2Bgpu", "cpu,gpu"}) {
    auto res = client_->Get("/api/v1/profiles/merged?kind=" + kinds + "&pid=42&" + kWindow);
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200) << kinds << ": " << res->body;
    json body = json::parse(res->body);
    EXPECT_EQ(body["kinds"], json({"cpu", "gpu"}));
    EXPECT_EQ(body["sample_types"].size(), 4u);
    EXPECT_EQ(body["sample_types"][2]["type"], "gpu_time");
    EXPECT_EQ(body["root"]["total"], json({40, 40'000'000, 9'000'000, 2}));
    const json& step = body["root"]["children"][0]["children"][0];
    EXPECT_EQ(step["name"], "step");
    EXPECT_EQ(step["total"], json({30, 30'000'000, 9'000'000, 2}));
    EXPECT_EQ(step["children"][0]["kind"], "launch");
    EXPECT_EQ(step["children"][0]["children"][0]["kind"], "kernel");
  }
  auto sorted = client_->Get(
      std::string("/api/v1/profiles/merged?kind=cpu%2Bgpu&pid=42&value=gpu_time&") + kWindow);
  ASSERT_TRUE(sorted);
  ASSERT_EQ(sorted->status, 200) << sorted->body;
  EXPECT_EQ(json::parse(sorted->body)["value"], 2);
  auto pprof = client_->Get(
      std::string("/api/v1/profiles/merged?kind=cpu%2Bgpu&pid=42&format=pprof&") + kWindow);
  ASSERT_TRUE(pprof);
  ASSERT_EQ(pprof->status, 200);
  auto decoded = profiling::DecodePprof(pprof->body);
  ASSERT_TRUE(decoded) << decoded.error().message();
  EXPECT_EQ(decoded->sample_types.size(), 4u);
  bool launch_kind = false;
  for (const profiling::Frame& f : decoded->frames) {
    launch_kind = launch_kind ||
                  (f.function == "cudaLaunchKernel" && f.kind == profiling::FrameKind::kLaunch);
  }
  EXPECT_TRUE(launch_kind) << "the download keeps the frames' kinds";

  // Without asking for both kinds, mixing them stays refused.
  auto mixed = client_->Get(std::string("/api/v1/profiles/merged?pid=42&") + kWindow);
  ASSERT_TRUE(mixed);
  EXPECT_EQ(mixed->status, 400);
}

TEST_F(MergedProfileTest, BadMergeParametersAre400NamingTheFix) {
  Upload(ThreadedCpuPprof(30, 10), "cpu", 1700000000, "&pid=42");
  auto error_of = [&](const std::string& query) {
    auto res = client_->Get("/api/v1/profiles/merged?" + query + "&" + kWindow);
    EXPECT_TRUE(res);
    if (!res) return std::string();
    EXPECT_EQ(res->status, 400) << query;
    return json::parse(res->body)["error"].get<std::string>();
  };
  EXPECT_NE(error_of("kind=cpu%2Bgpu").find("pid=N"), std::string::npos);
  EXPECT_NE(error_of("kind=cpu%2B%2Bgpu&pid=42").find("kind=cpu+gpu"), std::string::npos);
  EXPECT_NE(error_of("kind=cpu%2Bcpu&pid=42").find("repeated"), std::string::npos);
  EXPECT_NE(error_of("kind=cpu&pid=abc").find("positive number"), std::string::npos);
  EXPECT_NE(error_of("kind=cpu&pid=-3").find("pid=-3"), std::string::npos);
  auto list = client_->Get(std::string("/api/v1/profiles?pid=x&") + kWindow);
  ASSERT_TRUE(list);
  EXPECT_EQ(list->status, 400);
}

// A chart's "others": exclude_pid= leaves those processes out of the list and the tree.
TEST_F(MergedProfileTest, ExcludedProcessesAreLeftOutOfTheListAndTheTree) {
  Upload(ThreadedCpuPprof(30, 10), "cpu", 1700000000, "&pid=42");
  Upload(ThreadedCpuPprof(500, 500), "cpu", 1700000000, "&pid=43");
  Upload(ThreadedCpuPprof(7, 3), "cpu", 1700000000, "&pid=44");
  auto get = [&](const std::string& path, const std::string& query) {
    auto res = client_->Get(path + "?" + query + "&" + kWindow);
    EXPECT_TRUE(res);
    return res ? std::make_pair(res->status, json::parse(res->body)) : std::make_pair(0, json());
  };
  auto samples = [&](const std::string& query) {
    auto [status, body] = get("/api/v1/profiles/merged", "kind=cpu&" + query);
    EXPECT_EQ(status, 200) << query << ": " << body.dump();
    return status == 200 ? body["root"]["total"][0].get<int64_t>() : -1;
  };
  EXPECT_EQ(samples(""), 1050);
  EXPECT_EQ(samples("exclude_pid=43"), 50);
  EXPECT_EQ(samples("exclude_pid=42,43"), 10);
  EXPECT_EQ(samples("exclude_pid=42&exclude_pid=43"), 10);
  EXPECT_EQ(get("/api/v1/profiles", "exclude_pid=43").second["profiles"].size(), 2u);

  auto error_of = [&](const std::string& query) {
    auto [status, body] = get("/api/v1/profiles/merged", "kind=cpu&" + query);
    EXPECT_EQ(status, 400) << query;
    return body.value("error", "");
  };
  EXPECT_NE(error_of("exclude_pid=4x").find("exclude_pid=4242,4243"), std::string::npos);
  EXPECT_NE(error_of("exclude_pid=42,").find("exclude_pid=42,"), std::string::npos);
  EXPECT_NE(error_of("exclude_pid=42&pid=43").find("drop one"), std::string::npos);
  std::string many = "exclude_pid=1";
  for (int pid = 2; pid <= 257; ++pid) many += "," + std::to_string(pid);
  EXPECT_NE(error_of(many).find("more than 256"), std::string::npos);
  EXPECT_EQ(get("/api/v1/profiles", "exclude_pid=0").first, 400);
}

}  // namespace
}  // namespace warpscope::server

namespace warpscope::server {
namespace {

TEST_F(ApiServerTest, SummaryGivesAvgMaxAndLatestPerGpu) {
  ASSERT_EQ(Post(MakeBatch(1, kT0, 0.9).SerializeAsString())->status, 200);
  ASSERT_EQ(Post(MakeBatch(2, kT0 + 10'000'000'000, 0.5).SerializeAsString())->status, 200);
  auto res = client_->Get("/api/v1/summary?host=node1&start=1700000000&end=1700000060");
  ASSERT_EQ(res->status, 200) << res->body;
  json s = json::parse(res->body);
  ASSERT_EQ(s["gpus"].size(), 1u);
  const json& util = s["gpus"][0]["metrics"]["gpu.utilization"];
  EXPECT_NEAR(util["avg"].get<double>(), 0.7, 1e-9);
  EXPECT_NEAR(util["max"].get<double>(), 1.0, 1e-9);
  EXPECT_NEAR(util["latest"].get<double>(), 0.5, 1e-9);
  EXPECT_EQ(s["gpus"][0]["attributes"]["gpu.index"], "0");
  // Metrics never sent (GPM, host figures) are absent, not zero.
  EXPECT_FALSE(s["gpus"][0]["metrics"].contains("gpu.sm.active"));
  EXPECT_EQ(client_->Get("/api/v1/summary")->status, 400);
}

// Two processes of python3 and one of trainer on GPU-a, one python3 process on GPU-b.
warpscope::v1::Batch MakeProcessBatch(uint64_t sequence, int64_t start_ns) {
  warpscope::v1::Batch b;
  b.set_version(1);
  b.set_agent_id("agent-2");
  b.set_sequence(sequence);
  b.set_start_unix_nano(start_ns);
  b.set_end_unix_nano(start_ns + 10'000'000'000);
  b.set_host("node2");
  auto* m = b.add_metrics();
  m->set_key("gpu.process.sm.utilization");
  m->set_kind(warpscope::v1::METRIC_KIND_GAUGE);
  m->set_unit("1");
  m->set_entity_kind(warpscope::v1::ENTITY_KIND_PROCESS);
  struct Proc {
    const char* id;
    const char* exe;
    const char* gpu;
    double util;
  };
  for (const Proc& p : {Proc{"pid/1/0", "python3", "GPU-a", 0.25}, Proc{"pid/2/0", "python3", "GPU-a", 0.5},
                        Proc{"pid/3/0", "trainer", "GPU-a", 0.125}, Proc{"pid/4/0", "python3", "GPU-b", 1.0}}) {
    auto* e = b.add_entities();
    e->set_kind(warpscope::v1::ENTITY_KIND_PROCESS);
    e->set_id(p.id);
    auto* a = e->add_attributes();
    a->set_key("process.executable.name");
    a->set_value(p.exe);
    auto* s = b.add_series();
    s->set_metric(0);
    s->set_entity(p.id);
    auto* l = s->add_labels();
    l->set_key("gpu.uuid");
    l->set_value(p.gpu);
    s->set_avg(p.util);
    s->set_min(p.util);
    s->set_max(p.util);
    s->set_last(p.util);
    s->set_count(10);
  }
  return b;
}

TEST_F(ApiServerTest, BreakdownSumsPerExecutable) {
  ASSERT_EQ(Post(MakeProcessBatch(1, kT0).SerializeAsString())->status, 200);
  auto res = client_->Get(
      "/api/v1/breakdown?metric=gpu.process.sm.utilization&host=node2&label.gpu.uuid=GPU-a&"
      "start=1700000000&end=1700000060&step=1m");
  ASSERT_EQ(res->status, 200) << res->body;
  json b = json::parse(res->body);
  EXPECT_EQ(b["by"], "process.executable.name");
  ASSERT_EQ(b["groups"].size(), 2u);
  // Largest first: python3 (0.25 + 0.5), then trainer.
  EXPECT_EQ(b["groups"][0]["key"], "python3");
  EXPECT_EQ(b["groups"][0]["entities"], 2);
  ASSERT_EQ(b["groups"][0]["points"].size(), 1u);
  EXPECT_NEAR(b["groups"][0]["points"][0][1].get<double>(), 0.75, 1e-9);
  EXPECT_EQ(b["groups"][1]["key"], "trainer");
  EXPECT_NEAR(b["groups"][1]["points"][0][1].get<double>(), 0.125, 1e-9);
}

TEST_F(ApiServerTest, BreakdownWithoutGpuFilterCoversEveryGpuAndGroupsByLabel) {
  ASSERT_EQ(Post(MakeProcessBatch(1, kT0).SerializeAsString())->status, 200);
  json all = json::parse(client_->Get("/api/v1/breakdown?metric=gpu.process.sm.utilization&"
                                      "start=1700000000&end=1700000060&step=1m")
                             ->body);
  ASSERT_EQ(all["groups"].size(), 2u);
  EXPECT_NEAR(all["groups"][0]["points"][0][1].get<double>(), 1.75, 1e-9);
  json by_gpu = json::parse(client_->Get("/api/v1/breakdown?metric=gpu.process.sm.utilization&"
                                         "by=gpu.uuid&start=1700000000&end=1700000060&step=1m")
                                ->body);
  ASSERT_EQ(by_gpu["groups"].size(), 2u);
  EXPECT_EQ(by_gpu["groups"][0]["key"], "GPU-b");
  EXPECT_NEAR(by_gpu["groups"][0]["points"][0][1].get<double>(), 1.0, 1e-9);
}

TEST_F(ApiServerTest, BreakdownByEntitySumsTheSeriesOfEachEntity) {
  ASSERT_EQ(Post(MakeProcessBatch(1, kT0).SerializeAsString())->status, 200);
  json b = json::parse(client_->Get("/api/v1/breakdown?metric=gpu.process.sm.utilization&"
                                    "by=entity&start=1700000000&end=1700000060&step=1m")
                           ->body);
  ASSERT_EQ(b["groups"].size(), 4u);
  EXPECT_EQ(b["groups"][0]["key"], "pid/4/0");
  EXPECT_EQ(b["groups"][0]["series"], 1);
}

TEST_F(ApiServerTest, BreakdownErrors) {
  EXPECT_EQ(client_->Get("/api/v1/breakdown")->status, 400);
  EXPECT_EQ(client_->Get("/api/v1/breakdown?metric=no.such.metric")->status, 404);
  EXPECT_EQ(client_->Get("/api/v1/breakdown?metric=x&step=-1s")->status, 400);
}

TEST_F(ApiServerTest, TopWithSparklines) {
  ASSERT_EQ(Post(MakeBatch(1, kT0, 0.9).SerializeAsString())->status, 200);
  ASSERT_EQ(Post(MakeBatch(2, kT0 + 30'000'000'000, 0.5).SerializeAsString())->status, 200);
  auto res = client_->Get(
      "/api/v1/top?metric=gpu.utilization&kind=gpu&start=1700000000&end=1700000060&sparkline=6");
  ASSERT_EQ(res->status, 200) << res->body;
  json top = json::parse(res->body);
  ASSERT_EQ(top["entries"].size(), 1u);
  const json& spark = top["entries"][0]["sparkline"];
  // 10 s buckets over the minute: data in the first and the fourth, the others absent.
  ASSERT_EQ(spark.size(), 2u);
  EXPECT_DOUBLE_EQ(spark[0][0].get<double>(), 1700000000.0);
  EXPECT_NEAR(spark[0][1].get<double>(), 0.9, 1e-9);
  EXPECT_DOUBLE_EQ(spark[1][0].get<double>(), 1700000030.0);
  EXPECT_NEAR(spark[1][1].get<double>(), 0.5, 1e-9);
  // Without sparkline= there is none.
  json plain = json::parse(
      client_->Get("/api/v1/top?metric=gpu.utilization&start=1700000000&end=1700000060")->body);
  EXPECT_FALSE(plain["entries"][0].contains("sparkline"));
  // Nor with sparkline=0.
  auto zero = client_->Get(
      "/api/v1/top?metric=gpu.utilization&start=1700000000&end=1700000060&sparkline=0");
  ASSERT_EQ(zero->status, 200) << zero->body;
  EXPECT_FALSE(json::parse(zero->body)["entries"][0].contains("sparkline"));
  EXPECT_EQ(client_->Get("/api/v1/top?metric=gpu.utilization&sparkline=x")->status, 400);
  EXPECT_EQ(client_->Get("/api/v1/top?metric=gpu.utilization&sparkline=501")->status, 400);
}

TEST_F(ApiServerTest, FleetSummarisesHostsGpusProcessesAndEvents) {
  ASSERT_EQ(Post(MakeBatch(1, kT0, 0.9).SerializeAsString())->status, 200);
  ASSERT_EQ(Post(MakeBatch(2, kT0 + 10'000'000'000, 0.5).SerializeAsString())->status, 200);
  ASSERT_EQ(Post(MakeProcessBatch(1, kT0).SerializeAsString())->status, 200);
  auto res = client_->Get("/api/v1/fleet?start=1700000000&end=1700000060");
  ASSERT_EQ(res->status, 200) << res->body;
  json f = json::parse(res->body);
  EXPECT_EQ(f["totals"]["hosts"], 2);
  EXPECT_EQ(f["totals"]["gpus"], 1);
  EXPECT_NEAR(f["totals"]["gpu_utilization"].get<double>(), 0.7, 1e-9);
  EXPECT_EQ(f["totals"]["events"], 2);
  EXPECT_EQ(f["totals"]["hosts_with_problems"], 1);
  // Never received: null, not zero.
  EXPECT_TRUE(f["totals"]["power_watts"].is_null());
  ASSERT_EQ(f["hosts"].size(), 2u);
  const json& node1 = f["hosts"][0];
  EXPECT_EQ(node1["host"], "node1");
  EXPECT_EQ(node1["gpus"], 1);
  EXPECT_EQ(node1["xid_events"], 2);
  EXPECT_EQ(node1["gpu_processes"], 0);
  // gpu.process.memory.used was not sent; processes are counted from it only.
  EXPECT_EQ(f["hosts"][1]["host"], "node2");
  EXPECT_TRUE(f["hosts"][1]["gpu_utilization"].is_null());
  // 10 s steps (the smallest): one point per window.
  ASSERT_EQ(f["utilization"].size(), 2u);
  EXPECT_NEAR(f["utilization"][0][1].get<double>(), 0.9, 1e-9);
  EXPECT_NEAR(f["utilization"][1][1].get<double>(), 0.5, 1e-9);
  EXPECT_TRUE(f["power"].empty());
}

TEST_F(ApiServerTest, FleetOfAnEmptyServer) {
  auto res = client_->Get("/api/v1/fleet");
  ASSERT_EQ(res->status, 200) << res->body;
  json f = json::parse(res->body);
  EXPECT_EQ(f["totals"]["hosts"], 0);
  EXPECT_TRUE(f["hosts"].empty());
  EXPECT_EQ(client_->Get("/api/v1/fleet?start=yesterday")->status, 400);
}

TEST_F(ApiServerTest, BrowsersGetGzipNotBrotli) {
  ASSERT_EQ(Post(MakeBatch(1, kT0, 0.9).SerializeAsString())->status, 200);
  auto res = client_->Get("/api/v1/metrics",
                          httplib::Headers{{"Accept-Encoding", "gzip, deflate, br, zstd"}});
  ASSERT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Encoding"), "gzip");
  EXPECT_TRUE(json::parse(res->body).contains("metrics"));
  auto br_only = client_->Get("/api/v1/metrics", httplib::Headers{{"Accept-Encoding", "br"}});
  ASSERT_EQ(br_only->status, 200);
  EXPECT_EQ(br_only->get_header_value("Content-Encoding"), "");
}

TEST_F(ApiServerTest, ServesTheUiWithSpaFallbackAndEtags) {
  auto index = client_->Get("/");
  ASSERT_EQ(index->status, 200);
  EXPECT_EQ(index->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_NE(index->body.find("<html"), std::string::npos);
  std::string etag = index->get_header_value("ETag");
  ASSERT_FALSE(etag.empty());
  auto view = client_->Get("/host/node1.example.com?tab=gpu");
  ASSERT_EQ(view->status, 200);
  EXPECT_EQ(view->body, index->body);
  auto cached = client_->Get("/", httplib::Headers{{"If-None-Match", etag}});
  EXPECT_EQ(cached->status, 304);
  EXPECT_TRUE(cached->body.empty());
  // Every embedded file is served with its type; hashed bundles are immutable.
  for (const web::Asset& a : web::Assets()) {
    auto r = client_->Get("/" + std::string(a.path));
    ASSERT_EQ(r->status, 200) << a.path;
    EXPECT_EQ(r->body.size(), a.size) << a.path;
    if (ui::IsContentHashed(a.path)) {
      EXPECT_EQ(r->get_header_value("Cache-Control"), "public, max-age=31536000, immutable");
    }
  }
  // The API keeps its JSON 404s.
  auto api = client_->Get("/api/v1/nope");
  EXPECT_EQ(api->status, 404);
  EXPECT_TRUE(json::parse(api->body).contains("error"));
  EXPECT_EQ(client_->Get("/assets/app-GONE1234.js")->status, 404);
}

// POST /api/v1/query_batch with `body` (and the test token).
httplib::Result PostBatch(httplib::Client& client, const std::string& body,
                          const std::string& token = kToken) {
  httplib::Headers h;
  if (!token.empty()) h.emplace("Authorization", "Bearer " + token);
  return client.Post("/api/v1/query_batch", h, body, "application/json");
}

TEST_F(ApiServerTest, QueryBatchAnswersEachQueryAsItsGetWould) {
  ASSERT_EQ(Post(MakeBatch(1, kT0, 0.9).SerializeAsString())->status, 200);
  ASSERT_EQ(Post(MakeProcessBatch(2, kT0).SerializeAsString())->status, 200);
  const std::string range_query =
      "metric=gpu.utilization&start=1700000000&end=1700000060&step=60s&kind=gpu&agg=max";
  const std::string breakdown_query =
      "metric=gpu.process.sm.utilization&host=node2&label.gpu.uuid=GPU-a&start=1700000000&"
      "end=1700000060&step=1m";
  json body = {{"queries",
                {{{"path", "query_range"},
                  {"params",
                   {{"metric", "gpu.utilization"},
                    {"start", 1700000000},
                    {"end", "1700000060"},
                    {"step", "60s"},
                    {"kind", "gpu"},
                    {"agg", "max"}}}},
                 {{"path", "breakdown"},
                  {"params",
                   {{"metric", "gpu.process.sm.utilization"},
                    {"host", "node2"},
                    {"label.gpu.uuid", "GPU-a"},
                    {"start", "1700000000"},
                    {"end", "1700000060"},
                    {"step", "1m"}}}}}}};
  auto res = PostBatch(*client_, body.dump());
  ASSERT_EQ(res->status, 200) << res->body;
  json r = json::parse(res->body);
  ASSERT_EQ(r["results"].size(), 2u);
  EXPECT_EQ(r["results"][0],
            json::parse(client_->Get("/api/v1/query_range?" + range_query)->body));
  EXPECT_EQ(r["results"][1],
            json::parse(client_->Get("/api/v1/breakdown?" + breakdown_query)->body));
  EXPECT_EQ(r["results"][1]["groups"][0]["key"], "python3");
}

TEST_F(ApiServerTest, QueryBatchReportsBadQueriesOneByOne) {
  ASSERT_EQ(Post(MakeBatch(1, kT0, 0.9).SerializeAsString())->status, 200);
  json good = {{"path", "query_range"},
               {"params", {{"metric", "gpu.utilization"}, {"start", "1700000000"},
                           {"end", "1700000060"}}}};
  json body = {{"queries",
                {good,
                 {{"path", "query_range"}, {"params", {{"start", "1700000000"}}}},
                 {{"path", "top"}, {"params", {{"metric", "gpu.utilization"}}}},
                 {{"path", "breakdown"}, {"params", {{"metric", "gpu.utilization"}, {"step", "-1s"}}}},
                 {{"path", "query_range"}, {"params", "metric=gpu.utilization"}},
                 42}}};
  auto res = PostBatch(*client_, body.dump());
  ASSERT_EQ(res->status, 200) << res->body;
  json r = json::parse(res->body)["results"];
  ASSERT_EQ(r.size(), 6u);
  ASSERT_EQ(r[0]["series"].size(), 1u);
  EXPECT_FALSE(r[0].contains("error"));
  for (size_t i = 1; i < r.size(); ++i) {
    EXPECT_EQ(r[i]["status"], 400) << i << ": " << r[i];
    EXPECT_TRUE(r[i]["error"].is_string()) << i;
  }
  EXPECT_NE(r[1]["error"].get<std::string>().find("metric= is required"), std::string::npos);
  EXPECT_NE(r[2]["error"].get<std::string>().find("unknown path"), std::string::npos);
  EXPECT_NE(r[3]["error"].get<std::string>().find("step"), std::string::npos);
}

TEST_F(ApiServerTest, QueryBatchRejectsABadBodyWith400) {
  for (const std::string body :
       {"not json", "[]", "{\"queries\": {}}", "{\"other\": []}"}) {
    auto res = PostBatch(*client_, body);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 400) << body;
    EXPECT_TRUE(json::parse(res->body)["error"].is_string()) << res->body;
  }
}

TEST_F(ApiServerTest, QueryBatchTakesAtMost64Queries) {
  json q = {{"path", "query_range"}, {"params", {{"metric", "gpu.utilization"}}}};
  json at_limit = {{"queries", json::array()}};
  for (int i = 0; i < 64; ++i) at_limit["queries"].push_back(q);
  auto ok = PostBatch(*client_, at_limit.dump());
  ASSERT_EQ(ok->status, 200) << ok->body;
  EXPECT_EQ(json::parse(ok->body)["results"].size(), 64u);

  at_limit["queries"].push_back(q);
  auto over = PostBatch(*client_, at_limit.dump());
  EXPECT_EQ(over->status, 400);
  EXPECT_NE(json::parse(over->body)["error"].get<std::string>().find("at most 64"),
            std::string::npos);
}

TEST_F(ApiServerTest, QueryBatchNeedsTheTokenWhenReadsAreAuthenticated) {
  ApiServer::Options opts;
  opts.listen_address = "127.0.0.1:0";
  opts.auth_token = kToken;
  opts.auth_read = true;
  ApiServer api(opts, *storage_, clock_);
  auto port = api.Start();
  ASSERT_TRUE(port) << port.error().message();
  httplib::Client client("127.0.0.1", *port);
  const std::string body =
      R"({"queries": [{"path": "query_range", "params": {"metric": "gpu.utilization"}}]})";
  EXPECT_EQ(PostBatch(client, body, "")->status, 401);
  EXPECT_EQ(PostBatch(client, body, "wrong")->status, 401);
  auto ok = PostBatch(client, body);
  ASSERT_EQ(ok->status, 200) << ok->body;
  EXPECT_EQ(json::parse(ok->body)["results"].size(), 1u);
}

}  // namespace
}  // namespace warpscope::server

// SPDX-License-Identifier: Apache-2.0
#include "server/api/api_server.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <stdlib.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "server/profiles/pprof.h"
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
    char tmpl[] = "/tmp/warpscope_api_test_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
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
    std::filesystem::remove_all(dir_);
  }

  httplib::Result Post(const std::string& body, const std::string& type = "application/x-protobuf",
                       const std::string& token = kToken) {
    httplib::Headers h;
    if (!token.empty()) h.emplace("Authorization", "Bearer " + token);
    return client_->Post("/api/v1/ingest/batch", h, body, type.c_str());
  }

  base::FakeClock clock_{base::FromUnixNanos(kT0 + 3'600'000'000'000)};
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
  auto nowhere = client_->Get("/nowhere");
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
  char tmpl[] = "/tmp/warpscope_api_tls_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
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
  std::filesystem::remove_all(dir);
}

TEST(ApiServerTlsTest, BadCertificateIsAClearError) {
  SqliteStorageOptions so;
  char tmpl[] = "/tmp/warpscope_api_tls_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  so.data_dir = tmpl;
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
  std::filesystem::remove_all(tmpl);
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
  profiles::DecodedProfile p;
  p.sample_types = {{"samples", "count"}, {"cpu", "nanoseconds"}};
  p.samples.push_back({{{"main", "main.cc", 1}, {"work", "work.cc", 2}}, {work, work * 1'000'000}});
  p.samples.push_back({{{"main", "main.cc", 1}, {"idle", "main.cc", 3}}, {idle, idle * 1'000'000}});
  return profiles::EncodePprof(p).value();
}

class MergedProfileTest : public ApiServerTest {
 protected:
  void Upload(const std::string& pprof, const std::string& kind, int64_t start) {
    httplib::Headers h{{"Authorization", std::string("Bearer ") + kToken}};
    auto res = client_->Post("/api/v1/ingest/profile?host=node1&kind=" + kind +
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
  auto merged = profiles::DecodePprof(res->body);
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
  profiles::DecodedProfile gpu;
  gpu.sample_types = {{"launches", "count"}, {"gpu_time", "nanoseconds"}};
  gpu.samples.push_back({{{"kernel", "", 0}}, {1, 100}});
  Upload(profiles::EncodePprof(gpu).value(), "gpu", 1700000100);
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

}  // namespace
}  // namespace warpscope::server

// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>

#include "base/time.h"
#include "opentelemetry/proto/collector/trace/v1/trace_service.pb.h"
#include "server/api/api_server.h"
#include "server/query/testing/query_fixture.h"
#include "server/traces/trace_store.h"

namespace warpscope::server {
namespace {

namespace collector = ::opentelemetry::proto::collector::trace::v1;
namespace common = ::opentelemetry::proto::common::v1;
namespace otlp = ::opentelemetry::proto::trace::v1;
using nlohmann::json;
using query::At;
using query::kT0;

constexpr uint64_t kMs = 1'000'000;
using KeyValues = google::protobuf::RepeatedPtrField<common::KeyValue>;

void Add(KeyValues* kvs, const std::string& key, double value) {
  auto* kv = kvs->Add();
  kv->set_key(key);
  kv->mutable_value()->set_double_value(value);
}
void Add(KeyValues* kvs, const std::string& key, const std::string& value) {
  auto* kv = kvs->Add();
  kv->set_key(key);
  kv->mutable_value()->set_string_value(value);
}

std::string TraceIdBytes(int i) { return std::string(15, '\x01') + static_cast<char>(i); }

// vLLM V1 llm_request spans of model "m" on gpu-node-1, pid 4242: request i starts at
// kT0 + i s, queues i * 10 ms, prefills 100 ms, decodes 200 ms; requests 0 and 1 reuse 256
// cached prompt tokens (TTFT 100 ms shorter), request 2 none.
std::string VllmRequests(int n) {
  collector::ExportTraceServiceRequest req;
  auto* rs = req.add_resource_spans();
  Add(rs->mutable_resource()->mutable_attributes(), "host.name", "gpu-node-1");
  Add(rs->mutable_resource()->mutable_attributes(), "service.name", "vllm");
  auto* pid = rs->mutable_resource()->mutable_attributes()->Add();
  pid->set_key("process.pid");
  pid->mutable_value()->set_int_value(4242);
  auto* scope = rs->add_scope_spans();
  for (int i = 0; i < n; ++i) {
    const double queue = 0.01 * i;
    const double e2e = queue + 0.3;
    auto* s = scope->add_spans();
    s->set_trace_id(TraceIdBytes(i));
    s->set_span_id(std::string(7, '\x02') + static_cast<char>(i + 1));
    s->set_name("llm_request");
    s->set_kind(otlp::Span::SPAN_KIND_SERVER);
    const uint64_t start = static_cast<uint64_t>(kT0 + i) * 1'000'000'000;
    s->set_start_time_unix_nano(start);
    s->set_end_time_unix_nano(start + static_cast<uint64_t>(e2e * 1000) * kMs);
    auto* a = s->mutable_attributes();
    Add(a, "gen_ai.response.model", "m");
    Add(a, "gen_ai.request.id", "cmpl-" + std::to_string(i));
    Add(a, "gen_ai.latency.time_in_queue", queue);
    Add(a, "gen_ai.latency.time_in_model_prefill", 0.1);
    Add(a, "gen_ai.latency.time_in_model_decode", 0.2);
    Add(a, "gen_ai.latency.e2e", e2e);
    Add(a, "gen_ai.latency.time_to_first_token", queue + (i < 2 ? 0.05 : 0.15));
    auto* cached = a->Add();
    cached->set_key("gen_ai.usage.cache_read.input_tokens");
    cached->mutable_value()->set_int_value(i < 2 ? 256 : 0);
  }
  return req.SerializeAsString();
}

class TraceApiTest : public query::QueryFixture {
 protected:
  void SetUp() override {
    QueryFixture::SetUp();
    auto store = traces::TraceStore::Open({.path = dir_ + "/traces.db"});
    ASSERT_TRUE(store) << store.error().message();
    store_ = std::move(*store);
  }
  void TearDown() override {
    api_.reset();
    store_.reset();
    QueryFixture::TearDown();
  }

  void Serve(std::string token = "") {
    ApiServer::Options opts;
    opts.listen_address = "127.0.0.1:0";
    opts.serve_ui = false;
    opts.auth_token = std::move(token);
    opts.trace_store = store_.get();
    api_ = std::make_unique<ApiServer>(opts, *storage_, clock_);
    auto port = api_->Start();
    ASSERT_TRUE(port) << port.error().message();
    client_ = std::make_unique<httplib::Client>("127.0.0.1", *port);
  }

  json Get(const std::string& path, int want = 200) {
    auto res = client_->Get(path);
    EXPECT_TRUE(res);
    if (!res) return json();
    EXPECT_EQ(res->status, want) << path << ": " << res->body;
    return json::parse(res->body, nullptr, false);
  }

  std::string Range() const {
    return "start=" + std::to_string(kT0 - 10) + "&end=" + std::to_string(kT0 + 100);
  }

  base::FakeClock clock_{At(kT0 + 100)};
  std::unique_ptr<traces::TraceStore> store_;
  std::unique_ptr<ApiServer> api_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(TraceApiTest, VllmSpansGiveTheBreakdownByPhaseAndTtftByCacheReuse) {
  Serve();
  auto res = client_->Post("/v1/traces", VllmRequests(3), "application/x-protobuf");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_TRUE(res->body.empty());  // an empty ExportTraceServiceResponse: all accepted
  // 3 requests and their phases (request 0 never queued): 11 spans.

  json models = Get("/api/v1/traces/models?" + Range());
  ASSERT_EQ(models["models"].size(), 1u) << models;
  EXPECT_EQ(models["models"][0]["model"], "m");
  EXPECT_EQ(models["models"][0]["requests"], 3);
  EXPECT_EQ(models["models"][0]["processes"][0]["entity"]["pid"], 4242);

  json b = Get("/api/v1/traces/breakdown?model=m&" + Range());
  EXPECT_EQ(b["requests"], 3);
  ASSERT_EQ(b["phases"].size(), 3u) << b;
  EXPECT_EQ(b["phases"][0]["phase"], "queue");  // request 0 has no queue time: 2 of 3
  EXPECT_EQ(b["phases"][0]["count"], 2);
  EXPECT_NEAR(b["phases"][0]["mean"].get<double>(), 0.015, 1e-6);
  EXPECT_EQ(b["phases"][1]["phase"], "prefill");
  EXPECT_NEAR(b["phases"][1]["p95"].get<double>(), 0.1, 1e-6);
  EXPECT_EQ(b["phases"][2]["phase"], "decode");
  EXPECT_NEAR(b["phases"][2]["p50"].get<double>(), 0.2, 1e-6);
  EXPECT_EQ(b["ttft"]["count"], 3);
  EXPECT_EQ(b["ttft"]["cache_hit"]["count"], 2);
  EXPECT_NEAR(b["ttft"]["cache_hit"]["max"].get<double>(), 0.06, 1e-6);
  EXPECT_NEAR(b["ttft"]["cache_miss"]["p50"].get<double>(), 0.17, 1e-6);
  EXPECT_NEAR(b["e2e"]["max"].get<double>(), 0.32, 1e-6);
  ASSERT_EQ(b["processes"].size(), 1u);
  EXPECT_EQ(b["processes"][0]["profile"],
            fmt::format("/api/v1/profiles/merged?host=gpu-node-1&kind=gpu&pid=4242&start={}&end={}",
                        kT0 - 10, kT0 + 100));

  json slowest = Get("/api/v1/traces/requests?model=m&order=slowest&limit=1&" + Range());
  ASSERT_EQ(slowest["requests"].size(), 1u);
  const json& r = slowest["requests"][0];
  EXPECT_EQ(r["request_id"], "cmpl-2");
  EXPECT_EQ(r["entity"]["entity_prefix"], "pid/4242/");
  EXPECT_EQ(r["profile"], fmt::format("/api/v1/profiles/merged?host=gpu-node-1&kind=gpu&pid=4242"
                                      "&start={}&end={}",
                                      kT0 + 2, kT0 + 3));

  json trace = Get("/api/v1/traces/" + r["trace_id"].get<std::string>());
  ASSERT_EQ(trace["requests"].size(), 1u) << trace;
  const json& phases = trace["requests"][0]["phases"];
  ASSERT_EQ(phases.size(), 3u) << phases;
  EXPECT_EQ(phases[0]["phase"], "queue");
  EXPECT_NEAR(phases[0]["offset"].get<double>(), 0.0, 1e-6);
  EXPECT_EQ(phases[2]["phase"], "decode");
  EXPECT_NEAR(phases[2]["offset"].get<double>(), 0.12, 1e-6);
  EXPECT_NEAR(phases[2]["duration"].get<double>(), 0.2, 1e-6);
  EXPECT_EQ(phases[2]["attributes"]["warpscope.derived_from"],
            "gen_ai.latency.time_in_model_decode");
  EXPECT_EQ(trace["requests"][0]["attributes"]["gen_ai.request.id"], "cmpl-2");

  auto metrics = client_->Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find("warpscope_server_trace_spans_total{outcome=\"stored\"} 11"),
            std::string::npos)
      << metrics->body;
  EXPECT_NE(metrics->body.find("warpscope_server_trace_requests_total 1"), std::string::npos);
}

TEST_F(TraceApiTest, GzipJsonIsAcceptedWithPartialSuccess) {
  Serve();
  const std::string body = R"({"resourceSpans": [{"scopeSpans": [{"spans": [
      {"traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b174",
       "name": "llm_request", "startTimeUnixNano": ")" +
                           std::to_string((kT0 + 1) * 1'000'000'000) + R"(",
       "endTimeUnixNano": ")" +
                           std::to_string((kT0 + 2) * 1'000'000'000) + R"("},
      {"traceId": "5b8efff798038103", "spanId": "eee19b7ec3c1b174", "name": "llm_request",
       "startTimeUnixNano": "1", "endTimeUnixNano": "2"}]}]}]})";
  client_->set_compress(true);
  auto res = client_->Post("/v1/traces", body, "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  json answer = json::parse(res->body);
  EXPECT_EQ(answer["partialSuccess"]["rejectedSpans"], "1") << answer;
  client_->set_compress(false);
  json trace = Get("/api/v1/traces/5b8efff798038103d269b633813fc60c");
  // No host.name in the resource: the sender's address.
  EXPECT_EQ(trace["requests"][0]["entity"]["host"], "127.0.0.1");
  EXPECT_EQ(trace["requests"][0]["entity"]["kind"], "host");
}

TEST_F(TraceApiTest, BadRequestsGetJsonErrorsNamingTheFix) {
  Serve("s3cret");
  auto unauthorized = client_->Post("/v1/traces", VllmRequests(1), "application/x-protobuf");
  ASSERT_TRUE(unauthorized);
  EXPECT_EQ(unauthorized->status, 401);
  client_->set_bearer_token_auth("s3cret");
  auto wrong_type = client_->Post("/v1/traces", "x", "text/plain");
  ASSERT_TRUE(wrong_type);
  EXPECT_EQ(wrong_type->status, 415);
  EXPECT_NE(wrong_type->body.find("application/x-protobuf or application/json"), std::string::npos);
  auto garbage = client_->Post("/v1/traces", "\xff\xff", "application/x-protobuf");
  ASSERT_TRUE(garbage);
  EXPECT_EQ(garbage->status, 400);
  EXPECT_NE(garbage->body.find("OTLP traces"), std::string::npos) << garbage->body;
  EXPECT_NE(Get("/api/v1/traces/breakdown", 400)["error"].get<std::string>().find("model="),
            std::string::npos);
  EXPECT_NE(
      Get("/api/v1/traces/requests?order=fastest", 400)["error"].get<std::string>().find("slowest"),
      std::string::npos);
  Get("/api/v1/traces/zz", 400);
  Get("/api/v1/traces/5b8efff798038103d269b633813fc60c", 404);
  EXPECT_EQ(api_->stats().rejected, 2u);
}

}  // namespace
}  // namespace warpscope::server

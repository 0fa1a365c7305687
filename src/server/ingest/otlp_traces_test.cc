// SPDX-License-Identifier: Apache-2.0
#include "server/ingest/otlp_traces.h"

#include <gtest/gtest.h>

#include "opentelemetry/proto/collector/trace/v1/trace_service.pb.h"

namespace warpscope::server {
namespace {

namespace collector = ::opentelemetry::proto::collector::trace::v1;
namespace common = ::opentelemetry::proto::common::v1;
namespace otlp = ::opentelemetry::proto::trace::v1;
using traces::SpanRole;
using traces::TraceSpan;

constexpr uint64_t kT0 = 1'700'000'000'000'000'000;  // ns
constexpr uint64_t kMs = 1'000'000;
const std::string kTrace = std::string("\x0a\x0b\x0c\x0d", 4) + std::string(12, '\x01');
const std::string kSpan = std::string("\x11\x22\x33\x44\x55\x66\x77\x88", 8);

using KeyValues = google::protobuf::RepeatedPtrField<common::KeyValue>;

void AddString(KeyValues* kvs, const std::string& key, const std::string& value) {
  auto* kv = kvs->Add();
  kv->set_key(key);
  kv->mutable_value()->set_string_value(value);
}
void AddDouble(KeyValues* kvs, const std::string& key, double value) {
  auto* kv = kvs->Add();
  kv->set_key(key);
  kv->mutable_value()->set_double_value(value);
}
void AddInt(KeyValues* kvs, const std::string& key, int64_t value) {
  auto* kv = kvs->Add();
  kv->set_key(key);
  kv->mutable_value()->set_int_value(value);
}

otlp::ResourceSpans* AddResource(collector::ExportTraceServiceRequest& req, bool with_host) {
  auto* rs = req.add_resource_spans();
  auto* attrs = rs->mutable_resource()->mutable_attributes();
  if (with_host) AddString(attrs, "host.name", "gpu-node-1");
  AddString(attrs, "service.name", "vllm");
  AddInt(attrs, "process.pid", 4242);
  rs->add_scope_spans();
  return rs;
}

otlp::Span* AddSpan(otlp::ResourceSpans* rs, const std::string& name, const std::string& span_id,
                    const std::string& parent, uint64_t start, uint64_t end) {
  auto* s = rs->mutable_scope_spans(0)->add_spans();
  s->set_trace_id(kTrace);
  s->set_span_id(span_id);
  s->set_parent_span_id(parent);
  s->set_name(name);
  s->set_start_time_unix_nano(start);
  s->set_end_time_unix_nano(end);
  return s;
}

// vLLM V1's llm_request: latencies in seconds, tokens, the request id.
void AddVllmRequest(otlp::ResourceSpans* rs) {
  auto* s = AddSpan(rs, "llm_request", kSpan, "", kT0, kT0 + 1000 * kMs);
  s->set_kind(otlp::Span::SPAN_KIND_SERVER);
  auto* a = s->mutable_attributes();
  AddString(a, "gen_ai.response.model", "meta-llama/Llama-3.1-8B-Instruct");
  AddString(a, "gen_ai.request.id", "cmpl-42");
  AddInt(a, "gen_ai.usage.prompt_tokens", 900);
  AddInt(a, "gen_ai.usage.completion_tokens", 64);
  AddDouble(a, "gen_ai.latency.time_in_queue", 0.1);
  AddDouble(a, "gen_ai.latency.time_to_first_token", 0.35);
  AddDouble(a, "gen_ai.latency.e2e", 1.0);
  AddDouble(a, "gen_ai.latency.time_in_model_prefill", 0.2);
  AddDouble(a, "gen_ai.latency.time_in_model_decode", 0.6);
  AddDouble(a, "gen_ai.latency.time_in_model_inference", 0.8);
}

const TraceSpan* Find(const DecodedOtlpTraces& d, std::string_view phase) {
  for (const TraceSpan& s : d.spans) {
    if (s.role == SpanRole::kPhase && s.phase == phase) return &s;
  }
  return nullptr;
}

TEST(OtlpTracesTest, VllmRequestSpanGivesItsPhases) {
  collector::ExportTraceServiceRequest req;
  AddVllmRequest(AddResource(req, true));
  auto d = DecodeOtlpTracesProto(req.SerializeAsString());
  ASSERT_TRUE(d) << d.error().message();
  ASSERT_EQ(d->spans.size(), 5u);  // the request, preprocess, queue, prefill, decode
  const TraceSpan& r = d->spans[0];
  EXPECT_EQ(r.role, SpanRole::kRequest);
  EXPECT_EQ(r.trace_id, "0a0b0c0d010101010101010101010101");
  EXPECT_EQ(r.span_id, "1122334455667788");
  EXPECT_EQ(r.model, "meta-llama/Llama-3.1-8B-Instruct");
  EXPECT_EQ(r.request_id, "cmpl-42");
  EXPECT_EQ(r.ttft_ns, 350 * static_cast<int64_t>(kMs));
  EXPECT_EQ(r.prompt_tokens, 900);
  EXPECT_EQ(r.completion_tokens, 64);
  EXPECT_FALSE(r.cached_tokens.has_value());
  EXPECT_EQ(r.origin.host, "gpu-node-1");
  EXPECT_EQ(r.origin.pid, 4242);
  EXPECT_EQ(r.origin.service, "vllm");
  // Backwards from the end of e2e: decode [0.4, 1.0], prefill [0.2, 0.4], queue [0.1, 0.2],
  // preprocess [0, 0.1].
  const int64_t t0 = static_cast<int64_t>(kT0);
  const int64_t ms = static_cast<int64_t>(kMs);
  ASSERT_NE(Find(*d, "decode"), nullptr);
  EXPECT_EQ(Find(*d, "decode")->start_ns, t0 + 400 * ms);
  EXPECT_EQ(Find(*d, "decode")->end_ns, t0 + 1000 * ms);
  EXPECT_EQ(Find(*d, "prefill")->start_ns, t0 + 200 * ms);
  EXPECT_EQ(Find(*d, "queue")->start_ns, t0 + 100 * ms);
  EXPECT_EQ(Find(*d, "preprocess")->end_ns, t0 + 100 * ms);
  EXPECT_EQ(d->spans[1].phase, "preprocess");
  EXPECT_EQ(Find(*d, "queue")->parent_span_id, r.span_id);
  EXPECT_EQ(Find(*d, "queue")->attributes.Get("warpscope.derived_from"),
            "gen_ai.latency.time_in_queue");
}

TEST(OtlpTracesTest, OlderVllmLaysPhasesForwardFromTheArrival) {
  collector::ExportTraceServiceRequest req;
  auto* s = AddSpan(AddResource(req, true), "llm_request", kSpan, "", kT0, kT0 + 500 * kMs);
  AddDouble(s->mutable_attributes(), "gen_ai.latency.time_in_queue", 0.05);
  AddDouble(s->mutable_attributes(), "gen_ai.latency.time_to_first_token", 0.15);
  auto d = DecodeOtlpTracesProto(req.SerializeAsString());
  ASSERT_TRUE(d);
  const int64_t t0 = static_cast<int64_t>(kT0);
  const int64_t ms = static_cast<int64_t>(kMs);
  ASSERT_NE(Find(*d, "prefill"), nullptr);
  EXPECT_EQ(Find(*d, "queue")->end_ns, t0 + 50 * ms);
  EXPECT_EQ(Find(*d, "prefill")->end_ns, t0 + 150 * ms);
  EXPECT_EQ(Find(*d, "decode")->end_ns, t0 + 500 * ms);
  EXPECT_EQ(d->spans[0].model, "vllm");  // no gen_ai model: the service name
}

TEST(OtlpTracesTest, ChildPhaseSpansMakeTheirParentARequest) {
  collector::ExportTraceServiceRequest req;
  auto* rs = AddResource(req, true);
  const std::string root = std::string(7, '\x01') + "\x09";
  AddSpan(rs, "tgi.tokenize", std::string(7, '\x02') + "\x01", root, kT0, kT0 + 5 * kMs);
  AddSpan(rs, "Queued", std::string(7, '\x02') + "\x02", root, kT0 + 5 * kMs, kT0 + 20 * kMs);
  auto* prefill =
      AddSpan(rs, "prefill", std::string(7, '\x02') + "\x03", root, kT0 + 20 * kMs, kT0 + 60 * kMs);
  AddInt(prefill->mutable_attributes(), "batch_size", 4);
  AddSpan(rs, "generate", root, "", kT0, kT0 + 100 * kMs);
  AddSpan(rs, "http.client", std::string(7, '\x03') + "\x01", "", kT0, kT0 + 1 * kMs)
      ->set_kind(otlp::Span::SPAN_KIND_CLIENT);
  auto d = DecodeOtlpTracesProto(req.SerializeAsString());
  ASSERT_TRUE(d) << d.error().message();
  EXPECT_EQ(d->ignored_spans, 1u);
  ASSERT_EQ(d->spans.size(), 4u);
  EXPECT_EQ(d->spans[0].phase, "tokenize");
  EXPECT_EQ(d->spans[1].phase, "queue");
  EXPECT_EQ(d->spans[2].attributes.Get("batch_size"), "4");
  EXPECT_EQ(d->spans[3].role, SpanRole::kRequest);
  EXPECT_EQ(d->spans[3].name, "generate");
}

TEST(OtlpTracesTest, CachedPromptTokensAndTheDefaultHost) {
  collector::ExportTraceServiceRequest req;
  auto* s = AddSpan(AddResource(req, false), "llm_request", kSpan, "", kT0, kT0 + kMs);
  AddInt(s->mutable_attributes(), "gen_ai.usage.cache_read.input_tokens", 512);
  auto d = DecodeOtlpTracesProto(req.SerializeAsString(), {.default_host = "10.0.0.7"});
  ASSERT_TRUE(d);
  EXPECT_EQ(d->spans[0].cached_tokens, 512);
  EXPECT_EQ(d->spans[0].origin.host, "10.0.0.7");
}

TEST(OtlpTracesTest, MalformedSpansAreCountedWithTheFirstReason) {
  collector::ExportTraceServiceRequest req;
  auto* rs = AddResource(req, true);
  AddSpan(rs, "llm_request", "short", "", kT0, kT0 + kMs);
  AddSpan(rs, "llm_request", kSpan, "", kT0 + kMs, kT0);
  AddSpan(rs, "llm_request", kSpan, "", 0, kT0);
  AddSpan(rs, "llm_request", kSpan, "", kT0, kT0 + kMs)->set_trace_id(std::string(16, '\0'));
  AddVllmRequest(rs);
  auto d = DecodeOtlpTracesProto(req.SerializeAsString());
  ASSERT_TRUE(d);
  EXPECT_EQ(d->rejected_spans, 4u);
  EXPECT_NE(d->first_rejection.find("spans[0] (llm_request): the span id is not 8 bytes"),
            std::string::npos)
      << d->first_rejection;
  collector::ExportTraceServiceResponse resp;
  ASSERT_TRUE(resp.ParseFromString(EncodeOtlpTracesResponse(*d, false)));
  EXPECT_EQ(resp.partial_success().rejected_spans(), 4);
  std::string json = EncodeOtlpTracesResponse(*d, true);
  EXPECT_NE(json.find("\"rejectedSpans\":\"4\""), std::string::npos) << json;
  EXPECT_EQ(EncodeOtlpTracesResponse(DecodedOtlpTraces{}, true), "{}");
}

TEST(OtlpTracesTest, BytesThatAreNotTheMessageAreRefused) {
  auto d = DecodeOtlpTracesProto("\xff\xff\xff");
  ASSERT_FALSE(d);
  EXPECT_NE(d.error().message().find("OTLP traces: the body"), std::string::npos)
      << d.error().message();
  auto j = DecodeOtlpTracesJson("{\"resourceSpans\": [");
  ASSERT_FALSE(j);
  EXPECT_NE(j.error().message().find("not valid OTLP/JSON"), std::string::npos)
      << j.error().message();
}

TEST(OtlpTracesTest, JsonIdsAreHexAsOtlpJsonWritesThem) {
  const std::string json = R"({"resourceSpans": [{
    "resource": {"attributes": [{"key": "host.name", "value": {"stringValue": "n1"}},
                                {"key": "process.pid", "value": {"intValue": "77"}}]},
    "scopeSpans": [{"spans": [
      {"traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b174",
       "name": "llm_request", "kind": 2, "startTimeUnixNano": "1700000000000000000",
       "endTimeUnixNano": "1700000000500000000",
       "attributes": [{"key": "gen_ai.request.model", "value": {"stringValue": "m"}},
                      {"key": "gen_ai.latency.time_to_first_token", "value": {"doubleValue": 0.1}}]},
      {"traceId": "W47/95gDgQPSabYzgT/GDA==", "spanId": "AQIDBAUGBwg=",
       "parentSpanId": "eee19b7ec3c1b174", "name": "decode",
       "startTimeUnixNano": 1700000000100000000, "endTimeUnixNano": "1700000000500000000"},
      {"traceId": "5b8e", "spanId": "eee19b7ec3c1b174", "name": "llm_request",
       "startTimeUnixNano": "1", "endTimeUnixNano": "2"}
    ]}]}]})";
  auto d = DecodeOtlpTracesJson(json);
  ASSERT_TRUE(d) << d.error().message();
  EXPECT_EQ(d->rejected_spans, 1u);
  ASSERT_GE(d->spans.size(), 2u);
  EXPECT_EQ(d->spans[0].trace_id, "5b8efff798038103d269b633813fc60c");
  EXPECT_EQ(d->spans[0].span_id, "eee19b7ec3c1b174");
  EXPECT_EQ(d->spans[0].origin.pid, 77);
  EXPECT_EQ(d->spans[0].model, "m");
  const TraceSpan& decode = d->spans.back();
  EXPECT_EQ(decode.phase, "decode");
  EXPECT_EQ(decode.trace_id, "5b8efff798038103d269b633813fc60c");  // sent as base64
  EXPECT_EQ(decode.span_id, "0102030405060708");
  EXPECT_EQ(decode.parent_span_id, "eee19b7ec3c1b174");
}

}  // namespace
}  // namespace warpscope::server

// SPDX-License-Identifier: Apache-2.0
#include "server/traces/trace_store.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>

#include "base/testing/temp_dir.h"

namespace warpscope::server::traces {
namespace {

using base::TempDir;
using std::chrono::hours;
using std::chrono::minutes;

constexpr int64_t kMs = 1'000'000;
const base::TimePoint kNow = base::FromUnixNanos(1'700'000'000'000'000'000);

std::string TraceId(int i) { return fmt::format("{:032x}", i + 1); }

TraceSpan RequestSpan(int i, std::string model, base::TimePoint start, int64_t duration_ms) {
  TraceSpan s;
  s.role = SpanRole::kRequest;
  s.trace_id = TraceId(i);
  s.span_id = fmt::format("{:016x}", i + 1);
  s.name = "llm_request";
  s.start_ns = base::ToUnixNanos(start);
  s.end_ns = s.start_ns + duration_ms * kMs;
  s.origin = SpanOrigin{.host = "node1", .pid = 4242, .service = "vllm"};
  s.model = std::move(model);
  s.request_id = fmt::format("cmpl-{}", i);
  s.ttft_ns = 25 * kMs;
  s.attributes.Set("gen_ai.latency.e2e", "0.1");
  return s;
}

TraceSpan PhaseSpan(const TraceSpan& request, std::string phase, int64_t offset_ms,
                    int64_t duration_ms) {
  TraceSpan p;
  p.role = SpanRole::kPhase;
  p.trace_id = request.trace_id;
  p.span_id = request.span_id + "/" + phase;
  p.parent_span_id = request.span_id;
  p.name = phase;
  p.phase = std::move(phase);
  p.start_ns = request.start_ns + offset_ms * kMs;
  p.end_ns = p.start_ns + duration_ms * kMs;
  p.origin = request.origin;
  return p;
}

std::unique_ptr<TraceStore> OpenStore(const TempDir& dir, uint64_t max_spans = 1000) {
  auto store = TraceStore::Open(
      {.path = dir.path() + "/traces.db", .retention = hours(24), .max_spans = max_spans});
  EXPECT_TRUE(store) << store.error().message();
  return store ? std::move(*store) : nullptr;
}

RequestQuery All() {
  return RequestQuery{.start = kNow - hours(48), .end = kNow + hours(1), .limit = 1000};
}

TEST(TraceStoreTest, StoresRequestsWithTheirPhases) {
  TempDir dir;
  auto store = OpenStore(dir);
  ASSERT_TRUE(store);
  TraceSpan r = RequestSpan(0, "llama", kNow - minutes(1), 100);
  // A phase may arrive before its request (spans end, and are exported, children first).
  ASSERT_TRUE(store->Write({PhaseSpan(r, "decode", 40, 60), PhaseSpan(r, "queue", 0, 10)}, kNow));
  auto written = store->Write({r, PhaseSpan(r, "prefill", 10, 30)}, kNow);
  ASSERT_TRUE(written) << written.error().message();
  EXPECT_EQ(written->stored, 2u);

  auto trace = store->Trace(r.trace_id);
  ASSERT_TRUE(trace) << trace.error().message();
  ASSERT_EQ(trace->size(), 1u);
  const RequestTrace& t = (*trace)[0];
  EXPECT_EQ(t.request.model, "llama");
  EXPECT_EQ(t.request.origin.pid, 4242);
  EXPECT_EQ(t.request.request_id, "cmpl-0");
  EXPECT_EQ(t.request.attributes.Get("gen_ai.latency.e2e"), "0.1");
  EXPECT_FALSE(t.request.cached_tokens.has_value());
  ASSERT_EQ(t.phases.size(), 3u);
  EXPECT_EQ(t.phases[0].phase, "queue");
  EXPECT_EQ(t.phases[1].phase, "prefill");
  EXPECT_EQ(t.phases[2].phase, "decode");
  EXPECT_EQ(store->stats().spans, 4u);
}

TEST(TraceStoreTest, ARetriedSpanIsStoredOnce) {
  TempDir dir;
  auto store = OpenStore(dir);
  ASSERT_TRUE(store);
  TraceSpan r = RequestSpan(0, "llama", kNow, 100);
  ASSERT_TRUE(store->Write({r}, kNow));
  auto again = store->Write({r}, kNow);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->stored, 0u);
  EXPECT_EQ(store->stats().spans, 1u);
}

TEST(TraceStoreTest, ListsSlowestAndRecentRequestsPerModel) {
  TempDir dir;
  auto store = OpenStore(dir);
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->Write({RequestSpan(0, "llama", kNow - minutes(3), 300),
                            RequestSpan(1, "llama", kNow - minutes(2), 900),
                            RequestSpan(2, "llama", kNow - minutes(1), 100),
                            RequestSpan(3, "qwen", kNow - minutes(1), 5000)},
                           kNow));
  RequestQuery q = All();
  q.model = "llama";
  q.order = RequestQuery::Order::kSlowest;
  q.limit = 2;
  auto slowest = store->Requests(q);
  ASSERT_TRUE(slowest) << slowest.error().message();
  ASSERT_EQ(slowest->size(), 2u);
  EXPECT_EQ((*slowest)[0].request.request_id, "cmpl-1");
  EXPECT_EQ((*slowest)[1].request.request_id, "cmpl-0");
  q.order = RequestQuery::Order::kRecent;
  auto recent = store->Requests(q);
  ASSERT_TRUE(recent);
  EXPECT_EQ((*recent)[0].request.request_id, "cmpl-2");
  auto every_model = store->Requests(All());
  ASSERT_TRUE(every_model);
  EXPECT_EQ(every_model->size(), 4u);

  auto models = store->Models(kNow - hours(1), kNow + hours(1));
  ASSERT_TRUE(models);
  ASSERT_EQ(models->size(), 2u);
  EXPECT_EQ((*models)[0].model, "llama");
  EXPECT_EQ((*models)[0].requests, 3u);
  ASSERT_EQ((*models)[0].processes.size(), 1u);
  EXPECT_EQ((*models)[0].processes[0].host, "node1");
}

TEST(TraceStoreTest, RetentionDropsOldSpansAtWriteAndPrune) {
  TempDir dir;
  auto store = OpenStore(dir);
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->Write({RequestSpan(0, "llama", kNow - hours(30), 100),
                            RequestSpan(1, "llama", kNow - hours(20), 100),
                            RequestSpan(2, "llama", kNow - hours(1), 100)},
                           kNow));
  EXPECT_EQ(store->stats().expired, 1u);
  EXPECT_EQ(store->stats().spans, 2u);
  auto pruned = store->Prune(kNow + hours(10));
  ASSERT_TRUE(pruned);
  EXPECT_EQ(*pruned, 1u);
  EXPECT_EQ(store->stats().spans, 1u);
  EXPECT_EQ(store->stats().expired, 2u);
}

TEST(TraceStoreTest, StaysUnderMaxSpansAndSamplesTheBusiestModel) {
  TempDir dir;
  auto store = OpenStore(dir, /*max_spans=*/100);
  ASSERT_TRUE(store);
  std::vector<TraceSpan> busy;
  for (int i = 0; i < 95; ++i) busy.push_back(RequestSpan(i, "busy", kNow - minutes(95 - i), 10));
  ASSERT_TRUE(store->Write(busy, kNow));
  // Near the bound, a second model below its fair share keeps everything; the busy one keeps
  // about half of its new traces (its share is half of the stored requests).
  std::vector<TraceSpan> more;
  for (int i = 100; i < 110; ++i) more.push_back(RequestSpan(i, "quiet", kNow, 10));
  for (int i = 200; i < 300; ++i) more.push_back(RequestSpan(i, "busy", kNow, 10));
  auto written = store->Write(more, kNow);
  ASSERT_TRUE(written) << written.error().message();
  EXPECT_GT(written->sampled_out, 20u);
  EXPECT_LT(written->sampled_out, 90u);
  EXPECT_GT(written->evicted, 0u);
  EXPECT_LE(store->stats().spans, 100u);
  RequestQuery q = All();
  q.model = "quiet";
  auto quiet = store->Requests(q);
  ASSERT_TRUE(quiet);
  EXPECT_EQ(quiet->size(), 10u);
  // The oldest went first.
  q.model = "busy";
  q.order = RequestQuery::Order::kRecent;
  auto busy_left = store->Requests(q);
  ASSERT_TRUE(busy_left);
  EXPECT_GE(busy_left->back().request.start_ns, base::ToUnixNanos(kNow - minutes(40)));
  EXPECT_EQ(store->stats().evicted, written->evicted);
}

TEST(TraceStoreTest, SurvivesARestart) {
  TempDir dir;
  TraceSpan r = RequestSpan(7, "llama", kNow - minutes(5), 100);
  {
    auto store = OpenStore(dir);
    ASSERT_TRUE(store);
    ASSERT_TRUE(store->Write({r, PhaseSpan(r, "queue", 0, 10)}, kNow));
  }
  auto store = OpenStore(dir);
  ASSERT_TRUE(store);
  EXPECT_EQ(store->stats().spans, 2u);
  auto trace = store->Trace(r.trace_id);
  ASSERT_TRUE(trace);
  ASSERT_EQ(trace->size(), 1u);
  EXPECT_EQ((*trace)[0].phases.size(), 1u);
  EXPECT_EQ((*trace)[0].request.ttft_ns, 25 * kMs);
}

TEST(TraceStoreTest, RefusesAZeroBound) {
  TempDir dir;
  auto store = TraceStore::Open({.path = dir.path() + "/t.db", .max_spans = 0});
  ASSERT_FALSE(store);
  EXPECT_NE(store.error().message().find("--trace-max-spans"), std::string::npos);
}

}  // namespace
}  // namespace warpscope::server::traces

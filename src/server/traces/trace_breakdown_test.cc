// SPDX-License-Identifier: Apache-2.0
#include "server/traces/trace_breakdown.h"

#include <gtest/gtest.h>

namespace warpscope::server::traces {
namespace {

constexpr int64_t kMs = 1'000'000;

TraceSpan Phase(std::string name, int64_t start_ms, int64_t duration_ms) {
  TraceSpan p;
  p.role = SpanRole::kPhase;
  p.phase = std::move(name);
  p.start_ns = start_ms * kMs;
  p.end_ns = (start_ms + duration_ms) * kMs;
  return p;
}

RequestTrace Request(int64_t duration_ms, std::optional<int64_t> cached,
                     std::vector<TraceSpan> phases) {
  RequestTrace r;
  r.request.end_ns = duration_ms * kMs;
  r.request.cached_tokens = cached;
  r.phases = std::move(phases);
  return r;
}

TEST(SummarizeTest, InterpolatesBetweenNearestRanks) {
  std::vector<double> values;
  for (int i = 1; i <= 101; ++i) values.push_back(i);
  LatencyStats s = Summarize(values);
  EXPECT_EQ(s.count, 101u);
  EXPECT_DOUBLE_EQ(s.mean, 51);
  EXPECT_DOUBLE_EQ(s.p50, 51);
  EXPECT_DOUBLE_EQ(s.p95, 96);
  EXPECT_DOUBLE_EQ(s.p99, 100);
  EXPECT_DOUBLE_EQ(s.max, 101);
  EXPECT_DOUBLE_EQ(Summarize({1, 2}).p50, 1.5);
  EXPECT_EQ(Summarize({}).count, 0u);
}

TEST(ComputeBreakdownTest, PhasesInLifecycleOrderWithTtftFromPrefill) {
  std::vector<RequestTrace> requests = {
      Request(100, std::nullopt,
              {Phase("decode", 40, 60), Phase("queue", 0, 10), Phase("prefill", 10, 30)}),
      Request(200, std::nullopt,
              {Phase("queue", 0, 30), Phase("prefill", 30, 50), Phase("decode", 80, 100),
               Phase("decode", 180, 20)}),
  };
  Breakdown b = ComputeBreakdown(requests);
  EXPECT_EQ(b.requests, 2u);
  ASSERT_EQ(b.phases.size(), 3u);
  EXPECT_EQ(b.phases[0].phase, "queue");
  EXPECT_EQ(b.phases[1].phase, "prefill");
  EXPECT_EQ(b.phases[2].phase, "decode");
  EXPECT_DOUBLE_EQ(b.phases[0].latency.mean, 0.020);
  EXPECT_DOUBLE_EQ(b.phases[2].latency.max, 0.120);  // two decode spans summed
  EXPECT_EQ(b.ttft.count, 2u);
  EXPECT_DOUBLE_EQ(b.ttft.max, 0.080);
  EXPECT_DOUBLE_EQ(b.e2e.mean, 0.150);
  EXPECT_EQ(b.ttft_cache_unknown, 2u);
}

TEST(ComputeBreakdownTest, SplitsTtftByCachedPromptTokens) {
  RequestTrace hit = Request(50, 512, {});
  hit.request.ttft_ns = 20 * kMs;
  RequestTrace miss = Request(90, 0, {});
  miss.request.ttft_ns = 60 * kMs;
  Breakdown b = ComputeBreakdown({hit, miss});
  EXPECT_EQ(b.ttft_cache_hit.count, 1u);
  EXPECT_DOUBLE_EQ(b.ttft_cache_hit.p50, 0.020);
  EXPECT_EQ(b.ttft_cache_miss.count, 1u);
  EXPECT_DOUBLE_EQ(b.ttft_cache_miss.p50, 0.060);
  EXPECT_EQ(b.ttft_cache_unknown, 0u);
}

}  // namespace
}  // namespace warpscope::server::traces

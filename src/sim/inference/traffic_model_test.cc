// SPDX-License-Identifier: Apache-2.0
#include "sim/inference/traffic_model.h"

#include <gtest/gtest.h>

namespace warpscope::sim::inference {
namespace {

// One request per second, all alike: easy to follow by hand.
TrafficConfig OnePerSecond() {
  TrafficConfig c;
  c.requests_per_second = 1;
  c.queue_seconds = {0.25};
  c.ttft_seconds = {0.5};
  c.itl_seconds = {0.25};
  c.prompt_tokens = {100};
  c.output_tokens = {5};  // e2e = 0.5 + 4 * 0.25 = 1.5 s
  c.prefix_hit_percent = 50;
  c.step_seconds = 0.25;
  c.kv_cache_tokens = 1000;
  return c;
}

TEST(TrafficModelTest, FollowsOneRequestThroughItsLife) {
  TrafficModel model(OnePerSecond());
  TrafficTotals at0 = model.Totals(0.1);  // request 0 arrived, queued
  EXPECT_EQ(at0.requests_arrived, 1u);
  EXPECT_EQ(at0.waiting, 1u);
  EXPECT_EQ(at0.running, 0u);
  TrafficTotals at1 = model.Totals(0.8);  // scheduled at 0.25, tokens at 0.5 and 0.75
  EXPECT_EQ(at1.running, 1u);
  EXPECT_EQ(at1.prompt_tokens, 100u);
  EXPECT_EQ(at1.prefix_queries, 100u);
  EXPECT_EQ(at1.prefix_hits, 50u);
  EXPECT_EQ(at1.generation_tokens, 2u);
  EXPECT_EQ(Count(at1.ttft), 1u);
  EXPECT_EQ(Count(at1.itl), 1u);
  EXPECT_DOUBLE_EQ(at1.kv_cache_usage, 102.0 / 1000);
  TrafficTotals at2 = model.Totals(1.6);  // request 0 done at 1.5; request 1 queued until 1.25
  EXPECT_EQ(at2.requests_finished, 1u);
  EXPECT_EQ(at2.e2e, (ValueCounts{{1.5, 1}}));
  EXPECT_EQ(at2.queue, (ValueCounts{{0.25, 1}}));
  EXPECT_EQ(at2.tpot, (ValueCounts{{0.25, 1}}));
  EXPECT_EQ(at2.request_output_tokens, (ValueCounts{{5, 1}}));
  EXPECT_EQ(at2.running, 1u);
}

TEST(TrafficModelTest, CountersNeverDecrease) {
  TrafficModel model(TrafficConfig{});
  TrafficTotals prev = model.Totals(0);
  for (double t = 0.37; t < 60; t += 0.37) {
    TrafficTotals now = model.Totals(t);
    EXPECT_GE(now.requests_finished, prev.requests_finished);
    EXPECT_GE(now.generation_tokens, prev.generation_tokens);
    EXPECT_GE(now.prompt_tokens, prev.prompt_tokens);
    EXPECT_GE(now.prefix_hits, prev.prefix_hits);
    EXPECT_GE(Count(now.itl), Count(prev.itl));
    EXPECT_GE(Count(now.iteration_tokens), Count(prev.iteration_tokens));
    prev = now;
  }
}

TEST(TrafficModelTest, SameTotalsWhateverTheOrderOfQueries) {
  TrafficModel stepped(TrafficConfig{});
  for (double t = 0; t < 30; t += 0.5) stepped.Totals(t);
  TrafficModel direct(TrafficConfig{});
  const TrafficTotals a = stepped.Totals(30);
  const TrafficTotals b = direct.Totals(30);
  EXPECT_EQ(a.generation_tokens, b.generation_tokens);
  EXPECT_EQ(a.iteration_tokens, b.iteration_tokens);
  EXPECT_EQ(a.e2e, b.e2e);
  const TrafficTotals back = stepped.Totals(10);  // backwards: recomputed
  EXPECT_EQ(back.generation_tokens, TrafficModel(TrafficConfig{}).Totals(10).generation_tokens);
}

TEST(TrafficModelTest, WindowPercentilesAreThePatternsPercentiles) {
  TrafficConfig c;
  c.requests_per_second = 1;
  // 20 TTFTs: p50 = 0.05 (10th), p95 = 0.2 (19th), p99 = 0.4 (20th).
  c.ttft_seconds = {0.03, 0.03, 0.03, 0.03, 0.03, 0.05, 0.05, 0.05, 0.05, 0.05,
                    0.08, 0.08, 0.08, 0.08, 0.08, 0.08, 0.08, 0.08, 0.2,  0.4};
  c.queue_seconds = {0.01};
  TrafficModel model(c);
  // Request k arrives at k s and has its first token by k + 0.4 s, so the window (20 s, 60 s]
  // holds the first tokens of requests 20..59: two whole cycles, 40 observations.
  const TrafficTotals a = model.Totals(20);
  const TrafficTotals b = model.Totals(60);
  const ValueCounts window = Subtract(b.ttft, a.ttft);
  EXPECT_EQ(Count(window), 40u);
  EXPECT_DOUBLE_EQ(Quantile(window, 0.50), 0.05);
  EXPECT_DOUBLE_EQ(Quantile(window, 0.95), 0.2);
  EXPECT_DOUBLE_EQ(Quantile(window, 0.99), 0.4);
}

TEST(TrafficModelTest, IterationTokensAddUpToTheWorkDone) {
  TrafficModel model(TrafficConfig{});
  const TrafficTotals t = model.Totals(20);
  double work = Sum(t.iteration_tokens);
  // Every step up to t = 20 s (a multiple of the step) counts the work done by then.
  EXPECT_DOUBLE_EQ(work, static_cast<double>(t.prompt_tokens + t.generation_tokens));
  EXPECT_EQ(Count(t.iteration_tokens), t.steps);
}

TEST(TrafficConfigTest, ErrorsNameTheFieldAndTheFix) {
  TrafficConfig c;
  c.queue_seconds = {0.5};
  c.ttft_seconds = {0.1};
  const base::Status st = c.Validate();
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("traffic.queue_seconds"), std::string::npos);
  c = TrafficConfig{};
  c.output_tokens = {0};
  EXPECT_NE(c.Validate().message().find("output_tokens"), std::string::npos);
  c = TrafficConfig{};
  c.itl_seconds = {};
  EXPECT_NE(c.Validate().message().find("itl_seconds: empty"), std::string::npos);
}

TEST(ValueCountsTest, NearestRankQuantile) {
  const ValueCounts v = {{1, 50}, {2, 45}, {3, 4}, {10, 1}};
  EXPECT_EQ(Quantile(v, 0.5), 1);
  EXPECT_EQ(Quantile(v, 0.51), 2);
  EXPECT_EQ(Quantile(v, 0.95), 2);
  EXPECT_EQ(Quantile(v, 0.99), 3);
  EXPECT_EQ(Quantile(v, 1.0), 10);
  EXPECT_EQ(CountAtMost(v, 2.5), 95u);
  EXPECT_EQ(Quantile({}, 0.5), 0);
}

}  // namespace
}  // namespace warpscope::sim::inference

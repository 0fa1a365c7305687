// SPDX-License-Identifier: Apache-2.0
// Engine normalisation and window math on two scrapes of each engine's exposition
// (test/data/inference/<engine>_{1,2}.prom, in the engine's real names and buckets; the second
// adds a known set of observations to the first, 10 s later).
#include "agent/sources/inference/inference_window.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "agent/sources/inference/engines.h"
#include "model/testing/collecting_sink.h"

namespace warpscope::agent::inference {
namespace {

constexpr std::string_view kModel = "meta-llama/Llama-3.1-8B-Instruct";
constexpr std::string_view kEntity = "pid/42/1000";

std::string ReadFixture(std::string_view name) {
  std::ifstream in(std::string(WARPSCOPE_SOURCE_DIR) + "/test/data/inference/" + std::string(name));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

ModelSnapshot Snapshot(Engine engine, std::string_view file, std::string_view default_model = "") {
  auto exposition = ParsePromText(ReadFixture(file));
  EXPECT_TRUE(exposition.has_value()) << file << ": " << exposition.error().ToString();
  auto snapshot = Normalize(engine, *exposition, default_model);
  EXPECT_TRUE(snapshot.has_value()) << file << ": " << snapshot.error().ToString();
  EXPECT_EQ(snapshot->models.size(), 1u) << file;
  return snapshot->models.at(0);
}

model::Labels L(std::initializer_list<model::Labels::Pair> extra, std::string_view model = kModel) {
  model::Labels labels(extra);
  labels.Set("model", model);
  return labels;
}

// Writes the window between the engine's two scrapes, 10 s apart.
model::CollectingSink Window(Engine engine, std::string_view name, const BatchLimits& limits,
                             std::string_view default_model = "") {
  const ModelSnapshot a = Snapshot(engine, std::string(name) + "_1.prom", default_model);
  const ModelSnapshot b = Snapshot(engine, std::string(name) + "_2.prom", default_model);
  model::CollectingSink out;
  WriteWindow(&a, b, 10.0, limits, kEntity, out);
  return out;
}

void ExpectPercentiles(const model::CollectingSink& out, std::string_view key, double p50,
                       double p95, double p99, std::string_view model = kModel) {
  const std::pair<const char*, double> expected[] = {{"0.5", p50}, {"0.95", p95}, {"0.99", p99}};
  for (const auto& [q, v] : expected) {
    auto got = out.Find(key, kEntity, L({{"quantile", q}}, model));
    ASSERT_TRUE(got.has_value()) << key << " q=" << q;
    EXPECT_NEAR(*got, v, 1e-9) << key << " q=" << q;
  }
}

// The load, throughput and cache values every fixture shares: 100 requests, 60000 prompt and
// 20000 generated tokens in 10 s, running 10 -> 14, waiting 3, KV cache 0.3 -> 0.5, a quarter
// of the prefix lookups hit.
void ExpectSharedValues(const model::CollectingSink& out, bool kv_cache, bool prefix,
                        std::string_view model = kModel) {
  EXPECT_EQ(out.Find("inference.requests.running", kEntity, L({}, model)), 14);
  EXPECT_EQ(out.Find("inference.requests.waiting", kEntity, L({}, model)), 3);
  EXPECT_EQ(out.Find("inference.request.rate", kEntity, L({}, model)), 10);
  EXPECT_EQ(out.Find("inference.token.rate", kEntity, L({{"token_type", "input"}}, model)), 6000);
  EXPECT_EQ(out.Find("inference.token.rate", kEntity, L({{"token_type", "output"}}, model)), 2000);
  if (kv_cache) {
    EXPECT_NEAR(*out.Find("inference.kv_cache.usage", kEntity, L({}, model)), 0.3 + 0.2 * 1, 0.201);
  }
  if (prefix) {
    EXPECT_NEAR(*out.Find("inference.prefix_cache.hit_ratio", kEntity, L({}, model)), 0.25, 1e-12);
  }
}

TEST(EngineTest, DetectsTheEngineFromItsPrefix) {
  EXPECT_EQ(DetectEngine(*ParsePromText(ReadFixture("vllm_1.prom"))), Engine::kVllm);
  EXPECT_EQ(DetectEngine(*ParsePromText(ReadFixture("sglang_1.prom"))), Engine::kSglang);
  EXPECT_EQ(DetectEngine(*ParsePromText(ReadFixture("trtllm_1.prom"))), Engine::kTrtllm);
  EXPECT_EQ(DetectEngine(*ParsePromText(ReadFixture("tgi_1.prom"))), Engine::kTgi);
  EXPECT_EQ(DetectEngine(*ParsePromText("up 1\n")), std::nullopt);
  EXPECT_EQ(EngineFromName("sglang"), Engine::kSglang);
  EXPECT_EQ(EngineFromName("triton"), std::nullopt);
}

TEST(EngineTest, VllmSumsItsEnginesAndAveragesTheKvCache) {
  const ModelSnapshot s = Snapshot(Engine::kVllm, "vllm_2.prom");
  EXPECT_EQ(s.model, kModel);
  EXPECT_EQ(s.requests_running, 14);
  EXPECT_NEAR(*s.kv_cache_usage, 0.3, 1e-12);
  EXPECT_EQ(s.requests_finished, 470 + 130 + 7 + 1);  // every reason of engine 0, stop of engine 1
  ASSERT_TRUE(s.time_to_first_token.has_value());
  EXPECT_EQ(s.time_to_first_token->buckets.size(), 23u);  // 22 bounds and +Inf
  EXPECT_EQ(s.time_to_first_token->count, 607 + 100 + 1);
}

TEST(InferenceWindowTest, VllmV1) {
  auto out = Window(Engine::kVllm, "vllm", {.max_num_batched_tokens = 8192, .max_num_seqs = 256});
  ExpectPercentiles(out, "inference.time_to_first_token", 0.064, 0.0925, 0.175);
  ExpectPercentiles(out, "inference.inter_token_latency", 0.03, 0.2 / 3, 0.09);
  // The 99th percentile falls in +Inf: its lower bound, the last finite le.
  ExpectPercentiles(out, "inference.request_latency", 1.25, 2.0, 7680);
  ExpectPercentiles(out, "inference.queue_time", 0.3 * 50 / 90, 0.4, 0.48);
  ExpectSharedValues(out, true, true);
  // 500 engine steps of 1024 tokens against max_num_batched_tokens 8192.
  const model::Labels tokens = L({{"basis", "tokens"}});
  EXPECT_EQ(out.Find("inference.batch.size", kEntity, tokens), 1024);
  EXPECT_EQ(out.Find("inference.batch.limit", kEntity, tokens), 8192);
  EXPECT_EQ(out.Find("inference.batch.efficiency", kEntity, tokens), 0.125);
  EXPECT_FALSE(out.Find("inference.batch.efficiency", kEntity, L({{"basis", "sequences"}})));
}

TEST(InferenceWindowTest, VllmOlderNames) {
  auto out = Window(Engine::kVllm, "vllm_v0", {.max_num_seqs = 48});
  ExpectPercentiles(out, "inference.inter_token_latency", 0.03, 0.2 / 3, 0.09);
  EXPECT_NEAR(*out.Find("inference.kv_cache.usage", kEntity, L({})), 0.5, 1e-12);
  EXPECT_NEAR(*out.Find("inference.prefix_cache.hit_ratio", kEntity, L({})), 0.25, 1e-12);
  // No iteration_tokens histogram: running requests (10 -> 14, 12 on average) against 48.
  EXPECT_EQ(out.Find("inference.batch.efficiency", kEntity, L({{"basis", "sequences"}})), 0.25);
}

TEST(InferenceWindowTest, Sglang) {
  auto out = Window(Engine::kSglang, "sglang", {.max_num_seqs = 48});
  ExpectPercentiles(out, "inference.time_to_first_token", 0.064, 0.0925, 0.175);
  // Its finer time-per-output-token buckets (0.03, 0.04 below 0.05) move the median.
  ExpectPercentiles(out, "inference.inter_token_latency", 0.042, 0.2 / 3, 0.09);
  ExpectPercentiles(out, "inference.request_latency", 1.25, 2.0, 60);
  // Its first queue bucket is le=0: the next one interpolates from 0.
  ExpectPercentiles(out, "inference.queue_time", 0.1 * 50 / 90, 0.15, 0.19);
  ExpectSharedValues(out, true, true);
  EXPECT_EQ(out.Find("inference.batch.efficiency", kEntity, L({{"basis", "sequences"}})), 0.25);
}

TEST(InferenceWindowTest, TensorRtLlm) {
  auto out =
      Window(Engine::kTrtllm, "trtllm", {.max_num_batched_tokens = 8192, .max_num_seqs = 2048});
  ExpectPercentiles(out, "inference.time_to_first_token", 0.064, 0.0925, 0.175);
  ExpectPercentiles(out, "inference.inter_token_latency", 0.03, 0.2 / 3, 0.09);
  ExpectPercentiles(out, "inference.request_latency", 1.25, 2.0, 7680);
  ExpectPercentiles(out, "inference.queue_time", 0.3 * 50 / 90, 0.4, 0.48);
  ExpectSharedValues(out, true, true);  // 300 reused of 1200 blocks looked up
  EXPECT_EQ(out.Find("inference.batch.efficiency", kEntity, L({{"basis", "sequences"}})),
            12.0 / 2048);
}

TEST(InferenceWindowTest, TgiHasNoTimeToFirstToken) {
  auto out = Window(Engine::kTgi, "tgi", {.max_num_seqs = 48}, "bigscience/bloom-560m");
  constexpr std::string_view kTgiModel = "bigscience/bloom-560m";
  EXPECT_FALSE(out.Has("inference.time_to_first_token"));
  EXPECT_FALSE(out.Has("inference.kv_cache.usage"));
  EXPECT_FALSE(out.Has("inference.prefix_cache.hit_ratio"));
  // Its exponential duration buckets (0.0001 * 1.5^k).
  ExpectPercentiles(out, "inference.request_latency", 0.6234856369, 1.122274146, 1.571183805,
                    kTgiModel);
  ExpectSharedValues(out, false, false, kTgiModel);
  EXPECT_EQ(out.Find("inference.batch.efficiency", kEntity, L({{"basis", "sequences"}}, kTgiModel)),
            0.25);
}

TEST(InferenceWindowTest, FirstScrapeWritesNoWindowValues) {
  const ModelSnapshot a = Snapshot(Engine::kVllm, "vllm_1.prom");
  model::CollectingSink out;
  WriteWindow(nullptr, a, 0, {.max_num_batched_tokens = 8192}, kEntity, out);
  EXPECT_EQ(out.Find("inference.requests.running", kEntity, L({})), 10);
  EXPECT_EQ(out.Find("inference.batch.limit", kEntity, L({{"basis", "tokens"}})), 8192);
  EXPECT_FALSE(out.Has("inference.time_to_first_token"));
  EXPECT_FALSE(out.Has("inference.request.rate"));
  EXPECT_FALSE(out.Has("inference.batch.efficiency"));
}

TEST(InferenceWindowTest, CounterResetRestartsFromTheNewValue) {
  EXPECT_EQ(CounterIncrease(100, 150), 50);
  EXPECT_EQ(CounterIncrease(100, 30), 30);
  EXPECT_EQ(CounterIncrease(std::nullopt, 30), std::nullopt);
  // The engine restarted between the scrapes: the second scrape's counts are the window's.
  const ModelSnapshot before = Snapshot(Engine::kVllm, "vllm_2.prom");
  ModelSnapshot after = before;
  after.requests_finished = 5;
  after.input_tokens = 1000;
  after.time_to_first_token = Histogram{{{0.1, 0}, {0.25, 4}, {INFINITY, 4}}, 0.8, 4};
  model::CollectingSink out;
  WriteWindow(&before, after, 10, {}, kEntity, out);
  EXPECT_EQ(out.Find("inference.request.rate", kEntity, L({})), 0.5);
  EXPECT_EQ(out.Find("inference.token.rate", kEntity, L({{"token_type", "input"}})), 100);
  EXPECT_NEAR(*out.Find("inference.time_to_first_token", kEntity, L({{"quantile", "0.5"}})), 0.175,
              1e-12);
}

TEST(InferenceWindowTest, QuantileEdges) {
  EXPECT_EQ(HistogramQuantile(Histogram{{{1, 0}, {INFINITY, 0}}, 0, 0}, 0.5), std::nullopt);
  // Everything above the last bound: no lower bound to report but that bound.
  EXPECT_EQ(HistogramQuantile(Histogram{{{1, 0}, {2, 0}, {INFINITY, 10}}, 50, 10}, 0.5), 2);
  EXPECT_EQ(HistogramQuantile(Histogram{{{INFINITY, 10}}, 50, 10}, 0.5), std::nullopt);
  // The first bucket interpolates from 0.
  EXPECT_EQ(HistogramQuantile(Histogram{{{2, 10}, {INFINITY, 10}}, 10, 10}, 0.5), 1);
}

TEST(EngineTest, HistogramWithoutInfIsAnError) {
  auto e = ParsePromText(
      "# TYPE vllm:time_to_first_token_seconds histogram\n"
      "vllm:time_to_first_token_seconds_bucket{le=\"0.1\",model_name=\"m\"} 1\n"
      "vllm:time_to_first_token_seconds_sum{model_name=\"m\"} 1\n"
      "vllm:time_to_first_token_seconds_count{model_name=\"m\"} 1\n");
  ASSERT_TRUE(e.has_value());
  auto s = Normalize(Engine::kVllm, *e, "");
  ASSERT_FALSE(s.has_value());
  EXPECT_NE(s.error().message().find("vllm:time_to_first_token_seconds"), std::string::npos);
}

}  // namespace
}  // namespace warpscope::agent::inference

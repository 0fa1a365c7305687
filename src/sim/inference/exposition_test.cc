// SPDX-License-Identifier: Apache-2.0
#include "sim/inference/exposition.h"

#include <gtest/gtest.h>

#include <set>

#include "agent/sources/inference/prom_text.h"

namespace warpscope::sim::inference {
namespace {

namespace prom = agent::inference;

ExpositionOptions Options(Engine engine, VllmNames names = VllmNames::kV1) {
  ExpositionOptions o;
  o.command.engine = engine;
  o.command.model = "meta-llama/Llama-3.1-8B-Instruct";
  o.command.max_num_seqs = 256;
  o.command.max_num_batched_tokens = 8192;
  o.command.max_model_len = engine == Engine::kTgi ? 2048 : 8192;
  o.vllm_names = names;
  return o;
}

prom::Exposition Parse(const std::string& text) {
  auto e = prom::ParsePromText(text);
  EXPECT_TRUE(e.has_value()) << (e ? "" : e.error().message());
  return e ? *e : prom::Exposition{};
}

const prom::Family* FindFamily(const prom::Exposition& e, const std::string& name) {
  for (const prom::Family& f : e.families) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

double Value(const prom::Exposition& e, const std::string& family, const std::string& sample) {
  const prom::Family* f = FindFamily(e, family);
  if (f == nullptr) return -1;
  for (const prom::Sample& s : f->samples) {
    if (s.name == sample) return s.value;
  }
  return -1;
}

std::set<std::string> Names(const prom::Exposition& e) {
  std::set<std::string> out;
  for (const prom::Family& f : e.families) out.insert(f.name);
  return out;
}

// Every histogram of the engine: its buckets, count and sum are those of the model's values.
void ExpectHistogramsMatch(const ExpositionOptions& o, const TrafficTotals& t) {
  const prom::Exposition e = Parse(RenderExposition(o, t));
  for (const HistogramSpec& spec : EngineHistograms(o)) {
    SCOPED_TRACE(spec.name);
    const prom::Family* f = FindFamily(e, spec.name);
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->type, prom::MetricType::kHistogram);
    auto series = prom::AssembleHistograms(*f);
    ASSERT_TRUE(series.has_value()) << series.error().message();
    ASSERT_EQ(series->size(), 1u);
    const auto& h = (*series)[0];
    const ValueCounts& v = Observations(t, spec.what);
    ASSERT_EQ(h.buckets.size(), spec.bounds.size() + 1);
    for (size_t i = 0; i < spec.bounds.size(); ++i) {
      EXPECT_DOUBLE_EQ(h.buckets[i].le, spec.bounds[i]);
      EXPECT_EQ(h.buckets[i].count, static_cast<double>(CountAtMost(v, spec.bounds[i])));
    }
    EXPECT_EQ(h.count, static_cast<double>(Count(v)));
    EXPECT_NEAR(h.sum, Sum(v), 1e-9 * (1 + Sum(v)));
    EXPECT_GT(h.count, 0) << "the test traffic should reach every histogram";
  }
}

TrafficTotals SomeTraffic(double t) { return TrafficModel(TrafficConfig{}).Totals(t); }

TEST(ExpositionTest, VllmV1HasItsNamesLabelsAndBuckets) {
  const ExpositionOptions o = Options(Engine::kVllm);
  const TrafficTotals t = SomeTraffic(30);
  const prom::Exposition e = Parse(RenderExposition(o, t));
  const std::set<std::string> names = Names(e);
  for (const char* n :
       {"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
        "vllm:prefix_cache_queries", "vllm:prefix_cache_hits", "vllm:prompt_tokens",
        "vllm:generation_tokens", "vllm:request_success", "vllm:iteration_tokens_total",
        "vllm:time_to_first_token_seconds", "vllm:inter_token_latency_seconds",
        "vllm:e2e_request_latency_seconds", "vllm:request_queue_time_seconds"}) {
    EXPECT_TRUE(names.contains(n)) << n;
  }
  EXPECT_FALSE(names.contains("vllm:gpu_cache_usage_perc"));
  EXPECT_EQ(Value(e, "vllm:generation_tokens", "vllm:generation_tokens_total"),
            static_cast<double>(t.generation_tokens));
  EXPECT_EQ(Value(e, "vllm:prefix_cache_hits", "vllm:prefix_cache_hits_total"),
            static_cast<double>(t.prefix_hits));
  const prom::Family* running = FindFamily(e, "vllm:num_requests_running");
  ASSERT_NE(running, nullptr);
  EXPECT_EQ(running->type, prom::MetricType::kGauge);
  const std::vector<prom::Label> want = {{"engine", "0"},
                                         {"model_name", "meta-llama/Llama-3.1-8B-Instruct"}};
  EXPECT_EQ(running->samples[0].labels, want);
  EXPECT_EQ(EngineHistograms(o)[3].bounds.size(), 22u);  // TTFT
  ExpectHistogramsMatch(o, t);
}

TEST(ExpositionTest, VllmLegacyUsesTheOlderNames) {
  const ExpositionOptions o = Options(Engine::kVllm, VllmNames::kLegacy);
  const std::set<std::string> names = Names(Parse(RenderExposition(o, SomeTraffic(30))));
  EXPECT_TRUE(names.contains("vllm:gpu_cache_usage_perc"));
  EXPECT_TRUE(names.contains("vllm:time_per_output_token_seconds"));
  EXPECT_FALSE(names.contains("vllm:kv_cache_usage_perc"));
  EXPECT_FALSE(names.contains("vllm:inter_token_latency_seconds"));
  EXPECT_FALSE(names.contains("vllm:iteration_tokens_total"));
  ExpectHistogramsMatch(o, SomeTraffic(30));
}

TEST(ExpositionTest, SglangTrtllmAndTgiMatchTheModel) {
  for (Engine engine : {Engine::kSglang, Engine::kTrtllm, Engine::kTgi}) {
    SCOPED_TRACE(std::string(EngineName(engine)));
    ExpectHistogramsMatch(Options(engine), SomeTraffic(30));
  }
}

TEST(ExpositionTest, TgiHasNoTimeToFirstTokenAndNoLabels) {
  const prom::Exposition e = Parse(RenderExposition(Options(Engine::kTgi), SomeTraffic(30)));
  for (const prom::Family& f : e.families) {
    EXPECT_TRUE(f.name.starts_with("tgi_")) << f.name;
    EXPECT_EQ(f.name.find("first_token"), std::string::npos) << f.name;
    for (const prom::Sample& s : f.samples) {
      for (const prom::Label& l : s.labels) EXPECT_EQ(l.name, "le") << s.name;
    }
  }
  EXPECT_EQ(Value(e, "tgi_request_success", "tgi_request_success"),
            static_cast<double>(SomeTraffic(30).requests_finished));
}

TEST(ExpositionTest, CountersGrowBetweenScrapes) {
  for (Engine engine : {Engine::kVllm, Engine::kSglang, Engine::kTrtllm, Engine::kTgi}) {
    SCOPED_TRACE(std::string(EngineName(engine)));
    TrafficModel model{TrafficConfig{}};
    const prom::Exposition a = Parse(RenderExposition(Options(engine), model.Totals(10)));
    const prom::Exposition b = Parse(RenderExposition(Options(engine), model.Totals(20)));
    for (const prom::Family& fa : a.families) {
      if (fa.type != prom::MetricType::kCounter && fa.type != prom::MetricType::kHistogram) {
        continue;
      }
      const prom::Family* fb = FindFamily(b, fa.name);
      ASSERT_NE(fb, nullptr) << fa.name;
      ASSERT_EQ(fa.samples.size(), fb->samples.size());
      for (size_t i = 0; i < fa.samples.size(); ++i) {
        EXPECT_LE(fa.samples[i].value, fb->samples[i].value) << fa.samples[i].name;
      }
    }
  }
}

// What a scraper computes from two scrapes (the mean tokens per engine step from the
// iteration histogram's _sum and _count deltas) is the model's batch efficiency.
TEST(ExpositionTest, BatchEfficiencyFromTwoScrapesIsTheModels) {
  const ExpositionOptions o = Options(Engine::kVllm);
  TrafficModel model{TrafficConfig{}};
  const TrafficTotals t0 = model.Totals(10);
  const TrafficTotals t1 = model.Totals(40);
  const prom::Exposition a = Parse(RenderExposition(o, t0));
  const prom::Exposition b = Parse(RenderExposition(o, t1));
  const std::string family = "vllm:iteration_tokens_total";
  const double sum = Value(b, family, family + "_sum") - Value(a, family, family + "_sum");
  const double count = Value(b, family, family + "_count") - Value(a, family, family + "_count");
  const ValueCounts window = Subtract(t1.iteration_tokens, t0.iteration_tokens);
  ASSERT_GT(count, 0);
  EXPECT_DOUBLE_EQ(count, static_cast<double>(Count(window)));
  EXPECT_NEAR(sum / count / 8192, Sum(window) / static_cast<double>(Count(window)) / 8192, 1e-12);
  EXPECT_LT(sum / count / 8192, 0.30);
}

TEST(ExpositionTest, PythonNumbersLookLikePrometheusClients) {
  EXPECT_EQ(PythonNumber(1), "1.0");
  EXPECT_EQ(PythonNumber(0.25), "0.25");
  EXPECT_EQ(PythonNumber(2560), "2560.0");
  EXPECT_EQ(PythonNumber(8128902), "8.128902e+06");
  EXPECT_EQ(PythonNumber(0), "0.0");
}

}  // namespace
}  // namespace warpscope::sim::inference

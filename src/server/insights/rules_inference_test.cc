// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>

#include "server/insights/rules.h"
#include "server/insights/testing/inputs_builder.h"

namespace warpscope::server::insights {
namespace {

using testing::InputsBuilder;
using testing::Observe;

constexpr size_t kBuckets = 90;  // 15 minutes; the inference window is the last 60

// A vLLM pool of one process on `gpus` (4 L40S at ~12 % by default) at `efficiency`.
InferenceInput& Pool(InputsBuilder& b, double efficiency, const std::string& pid = "4242",
                     const std::string& model = "llama-3-8b",
                     const std::string& gpus = "GPU-0,GPU-1,GPU-2,GPU-3") {
  InferenceInput& s = b.Serving("node-1", pid, model, gpus);
  InputsBuilder::Fill(s.batch_efficiency, efficiency);
  InputsBuilder::Fill(s.request_rate, 2.1);
  InputsBuilder::Fill(s.input_token_rate, 900);
  InputsBuilder::Fill(s.output_token_rate, 350);
  InputsBuilder::Fill(s.requests_running, 3);
  InputsBuilder::Fill(s.requests_waiting, 0);
  InputsBuilder::Fill(s.kv_cache_usage, 0.08);
  InputsBuilder::Fill(s.ttft_p95, 0.09);
  InputsBuilder::Fill(s.queue_time_p95, 0.002);
  return s;
}

void LightGpus(InputsBuilder& b, int count, double utilization = 0.12) {
  for (int i = 0; i < count; ++i) {
    GpuInput& g = b.Gpu("node-1", "GPU-" + std::to_string(i), std::to_string(i), "NVIDIA L40S");
    InputsBuilder::Fill(g.utilization, utilization);
  }
}

TEST(InferenceOverprovisionedTest, APoolAtTenPercentBatchEfficiencyFreesThreeOfItsFourGpus) {
  InputsBuilder b(kBuckets);
  LightGpus(b, 4);
  InferenceInput& s = Pool(b, 0.1);
  InputsBuilder::Set(s.batch_efficiency, [](size_t i) { return 0.08 + 0.04 * (i % 2); });
  std::vector<Observation> seen = Observe(*MakeInferenceOverprovisionedRule(), b.inputs());
  ASSERT_EQ(seen.size(), 1u);
  const Observation& o = seen[0];
  EXPECT_EQ(o.entity, "pid/4242/1");
  EXPECT_EQ(o.kind, model::EntityKind::kProcess);
  EXPECT_EQ(o.attributes.Get("model"), "llama-3-8b");
  // 4 GPUs × 10 % = 0.4 GPUs of full batches: one GPU at 60 % carries them, three are free.
  EXPECT_DOUBLE_EQ(o.gpus, 4);
  EXPECT_NEAR(o.lost_fraction * o.gpus, 3, 1e-9);
  EXPECT_EQ(o.evidence["pool"]["gpus_freeable"], 3);
  EXPECT_EQ(o.evidence["pool"]["gpus_needed"], 1);
  EXPECT_NEAR(o.evidence["batch_efficiency"].get<double>(), 0.1, 1e-3);
  EXPECT_NEAR(o.evidence["gpu_utilization"].get<double>(), 0.12, 1e-3);
  ASSERT_EQ(o.evidence["gpus"].size(), 4u);
  EXPECT_EQ(o.evidence["gpus"][2]["index"], "2");
  EXPECT_NEAR(o.evidence["request_rate"].get<double>(), 2.1, 1e-9);
  EXPECT_EQ(o.evidence["series"][0]["metric"], "inference.batch.efficiency");
  EXPECT_NE(o.summary.find("at 10 % of their limit"), std::string::npos) << o.summary;
  EXPECT_NE(o.summary.find("4 GPUs averaging 12 % utilization"), std::string::npos) << o.summary;
  EXPECT_NE(o.summary.find("freeing 3"), std::string::npos) << o.summary;
}

TEST(InferenceOverprovisionedTest, AnEfficiencyUnderOnePercentReadsWithADecimal) {
  InputsBuilder b(kBuckets);
  LightGpus(b, 4);
  Pool(b, 0.0033);
  std::vector<Observation> seen = Observe(*MakeInferenceOverprovisionedRule(), b.inputs());
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_NE(seen[0].summary.find("at 0.3 % of their limit"), std::string::npos)
      << seen[0].summary;
}

TEST(InferenceOverprovisionedTest, TheThresholdIsStrictAndSustainedMeansMostOfTheWindow) {
  auto rule = MakeInferenceOverprovisionedRule();
  {
    InputsBuilder b(kBuckets);
    Pool(b, 0.29);
    EXPECT_EQ(Observe(*rule, b.inputs()).size(), 1u);
  }
  {
    InputsBuilder b(kBuckets);
    Pool(b, 0.30);
    EXPECT_TRUE(Observe(*rule, b.inputs()).empty()) << "30 % is not under 30 %";
  }
  {
    // Low in 48 of the window's 60 buckets (80 %): sustained; a busy burst does not excuse it.
    InputsBuilder b(kBuckets);
    InferenceInput& s = Pool(b, 0.1);
    InputsBuilder::Fill(s.batch_efficiency, 0.7, kBuckets - 12);
    EXPECT_EQ(Observe(*rule, b.inputs()).size(), 1u);
  }
  {
    // Low in 47 of 60: a lull, not a pool too large.
    InputsBuilder b(kBuckets);
    InferenceInput& s = Pool(b, 0.1);
    InputsBuilder::Fill(s.batch_efficiency, 0.7, kBuckets - 13);
    EXPECT_TRUE(Observe(*rule, b.inputs()).empty());
  }
  {
    // A one-minute dip of a busy pool is no finding.
    InputsBuilder b(kBuckets);
    InferenceInput& s = Pool(b, 0.6);
    InputsBuilder::Fill(s.batch_efficiency, 0.05, kBuckets - 6);
    EXPECT_TRUE(Observe(*rule, b.inputs()).empty());
  }
}

TEST(InferenceOverprovisionedTest, ASustainedShareCanBeConfigured) {
  InputsBuilder b(kBuckets);
  InferenceInput& s = Pool(b, 0.1);
  InputsBuilder::Fill(s.batch_efficiency, 0.7, kBuckets - 30);  // low in half the window
  InsightConfig config;
  auto rule = MakeInferenceOverprovisionedRule();
  EXPECT_TRUE(rule->Evaluate(*testing::ContextFor(b.inputs(), config)).empty());
  config.inference_sustained_share = 0.5;
  EXPECT_EQ(rule->Evaluate(*testing::ContextFor(b.inputs(), config)).size(), 1u);
}

TEST(InferenceOverprovisionedTest, AProcessSeenForPartOfTheWindowIsNotJudgedYet) {
  InputsBuilder b(kBuckets);
  InferenceInput& s = Pool(b, 0.1);
  InputsBuilder::Fill(s.batch_efficiency, std::nan(""), 0, kBuckets - 30);  // 5 minutes of data
  EXPECT_TRUE(Observe(*MakeInferenceOverprovisionedRule(), b.inputs()).empty());
}

TEST(InferenceOverprovisionedTest, ReplicasOfOneModelArePooledAndOtherModelsAreNot) {
  InputsBuilder b(kBuckets);
  LightGpus(b, 6);
  // Four single-GPU replicas of one model at 10 % on node-1 and node-2, and a busy second model
  // on the same host.
  Pool(b, 0.1, "100", "llama", "GPU-0");
  Pool(b, 0.1, "101", "llama", "GPU-1");
  Pool(b, 0.1, "102", "llama", "GPU-2");
  InferenceInput& remote = Pool(b, 0.1, "103", "llama", "GPU-9");
  remote.host = "node-2";
  Pool(b, 0.7, "200", "mistral", "GPU-4,GPU-5");
  std::vector<Observation> seen = Observe(*MakeInferenceOverprovisionedRule(), b.inputs());
  ASSERT_EQ(seen.size(), 4u);
  double freed = 0;
  for (const Observation& o : seen) {
    EXPECT_EQ(o.attributes.Get("model"), "llama");
    EXPECT_EQ(o.evidence["pool"]["processes"], 4);
    freed += o.lost_fraction * o.gpus;
  }
  // 4 × 10 % = 0.4 GPUs of work: one replica carries it, three GPUs are free in all.
  EXPECT_NEAR(freed, 3, 1e-9);
  EXPECT_EQ(seen[3].host, "node-2");
}

TEST(InferenceOverprovisionedTest, AProcessWithoutAttributedGpusCountsAsOneAndFreesNothing) {
  InputsBuilder b(kBuckets);
  Pool(b, 0.1, "4242", "llama", "");
  std::vector<Observation> seen = Observe(*MakeInferenceOverprovisionedRule(), b.inputs());
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].lost_fraction, 0);
  EXPECT_TRUE(seen[0].evidence["gpus"].empty());
  EXPECT_NE(seen[0].summary.find("not attributed"), std::string::npos) << seen[0].summary;
}

TEST(InferenceRulesTest, NoInferenceSeriesRaisesNothing) {
  InputsBuilder b(kBuckets);
  LightGpus(b, 8, 0.05);
  ProcessGpuInput& p = b.Process("node-1", "77", "GPU-0", std::chrono::minutes(30));
  InputsBuilder::Fill(p.memory_used, 20 * testing::kGiB);
  for (const auto& rule : {MakeInferenceOverprovisionedRule(), MakeInferenceQueueingRule(),
                           MakeInferenceSlowFirstTokenRule(), MakeInferenceMemoryBoundRule()}) {
    EXPECT_TRUE(Observe(*rule, b.inputs()).empty()) << rule->info().name;
  }
}

TEST(InferenceQueueingTest, FullBatchesWithRequestsWaitingAskToScaleOut) {
  InputsBuilder b(kBuckets);
  LightGpus(b, 4, 0.97);
  InferenceInput& s = Pool(b, 0.92);
  InputsBuilder::Fill(s.requests_waiting, 6);
  InputsBuilder::Fill(s.queue_time_p95, 1.8);
  auto rule = MakeInferenceQueueingRule();
  std::vector<Observation> seen = Observe(*rule, b.inputs());
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].lost_fraction, 0) << "queueing costs latency, not GPU-hours";
  EXPECT_NEAR(seen[0].evidence["requests_waiting"].get<double>(), 6, 1e-9);
  EXPECT_NEAR(seen[0].evidence["queue_time_p95_s"].get<double>(), 1.8, 1e-9);
  EXPECT_NE(seen[0].summary.find("1800 ms in the queue at p95"), std::string::npos)
      << seen[0].summary;
  EXPECT_EQ(rule->info().severity, Severity::kTicket);
  EXPECT_NE(rule->info().suggestion.find("Scale out"), std::string::npos);
  EXPECT_TRUE(Observe(*MakeInferenceOverprovisionedRule(), b.inputs()).empty());
}

TEST(InferenceQueueingTest, FullBatchesWithoutAQueueOrWithoutSustainAreNotQueueing) {
  auto rule = MakeInferenceQueueingRule();
  {
    InputsBuilder b(kBuckets);
    Pool(b, 0.92);  // nobody waits: the pool is sized right
    EXPECT_TRUE(Observe(*rule, b.inputs()).empty());
  }
  {
    InputsBuilder b(kBuckets);
    InferenceInput& s = Pool(b, 0.80);  // not above 80 %
    InputsBuilder::Fill(s.requests_waiting, 6);
    EXPECT_TRUE(Observe(*rule, b.inputs()).empty());
  }
  {
    InputsBuilder b(kBuckets);
    InferenceInput& s = Pool(b, 0.5);
    InputsBuilder::Fill(s.batch_efficiency, 0.95, kBuckets - 20);  // a burst of 20 buckets
    InputsBuilder::Fill(s.requests_waiting, 6);
    EXPECT_TRUE(Observe(*rule, b.inputs()).empty());
  }
}

TEST(InferenceSlowFirstTokenTest, AP95AboveTargetPagesWithItsSeries) {
  InputsBuilder b(kBuckets);
  InferenceInput& s = Pool(b, 0.6);
  InputsBuilder::Set(s.ttft_p95, [](size_t i) { return 0.7 + 0.2 * (i % 2); });
  InputsBuilder::Fill(s.queue_time_p95, 0.45);
  auto rule = MakeInferenceSlowFirstTokenRule();
  std::vector<Observation> seen = Observe(*rule, b.inputs());
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(rule->info().severity, Severity::kPage);
  EXPECT_NEAR(seen[0].evidence["ttft_p95_s"].get<double>(), 0.8, 1e-3);
  EXPECT_NEAR(seen[0].evidence["ttft_p95_max_s"].get<double>(), 0.9, 1e-9);
  const nlohmann::json& series = seen[0].evidence["series"][0];
  EXPECT_EQ(series["metric"], "inference.time_to_first_token");
  EXPECT_EQ(series["labels"]["quantile"], "0.95");
  EXPECT_EQ(series["values"].size(), 30u) << "the 5-minute window";
  EXPECT_NE(seen[0].summary.find("above the 500 ms target"), std::string::npos) << seen[0].summary;
}

TEST(InferenceSlowFirstTokenTest, AtTheTargetSparseOrWithoutTtftNothingPages) {
  auto rule = MakeInferenceSlowFirstTokenRule();
  {
    InputsBuilder b(kBuckets);
    InferenceInput& s = Pool(b, 0.6);
    InputsBuilder::Fill(s.ttft_p95, 0.5);
    EXPECT_TRUE(Observe(*rule, b.inputs()).empty()) << "at the target is not above it";
  }
  {
    // TGI has no time-to-first-token histogram: no percentile, no finding.
    InputsBuilder b(kBuckets);
    InferenceInput& s = Pool(b, 0.6, "5000", "falcon", "GPU-0");
    s.attributes.Set("inference.engine", "tgi");
    InputsBuilder::Fill(s.ttft_p95, std::nan(""));
    EXPECT_TRUE(Observe(*rule, b.inputs()).empty());
  }
  {
    // Requests finished in 12 of the window's 30 buckets: too few percentiles to page on.
    InputsBuilder b(kBuckets);
    InferenceInput& s = Pool(b, 0.6);
    InputsBuilder::Set(s.ttft_p95, [](size_t i) { return i % 5 < 2 ? 2.0 : std::nan(""); });
    EXPECT_TRUE(Observe(*rule, b.inputs()).empty());
  }
  {
    // A spike in 5 of 30 buckets is no page.
    InputsBuilder b(kBuckets);
    InferenceInput& s = Pool(b, 0.6);
    InputsBuilder::Fill(s.ttft_p95, 3.0, kBuckets - 5);
    EXPECT_TRUE(Observe(*rule, b.inputs()).empty());
  }
}

TEST(InferenceSlowFirstTokenTest, TheTargetIsConfigured) {
  InputsBuilder b(kBuckets);
  InferenceInput& s = Pool(b, 0.6);
  InputsBuilder::Fill(s.ttft_p95, 0.8);
  InsightConfig config;
  config.inference_ttft_target_s = 1.0;
  EXPECT_TRUE(MakeInferenceSlowFirstTokenRule()
                  ->Evaluate(*testing::ContextFor(b.inputs(), config))
                  .empty());
}

TEST(InferenceMemoryBoundTest, AFullKvCacheWithARisingQueueIsMemoryBound) {
  InputsBuilder b(kBuckets);
  InferenceInput& s = Pool(b, 0.55);
  InputsBuilder::Fill(s.kv_cache_usage, 0.97);
  // The queue grows by 1 request a minute over the window.
  InputsBuilder::Set(s.requests_waiting, [](size_t i) { return static_cast<double>(i) / 6; });
  auto rule = MakeInferenceMemoryBoundRule();
  std::vector<Observation> seen = Observe(*rule, b.inputs());
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_NEAR(seen[0].evidence["waiting_per_min"].get<double>(), 1, 1e-9);
  EXPECT_NEAR(seen[0].evidence["kv_cache_usage"].get<double>(), 0.97, 1e-9);
  EXPECT_NE(rule->info().suggestion.find("prefix caching"), std::string::npos);
  EXPECT_NE(seen[0].summary.find("97 % full"), std::string::npos) << seen[0].summary;
}

TEST(InferenceMemoryBoundTest, AFullCacheWithASteadyQueueOrAFreeCacheIsNot) {
  auto rule = MakeInferenceMemoryBoundRule();
  {
    InputsBuilder b(kBuckets);
    InferenceInput& s = Pool(b, 0.55);
    InputsBuilder::Fill(s.kv_cache_usage, 0.97);
    InputsBuilder::Fill(s.requests_waiting, 5);  // a steady queue: sized, not starved
    EXPECT_TRUE(Observe(*rule, b.inputs()).empty());
  }
  {
    InputsBuilder b(kBuckets);
    InferenceInput& s = Pool(b, 0.55);
    InputsBuilder::Fill(s.kv_cache_usage, 0.85);
    InputsBuilder::Set(s.requests_waiting, [](size_t i) { return static_cast<double>(i) / 6; });
    EXPECT_TRUE(Observe(*rule, b.inputs()).empty());
  }
}

}  // namespace
}  // namespace warpscope::server::insights

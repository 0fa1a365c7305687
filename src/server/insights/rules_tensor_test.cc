// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <cmath>

#include "server/insights/rules.h"
#include "server/insights/testing/inputs_builder.h"

namespace warpscope::server::insights {
namespace {

using testing::InputsBuilder;
using testing::Observe;

constexpr size_t kBuckets = 90;  // 15 minutes; the rule looks at the last 10 (60 buckets)
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A busy GPU training in FP32: tensor pipes ~2 %, FP32 pipes ~85 % (scenarios/tensor-idle).
GpuInput& Fp32Training(InputsBuilder& b, const std::string& uuid, const std::string& index) {
  GpuInput& g = b.Gpu("node-1", uuid, index);
  InputsBuilder::Fill(g.tensor_active, 0.02);
  InputsBuilder::Fill(g.fp32_active, 0.85);
  InputsBuilder::Fill(g.fp16_active, 0);
  return g;
}

TEST(TensorCoresIdleTest, BusyFp32PipesWithIdleTensorPipesFireFromGpmEvidence) {
  InputsBuilder b(kBuckets);
  b.Gpu("node-1", "GPU-0", "0");  // healthy: tensor 62 %, FP32 12 %, FP16 6 %
  Fp32Training(b, "GPU-1", "1");
  GpuInput& memory_bound = b.Gpu("node-1", "GPU-2", "2");  // tensor 4 %, FP32 14 %: not dense math
  InputsBuilder::Fill(memory_bound.tensor_active, 0.04);
  InputsBuilder::Fill(memory_bound.fp32_active, 0.14);
  InputsBuilder::Fill(memory_bound.fp16_active, 0);
  std::vector<Observation> seen = Observe(*MakeTensorCoresIdleRule(), b.inputs());
  ASSERT_EQ(seen.size(), 1u);
  const Observation& o = seen[0];
  EXPECT_EQ(o.entity, "GPU-1");
  EXPECT_EQ(o.evidence["source"], "gpm_pipes");
  EXPECT_NEAR(o.evidence["tensor_active"].get<double>(), 0.02, 1e-9);
  EXPECT_NEAR(o.evidence["fp_pipes_active"].get<double>(), 0.85, 1e-9);
  EXPECT_TRUE(o.evidence["matmul_share"].is_null());
  EXPECT_FALSE(o.evidence.contains("profile"));
  EXPECT_EQ(o.evidence["series"].size(), 2u);
  EXPECT_NEAR(o.lost_fraction, 0.95 * 0.85 * 0.5, 1e-9);
  EXPECT_NE(o.summary.find("FP32/FP16 pipes 85 % active but its tensor cores only 2 %"),
            std::string::npos)
      << o.summary;
  EXPECT_NE(o.summary.find("no GPU profile"), std::string::npos) << o.summary;
  const RuleInfo& info = MakeTensorCoresIdleRule()->info();
  EXPECT_EQ(info.name, "tensor_cores_idle");
  EXPECT_EQ(info.severity, Severity::kTicket);
  EXPECT_NE(info.suggestion.find("autocast"), std::string_view::npos);
  EXPECT_NE(info.suggestion.find("set_float32_matmul_precision"), std::string_view::npos);
}

TEST(TensorCoresIdleTest, AProfileWhereMatmulsDominateFiresAndNamesTheKernels) {
  InputsBuilder b(kBuckets);
  // Tensor pipes at 30 % and the FP pipes quiet: only the profile says the work is matmuls.
  GpuInput& g = b.Gpu("node-1", "GPU-0", "0");
  InputsBuilder::Fill(g.tensor_active, 0.30);
  ProcessGpuInput& p = b.Process("node-1", "4242", "GPU-0", std::chrono::minutes(30));
  b.Profile(p, 1000, {{"ampere_sgemm_128x64_nn", 600}, {"triton_tem_fused_mm_3", 150}});
  std::vector<Observation> seen = Observe(*MakeTensorCoresIdleRule(), b.inputs());
  ASSERT_EQ(seen.size(), 1u);
  const Observation& o = seen[0];
  EXPECT_EQ(o.evidence["source"], "gpu_profile");
  EXPECT_NEAR(o.evidence["matmul_share"].get<double>(), 0.75, 1e-9);
  ASSERT_EQ(o.evidence["matmul_kernels"].size(), 2u);
  EXPECT_EQ(o.evidence["matmul_kernels"][0]["name"], "ampere_sgemm_128x64_nn");
  EXPECT_NEAR(o.evidence["matmul_kernels"][0]["share"].get<double>(), 0.6, 1e-9);
  EXPECT_EQ(o.evidence["profile"]["kind"], "gpu");
  EXPECT_EQ(o.evidence["profile"]["host"], "node-1");
  EXPECT_EQ(o.evidence["profile"]["entity"], "pid/4242/1");
  EXPECT_EQ(o.evidence["profile"]["pid"], 4242);
  EXPECT_EQ(o.evidence["profile"]["end"], base::ToUnixMillis(b.inputs().end()));
  EXPECT_NEAR(o.lost_fraction, 0.95 * 0.75 * 0.5, 1e-9);
  EXPECT_NE(o.summary.find("matmul kernels take 75 % of its GPU time (GPU profile of python3 "
                           "pid 4242; top: ampere_sgemm_128x64_nn)"),
            std::string::npos)
      << o.summary;
}

TEST(TensorCoresIdleTest, AProfileWhereMatmulsAreASmallShareKeepsItSilentWhateverThePipes) {
  InputsBuilder b(kBuckets);
  Fp32Training(b, "GPU-0", "0");  // the pipes alone would raise it
  ProcessGpuInput& p = b.Process("node-1", "4242", "GPU-0", std::chrono::minutes(30));
  b.Profile(p, 1000, {{"sm90_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8", 200}});
  EXPECT_TRUE(Observe(*MakeTensorCoresIdleRule(), b.inputs()).empty());
  // A process with no profile in the window (digest of 0 profiles) leaves the pipes to decide.
  InputsBuilder none(kBuckets);
  Fp32Training(none, "GPU-0", "0");
  ProcessGpuInput& q = none.Process("node-1", "4242", "GPU-0", std::chrono::minutes(30));
  none.Profile(q, 0, {}).profiles = 0;
  std::vector<Observation> seen = Observe(*MakeTensorCoresIdleRule(), none.inputs());
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].evidence["source"], "gpm_pipes");
}

TEST(TensorCoresIdleTest, AGpuWithoutTensorMetricsIsNotJudged) {
  InputsBuilder b(kBuckets);
  // An A100 (no GPM: NVML answers NOT_SUPPORTED, so no tensor or pipe series), busy, with a
  // profile full of GEMMs: nothing says whether its tensor cores work.
  GpuInput& a100 = b.Gpu("node-1", "GPU-0", "0", "NVIDIA A100-SXM4-80GB", /*healthy=*/false);
  InputsBuilder::Fill(a100.utilization, 0.97);
  ProcessGpuInput& p = b.Process("node-1", "4242", "GPU-0", std::chrono::minutes(30));
  b.Profile(p, 1000, {{"ampere_sgemm_128x64_nn", 900}});
  // An H100 reporting FP32 pipes but no tensor activity.
  GpuInput& partial = Fp32Training(b, "GPU-1", "1");
  InputsBuilder::Fill(partial.tensor_active, kNaN);
  std::unique_ptr<Rule> rule = MakeTensorCoresIdleRule();
  EXPECT_TRUE(Observe(*rule, b.inputs()).empty());
  InsightConfig config;
  EXPECT_FALSE(rule->WantsGpuProfiles(b.inputs(), config, b.inputs().gpus[0]));
  EXPECT_FALSE(rule->WantsGpuProfiles(b.inputs(), config, b.inputs().gpus[1]));
}

TEST(TensorCoresIdleTest, AnIdleOrLightlyUsedGpuIsSilentAndWantsNoProfile) {
  InputsBuilder b(kBuckets);
  GpuInput& idle = Fp32Training(b, "GPU-0", "0");
  InputsBuilder::Fill(idle.utilization, 0.01);
  InputsBuilder::Fill(idle.tensor_active, 0);
  InputsBuilder::Fill(idle.fp32_active, 0);
  GpuInput& light = Fp32Training(b, "GPU-1", "1");  // busy pipes in short bursts: 30 % busy
  InputsBuilder::Fill(light.utilization, 0.30);
  std::unique_ptr<Rule> rule = MakeTensorCoresIdleRule();
  EXPECT_TRUE(Observe(*rule, b.inputs()).empty());
  InsightConfig config;
  for (const GpuInput& g : b.inputs().gpus) {
    EXPECT_FALSE(rule->WantsGpuProfiles(b.inputs(), config, g)) << g.uuid;
  }
  // The FP32 GPU of the first test wants them: its tensor pipes are under the threshold.
  InputsBuilder busy(kBuckets);
  Fp32Training(busy, "GPU-0", "0");
  EXPECT_TRUE(rule->WantsGpuProfiles(busy.inputs(), config, busy.inputs().gpus[0]));
}

TEST(TensorCoresIdleTest, AnOpenFindingClearsOnlyPastTheClearThresholds) {
  std::unique_ptr<Rule> rule = MakeTensorCoresIdleRule();
  const std::set<std::pair<std::string, std::string>> open = {{"node-1", "GPU-0"}};
  // Tensor at 62 %: over the 60 % to raise, under the 65 % to clear.
  InputsBuilder b(kBuckets);
  GpuInput& g = Fp32Training(b, "GPU-0", "0");
  InputsBuilder::Fill(g.tensor_active, 0.62);
  EXPECT_TRUE(Observe(*rule, b.inputs()).empty());
  EXPECT_EQ(Observe(*rule, b.inputs(), open).size(), 1u);
  InputsBuilder::Fill(g.tensor_active, 0.66);
  EXPECT_TRUE(Observe(*rule, b.inputs(), open).empty());
  // FP pipes at 45 %: under the 50 % to raise, over the 40 % an open finding needs.
  InputsBuilder::Fill(g.tensor_active, 0.02);
  InputsBuilder::Fill(g.fp32_active, 0.45);
  EXPECT_TRUE(Observe(*rule, b.inputs()).empty());
  EXPECT_EQ(Observe(*rule, b.inputs(), open).size(), 1u);
  // Matmul share at 45 % of the profiled kernel time: likewise.
  ProcessGpuInput& p = b.Process("node-1", "4242", "GPU-0", std::chrono::minutes(30));
  b.Profile(p, 1000, {{"nvjet_tst_192x192_64x4_1x2_h_bz_coopB_NNT", 450}});
  InputsBuilder::Fill(g.fp32_active, 0.05);
  EXPECT_TRUE(Observe(*rule, b.inputs()).empty());
  EXPECT_EQ(Observe(*rule, b.inputs(), open).size(), 1u);
}

TEST(TensorCoresIdleTest, AGpuLostMidWindowIsNotJudged) {
  InputsBuilder b(kBuckets);
  GpuInput& lost = Fp32Training(b, "GPU-0", "0");
  // Gone for the last 5 of the 10 minutes (a fallen-off-the-bus GPU reports nothing).
  for (Series* s : {&lost.utilization, &lost.tensor_active, &lost.fp32_active,
                    &lost.fp16_active}) {
    InputsBuilder::Fill(*s, kNaN, 60);
  }
  GpuInput& blip = Fp32Training(b, "GPU-1", "1");  // a minute missing is still judged
  for (Series* s : {&blip.utilization, &blip.tensor_active}) InputsBuilder::Fill(*s, kNaN, 80);
  std::vector<Observation> seen = Observe(*MakeTensorCoresIdleRule(), b.inputs());
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].entity, "GPU-1");
}

}  // namespace
}  // namespace warpscope::server::insights

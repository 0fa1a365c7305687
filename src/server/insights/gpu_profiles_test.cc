// SPDX-License-Identifier: Apache-2.0
#include "server/insights/gpu_profiles.h"

#include <gtest/gtest.h>

#include "profiling/pprof.h"
#include "server/insights/insight_engine.h"
#include "server/query/testing/query_fixture.h"

namespace warpscope::server::insights {
namespace {

using profiling::FrameKind;
using query::At;
using query::kT0;

TEST(IsMatmulKernelTest, NamesGemmsOfEveryLibraryButNotAttentionOrGemv) {
  for (const char* name : {
           "ampere_sgemm_128x64_nn",
           "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_warpgroupsize1x1x1",
           "sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize128x128x16",
           "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>("
           "cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4::Params)",
           "nvjet_tst_192x192_64x4_1x2_h_bz_coopB_NNT",
           "volta_fp16_s884gemm_fp16_128x128_ldg8_f2f_nn",
           "void cublasLt::splitKreduce_kernel<32, 16, int, float, float>(...)",
           "turing_h1688gemm_256x128_ldg8_nn",
           "triton_tem_fused_mm_3",
           "triton_tem_fused_addmm_relu_7",
           "triton_tem_fused_bmm_0",
           "matmul_kernel",
           "fake_gemm",
       }) {
    EXPECT_TRUE(IsMatmulKernel(name)) << name;
  }
  for (const char* name : {
           "void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 32, 4>, true>(...)",
           "fmha_cutlassF_f32_aligned_64x64_rf_sm80",
           "void pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<...>",
           "void gemv2T_kernel_val<int, int, float, float, float, 128, 16, 4, 4, false>(...)",
           "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>()",
           "triton_poi_fused_add_mul_0",
           "triton_red_fused_native_layer_norm_1",
           "void at::native::(anonymous namespace)::softmax_warp_forward<float, float, float, 10>",
           "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
       }) {
    EXPECT_FALSE(IsMatmulKernel(name)) << name;
  }
}

// What the CUDA profiler writes for a process: python3 -> step -> cudaLaunchKernel -> each
// kernel, with a PC sample under the first one (no GPU time of its own), and a memory copy.
std::string GpuPprof(const std::vector<std::pair<std::string, int64_t>>& kernels_ms,
                     int64_t memcpy_ms = 0) {
  profiling::ProfileAggregator p(std::vector<profiling::ValueType>{
      {"gpu_time", "nanoseconds"}, {"launches", "count"}, {"pc_samples", "count"}});
  const uint32_t process =
      p.InternFrame({"python3", "/usr/bin/python3", 0, "", "", "", FrameKind::kProcess});
  const uint32_t step = p.InternFrame({"step", "train.py", 3, "", "", "", FrameKind::kPython});
  const uint32_t launch =
      p.InternFrame({"cudaLaunchKernel", "", 0, "", "", "", FrameKind::kLaunch});
  for (const auto& [name, ms] : kernels_ms) {
    std::vector<uint32_t> stack = {process, step, launch,
                                   p.InternFrame({name, "", 0, "", "", "", FrameKind::kKernel})};
    const int64_t k[] = {ms * 1'000'000, 3, 0};
    p.Add(stack, k);
    stack.push_back(p.InternFrame({"[sass] 0x10 FFMA", "", 0, "", "", "", FrameKind::kSass}));
    const int64_t pc[] = {0, 0, 5};
    p.Add(stack, pc);
  }
  if (memcpy_ms > 0) {
    const int64_t m[] = {memcpy_ms * 1'000'000, 0, 0};
    p.Add(std::vector<uint32_t>{process,
                                p.InternFrame({"[memcpy HtoD]", "", 0, "", "", "", FrameKind::kMemory})},
          m);
  }
  return profiling::EncodePprof(p.profile()).value();
}

TEST(DigestGpuProfileTest, SumsKernelTimeAndItsMatmulPartWithoutCopies) {
  std::string data = GpuPprof(
      {{"ampere_sgemm_128x64_nn", 60}, {"triton_poi_fused_add_0", 30}, {"fake_gemm", 10}}, 500);
  auto decoded = profiling::DecodePprof(data);
  ASSERT_TRUE(decoded) << decoded.error().message();
  GpuProfileDigest d = DigestGpuProfile(*decoded);
  EXPECT_EQ(d.kernel_ns, 100'000'000);
  EXPECT_EQ(d.matmul_ns, 70'000'000);
  ASSERT_EQ(d.matmuls.size(), 2u);
  EXPECT_EQ(d.matmuls[0].name, "ampere_sgemm_128x64_nn");
  EXPECT_EQ(d.matmuls[1].gpu_ns, 10'000'000);
  // A CPU profile has no GPU time.
  profiling::Profile cpu;
  cpu.sample_types = {{"cpu", "nanoseconds"}};
  EXPECT_EQ(DigestGpuProfile(cpu).kernel_ns, 0);
}

class GpuProfileCacheTest : public query::QueryFixture {
 protected:
  void Store(const std::string& data, int64_t pid, int64_t offset_s,
             const std::string& kind = "gpu") {
    ProfileMeta m;
    m.host = "node-1";
    m.pid = pid;
    m.kind = kind;
    m.start = At(kT0 + offset_s);
    m.end = At(kT0 + offset_s + 10);
    ASSERT_TRUE(storage_->WriteProfile(m, data));
  }
};

TEST_F(GpuProfileCacheTest, ReadsEachProcessAtMostEveryRefreshWithinABudget) {
  for (int w = 0; w < 60; ++w) {
    Store(GpuPprof({{"ampere_sgemm_128x64_nn", 8}, {"triton_poi_fused_add_0", 2}}), 42, w * 10);
    Store(GpuPprof({{"triton_poi_fused_add_0", 10}}), 43, w * 10);
  }
  Store("not pprof", 42, 0, "cpu");  // another kind: never read
  GpuProfileCache cache(GpuProfileCacheOptions{.max_reads_per_update = 2});
  const std::vector<ProfileTarget> targets = {{"node-1", "pid/42/1", 42},
                                              {"node-1", "pid/43/1", 43},
                                              {"node-1", "pid/44/1", 44},  // no profiles
                                              {"node-1", "pid/0/1", 0}};   // pid unknown
  std::vector<GpuProfileDigest> out;
  base::TimePoint now = At(kT0 + 600);
  ASSERT_TRUE(cache.Update(*storage_, targets, now, out).ok());
  ASSERT_EQ(out.size(), 2u);  // the budget: two reads this time
  EXPECT_EQ(out[0].entity, "pid/42/1");
  EXPECT_EQ(out[0].profiles, 6u);  // the newest 6 of the window
  EXPECT_EQ(out[0].kernel_ns, 6 * 10'000'000);
  EXPECT_EQ(out[0].matmul_ns, 6 * 8'000'000);
  EXPECT_EQ(out[0].start, now - std::chrono::minutes(10));
  EXPECT_EQ(out[1].matmul_ns, 0);
  ASSERT_TRUE(cache.Update(*storage_, targets, now + std::chrono::seconds(10), out).ok());
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[2].entity, "pid/44/1");
  EXPECT_EQ(out[2].profiles, 0u);  // none: kept, so it is not asked for again
  EXPECT_EQ(cache.reads(), 3u);
  // Within the refresh nothing is read again; after it every digest is, oldest first.
  for (int i = 2; i < 30; ++i) {
    ASSERT_TRUE(cache.Update(*storage_, targets, now + std::chrono::seconds(10 * i), out).ok());
  }
  EXPECT_EQ(cache.reads(), 3u);
  ASSERT_TRUE(cache.Update(*storage_, targets, now + std::chrono::minutes(5), out).ok());
  EXPECT_EQ(cache.reads(), 5u);
  EXPECT_EQ(out[0].read_at, now + std::chrono::minutes(5));
  // A process no longer wanted is forgotten.
  ASSERT_TRUE(cache.Update(*storage_, {targets[0]}, now + std::chrono::minutes(6), out).ok());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].entity, "pid/42/1");
}

// The engine end to end: a busy GPU with its tensor pipes at 30 % and quiet FP pipes, whose
// process's GPU profile is mostly GEMMs, raises tensor_cores_idle from the profile; the GPU whose
// tensor pipes are busy has its profile left unread and raises nothing.
TEST_F(GpuProfileCacheTest, TheEngineReadsTheProfilesOfCandidateGpusAndTheRuleUsesThem) {
  for (int w = 0; w < 90; ++w) {
    IngestBatch b = Window("node-1", w * 10);
    for (const char* uuid : {"GPU-0", "GPU-1"}) {
      const bool low = std::string(uuid) == "GPU-0";
      AddGpu(b, uuid, low ? "0" : "1");
      AddGauge(b, "gpu.utilization", model::EntityKind::kGpu, uuid, 0.97);
      AddGauge(b, "gpu.tensor.active", model::EntityKind::kGpu, uuid, low ? 0.30 : 0.70);
      AddGauge(b, "gpu.fp32.active", model::EntityKind::kGpu, uuid, 0.10);
    }
    for (const auto& [pid, gpu] : {std::pair{"42", "GPU-0"}, std::pair{"43", "GPU-1"}}) {
      const std::string entity = std::string("pid/") + pid + "/1";
      b.entities.push_back(model::Entity{model::EntityKind::kProcess, entity, b.host,
                                         model::Labels{{"process.pid", pid},
                                                       {"process.executable.name", "python3"}}});
      AddGauge(b, "gpu.process.memory.used", model::EntityKind::kProcess, entity, 7e10,
               model::Labels{{"gpu.uuid", gpu}});
    }
    Write(b);
    Store(GpuPprof({{"sm90_xmma_gemm_f32f32_f32f32_f32_tn_n", 9}, {"elementwise", 1}}), 42,
          w * 10);
    Store(GpuPprof({{"sm90_xmma_gemm_f32f32_f32f32_f32_tn_n", 9}}), 43, w * 10);
  }
  auto engine = InsightEngine::Create(*storage_, EngineOptions{});
  ASSERT_TRUE(engine) << engine.error().message();
  for (int i = 0; i < 9; ++i) {
    ASSERT_TRUE((*engine)->Evaluate(At(kT0 + 900 + 10 * i)).ok());
  }
  std::vector<Finding> findings = (*engine)->Findings();
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_EQ(f.rule, "tensor_cores_idle");
  EXPECT_EQ(f.entity, "GPU-0");
  EXPECT_EQ(f.state, FindingState::kPending);  // 80 s of the 2 minutes it must hold
  EXPECT_EQ(f.evidence["source"], "gpu_profile");
  EXPECT_NEAR(f.evidence["matmul_share"].get<double>(), 0.9, 1e-9);
  EXPECT_EQ(f.evidence["profile"]["pid"], 42);
  EXPECT_EQ(f.evidence["matmul_kernels"][0]["name"], "sm90_xmma_gemm_f32f32_f32f32_f32_tn_n");
}

}  // namespace
}  // namespace warpscope::server::insights

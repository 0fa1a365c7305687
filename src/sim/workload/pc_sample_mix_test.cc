// SPDX-License-Identifier: Apache-2.0
// The demo's PC-sample model against the demo cubin ptxas built (DEMO_CUBIN).
#include "sim/workload/pc_sample_mix.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <map>
#include <numeric>
#include <set>
#include <vector>

namespace warpscope::sim::workload {
namespace {

std::string ReadCubin() {
  std::ifstream in(DEMO_CUBIN, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

uint32_t IndexOf(std::string_view reason) {
  static const std::map<std::string_view, uint32_t> kIndices = {
      {"barrier", 3},           {"long_scoreboard", 7}, {"math_pipe_throttle", 12},
      {"selected", 20},         {"short_scoreboard", 14}, {"mio_throttle", 9},
      {"wait", 18},             {"not_selected", 13},     {"lg_throttle", 8}};
  auto it = kIndices.find(reason);
  return it == kIndices.end() ? UINT32_MAX : it->second;
}

TEST(PcSampleMixTest, TheDemoCubinHoldsEveryGemmTheWorkloadsLaunch) {
  const std::string cubin = ReadCubin();
  ASSERT_FALSE(cubin.empty()) << DEMO_CUBIN;
  auto functions = CubinFunctions(cubin);
  ASSERT_TRUE(functions) << functions.error().message();
  std::set<std::string> names;
  for (const CubinFunction& f : *functions) {
    names.insert(f.name);
    EXPECT_EQ(f.size % 128, 0u) << f.name;  // ptxas aligns functions to 128 bytes
    EXPECT_GE(f.size, 16u * 16) << f.name;
  }
  EXPECT_EQ(names, (std::set<std::string>{
                       "ampere_sgemm_128x128_nn", "ampere_sgemm_128x64_tn",
                       "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize128x128x64_"
                       "warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
                       "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_"
                       "warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas"}));
}

TEST(PcSampleMixTest, WhatIsNotAnElfFileIsRefused) {
  auto functions = CubinFunctions("not a cubin at all");
  ASSERT_FALSE(functions);
  EXPECT_EQ(functions.error().code(), base::StatusCode::kInvalidArgument);
  EXPECT_FALSE(CubinFunctions(ReadCubin().substr(0, 40)));  // a truncated header
}

TEST(PcSampleMixTest, SitesAreInstructionsOfTheFunctionWithReasonsOfTheMix) {
  auto functions = CubinFunctions(ReadCubin());
  ASSERT_TRUE(functions && !functions->empty());
  const CubinFunction& fn = functions->front();
  const auto sites = PcSitesOf(fn, StallMixOf("training"), IndexOf);
  ASSERT_EQ(sites.size(), fn.size / 16 - 2 - 9);
  std::map<uint32_t, uint64_t> weight_by_reason;
  for (const PcSite& s : sites) {
    EXPECT_EQ(s.offset % 16, 0u);
    EXPECT_GE(s.offset, 32u);
    EXPECT_LT(s.offset, fn.size - 9 * 16);
    EXPECT_GT(s.weight, 0u);
    weight_by_reason[s.reason_index] += s.weight;
  }
  // Every reason of the mix is used, and none outside it (lg_throttle is not in training's).
  EXPECT_EQ(weight_by_reason.size(), StallMixOf("training").size());
  EXPECT_FALSE(weight_by_reason.contains(8));
  // The same sites every run: they come from the function and offset only.
  const auto again = PcSitesOf(fn, StallMixOf("training"), IndexOf);
  for (size_t i = 0; i < sites.size(); ++i) {
    EXPECT_EQ(sites[i].weight, again[i].weight);
    EXPECT_EQ(sites[i].reason_index, again[i].reason_index);
  }
  // Heavy-tailed: the hottest tenth of the instructions holds most of the samples.
  std::vector<uint64_t> w;
  for (const PcSite& s : sites) w.push_back(s.weight);
  std::sort(w.rbegin(), w.rend());
  const uint64_t total = std::accumulate(w.begin(), w.end(), uint64_t{0});
  const uint64_t top = std::accumulate(w.begin(), w.begin() + w.size() / 10, uint64_t{0});
  EXPECT_GT(top * 2, total);
}

TEST(PcSampleMixTest, ReasonsTheDeviceLacksAreLeftOut) {
  const CubinFunction fn{"k", 64 * 16};
  auto only_barrier = [](std::string_view r) { return r == "barrier" ? 3u : UINT32_MAX; };
  const auto sites = PcSitesOf(fn, StallMixOf("fp32-training"), only_barrier);
  ASSERT_FALSE(sites.empty());
  for (const PcSite& s : sites) EXPECT_EQ(s.reason_index, 3u);
  EXPECT_TRUE(PcSitesOf(fn, StallMixOf("fp32-training"),
                        [](std::string_view) { return UINT32_MAX; })
                  .empty());
  EXPECT_TRUE(PcSitesOf({"tiny", 15 * 16}, StallMixOf("training"), IndexOf).empty());
}

TEST(PcSampleMixTest, SplitGivesEverySampleByWeight) {
  const std::vector<PcSite> sites = {{0, 3, 1}, {16, 3, 2}, {32, 7, 7}};
  EXPECT_EQ(SplitSamples(10, sites), (std::vector<uint64_t>{1, 2, 7}));
  EXPECT_EQ(SplitSamples(4, sites), (std::vector<uint64_t>{0, 1, 3}));  // 0.4, 0.8, 2.8
  const auto big = SplitSamples(UINT64_MAX / 2, sites);
  EXPECT_EQ(big[0] + big[1] + big[2], UINT64_MAX / 2);
  EXPECT_TRUE(SplitSamples(5, {}).empty());
}

}  // namespace
}  // namespace warpscope::sim::workload

// SPDX-License-Identifier: Apache-2.0
// The launch-site estimator on its own (launch_estimator.h), then through ProfileBuilder on
// known mixes: a storm with 1 % of launches sampled, kernels never sampled, graphs, several
// threads and streams, earlier windows, labels.
#include "agent/sources/cuda_profiler/launch_estimator.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>

#include "agent/sources/cuda_profiler/profile_builder.h"
#include "profiling/testing/pprof_rows.h"

namespace warpscope::agent::cuda_profiler {
namespace {

using Row = profiling::PprofRow;

// Shares as (pool, site) -> {launches, ns}.
std::map<std::pair<size_t, size_t>, std::pair<uint64_t, uint64_t>> Shares(const WindowEstimate& e) {
  std::map<std::pair<size_t, size_t>, std::pair<uint64_t, uint64_t>> out;
  for (const EstimatedShare& s : e.shares) {
    out[{s.pool, s.site}] = {s.launches, s.gpu_ns};
  }
  return out;
}

TEST(LaunchEstimatorTest, SplitsLaunchesBySampledLaunchesAndTimeBySampledTime) {
  // Site 0 launched the kernel 3 times for 3 us, site 1 once for 9 us (a larger problem size).
  std::vector<SampledSite> sites = {{1, 0, 7, LaunchKind::kDirect, 3, 3000},
                                    {1, 0, 7, LaunchKind::kDirect, 1, 9000}};
  std::vector<UnsampledPool> pools = {{1, 0, 7, LaunchKind::kDirect, 40, 120001}};
  WindowEstimate e = EstimateWindow(sites, pools);
  EXPECT_TRUE(e.unmatched.empty());
  auto shares = Shares(e);
  // 30 + 10 launches; 30000.25 + 90000.75 ns -> the larger remainder gets the odd ns.
  EXPECT_EQ(shares[std::make_pair(size_t{0}, size_t{0})],
            std::make_pair(uint64_t{30}, uint64_t{30000}));
  EXPECT_EQ(shares[std::make_pair(size_t{0}, size_t{1})],
            std::make_pair(uint64_t{10}, uint64_t{90001}));
}

TEST(LaunchEstimatorTest, TotalsAreExactIntegersAndTimeFollowsLaunchesWhenUntimed) {
  std::vector<SampledSite> sites = {{1, 0, 7, LaunchKind::kDirect, 1, 0},
                                    {1, 0, 7, LaunchKind::kDirect, 1, 0},
                                    {1, 0, 7, LaunchKind::kDirect, 1, 0}};
  std::vector<UnsampledPool> pools = {{1, 0, 7, LaunchKind::kUnknown, 10, 1000}};
  WindowEstimate e = EstimateWindow(sites, pools);
  ASSERT_EQ(e.shares.size(), 3u);
  uint64_t launches = 0;
  uint64_t ns = 0;
  for (const EstimatedShare& s : e.shares) {
    launches += s.launches;
    ns += s.gpu_ns;
    EXPECT_GE(s.launches, 3u);
    EXPECT_LE(s.launches, 4u);
  }
  EXPECT_EQ(launches, 10u);
  EXPECT_EQ(ns, 1000u);
  EXPECT_EQ(e.shares[0].launches, 4u) << "the leftover goes to the earliest on ties";
  EXPECT_EQ(e.shares[0].gpu_ns, 334u);
}

TEST(LaunchEstimatorTest, PrefersSitesOfTheSameStreamElseAnyOfTheKernel) {
  std::vector<SampledSite> sites = {{1, 0, 7, LaunchKind::kDirect, 1, 100},
                                    {1, 0, 8, LaunchKind::kDirect, 3, 300},
                                    {2, 0, 9, LaunchKind::kDirect, 1, 100}};
  std::vector<UnsampledPool> pools = {{1, 0, 8, LaunchKind::kDirect, 8, 800},
                                      {1, 1, 9, LaunchKind::kDirect, 8, 800}};
  auto shares = Shares(EstimateWindow(sites, pools));
  EXPECT_EQ(shares.size(), 3u);
  EXPECT_EQ(shares[std::make_pair(size_t{0}, size_t{1})],
            std::make_pair(uint64_t{8}, uint64_t{800}));
  // Device 1 stream 9 has no sampled site of kernel 1: both of its sites, in proportion.
  EXPECT_EQ(shares[std::make_pair(size_t{1}, size_t{0})],
            std::make_pair(uint64_t{2}, uint64_t{200}));
  EXPECT_EQ(shares[std::make_pair(size_t{1}, size_t{1})],
            std::make_pair(uint64_t{6}, uint64_t{600}));
}

TEST(LaunchEstimatorTest, GraphKernelsGoToGraphLaunchesAndOthersToDirectOnes) {
  std::vector<SampledSite> sites = {{1, 0, 7, LaunchKind::kDirect, 1, 100},
                                    {1, 0, 7, LaunchKind::kGraph, 1, 100}};
  std::vector<UnsampledPool> pools = {{1, 0, 7, LaunchKind::kGraph, 6, 600},
                                      {1, 0, 7, LaunchKind::kDirect, 4, 400},
                                      {1, 0, 7, LaunchKind::kUnknown, 2, 200}};
  auto shares = Shares(EstimateWindow(sites, pools));
  EXPECT_EQ(shares.size(), 4u);
  EXPECT_EQ(shares[std::make_pair(size_t{0}, size_t{1})],
            std::make_pair(uint64_t{6}, uint64_t{600}));
  EXPECT_EQ(shares[std::make_pair(size_t{1}, size_t{0})],
            std::make_pair(uint64_t{4}, uint64_t{400}));
  EXPECT_EQ(shares[std::make_pair(size_t{2}, size_t{0})],
            std::make_pair(uint64_t{1}, uint64_t{100}));
  EXPECT_EQ(shares[std::make_pair(size_t{2}, size_t{1})],
            std::make_pair(uint64_t{1}, uint64_t{100}));
  // A graph kernel whose graph launch was never sampled still goes to the kernel's sites.
  std::vector<SampledSite> direct_only = {sites[0]};
  auto fallback = Shares(EstimateWindow(direct_only, {pools[0]}));
  EXPECT_EQ(fallback[std::make_pair(size_t{0}, size_t{0})],
            std::make_pair(uint64_t{6}, uint64_t{600}));
}

TEST(LaunchEstimatorTest, PoolsOfKernelsWithoutASampledSiteAreLeftToTheCaller) {
  std::vector<SampledSite> sites = {{1, 0, 7, LaunchKind::kDirect, 1, 100}};
  std::vector<UnsampledPool> pools = {{2, 0, 7, LaunchKind::kDirect, 5, 500},
                                      {1, 0, 7, LaunchKind::kDirect, 0, 0}};
  WindowEstimate e = EstimateWindow(sites, pools);
  EXPECT_TRUE(e.shares.empty());
  EXPECT_EQ(e.unmatched, (std::vector<size_t>{0}));
}

TEST(LaunchEstimatorTest, IntegerWeightsKeepRatios) {
  EXPECT_EQ(IntegerWeights({0.5, 1.0, 0.0}),
            (std::vector<uint64_t>{uint64_t{1} << 31, uint64_t{1} << 32, 0}));
  EXPECT_EQ(IntegerWeights({0.0, 0.0}), (std::vector<uint64_t>{0, 0}));
}

TEST(LaunchHistoryTest, DecaysOlderWindowsAndForgetsAfterTheHistory) {
  LaunchHistory::Limits limits;
  limits.history_ns = 100;
  limits.half_life_ns = 10;
  limits.max_sites_per_kernel = 2;
  limits.max_kernels = 2;
  LaunchHistory h;
  h.Update("k", {{1, "cudaLaunchKernel", LaunchKind::kDirect, 8, 800}}, 10, limits);
  // Two half-lives later site 1 weighs 2; the new sites 2 (4) and 3 (1): site 3 is dropped.
  h.Update("k",
           {{2, "cudaLaunchKernel", LaunchKind::kDirect, 4, 400},
            {3, "cudaLaunchKernel", LaunchKind::kDirect, 1, 100}},
           30, limits);
  const auto* sites = h.Find("k", 30, limits);
  ASSERT_NE(sites, nullptr);
  ASSERT_EQ(sites->size(), 2u);
  EXPECT_EQ((*sites)[0].stack_hash, 2u);
  EXPECT_DOUBLE_EQ((*sites)[0].launches, 4);
  EXPECT_EQ((*sites)[1].stack_hash, 1u);
  EXPECT_DOUBLE_EQ((*sites)[1].launches, 2);
  EXPECT_DOUBLE_EQ((*sites)[1].gpu_ns, 200);
  EXPECT_NE(h.Find("k", 130, limits), nullptr);
  EXPECT_EQ(h.Find("k", 131, limits), nullptr) << "not sampled for longer than the history";
  EXPECT_EQ(h.Find("other", 30, limits), nullptr);
  // At most two kernels: the least recently sampled goes.
  h.Update("a", {{4, "", LaunchKind::kGraph, 1, 1}}, 40, limits);
  h.Update("b", {{5, "", LaunchKind::kGraph, 1, 1}}, 50, limits);
  h.Prune(50, limits);
  EXPECT_EQ(h.kernels(), 2u);
  EXPECT_EQ(h.Find("k", 50, limits), nullptr);
  h.Prune(200, limits);
  EXPECT_EQ(h.kernels(), 0u);
}

// Through the builder, without a symbolizer: a stack reads "app;[unknown] 0x<pc - 1>;...".
constexpr int32_t kPid = 42;
constexpr char kGemm[] = "_Z4gemmv";
constexpr char kGemmName[] = "gemm()";

KernelActivity Kernel(std::optional<uint64_t> stack, int64_t start, int64_t duration,
                      uint32_t stream = 7, const char* name = kGemm) {
  KernelActivity k;
  k.correlation_id = static_cast<uint64_t>(start);
  k.stack_hash = stack;
  k.name = name;
  k.stream = stream;
  k.start_ns = start;
  k.end_ns = start + duration;
  if (stack.has_value()) {
    k.launch_api = "cudaLaunchKernel";
    k.thread_id = 100 + static_cast<int32_t>(*stack);
    k.api_start_ns = start - 5000;
    k.api_end_ns = start - 1000;
  }
  return k;
}

class EstimatingBuilderTest : public ::testing::Test {
 protected:
  EstimatingBuilderTest() : EstimatingBuilderTest(ProfileBuilder::Options{}) {}
  explicit EstimatingBuilderTest(ProfileBuilder::Options options) : builder_(nullptr, options) {
    builder_.AddProcess({kPid, "/opt/app", 0, 0});
    for (uint64_t hash = 1; hash <= 4; ++hash) {
      builder_.AddStack(kPid, {hash, {0x1000 * hash + 1}, {}});
    }
  }
  // "app;[unknown] 0x1000;cudaLaunchKernel;gemm()" for stack 1.
  static std::string Stack(uint64_t hash, const std::string& api = "cudaLaunchKernel",
                           const std::string& kernel = kGemmName) {
    return "app;[unknown] 0x" + std::to_string(hash) + "000;" + api + ";" + kernel;
  }
  profiling::PprofRows Window(int64_t start, int64_t end) {
    auto profiles = builder_.FinishWindow(start, end);
    EXPECT_EQ(profiles.size(), 1u);
    window_ = profiles.empty() ? profiling::WindowProfile{} : profiles[0];
    return profiling::ReadPprofGz(window_.pprof_gz);
  }
  static std::string Attribution(const Row& r) {
    auto it = r.str_labels.find("attribution");
    return it == r.str_labels.end() ? "" : it->second;
  }
  // Values per "stack|attribution|stream".
  static std::map<std::string, std::vector<int64_t>> ByRow(const profiling::PprofRows& d) {
    std::map<std::string, std::vector<int64_t>> out;
    for (const Row& r : d.rows) {
      out[r.stack + "|" + Attribution(r) + "|" + std::to_string(r.labels.at("stream"))] = r.values;
    }
    return out;
  }

  ProfileBuilder builder_;
  profiling::WindowProfile window_;
};

TEST_F(EstimatingBuilderTest, AStormWithOnePercentSampledIsAttributedToItsLaunchStacks) {
  // Two threads on their own streams: stack 1 on stream 7 runs gemm for 1 us, stack 2 on
  // stream 8 for 3 us; one launch in 100 sampled. The library reports 10 of the unsampled
  // ones individually and counts every kernel in its aggregates.
  int64_t t = 1'000'000;
  for (int i = 0; i < 10; ++i) {
    builder_.AddKernel(kPid, Kernel(1, t += 10'000, 1000, 7));
    builder_.AddKernel(kPid, Kernel(2, t += 10'000, 3000, 8));
    builder_.AddKernel(kPid, Kernel(std::nullopt, t += 10'000, 1000, 7));
  }
  builder_.AddKernelAggregate(kPid, {kGemm, 0, 7, 1000, 1'000'000});
  builder_.AddKernelAggregate(kPid, {kGemm, 0, 8, 1000, 3'000'000});
  const auto d = Window(0, 10'000'000);
  const auto rows = ByRow(d);
  SCOPED_TRACE(testing::PrintToString(rows));
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows.at(Stack(1) + "||7"), (std::vector<int64_t>{10'000, 10, 0}));
  EXPECT_EQ(rows.at(Stack(1) + "|estimated|7"), (std::vector<int64_t>{990'000, 990, 0}));
  EXPECT_EQ(rows.at(Stack(2) + "||8"), (std::vector<int64_t>{30'000, 10, 0}));
  EXPECT_EQ(rows.at(Stack(2) + "|estimated|8"), (std::vector<int64_t>{2'970'000, 990, 0}));
  EXPECT_EQ(window_.gpu_time_ns, 4'000'000u) << "totals equal the aggregates";
  EXPECT_EQ(window_.kernels, 2000u);
  EXPECT_EQ(builder_.stats().launches_estimated, 1980u);
  EXPECT_EQ(builder_.stats().launches_unattributed, 0u);
  for (const Row& r : d.rows) {
    EXPECT_EQ(r.labels.at("pid"), kPid);
    EXPECT_EQ(r.labels.at("device"), 0);
  }
}

TEST_F(EstimatingBuilderTest, KernelsNeverSampledStayUnderTheUnsampledSite) {
  builder_.AddKernel(kPid, Kernel(1, 1'000'000, 1000));
  builder_.AddKernel(kPid, Kernel(std::nullopt, 1'100'000, 700, 7, "_Z7softmaxv"));
  builder_.AddKernelAggregate(kPid, {"triton_red_0", 1, 3, 5, 500});
  const auto d = Window(0, 10'000'000);
  const auto rows = ByRow(d);
  SCOPED_TRACE(testing::PrintToString(rows));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows.at(Stack(1) + "||7"), (std::vector<int64_t>{1000, 1, 0}));
  EXPECT_EQ(rows.at("app;[unsampled launch site];softmax()||7"), (std::vector<int64_t>{700, 1, 0}));
  EXPECT_EQ(rows.at("app;[unsampled launch site];triton_red_0||3"),
            (std::vector<int64_t>{500, 5, 0}));
  EXPECT_EQ(builder_.stats().launches_unattributed, 6u);
  EXPECT_EQ(window_.gpu_time_ns, 2200u);
}

TEST_F(EstimatingBuilderTest, GraphNodesGoToTheGraphLaunchAndDirectLaunchesToTheirSite) {
  // gemm runs from stack 1 directly and as a node of a graph launched at stack 3; unsampled
  // records of both kinds follow their own launches.
  builder_.AddKernel(kPid, Kernel(1, 1'000'000, 1000));
  KernelActivity node = Kernel(3, 1'100'000, 2000);
  node.launch_api = "cudaGraphLaunch";
  node.graph_id = 42;
  builder_.AddKernel(kPid, node);
  KernelActivity other_node = node;
  other_node.name = "_Z5scalev";
  other_node.start_ns += 5000;
  other_node.end_ns += 5000;
  builder_.AddKernel(kPid, other_node);
  for (int i = 0; i < 4; ++i) {
    KernelActivity unsampled_node = Kernel(std::nullopt, 2'000'000 + i * 10'000, 2000);
    unsampled_node.graph_id = 42;
    builder_.AddKernel(kPid, unsampled_node);
    builder_.AddKernel(kPid, Kernel(std::nullopt, 3'000'000 + i * 10'000, 1000));
  }
  const auto rows = ByRow(Window(0, 10'000'000));
  SCOPED_TRACE(testing::PrintToString(rows));
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows.at(Stack(1) + "|estimated|7"), (std::vector<int64_t>{4000, 4, 0}));
  EXPECT_EQ(rows.at(Stack(3, "cudaGraphLaunch") + "|estimated|7"),
            (std::vector<int64_t>{8000, 4, 0}));
  EXPECT_EQ(rows.at(Stack(3, "cudaGraphLaunch", "scale()") + "||7"),
            (std::vector<int64_t>{2000, 1, 0}));
}

TEST_F(EstimatingBuilderTest, SeveralThreadsOnOneStreamShareItsLaunchesInProportion) {
  // Stacks 1 and 2 (two threads) both launch on stream 7, 3 and 1 sampled launches; stack 4
  // launches on stream 9 only. 8 unsampled on stream 7, 2 on stream 11 (no sampled site there).
  for (int i = 0; i < 3; ++i) {
    builder_.AddKernel(kPid, Kernel(1, 1'000'000 + i * 10'000, 1000, 7));
  }
  builder_.AddKernel(kPid, Kernel(2, 1'100'000, 1000, 7));
  builder_.AddKernel(kPid, Kernel(4, 1'200'000, 1000, 9));
  for (int i = 0; i < 8; ++i) {
    builder_.AddKernel(kPid, Kernel(std::nullopt, 2'000'000 + i * 10'000, 1000, 7));
  }
  for (int i = 0; i < 2; ++i) {
    builder_.AddKernel(kPid, Kernel(std::nullopt, 3'000'000 + i * 10'000, 2500, 11));
  }
  const auto rows = ByRow(Window(0, 10'000'000));
  SCOPED_TRACE(testing::PrintToString(rows));
  EXPECT_EQ(rows.at(Stack(1) + "|estimated|7"), (std::vector<int64_t>{6000, 6, 0}));
  EXPECT_EQ(rows.at(Stack(2) + "|estimated|7"), (std::vector<int64_t>{2000, 2, 0}));
  EXPECT_FALSE(rows.contains(Stack(4) + "|estimated|9"));
  // Stream 11: all of gemm's sites (3 : 1 : 1), with stream 11's label.
  EXPECT_EQ(rows.at(Stack(1) + "|estimated|11"), (std::vector<int64_t>{3000, 1, 0}));
  EXPECT_EQ(rows.at(Stack(2) + "|estimated|11"), (std::vector<int64_t>{1000, 1, 0}));
  EXPECT_EQ(rows.at(Stack(4) + "|estimated|11"), (std::vector<int64_t>{1000, 0, 0}));
  EXPECT_EQ(window_.gpu_time_ns, 18'000u);
  EXPECT_EQ(window_.kernels, 15u);
}

TEST_F(EstimatingBuilderTest, TheEstimatedPartKeepsTheSitesNvtxLabel) {
  KernelActivity k = Kernel(1, 2'000'000, 1000);
  builder_.AddNvtxRange(kPid, {"train_step", "", 1'000'000, 3'000'000, k.thread_id});
  builder_.AddKernel(kPid, k);
  builder_.AddKernelAggregate(kPid, {kGemm, 0, 7, 5, 5000});
  const auto d = Window(0, 10'000'000);
  ASSERT_EQ(d.rows.size(), 2u);
  for (const Row& r : d.rows) {
    EXPECT_EQ(r.str_labels.at("nvtx"), "train_step") << r.stack;
  }
  EXPECT_EQ(Attribution(d.rows[1]), "estimated");
  EXPECT_EQ(d.rows[1].values, (std::vector<int64_t>{4000, 4, 0}));
}

TEST_F(EstimatingBuilderTest, AKernelSampledInAnEarlierWindowGoesToThoseSites) {
  constexpr int64_t kSecond = 1'000'000'000;
  builder_.AddKernel(kPid, Kernel(1, 1 * kSecond, 1000));
  builder_.AddKernel(kPid, Kernel(2, 2 * kSecond, 1000));
  builder_.AddKernel(kPid, Kernel(2, 3 * kSecond, 1000));
  Window(0, 10 * kSecond);
  // The next window sampled no gemm: its 30 unsampled go 1 : 2 to stacks 1 and 2.
  builder_.AddKernelAggregate(kPid, {kGemm, 0, 7, 30, 30'000});
  auto rows = ByRow(Window(10 * kSecond, 20 * kSecond));
  SCOPED_TRACE(testing::PrintToString(rows));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows.at(Stack(1) + "|estimated_history|7"), (std::vector<int64_t>{10'000, 10, 0}));
  EXPECT_EQ(rows.at(Stack(2) + "|estimated_history|7"), (std::vector<int64_t>{20'000, 20, 0}));
  EXPECT_EQ(builder_.stats().launches_estimated_history, 30u);
  // Five minutes without a sampled gemm: the history is forgotten.
  builder_.AddKernelAggregate(kPid, {kGemm, 0, 7, 3, 3000});
  rows = ByRow(Window(400 * kSecond, 410 * kSecond));
  EXPECT_EQ(rows.at("app;[unsampled launch site];gemm()||7"), (std::vector<int64_t>{3000, 3, 0}));
}

class NoHistoryBuilderTest : public EstimatingBuilderTest {
 protected:
  static ProfileBuilder::Options NoHistory() {
    ProfileBuilder::Options o;
    o.estimate_history_ns = 0;
    return o;
  }
  NoHistoryBuilderTest() : EstimatingBuilderTest(NoHistory()) {}
};

TEST_F(NoHistoryBuilderTest, WithoutAHistoryEarlierWindowsAreNotUsed) {
  builder_.AddKernel(kPid, Kernel(1, 1'000'000, 1000));
  Window(0, 10'000'000);
  builder_.AddKernelAggregate(kPid, {kGemm, 0, 7, 3, 3000});
  const auto rows = ByRow(Window(10'000'000, 20'000'000));
  EXPECT_EQ(rows.at("app;[unsampled launch site];gemm()||7"), (std::vector<int64_t>{3000, 3, 0}));
}

}  // namespace
}  // namespace warpscope::agent::cuda_profiler

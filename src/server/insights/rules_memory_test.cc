// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <chrono>

#include "server/insights/rules.h"
#include "server/insights/testing/inputs_builder.h"

namespace warpscope::server::insights {
namespace {

using std::chrono::minutes;
using testing::InputsBuilder;
using testing::kGiB;

constexpr size_t kBuckets = 90;

using testing::Observe;

GpuInput& IdleGpu(InputsBuilder& b, const std::string& uuid) {
  GpuInput& g = b.Gpu("node-1", uuid, uuid.substr(4));
  InputsBuilder::Fill(g.utilization, 0.0);
  InputsBuilder::Fill(g.power, 72);
  InputsBuilder::Fill(g.memory_used, 61 * kGiB);
  return g;
}

TEST(IdleAllocatedTest, AGpuHoldingMemoryAtZeroUtilizationNamesTheProcessesHoldingIt) {
  InputsBuilder b(kBuckets);
  GpuInput& g = IdleGpu(b, "GPU-3");
  g.utilization[40] = 0.1;  // a one-bucket blip
  ProcessGpuInput& p = b.Process("node-1", "4242", "GPU-3", minutes(30));
  InputsBuilder::Fill(p.memory_used, 60 * kGiB);
  b.Gpu("node-1", "GPU-4", "4");  // busy
  auto rule = MakeIdleAllocatedRule();
  std::vector<Observation> seen = Observe(*rule, b.inputs());
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].entity, "GPU-3");
  EXPECT_GT(seen[0].lost_fraction, 0.99);
  ASSERT_EQ(seen[0].evidence["processes"].size(), 1u);
  EXPECT_EQ(seen[0].evidence["processes"][0]["pid"], "4242");
  EXPECT_NE(seen[0].summary.find("holds 61.0 GiB of memory for 1 process"), std::string::npos)
      << seen[0].summary;
  EXPECT_EQ(rule->info().severity, Severity::kTicket) << "low utilisation never pages";
}

TEST(IdleAllocatedTest, NoMemoryOrTooLittleDataOrLightUseIsNotIdleAllocated) {
  InputsBuilder b(kBuckets);
  GpuInput& empty = IdleGpu(b, "GPU-0");
  InputsBuilder::Fill(empty.memory_used, 0.5 * kGiB);
  GpuInput& young = IdleGpu(b, "GPU-1");
  InputsBuilder::Fill(young.utilization, std::nan(""), 0, kBuckets - 20);  // seen 3 minutes
  GpuInput& light = IdleGpu(b, "GPU-2");
  InputsBuilder::Fill(light.utilization, 0.05);
  EXPECT_TRUE(Observe(*MakeIdleAllocatedRule(), b.inputs()).empty());
}

TEST(IdleAllocatedTest, AnOpenFindingClearsOnlyWhenTheGpuWorksAgain) {
  InputsBuilder b(kBuckets);
  GpuInput& g = IdleGpu(b, "GPU-0");
  InputsBuilder::Fill(g.utilization, 0.05);  // above the 2 % that raises it
  auto rule = MakeIdleAllocatedRule();
  EXPECT_EQ(Observe(*rule, b.inputs(), {{"node-1", "GPU-0"}}).size(), 1u);
  InputsBuilder::Fill(g.utilization, 0.6, kBuckets - 12);
  EXPECT_TRUE(Observe(*rule, b.inputs(), {{"node-1", "GPU-0"}}).empty());
}

// A process whose memory grows `gib_per_minute` from 48 GiB at bucket 0.
ProcessGpuInput& Growing(InputsBuilder& b, const std::string& pid, double gib_per_minute) {
  ProcessGpuInput& p = b.Process("node-1", pid, "GPU-0", minutes(20));
  InputsBuilder::Set(p.memory_used, [gib_per_minute](size_t i) {
    return (48 + gib_per_minute * static_cast<double>(i) / 6) * kGiB;
  });
  return p;
}

TEST(MemoryLeakTest, AProcessStillGrowingAfterStartUpLeaks) {
  InputsBuilder b(kBuckets);
  b.Gpu("node-1", "GPU-0", "0");
  Growing(b, "7100", 0.33);
  std::vector<Observation> seen = Observe(*MakeMemoryLeakRule(), b.inputs());
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].entity, "pid/7100/1");
  EXPECT_EQ(seen[0].kind, model::EntityKind::kProcess);
  EXPECT_EQ(seen[0].attributes.Get("gpu.uuid"), "GPU-0");
  EXPECT_EQ(seen[0].attributes.Get("gpu.index"), "0");
  EXPECT_NEAR(seen[0].evidence["rate_bytes_per_min"].get<double>() / kGiB, 0.33, 0.01);
  // 10 GiB free on the card at 0.33 GiB/min.
  EXPECT_NEAR(seen[0].evidence["minutes_until_full"].get<double>(), 30, 1);
  EXPECT_NE(seen[0].summary.find("python3 (pid 7100) on GPU 0"), std::string::npos)
      << seen[0].summary;
  EXPECT_TRUE(seen[0].evidence["cuda_allocations"].is_null());  // no CUDA profiler
}

TEST(MemoryLeakTest, TheCudaAllocatorsAllocationsAndReleasesAreItsEvidence) {
  InputsBuilder b(kBuckets);
  b.Gpu("node-1", "GPU-0", "0");
  ProcessGpuInput& p = Growing(b, "7100", 0.33);
  InputsBuilder::Fill(p.cuda_allocations, 2.0);   // per second
  InputsBuilder::Fill(p.cuda_releases, 0.1);
  std::vector<Observation> seen = Observe(*MakeMemoryLeakRule(), b.inputs());
  ASSERT_EQ(seen.size(), 1u);
  const double window_s = base::ToSeconds(InsightConfig{}.leak_window);
  EXPECT_NEAR(seen[0].evidence["cuda_allocations"].get<double>(), 2.0 * window_s, 1);
  EXPECT_NEAR(seen[0].evidence["cuda_releases"].get<double>(), 0.1 * window_s, 1);
  EXPECT_NE(seen[0].summary.find("The CUDA allocator saw"), std::string::npos) << seen[0].summary;
}

TEST(MemoryLeakTest, StartUpAPlateauAndASawtoothAreNotLeaks) {
  InputsBuilder b(kBuckets);
  b.Gpu("node-1", "GPU-0", "0");
  // Loading a model: started 4 minutes into the 15, 1 minute before the 10-minute window.
  ProcessGpuInput& loading = b.Process("node-1", "1", "GPU-0", minutes(-4));
  InputsBuilder::Set(loading.memory_used, [](size_t i) { return (2.0 + i) * kGiB; });
  // A caching allocator warming up: grows for 6 minutes, then flat.
  ProcessGpuInput& plateau = b.Process("node-1", "2", "GPU-0", minutes(20));
  InputsBuilder::Set(plateau.memory_used, [](size_t i) {
    return (40 + 0.5 * static_cast<double>(std::min<size_t>(i, 66)) / 6) * kGiB;
  });
  // Batches of different sizes: memory is freed again.
  ProcessGpuInput& sawtooth = b.Process("node-1", "3", "GPU-0", minutes(20));
  InputsBuilder::Set(sawtooth.memory_used,
                     [](size_t i) { return (40 + static_cast<double>(i % 30) / 10) * kGiB; });
  // Steady memory.
  ProcessGpuInput& steady = b.Process("node-1", "4", "GPU-0", minutes(20));
  InputsBuilder::Fill(steady.memory_used, 40 * kGiB);
  EXPECT_TRUE(Observe(*MakeMemoryLeakRule(), b.inputs()).empty());
}

}  // namespace
}  // namespace warpscope::server::insights

// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include "server/insights/rules.h"
#include "server/insights/testing/inputs_builder.h"

namespace warpscope::server::insights {
namespace {

using std::chrono::minutes;
using testing::InputsBuilder;

constexpr size_t kBuckets = 90;

std::vector<Observation> Observe(const InsightInputs& in,
                                 std::set<std::pair<std::string, std::string>> open = {}) {
  return testing::Observe(*MakeInputBoundRule(), in, std::move(open));
}

// node-1: 32 CPUs, `host_busy` of them busy; GPU-0 at `gpu_util` and `watts`, fed by a python3
// process using `cores` cores.
InputsBuilder Node(double gpu_util, double watts, double cores, double host_busy) {
  InputsBuilder b(kBuckets);
  b.Host("node-1", 32, host_busy);
  GpuInput& g = b.Gpu("node-1", "GPU-0", "0");
  InputsBuilder::Fill(g.utilization, gpu_util);
  InputsBuilder::Fill(g.power, watts);
  ProcessGpuInput& p = b.Process("node-1", "4242", "GPU-0", minutes(30));
  InputsBuilder::Fill(p.memory_used, 30 * testing::kGiB);
  InputsBuilder::Fill(p.cpu_utilization, cores / 32);
  return b;
}

TEST(InputBoundTest, AStarvedGpuWhoseProcessSaturatesACoreIsInputBoundAndLinksItsCpuProfile) {
  InputsBuilder b = Node(0.35, 270, 1.0, 0.2);
  std::vector<Observation> seen = Observe(b.inputs());
  ASSERT_EQ(seen.size(), 1u);
  const Observation& o = seen[0];
  EXPECT_EQ(o.entity, "GPU-0");
  EXPECT_EQ(o.attributes.Get("process.pid"), "4242");
  EXPECT_NEAR(o.lost_fraction, 0.65, 1e-9);
  EXPECT_EQ(o.evidence["profile"]["kind"], "cpu");
  EXPECT_EQ(o.evidence["profile"]["entity"], "pid/4242/1");
  EXPECT_NEAR(o.evidence["process_cpu_cores"].get<double>(), 1.0, 1e-9);
  EXPECT_NE(o.summary.find("python3 (pid 4242) uses 1.0 CPU cores"), std::string::npos)
      << o.summary;
}

TEST(InputBoundTest, ABusyHostAloneIsEnoughSoIsLowPowerAtHighUtilization) {
  // Data loader workers (other processes) saturate the host; the main process is light.
  EXPECT_EQ(Observe(Node(0.4, 300, 0.3, 0.95).inputs()).size(), 1u);
  // Utilization reads high (a kernel is always resident) but the card draws little.
  EXPECT_EQ(Observe(Node(0.9, 250, 1.0, 0.2).inputs()).size(), 1u);
}

TEST(InputBoundTest, ABusyGpuAnIdleCpuOrAnIdleGpuIsNot) {
  EXPECT_TRUE(Observe(Node(0.95, 650, 1.0, 0.5).inputs()).empty());  // GPU-bound: fine
  EXPECT_TRUE(Observe(Node(0.35, 270, 0.2, 0.2).inputs()).empty());  // waits on something else
  EXPECT_TRUE(Observe(Node(0.0, 70, 1.0, 0.2).inputs()).empty());    // no job on the GPU
}

TEST(InputBoundTest, AnOpenFindingClearsOnlyAboveTheUtilizationThatRaisedItPlusATenth) {
  EXPECT_TRUE(Observe(Node(0.65, 600, 1.0, 0.2).inputs()).empty());
  EXPECT_EQ(Observe(Node(0.65, 600, 1.0, 0.2).inputs(), {{"node-1", "GPU-0"}}).size(), 1u);
}

TEST(InputBoundTest, HostToDeviceCopiesTakingTheGpuTimeAreInputBoundWithAnIdleCpu) {
  // The CPU is idle, but 40 % of the process's GPU time is host-to-device copies.
  InputsBuilder b = Node(0.35, 270, 0.2, 0.2);
  ProcessGpuInput& p = b.inputs().processes[0];
  InputsBuilder::Fill(p.cuda_h2d_time, 0.04);
  InputsBuilder::Fill(p.cuda_kernel_time, 0.06);
  std::vector<Observation> seen = Observe(b.inputs());
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_NEAR(seen[0].evidence["h2d_copy_share"].get<double>(), 0.4, 1e-9);
  EXPECT_NE(seen[0].summary.find("the GPU waits for its input"), std::string::npos)
      << seen[0].summary;
  EXPECT_NE(seen[0].summary.find("Host-to-device copies take 40 % of its GPU time"),
            std::string::npos)
      << seen[0].summary;

  // A fifth of the GPU time in copies, an idle CPU: nothing to name.
  InputsBuilder light = Node(0.35, 270, 0.2, 0.2);
  ProcessGpuInput& q = light.inputs().processes[0];
  InputsBuilder::Fill(q.cuda_h2d_time, 0.02);
  InputsBuilder::Fill(q.cuda_kernel_time, 0.08);
  EXPECT_TRUE(Observe(light.inputs()).empty());

  // Without the CUDA profiler the share is unknown: a CPU-bound finding says null.
  std::vector<Observation> cpu = Observe(Node(0.35, 270, 1.0, 0.2).inputs());
  ASSERT_EQ(cpu.size(), 1u);
  EXPECT_TRUE(cpu[0].evidence["h2d_copy_share"].is_null());
}

TEST(InputBoundTest, WithoutTheProcessOrHostCpuNothingIsJudged) {
  InputsBuilder b(kBuckets);
  GpuInput& g = b.Gpu("node-1", "GPU-0", "0");
  InputsBuilder::Fill(g.utilization, 0.3);
  ProcessGpuInput& p = b.Process("node-1", "1", "GPU-0", minutes(30));
  InputsBuilder::Fill(p.memory_used, testing::kGiB);
  InputsBuilder::Fill(p.cpu_utilization, 1.0 / 32);
  EXPECT_TRUE(Observe(b.inputs()).empty());  // no host CPU count
}

}  // namespace
}  // namespace warpscope::server::insights

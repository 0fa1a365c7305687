// SPDX-License-Identifier: Apache-2.0
#include "cupti_inject/correlation_join.h"

#include <gtest/gtest.h>

namespace warpscope::cupti_inject {
namespace {

wire::KernelActivity Kernel(uint32_t corr, uint64_t start, uint64_t node = 0) {
  wire::KernelActivity k;
  k.correlation_id = corr;
  k.name_id = 1;
  k.start_ns = start;
  k.end_ns = start + 100;
  k.graph_node_id = node;
  return k;
}

TEST(CorrelationJoinTest, LaunchFirstThenKernel) {
  CorrelationJoiner j;
  std::vector<wire::KernelActivity> out;
  j.OnLaunch(7, 0xabc, 11, false, &out, /*domain=*/2, /*cbid=*/211, /*launch_ns=*/900);
  EXPECT_TRUE(out.empty());
  j.OnKernel(Kernel(7, 1000), /*watermark=*/7, &out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].stack_hash, 0xabcu);
  EXPECT_EQ(out[0].launch_tid, 11u);
  EXPECT_EQ(out[0].launch_domain, 2u);
  EXPECT_EQ(out[0].launch_cbid, 211u);
  EXPECT_EQ(out[0].launch_ns, 900u);
  EXPECT_EQ(j.pending_launches(), 0u);
}

TEST(CorrelationJoinTest, KernelFirstWaitsForItsLaunch) {
  CorrelationJoiner j;
  std::vector<wire::KernelActivity> out;
  j.OnKernel(Kernel(9, 1000), /*watermark=*/5, &out);  // 9 > 5: the launch may still come
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(j.pending_kernels(), 1u);
  j.OnLaunch(9, 0xdef, 3, false, &out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].stack_hash, 0xdefu);
  EXPECT_EQ(j.pending_kernels(), 0u);
  EXPECT_EQ(j.pending_launches(), 0u);
}

TEST(CorrelationJoinTest, KernelBelowWatermarkIsUnsampledAtOnce) {
  CorrelationJoiner j;
  std::vector<wire::KernelActivity> out;
  j.OnKernel(Kernel(4, 1000), /*watermark=*/5, &out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].stack_hash, 0u);
  EXPECT_EQ(j.stats().unjoined, 1u);
}

TEST(CorrelationJoinTest, WaitingKernelWhoseLaunchWasDroppedExpires) {
  JoinOptions o;
  o.kernel_ttl_ticks = 2;
  CorrelationJoiner j(o);
  std::vector<wire::KernelActivity> out;
  j.OnKernel(Kernel(9, 1000), 0, &out);
  j.Tick(&out);
  EXPECT_TRUE(out.empty());
  j.Tick(&out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].stack_hash, 0u);
  EXPECT_EQ(j.pending_kernels(), 0u);
}

TEST(CorrelationJoinTest, UnmatchedLaunchExpires) {
  JoinOptions o;
  o.launch_ttl_ticks = 3;
  CorrelationJoiner j(o);
  std::vector<wire::KernelActivity> out;
  j.OnLaunch(1, 5, 1, false, &out);
  for (int i = 0; i < 3; ++i) {
    j.Tick(&out);
  }
  EXPECT_EQ(j.pending_launches(), 1u);
  j.Tick(&out);
  EXPECT_EQ(j.pending_launches(), 0u);
}

TEST(CorrelationJoinTest, GraphLaunchFansOutToAllItsKernels) {
  CorrelationJoiner j;
  std::vector<wire::KernelActivity> out;
  j.OnKernel(Kernel(20, 100, 1), 0, &out);  // one node before the launch record
  j.OnLaunch(20, 0x77, 2, /*multi_kernel=*/true, &out);
  j.OnKernel(Kernel(20, 200, 2), 20, &out);
  j.OnKernel(Kernel(20, 300, 3), 20, &out);
  ASSERT_EQ(out.size(), 3u);
  for (const auto& k : out) {
    EXPECT_EQ(k.stack_hash, 0x77u);
  }
  EXPECT_EQ(j.pending_launches(), 1u);  // stays for later nodes until it expires
}

TEST(CorrelationJoinTest, DuplicateLaunchAndKernelRecordsCountOnce) {
  CorrelationJoiner j;
  std::vector<wire::KernelActivity> out;
  j.OnLaunch(5, 0x1, 1, false, &out);
  j.OnLaunch(5, 0x2, 1, false, &out);  // the nested driver call
  EXPECT_EQ(j.stats().duplicate_launches, 1u);
  j.OnKernel(Kernel(5, 100), 5, &out);
  j.OnKernel(Kernel(5, 100), 5, &out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].stack_hash, 0x1u);
  EXPECT_EQ(j.stats().duplicate_kernels, 1u);
}

TEST(CorrelationJoinTest, OutOfOrderMixIsJoinedCompletely) {
  CorrelationJoiner j;
  std::vector<wire::KernelActivity> out;
  // Kernels 100..199 arrive in reverse, launches of the even ones arrive after.
  for (uint32_t c = 199; c >= 100; --c) {
    j.OnKernel(Kernel(c, c * 10), 99, &out);
  }
  for (uint32_t c = 100; c < 200; c += 2) {
    j.OnLaunch(c, c, 1, false, &out);
  }
  j.Tick(&out);
  j.Tick(&out);
  ASSERT_EQ(out.size(), 100u);
  int joined = 0;
  for (const auto& k : out) {
    if (k.stack_hash != 0) {
      EXPECT_EQ(k.stack_hash, k.correlation_id);
      ++joined;
    }
  }
  EXPECT_EQ(joined, 50);
}

TEST(CorrelationJoinTest, MapsAreBounded) {
  JoinOptions o;
  o.max_launches = 10;
  o.max_kernels = 10;
  CorrelationJoiner j(o);
  std::vector<wire::KernelActivity> out;
  for (uint32_t c = 1; c <= 100; ++c) {
    j.OnLaunch(c, c, 1, false, &out);
    j.OnKernel(Kernel(1000 + c, c), 0, &out);
  }
  EXPECT_LE(j.pending_launches(), 10u);
  EXPECT_LE(j.pending_kernels(), 10u);
  EXPECT_EQ(j.stats().evicted_launches, 90u);
  EXPECT_EQ(j.stats().evicted_kernels, 90u);
  EXPECT_EQ(out.size(), 90u);  // evicted kernels still count, unjoined
}

}  // namespace
}  // namespace warpscope::cupti_inject

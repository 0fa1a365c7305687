// SPDX-License-Identifier: Apache-2.0
#include "profiling/folded.h"

#include <gtest/gtest.h>

namespace warpscope::profiling {
namespace {

TEST(FoldedTest, NamesFramesByKind) {
  EXPECT_EQ(FoldedName({"step", "/srv/train.py", 12, "", "", "", FrameKind::kPython}),
            "step (train.py:12)");
  EXPECT_EQ(FoldedName({"step", "/srv/train.py", 0, "", "", "", FrameKind::kPython}),
            "step (train.py)");
  EXPECT_EQ(FoldedName({"gemm", "", 0, "", "", "", FrameKind::kKernel}), "gemm_[k]");
  EXPECT_EQ(FoldedName({"do_syscall_64", "", 0, "", "[kernel.kallsyms]", "", FrameKind::kOsKernel}),
            "do_syscall_64")
      << "an OS kernel frame keeps its plain name; _[k] is a GPU kernel";
  EXPECT_EQ(FoldedName({"jitted", "", 0, "", "[jit]", "", FrameKind::kNative}), "jitted_[j]");
  EXPECT_EQ(FoldedName({"f;g\nh"}), "f g h");
}

TEST(FoldedTest, SumsStacksOfOneValueSortedWithoutZeros) {
  ProfileAggregator agg({{"gpu_time", "nanoseconds"}, {"pc_samples", "count"}});
  uint32_t exe = agg.InternFrame({"app", "", 0, "", "", "", FrameKind::kProcess});
  uint32_t k = agg.InternFrame({"k", "", 0, "", "", "", FrameKind::kKernel});
  uint32_t a = agg.InternFrame({"a"});
  const int64_t v1[] = {10, 0};
  const int64_t v2[] = {5, 3};
  const int64_t v3[] = {0, 4};
  agg.Add(std::vector<uint32_t>{exe, k}, v1, std::vector<Label>{{"device", "", 0}});
  agg.Add(std::vector<uint32_t>{exe, k}, v2, std::vector<Label>{{"device", "", 1}});
  agg.Add(std::vector<uint32_t>{exe, a}, v3);
  EXPECT_EQ(FoldedStacks(agg.profile(), 0), "app;k_[k] 15\n");
  EXPECT_EQ(FoldedStacks(agg.profile(), 1), "app;a 4\napp;k_[k] 3\n");
  EXPECT_EQ(FoldedStacks(agg.profile(), 2), "");
}

}  // namespace
}  // namespace warpscope::profiling

// SPDX-License-Identifier: Apache-2.0
// The frame kinds of profiles built by the agent's real builders (CPU profiler, CUDA profiler)
// survive their pprof encoding: what the server decodes is what the profiler meant.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "profile_fixtures.h"
#include "profiling/pprof.h"

namespace warpscope::test {
namespace {

using profiling::FrameKind;

constexpr int64_t kStart = 1'700'000'000'000'000'000;
constexpr int64_t kEnd = kStart + 10'000'000'000;

// Kind by function name, and whether one name came with two kinds.
std::map<std::string, FrameKind> KindsOf(const profiling::Profile& p) {
  std::map<std::string, FrameKind> out;
  for (const profiling::Frame& f : p.frames) {
    auto [it, inserted] = out.emplace(f.function, f.kind);
    EXPECT_TRUE(inserted || it->second == f.kind) << f.function;
  }
  return out;
}

TEST(ProfileKindsTest, TheCpuProfilersFramesKeepTheirKindsThroughPprof) {
  profiling::WindowProfile w = FixtureCpuWindow(kStart, kEnd);
  ASSERT_FALSE(w.pprof_gz.empty());
  auto p = profiling::DecodePprof(w.pprof_gz);
  ASSERT_TRUE(p) << p.error().message();
  std::map<std::string, FrameKind> kinds = KindsOf(*p);
  EXPECT_EQ(kinds["python3"], FrameKind::kProcess);
  EXPECT_EQ(kinds["train_step"], FrameKind::kPython);
  EXPECT_EQ(kinds["next_batch"], FrameKind::kPython);
  EXPECT_EQ(kinds["do_syscall_64"], FrameKind::kOsKernel);
  EXPECT_EQ(kinds["warpscope_fixture_matmul"], FrameKind::kNative);
  EXPECT_EQ(kinds["warpscope_fixture_decode_jpeg"], FrameKind::kNative);
  size_t tids = 0;
  for (const profiling::Sample& s : p->samples) {
    for (const profiling::Label& l : s.labels) tids += l.key == "tid" ? 1 : 0;
  }
  EXPECT_EQ(tids, p->samples.size()) << "every sample keeps its thread";
}

TEST(ProfileKindsTest, TheCudaProfilersFramesKeepTheirKindsThroughPprof) {
  profiling::WindowProfile w = FixtureGpuWindow(kStart, kEnd);
  ASSERT_FALSE(w.pprof_gz.empty());
  auto p = profiling::DecodePprof(w.pprof_gz);
  ASSERT_TRUE(p) << p.error().message();
  std::map<std::string, FrameKind> kinds = KindsOf(*p);
  EXPECT_EQ(kinds["python3"], FrameKind::kProcess);
  EXPECT_EQ(kinds["train_step"], FrameKind::kPython);
  EXPECT_EQ(kinds["cudaLaunchKernel"], FrameKind::kLaunch);
  EXPECT_EQ(kinds["void gemm<float>(float*, int)"], FrameKind::kKernel);
  EXPECT_EQ(kinds["[memcpy HtoD]"], FrameKind::kMemory);
  size_t sass = 0;
  size_t stall = 0;
  for (const auto& [name, kind] : kinds) {
    sass += kind == FrameKind::kSass ? 1 : 0;
    stall += kind == FrameKind::kStall ? 1 : 0;
  }
  EXPECT_EQ(sass, 1u);
  EXPECT_EQ(stall, 1u);
  for (const auto& [name, kind] : kinds) {
    EXPECT_NE(kind, FrameKind::kUnknown) << "[" << name << "]";
  }
}

}  // namespace
}  // namespace warpscope::test

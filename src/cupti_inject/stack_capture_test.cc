// SPDX-License-Identifier: Apache-2.0
#include "cupti_inject/stack_capture.h"

#include <dlfcn.h>
#include <link.h>
#include <gtest/gtest.h>

namespace warpscope::cupti_inject {
namespace {

// True when some frame returns into `fn` (its extent comes from the dynamic symbol table: the
// test is linked with exported symbols).
bool HasFrameIn(std::span<const uint64_t> frames, const void* fn) {
  Dl_info info;
  void* extra = nullptr;
  if (dladdr1(fn, &info, &extra, RTLD_DL_SYMENT) == 0 || extra == nullptr) {
    return false;
  }
  const auto lo = reinterpret_cast<uintptr_t>(info.dli_saddr);
  const auto size = static_cast<const ElfW(Sym)*>(extra)->st_size;
  for (uint64_t pc : frames) {
    if (pc > lo && pc <= lo + size) {
      return true;
    }
  }
  return false;
}

extern "C" __attribute__((noinline)) size_t CaptureFromHere(Unwinder u, uint64_t* out, size_t n) {
  size_t got = CaptureNative(u, CurrentThreadStackBounds(), false, std::span<uint64_t>(out, n));
  asm volatile("" ::: "memory");  // keep the call from becoming a tail call
  return got;
}

TEST(StackCaptureTest, BothUnwindersSeeTheCaller) {
  for (Unwinder u : {Unwinder::kBacktrace, Unwinder::kFramePointer}) {
    uint64_t frames[64];
    const size_t n = CaptureFromHere(u, frames, 64);
    ASSERT_GT(n, 2u);
    EXPECT_TRUE(HasFrameIn(std::span<const uint64_t>(frames, n),
                           reinterpret_cast<const void*>(&CaptureFromHere)))
        << (u == Unwinder::kBacktrace ? "backtrace" : "fp");
  }
}

TEST(StackCaptureTest, RespectsTheOutputSize) {
  uint64_t frames[3];
  EXPECT_LE(CaptureFromHere(Unwinder::kBacktrace, frames, 3), 3u);
  EXPECT_LE(CaptureFromHere(Unwinder::kFramePointer, frames, 3), 3u);
}

TEST(StackCaptureTest, NoPythonFramesWithoutAnInterpreter) {
  PythonStack py;
  CapturePython(&py);
  EXPECT_EQ(py.count, 0u);
}

TEST(StackCaptureTest, HashDependsOnFramesAndPythonFrames) {
  const uint64_t a[] = {1, 2, 3};
  const uint64_t b[] = {1, 2, 4};
  PythonStack py;
  py.count = 1;
  py.frames[0] = {"f", "a.py", 3};
  EXPECT_NE(HashStack(a, nullptr), HashStack(b, nullptr));
  EXPECT_NE(HashStack(a, nullptr), HashStack(a, &py));
  EXPECT_EQ(HashStack(a, &py), HashStack(a, &py));
}

}  // namespace
}  // namespace warpscope::cupti_inject

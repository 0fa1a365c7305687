// SPDX-License-Identifier: Apache-2.0
#include "cupti_inject/stack_capture.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <link.h>

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

#if defined(__x86_64__)
// A function without an unwind entry (no CFI directives), like code built with
// -fno-asynchronous-unwind-tables: keeps a word of scratch on its own frame, leaves %rbp alone
// and calls fn(arg).
asm(R"(
  .pushsection .text
  .globl WarpscopeTestNoCfiCall
  .type WarpscopeTestNoCfiCall, @function
WarpscopeTestNoCfiCall:
  push %rbx
  sub $32, %rsp
  movq $0x1234, 8(%rsp)
  mov %rdi, %rax
  mov %rsi, %rdi
  call *%rax
  add $32, %rsp
  pop %rbx
  ret
  .size WarpscopeTestNoCfiCall, .-WarpscopeTestNoCfiCall
  .popsection
)");
extern "C" size_t WarpscopeTestNoCfiCall(size_t (*fn)(void*), void* arg);

struct NoCfiCapture {
  uint64_t frames[64];
  size_t n = 0;
  bool resumed = false;
  bool glibc = false;  // glibc's backtrace() instead, for comparison
};

extern "C" __attribute__((noinline)) size_t CaptureBelowNoCfi(void* arg) {
  auto* c = static_cast<NoCfiCapture*>(arg);
  if (c->glibc) {
    c->n = BacktraceWalk(c->frames);
  } else {
    c->n = DwarfWalk(CurrentThreadStackBounds(), c->frames, &c->resumed);
  }
  asm volatile("" ::: "memory");
  return c->n;
}

extern "C" __attribute__((noinline)) size_t InnerCallsNoCfi(NoCfiCapture* c) {
  const size_t n = WarpscopeTestNoCfiCall(&CaptureBelowNoCfi, c);
  asm volatile("" ::: "memory");
  return n;
}

extern "C" __attribute__((noinline)) size_t OuterCallsInner(NoCfiCapture* c) {
  const size_t n = InnerCallsNoCfi(c);
  asm volatile("" ::: "memory");
  return n;
}

TEST(StackCaptureTest, ResumesAboveCodeWithoutUnwindTables) {
  WarmUpUnwinder();
  NoCfiCapture glibc;
  glibc.glibc = true;
  OuterCallsInner(&glibc);
  std::span<const uint64_t> g(glibc.frames, glibc.n);
  ASSERT_TRUE(HasFrameIn(g, reinterpret_cast<const void*>(&WarpscopeTestNoCfiCall)));
  EXPECT_FALSE(HasFrameIn(g, reinterpret_cast<const void*>(&InnerCallsNoCfi)))
      << "glibc's backtrace() stops at the frame without unwind tables";

  NoCfiCapture c;
  OuterCallsInner(&c);
  std::span<const uint64_t> f(c.frames, c.n);
  EXPECT_TRUE(c.resumed);
  EXPECT_TRUE(HasFrameIn(f, reinterpret_cast<const void*>(&CaptureBelowNoCfi)));
  EXPECT_TRUE(HasFrameIn(f, reinterpret_cast<const void*>(&WarpscopeTestNoCfiCall)));
  // From the stack scan: the caller the function without unwind tables returns to.
  EXPECT_TRUE(HasFrameIn(f, reinterpret_cast<const void*>(&InnerCallsNoCfi)));
  // From the frame-pointer records above it.
  EXPECT_TRUE(HasFrameIn(f, reinterpret_cast<const void*>(&OuterCallsInner)));
  EXPECT_GT(c.n, glibc.n + 1);
  // Innermost first, each frame once: the scanned caller right after the stopping frame.
  size_t inner_at = c.n;
  size_t outer_at = c.n;
  for (size_t i = 0; i < c.n; ++i) {
    if (HasFrameIn(f.subspan(i, 1), reinterpret_cast<const void*>(&InnerCallsNoCfi))) inner_at = i;
    if (HasFrameIn(f.subspan(i, 1), reinterpret_cast<const void*>(&OuterCallsInner))) outer_at = i;
  }
  EXPECT_EQ(outer_at, inner_at + 1);
}

TEST(StackCaptureTest, ResumingNeedsTheStackBounds) {
  WarmUpUnwinder();
  struct Ctx {
    uint64_t frames[64];
    size_t n = 0;
    bool resumed = true;
  } ctx;
  WarpscopeTestNoCfiCall(
      [](void* arg) -> size_t {
        auto* c = static_cast<Ctx*>(arg);
        c->n = DwarfWalk(StackBounds{}, c->frames, &c->resumed);
        return c->n;
      },
      &ctx);
  EXPECT_FALSE(ctx.resumed);
  EXPECT_GT(ctx.n, 0u);
}
#endif

TEST(StackCaptureTest, NormalStacksAreNotResumed) {
  WarmUpUnwinder();
  uint64_t frames[128];
  bool resumed = true;
  const size_t n = DwarfWalk(CurrentThreadStackBounds(), frames, &resumed);
  EXPECT_FALSE(resumed);
  uint64_t reference[128];
  const size_t m = BacktraceWalk(reference);
  EXPECT_EQ(n, m) << "the same frames as glibc's backtrace()";
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

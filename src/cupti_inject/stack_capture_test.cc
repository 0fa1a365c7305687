// SPDX-License-Identifier: Apache-2.0
#include "cupti_inject/stack_capture.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <link.h>

#include "cupti_inject/cfi_step.h"
#include "cupti_inject/testing/has_frame_in.h"

namespace warpscope::cupti_inject {
namespace {

using ::warpscope::cupti_inject::testing::HasFrameIn;

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

// The registers of the caller's frame, taken from inside a function built with frame pointers:
// its return address, the stack pointer after it returns, the caller's rbp.
extern "C" __attribute__((noinline)) void CallerRegs(CfiRegs* regs, uint64_t* frames, size_t* n) {
  const auto* record = static_cast<const uintptr_t*>(__builtin_frame_address(0));
  regs->pc = record[1];
  regs->sp = reinterpret_cast<uintptr_t>(record) + 16;
  regs->fp = record[0];
  uint64_t all[128];
  bool resumed = false;
  const size_t got = DwarfWalk(CurrentThreadStackBounds(), all, &resumed);
  // all[0] lies in DwarfWalk, all[1] in this function, all[2] is regs->pc.
  *n = 0;
  for (size_t i = 2; i < got; ++i) {
    frames[(*n)++] = all[i];
  }
  asm volatile("" ::: "memory");
}

TEST(StackCaptureTest, CfiStepsReproduceTheDwarfUnwinder) {
  WarmUpUnwinder();
  CfiRegs regs;
  uint64_t frames[128];
  size_t n = 0;
  CallerRegs(&regs, frames, &n);
  ASSERT_GT(n, 4u);
  ASSERT_EQ(regs.pc, frames[0]);
  const StackBounds bounds = CurrentThreadStackBounds();
  size_t steps = 0;
  CfiStepResult r = CfiStepResult::kOk;
  while (steps + 1 < n) {
    uintptr_t slot = 0;
    r = CfiStep(bounds, &regs, &slot);
    if (r != CfiStepResult::kOk) break;
    ++steps;
    ASSERT_EQ(regs.pc, frames[steps]) << "step " << steps;
    EXPECT_EQ(*reinterpret_cast<const uintptr_t*>(slot), regs.pc);
  }
  EXPECT_EQ(steps + 1, n) << "every frame libgcc found (result " << static_cast<int>(r) << ")";
  uintptr_t slot = 0;
  EXPECT_EQ(CfiStep(bounds, &regs, &slot), CfiStepResult::kEnd) << "the outermost frame";
}

TEST(StackCaptureTest, CfiStepRefusesWhatItCannotRead) {
  WarmUpUnwinder();
  CfiRegs good;
  uint64_t frames[128];
  size_t n = 0;
  CallerRegs(&good, frames, &n);
  const StackBounds bounds = CurrentThreadStackBounds();
  uintptr_t slot = 0;
  CfiRegs r = good;
  EXPECT_EQ(CfiStep(StackBounds{}, &r, &slot), CfiStepResult::kUnsupported) << "no bounds";
  r = good;
  EXPECT_EQ(CfiStep(StackBounds{good.sp - 64, good.sp}, &r, &slot), CfiStepResult::kUnsupported)
      << "the caller's frame lies outside the bounds";
  r = good;
  r.fp = 0;  // this file keeps frame pointers: the caller's CFA is rbp-based
  EXPECT_EQ(CfiStep(bounds, &r, &slot), CfiStepResult::kUnsupported) << "rbp unknown";
  uint64_t heap_word = 0;
  r = good;
  r.pc = reinterpret_cast<uintptr_t>(&heap_word) + 1;
  EXPECT_EQ(CfiStep(bounds, &r, &slot), CfiStepResult::kNoEntry);
  r = good;
  EXPECT_EQ(CfiStep(bounds, &r, &slot), CfiStepResult::kOk);
}

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

// SPDX-License-Identifier: Apache-2.0
// Resuming above code without unwind tables when frame pointers cannot help: this file is built
// without frame pointers (CMakeLists.txt), and the function without unwind tables clobbers rbp,
// so neither the frame-pointer walk nor the frame records can reach the callers above it; only
// their own unwind entries can (CfiStep).
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <link.h>

#include "cupti_inject/cfi_step.h"
#include "cupti_inject/stack_capture.h"
#include "cupti_inject/testing/has_frame_in.h"

extern "C" int main(int, char**);

namespace warpscope::cupti_inject {
namespace {

using ::warpscope::cupti_inject::testing::HasFrameIn;

#if defined(__x86_64__)
// No CFI directives; saves rbp, puts a non-pointer in it, calls fn(arg), restores it.
asm(R"(
  .pushsection .text
  .globl WarpscopeTestNoCfiClobberRbp
  .type WarpscopeTestNoCfiClobberRbp, @function
WarpscopeTestNoCfiClobberRbp:
  push %rbp
  mov $0x10, %rbp
  sub $16, %rsp
  mov %rdi, %rax
  mov %rsi, %rdi
  call *%rax
  add $16, %rsp
  pop %rbp
  ret
  .size WarpscopeTestNoCfiClobberRbp, .-WarpscopeTestNoCfiClobberRbp
  .popsection
)");
extern "C" size_t WarpscopeTestNoCfiClobberRbp(size_t (*fn)(void*), void* arg);

struct Capture {
  uint64_t frames[64];
  size_t n = 0;
  bool resumed = false;
  uint64_t fp_frames[64];
  size_t fp_n = 0;
};

extern "C" __attribute__((noinline)) size_t NoFpCapture(void* arg) {
  auto* c = static_cast<Capture*>(arg);
  const StackBounds bounds = CurrentThreadStackBounds();
  c->n = DwarfWalk(bounds, c->frames, &c->resumed);
  c->fp_n = FramePointerWalk(bounds, c->fp_frames);
  asm volatile("" ::: "memory");
  return c->n;
}

extern "C" __attribute__((noinline)) size_t NoFpInner(Capture* c) {
  const size_t n = WarpscopeTestNoCfiClobberRbp(&NoFpCapture, c);
  asm volatile("" ::: "memory");
  return n + 1;
}

extern "C" __attribute__((noinline)) size_t NoFpOuter(Capture* c) {
  const size_t n = NoFpInner(c);
  asm volatile("" ::: "memory");
  return n + 1;
}

TEST(StackCaptureNoFpTest, CallersWithoutFramePointersAreFoundByTheirUnwindEntries) {
  WarmUpUnwinder();
  Capture c;
  NoFpOuter(&c);
  std::span<const uint64_t> f(c.frames, c.n);
  EXPECT_TRUE(c.resumed);
  EXPECT_TRUE(HasFrameIn(f, reinterpret_cast<const void*>(&WarpscopeTestNoCfiClobberRbp)));
  EXPECT_TRUE(HasFrameIn(f, reinterpret_cast<const void*>(&NoFpInner)));
  EXPECT_TRUE(HasFrameIn(f, reinterpret_cast<const void*>(&NoFpOuter)));
  // On to the start of the thread: the test body and gtest's frames above it (libgtest is built
  // without frame pointers too), main, libc and _start.
  EXPECT_TRUE(HasFrameIn(f, reinterpret_cast<const void*>(&main)));
  // The frame-pointer walk cannot get past the clobbered rbp.
  std::span<const uint64_t> fp(c.fp_frames, c.fp_n);
  EXPECT_FALSE(HasFrameIn(fp, reinterpret_cast<const void*>(&NoFpOuter)));
}
#endif

}  // namespace
}  // namespace warpscope::cupti_inject

// SPDX-License-Identifier: Apache-2.0
// Cost of one stack capture by unwinder and stack depth (docs/design/cuda-profiler.md, "Stack
// capture"). Run: <build>/bin/stack_capture_bench --benchmark_min_time=0.2
//   BM_FramePointer   the fp walk (WARPSCOPE_CUPTI_UNWINDER=fp)
//   BM_Backtrace      glibc's backtrace(), the reference the default unwinder replaced
//   BM_Dwarf          the default unwinder (DwarfWalk), on stacks with unwind tables throughout
//   BM_DwarfResumed   the same below a function without unwind tables at the given depth: the
//                     DWARF walk stops there and resumes above it (scan, then frame records)
#include <benchmark/benchmark.h>

#include "cupti_inject/stack_capture.h"

namespace {

using warpscope::cupti_inject::BacktraceWalk;
using warpscope::cupti_inject::CurrentThreadStackBounds;
using warpscope::cupti_inject::DwarfWalk;
using warpscope::cupti_inject::FramePointerWalk;
using warpscope::cupti_inject::HashStack;
using warpscope::cupti_inject::StackBounds;
using warpscope::cupti_inject::WarmUpUnwinder;

#if defined(__x86_64__)
// calls fn(arg) from a frame no unwind entry describes (no CFI directives), leaving %rbp alone.
asm(R"(
  .pushsection .text
  .globl WarpscopeBenchNoCfiCall
  .type WarpscopeBenchNoCfiCall, @function
WarpscopeBenchNoCfiCall:
  push %rbx
  sub $48, %rsp
  movq $0x1234, 8(%rsp)
  mov %rdi, %rax
  mov %rsi, %rdi
  call *%rax
  add $48, %rsp
  pop %rbx
  ret
  .size WarpscopeBenchNoCfiCall, .-WarpscopeBenchNoCfiCall
  .popsection
)");
extern "C" void WarpscopeBenchNoCfiCall(void (*fn)(void*), void* arg);
#endif

enum Which { kFp, kBacktrace, kBacktraceAndHash, kDwarf, kDwarfResumed };

struct Run {
  benchmark::State* state;
  Which which;
  StackBounds bounds;
};

// The measured loop, at the bottom of the recursion (or below the frame without unwind tables).
__attribute__((noinline)) void Measure(void* arg) {
  auto* r = static_cast<Run*>(arg);
  uint64_t frames[128];
  size_t n = 0;
  bool resumed = false;
  for (auto _ : *r->state) {
    switch (r->which) {
      case kFp:
        n = FramePointerWalk(r->bounds, frames);
        break;
      case kBacktrace:
        n = BacktraceWalk(frames);
        break;
      case kBacktraceAndHash:
        n = BacktraceWalk(frames);
        benchmark::DoNotOptimize(HashStack(std::span<const uint64_t>(frames, n), nullptr));
        break;
      case kDwarf:
      case kDwarfResumed:
        n = DwarfWalk(r->bounds, frames, &resumed);
        break;
    }
    benchmark::DoNotOptimize(n);
  }
  r->state->counters["frames"] = static_cast<double>(n);
  r->state->counters["resumed"] = resumed ? 1 : 0;
}

// Recurses `depth` frames, then runs the measured loop at the bottom.
__attribute__((noinline)) void AtDepth(int depth, Run* run) {
  if (depth > 0) {
    AtDepth(depth - 1, run);
    benchmark::DoNotOptimize(depth);
    return;
  }
#if defined(__x86_64__)
  if (run->which == kDwarfResumed) {
    WarpscopeBenchNoCfiCall(&Measure, run);
    return;
  }
#endif
  Measure(run);
}

void Bench(benchmark::State& state, Which which) {
  WarmUpUnwinder();
  Run run{&state, which, CurrentThreadStackBounds()};
  AtDepth(static_cast<int>(state.range(0)), &run);
}

void BM_FramePointer(benchmark::State& state) { Bench(state, kFp); }
void BM_Backtrace(benchmark::State& state) { Bench(state, kBacktrace); }
void BM_BacktraceAndHash(benchmark::State& state) { Bench(state, kBacktraceAndHash); }
void BM_Dwarf(benchmark::State& state) { Bench(state, kDwarf); }
void BM_DwarfResumed(benchmark::State& state) { Bench(state, kDwarfResumed); }

BENCHMARK(BM_FramePointer)->Arg(8)->Arg(32)->Arg(64)->Arg(120);
BENCHMARK(BM_Backtrace)->Arg(8)->Arg(32)->Arg(64)->Arg(120);
BENCHMARK(BM_Dwarf)->Arg(8)->Arg(32)->Arg(64)->Arg(120);
BENCHMARK(BM_DwarfResumed)->Arg(8)->Arg(32)->Arg(64)->Arg(120);
BENCHMARK(BM_BacktraceAndHash)->Arg(8)->Arg(64);

}  // namespace

BENCHMARK_MAIN();

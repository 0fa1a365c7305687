// SPDX-License-Identifier: Apache-2.0
// Cost of one stack capture by unwinder and stack depth (docs/design/cuda-profiler.md, "Stack
// capture"). Run: <build>/bin/stack_capture_bench --benchmark_min_time=0.2
#include <benchmark/benchmark.h>

#include "cupti_inject/stack_capture.h"

namespace {

using warpscope::cupti_inject::BacktraceWalk;
using warpscope::cupti_inject::CurrentThreadStackBounds;
using warpscope::cupti_inject::FramePointerWalk;
using warpscope::cupti_inject::HashStack;
using warpscope::cupti_inject::StackBounds;

// Recurses `depth` frames, then runs the measured loop at the bottom.
__attribute__((noinline)) void AtDepth(int depth, benchmark::State& state, int which,
                                       const StackBounds& bounds) {
  if (depth > 0) {
    AtDepth(depth - 1, state, which, bounds);
    benchmark::DoNotOptimize(depth);
    return;
  }
  uint64_t frames[128];
  size_t n = 0;
  for (auto _ : state) {
    if (which == 0) {
      n = FramePointerWalk(bounds, frames);
    } else if (which == 1) {
      n = BacktraceWalk(frames);
    } else {
      n = BacktraceWalk(frames);
      benchmark::DoNotOptimize(HashStack(std::span<const uint64_t>(frames, n), nullptr));
    }
    benchmark::DoNotOptimize(n);
  }
  state.counters["frames"] = static_cast<double>(n);
}

void BM_FramePointer(benchmark::State& state) {
  const StackBounds bounds = CurrentThreadStackBounds();
  AtDepth(static_cast<int>(state.range(0)), state, 0, bounds);
}
void BM_Backtrace(benchmark::State& state) {
  AtDepth(static_cast<int>(state.range(0)), state, 1, {});
}
void BM_BacktraceAndHash(benchmark::State& state) {
  AtDepth(static_cast<int>(state.range(0)), state, 2, {});
}

BENCHMARK(BM_FramePointer)->Arg(8)->Arg(32)->Arg(64)->Arg(120);
BENCHMARK(BM_Backtrace)->Arg(8)->Arg(32)->Arg(64)->Arg(120);
BENCHMARK(BM_BacktraceAndHash)->Arg(8)->Arg(64);

}  // namespace

BENCHMARK_MAIN();

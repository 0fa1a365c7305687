// SPDX-License-Identifier: Apache-2.0
// The trace of one GPU window of 100k kernels (each with its launch slice and flow, 64 kernel
// names, 8 streams on 2 devices, 4 launching threads, 1000 NVTX ranges): build time and size
// as a native Perfetto trace (GpuTracePerfetto) and as Chrome trace event JSON (GpuTraceJson).
//
//   cmake --build build/release --target cuda_gpu_trace_bench &&
//   build/release/src/agent/sources/cuda_profiler/cuda_gpu_trace_bench
#include <benchmark/benchmark.h>

#include <string>

#include "agent/sources/cuda_profiler/gpu_trace.h"

namespace warpscope::agent::cuda_profiler {
namespace {

constexpr int64_t kBase = 1'700'000'000'000'000'000;

ProcessState Window(int64_t kernels) {
  ProcessState state;
  for (int64_t i = 0; i < kernels; ++i) {
    KernelActivity k;
    k.correlation_id = static_cast<uint64_t>(i);
    k.name = "_Z6kernelILi" + std::to_string(i % 64) + "EEvPfi";
    k.device = static_cast<uint32_t>(i % 2);
    k.stream = static_cast<uint32_t>(i % 8);
    k.context = 1;
    k.grid = {static_cast<uint32_t>(64 << (i % 4)), 1, 1};
    k.block = {256, 1, 1};
    k.registers_per_thread = 32;
    k.shared_memory_bytes = 4096;
    k.start_ns = kBase + i * 10'000;
    k.end_ns = k.start_ns + 5'000;
    k.launch_api = "cudaLaunchKernel";
    k.thread_id = 100 + static_cast<int32_t>(i % 4);
    k.api_start_ns = k.start_ns - 3'000;
    k.api_end_ns = k.start_ns - 1'000;
    state.kernels.push_back(std::move(k));
  }
  for (int64_t i = 0; i < 1000; ++i) {
    const int64_t span = kernels * 10'000 / 1000;
    state.nvtx_undrawn.push_back({"train_step " + std::to_string(i), "trainer",
                                  kBase + i * span - 4'000, kBase + (i + 1) * span - 4'500,
                                  100 + static_cast<int32_t>(i % 4)});
  }
  return state;
}

GpuTraceOptions Options() {
  GpuTraceOptions o;
  o.pid = 4242;
  o.process_name = "python3.11";
  o.start_ns = kBase;
  o.end_ns = kBase + 10'000'000'000;
  return o;
}

template <std::string (*Build)(const ProcessState&, const GpuTraceOptions&, KernelNames&,
                               ProfileBuilder::Stats&)>
void BM_Trace(benchmark::State& state) {
  const ProcessState window = Window(state.range(0));
  const GpuTraceOptions options = Options();
  KernelNames names;
  size_t bytes = 0;
  for (auto _ : state) {
    ProfileBuilder::Stats stats;
    std::string trace = Build(window, options, names, stats);
    bytes = trace.size();
    benchmark::DoNotOptimize(trace);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
  state.counters["bytes"] = static_cast<double>(bytes);
  state.counters["bytes_per_kernel"] =
      static_cast<double>(bytes) / static_cast<double>(state.range(0));
}

BENCHMARK(BM_Trace<GpuTracePerfetto>)
    ->Name("BM_PerfettoTrace")
    ->Arg(100000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Trace<GpuTraceJson>)
    ->Name("BM_ChromeTrace")
    ->Arg(100000)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace warpscope::agent::cuda_profiler

BENCHMARK_MAIN();

// SPDX-License-Identifier: Apache-2.0
// Agent-side cost of the CUDA kernel profiler: native symbolization per address (cold: a fresh
// symbolizer that reads /proc/self/maps and parses the ELF file; warm: cached), and building
// one export window of 100k kernels into the formats profile exporters ask for: pprof only (the
// server), pprof + folded, or pprof + folded + Perfetto trace (a directory); a launch storm's
// window, where 1 % of the kernels were sampled and the estimator attributes the rest; and the
// estimator alone.
//
//   ninja -C build cuda_profile_builder_bench && build/.../cuda_profile_builder_bench
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <map>
#include <random>
#include <tuple>
#include <vector>

#include "agent/sources/cuda_profiler/launch_estimator.h"
#include "agent/sources/cuda_profiler/profile_builder.h"
#include "profiling/symbolizer.h"

namespace bench_fixture {
// Functions with known names standing in for the launching C++ code.
__attribute__((noinline)) int FrameA(int x) { return x + 1; }
__attribute__((noinline)) int FrameB(int x) { return FrameA(x) * 2; }
__attribute__((noinline)) int FrameC(int x) { return FrameB(x) - 3; }
__attribute__((noinline)) int FrameD(int x) { return FrameC(x) ^ 5; }
}  // namespace bench_fixture

namespace warpscope::agent::cuda_profiler {
namespace {

std::vector<uint64_t> KnownAddresses() {
  std::vector<uint64_t> out;
  for (auto fn : {&bench_fixture::FrameA, &bench_fixture::FrameB, &bench_fixture::FrameC,
                  &bench_fixture::FrameD}) {
    for (uint64_t off = 1; off <= 4; ++off) {
      out.push_back(reinterpret_cast<uint64_t>(fn) + off);
    }
  }
  return out;
}

void BM_SymbolizeCold(benchmark::State& state) {
  std::vector<uint64_t> addresses = KnownAddresses();
  addresses.resize(1);
  for (auto _ : state) {
    profiling::Symbolizer symbolizer({});
    benchmark::DoNotOptimize(symbolizer.Symbolize(getpid(), addresses));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SymbolizeCold)->Unit(benchmark::kMicrosecond);

void BM_SymbolizeWarm(benchmark::State& state) {
  std::vector<uint64_t> addresses = KnownAddresses();
  profiling::Symbolizer symbolizer({});
  symbolizer.Symbolize(getpid(), addresses);
  for (auto _ : state) {
    benchmark::DoNotOptimize(symbolizer.Symbolize(getpid(), addresses));
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(addresses.size()));
}
BENCHMARK(BM_SymbolizeWarm);

// One window: `kernels` kernel records over 1000 distinct launch stacks (24 native frames, 6
// Python frames), 64 kernel names, 8 streams on 2 devices, plus 200 aggregated kernels and
// 2000 PC-sample records. `spread`: every kernel picks its stack, kernel and stream at random
// (about one distinct call path per kernel, the worst case); otherwise a stack always launches
// the same kernel on the same stream (1000 call paths, as in a training loop).
void FillWindow(ProfileBuilder& builder, int32_t pid, int64_t kernels, bool add_stacks,
                bool spread) {
  std::mt19937_64 rng(42);
  std::vector<uint64_t> known = KnownAddresses();
  constexpr int kStacks = 1000;
  if (add_stacks) {
    for (int s = 0; s < kStacks; ++s) {
      InternedStack stack;
      stack.hash = 1000 + s;
      for (int d = 0; d < 24; ++d) {
        stack.native_pcs.push_back(known[(s + d) % known.size()]);
      }
      for (int d = 0; d < 6; ++d) {
        stack.python_frames.push_back({"fn_" + std::to_string((s * 7 + d) % 300),
                                       "/srv/model_" + std::to_string(d) + ".py", 10 + d});
      }
      builder.AddStack(pid, std::move(stack));
    }
  }
  for (int64_t i = 0; i < kernels; ++i) {
    KernelActivity k;
    k.correlation_id = static_cast<uint64_t>(i);
    uint64_t stack = rng() % kStacks;
    k.stack_hash = 1000 + stack;
    uint64_t pick = spread ? static_cast<uint64_t>(i) : stack;
    k.name = "_Z6kernelILi" + std::to_string(pick % 64) + "EEvPfi";
    k.device = static_cast<uint32_t>(pick % 2);
    k.stream = static_cast<uint32_t>(pick % 8);
    k.start_ns = 1'700'000'000'000'000'000 + i * 10'000;
    k.end_ns = k.start_ns + 5'000;
    k.launch_api = "cudaLaunchKernel";
    k.thread_id = 100 + static_cast<int32_t>(i % 4);
    k.api_start_ns = k.start_ns - 3'000;
    k.api_end_ns = k.start_ns - 1'000;
    builder.AddKernel(pid, std::move(k));
  }
  for (int i = 0; i < 200; ++i) {
    builder.AddKernelAggregate(
        pid, {"_Z6kernelILi" + std::to_string(i % 64) + "EEvPfi", 0, 1, 10, 50'000});
  }
  for (int i = 0; i < 2000; ++i) {
    builder.AddPcSample(
        pid, {7, "_Z6kernelILi" + std::to_string(i % 64) + "EEvPfi",
              static_cast<uint64_t>(i % 32) * 16, "smsp__pcsamp_warps_issue_stalled_wait", 5});
  }
}

void BM_BuildWindow(benchmark::State& state) {
  profiling::Symbolizer symbolizer({});
  ProfileBuilder::Options options;
  options.formats = {.pprof = true, .folded = state.range(1) >= 1, .trace = state.range(1) >= 2};
  ProfileBuilder builder(&symbolizer, options);
  const int32_t pid = getpid();
  builder.AddProcess({pid, "/usr/bin/python3.11", 0, 0});
  bool spread = state.range(2) != 0;
  FillWindow(builder, pid, state.range(0), /*add_stacks=*/true, spread);
  builder.FinishWindow(0, 1);  // first window symbolizes the stacks; measure steady state
  size_t bytes = 0;
  for (auto _ : state) {
    state.PauseTiming();
    FillWindow(builder, pid, state.range(0), /*add_stacks=*/false, spread);
    state.ResumeTiming();
    auto profiles = builder.FinishWindow(0, 10'000'000'000);
    bytes = profiles[0].pprof_gz.size() + profiles[0].perfetto_trace.size();
    benchmark::DoNotOptimize(profiles);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
  state.counters["output_bytes"] = static_cast<double>(bytes);
}
// Args: kernels, formats (0: pprof, 1: + folded, 2: + trace), spread (see FillWindow).
BENCHMARK(BM_BuildWindow)
    ->Args({100000, 2, 0})
    ->Args({100000, 1, 0})
    ->Args({100000, 0, 0})
    ->Args({100000, 2, 1})
    ->Args({100000, 1, 1})
    ->Args({100000, 0, 1})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(5);

// A storm window: `kernels` kernels of 64 names on 8 streams of 2 devices from 100 call paths
// (a path always launches the same kernel on the same stream); one kernel in 100 sampled (a
// record with its stack), the rest counted in the library's aggregates and, with
// `all_records` (WARPSCOPE_CUPTI_KERNELS=all), also reported as records without a stack.
void FillStormWindow(ProfileBuilder& builder, int32_t pid, int64_t kernels, bool all_records) {
  constexpr uint64_t kPaths = 100;
  std::mt19937_64 rng(7);
  std::map<std::tuple<std::string, uint32_t, uint32_t>, std::pair<uint64_t, uint64_t>> totals;
  for (int64_t i = 0; i < kernels; ++i) {
    const uint64_t path = rng() % kPaths;
    KernelActivity k;
    k.correlation_id = static_cast<uint64_t>(i);
    k.name = "_Z6kernelILi" + std::to_string(path % 64) + "EEvPfi";
    k.device = static_cast<uint32_t>(path % 2);
    k.stream = static_cast<uint32_t>(path % 8);
    k.start_ns = 1'700'000'000'000'000'000 + i * 10'000;
    k.end_ns = k.start_ns + 2'000 + static_cast<int64_t>(path) * 10;
    auto& [count, ns] = totals[{k.name, k.device, k.stream}];
    ++count;
    ns += static_cast<uint64_t>(k.end_ns - k.start_ns);
    if (i % 100 == 0) {
      k.stack_hash = 1000 + path;  // FillWindow's stacks
      k.launch_api = "cudaLaunchKernel";
      k.thread_id = 100 + static_cast<int32_t>(path % 4);
      k.api_start_ns = k.start_ns - 3'000;
      k.api_end_ns = k.start_ns - 1'000;
    } else if (!all_records) {
      continue;
    }
    builder.AddKernel(pid, std::move(k));
  }
  for (const auto& [key, value] : totals) {
    builder.AddKernelAggregate(
        pid, {std::get<0>(key), std::get<1>(key), std::get<2>(key), value.first, value.second});
  }
}

void BM_BuildStormWindow(benchmark::State& state) {
  profiling::Symbolizer symbolizer({});
  ProfileBuilder::Options options;
  options.formats = {.pprof = true, .folded = false, .trace = false};
  ProfileBuilder builder(&symbolizer, options);
  const int32_t pid = getpid();
  builder.AddProcess({pid, "/usr/bin/python3.11", 0, 0});
  FillWindow(builder, pid, 1000, /*add_stacks=*/true, /*spread=*/false);
  builder.FinishWindow(0, 1);  // symbolizes the stacks
  const bool all_records = state.range(1) != 0;
  for (auto _ : state) {
    state.PauseTiming();
    FillStormWindow(builder, pid, state.range(0), all_records);
    state.ResumeTiming();
    benchmark::DoNotOptimize(builder.FinishWindow(0, 10'000'000'000));
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
  state.counters["estimated"] = static_cast<double>(builder.stats().launches_estimated) /
                                static_cast<double>(state.iterations());
}
// Args: kernels, all_records (0: the default, sampled records and aggregates; 1: every kernel
// a record).
BENCHMARK(BM_BuildStormWindow)
    ->Args({100000, 0})
    ->Args({100000, 1})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(10);

// The estimator alone on a window's sites and pools: `sites` sampled sites over 64 kernels on
// 8 streams, and a pool per (kernel, stream, kind) of the 64 x 8 x 2.
void BM_EstimateWindow(benchmark::State& state) {
  std::vector<SampledSite> sites;
  for (int64_t i = 0; i < state.range(0); ++i) {
    sites.push_back({static_cast<uint32_t>(i % 64), 0, static_cast<uint32_t>(i % 8),
                     LaunchKind::kDirect, 1 + static_cast<uint64_t>(i % 5),
                     1000 + static_cast<uint64_t>(i) * 10});
  }
  std::vector<UnsampledPool> pools;
  for (uint32_t kernel = 0; kernel < 64; ++kernel) {
    for (uint32_t stream = 0; stream < 8; ++stream) {
      pools.push_back({kernel, 0, stream, LaunchKind::kDirect, 10'000, 20'000'000});
      pools.push_back({kernel, 0, stream, LaunchKind::kUnknown, 10'000, 20'000'000});
    }
  }
  for (auto _ : state) {
    benchmark::DoNotOptimize(EstimateWindow(sites, pools));
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(pools.size()));
}
BENCHMARK(BM_EstimateWindow)->Arg(100)->Arg(1000)->Arg(10000)->Unit(benchmark::kMicrosecond);

void BM_BuildFirstWindowWithSymbolization(benchmark::State& state) {
  for (auto _ : state) {
    profiling::Symbolizer symbolizer({});
    ProfileBuilder builder(&symbolizer, {});
    const int32_t pid = getpid();
    state.PauseTiming();
    builder.AddProcess({pid, "/usr/bin/python3.11", 0, 0});
    FillWindow(builder, pid, state.range(0), /*add_stacks=*/true, /*spread=*/false);
    state.ResumeTiming();
    benchmark::DoNotOptimize(builder.FinishWindow(0, 10'000'000'000));
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_BuildFirstWindowWithSymbolization)
    ->Arg(100000)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);

}  // namespace
}  // namespace warpscope::agent::cuda_profiler

BENCHMARK_MAIN();

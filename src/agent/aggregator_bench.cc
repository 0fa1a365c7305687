// SPDX-License-Identifier: Apache-2.0
// Cost of the aggregator per collection cycle: what the agent pays between the sources and the
// exporters. Each iteration is one cycle of a realistic 8-GPU node (exporters/testing's sample
// frame: 8 GPUs with about 60 series each, the host, N GPU processes with 4 series each and
// their executables) written through the SampleSink interface, and every `cycles_per_window`-th
// iteration also closes the export window. Reports the time per cycle and the heap allocations
// per cycle (counted by a replaced global operator new).
//
//   ninja -C build/release aggregator_bench && build/release/bin/aggregator_bench
#include <benchmark/benchmark.h>

#include "agent/aggregator.h"
#include "bench/alloc_counter/alloc_counter.h"
#include "exporters/testing/sample_frame.h"

namespace warpscope::agent {
namespace {

// Args: GPU processes (64: the reference node; 512: 64 per GPU), cycles per export window.
void BM_AggregatorCycle(benchmark::State& state) {
  const model::Frame source = exporters::sample::MakeSampleFrame(
      {.gpus = 8, .processes = static_cast<int>(state.range(0))});
  const int64_t cycles_per_window = state.range(1);
  Aggregator aggregator;
  base::TimePoint now = source.start;
  int64_t cycle = 0;
  auto run_cycle = [&] {
    aggregator.BeginCycle(now);
    for (const model::Entity& e : source.entities) {
      aggregator.AddEntity(e);
    }
    const double bump = static_cast<double>(cycle % 7);
    for (const model::SeriesPoint& p : source.series) {
      aggregator.AddValue(*p.metric, p.entity, p.labels, p.last + bump);
    }
    aggregator.EndCycle();
    now += std::chrono::seconds(1);
    if (++cycle % cycles_per_window == 0) {
      benchmark::DoNotOptimize(aggregator.CloseWindow(now));
    }
  };
  // Warm up: the first window inserts every series; steady state is what the agent runs in.
  for (int64_t i = 0; i < 2 * cycles_per_window; ++i) {
    run_cycle();
  }
  const uint64_t allocations_before = bench::AllocationCount();
  for (auto _ : state) {
    run_cycle();
    benchmark::DoNotOptimize(aggregator.latest().series.data());
  }
  const auto iterations = static_cast<double>(state.iterations());
  state.counters["allocs_per_cycle"] =
      static_cast<double>(bench::AllocationCount() - allocations_before) / iterations;
  state.counters["series"] = static_cast<double>(source.series.size());
}
BENCHMARK(BM_AggregatorCycle)
    ->ArgNames({"processes", "cycles_per_window"})
    ->Args({64, 2})
    ->Args({64, 10})
    ->Args({512, 2})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace warpscope::agent

BENCHMARK_MAIN();

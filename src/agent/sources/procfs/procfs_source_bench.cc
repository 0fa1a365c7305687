// SPDX-License-Identifier: Apache-2.0
// Cost of one ProcfsSource::Poll: over the machine's real /proc (dominated by reading
// /proc/[pid]/stat of every process for the top-N selection) and over the checked-in snapshot
// (parsing and emission cost with 9 processes). Run with --benchmark_counters_tabular=true; the
// "processes" counter gives the size of the real scan.
#include <benchmark/benchmark.h>

#include <string>

#include "agent/sources/procfs/procfs_process_resolver.h"
#include "agent/sources/procfs/procfs_source.h"
#include "model/process.h"
#include "model/sample_sink.h"

namespace warpscope::agent {
namespace {

// Counts what it receives and keeps nothing, so the benchmark measures the source alone.
class CountingSink : public model::SampleSink {
 public:
  void AddEntity(const model::Entity&) override { ++entities; }
  void AddValue(const model::MetricDesc&, std::string_view, const model::Labels&,
                double value) override {
    ++values;
    if (value < 0) ++negative;
  }
  void AddEvent(const model::Event&) override {}
  using SampleSink::AddValue;

  size_t entities = 0;
  size_t values = 0;
  size_t negative = 0;
};

void RunPolls(benchmark::State& state, ProcfsSourceOptions options) {
  ProcfsProcessResolver resolver(options.root);
  ProcfsSource source(options, base::RealClock::Get(), resolver);
  if (!source.Start().ok()) {
    state.SkipWithError("cannot read <root>/proc/stat");
    return;
  }
  CountingSink sink;
  source.Poll(base::RealClock::Get().Now(), sink);  // warm caches and previous-poll state
  for (auto _ : state) {
    sink.values = 0;
    resolver.BeginCycle();
    source.Poll(base::RealClock::Get().Now(), sink);
    benchmark::DoNotOptimize(sink.values);
  }
  state.counters["values"] = static_cast<double>(sink.values);
}

void BM_PollRealProc(benchmark::State& state) {
  ProcfsSourceOptions options;
  options.top_processes = static_cast<size_t>(state.range(0));
  RunPolls(state, options);
}
BENCHMARK(BM_PollRealProc)->Arg(0)->Arg(10)->Unit(benchmark::kMicrosecond);

// Host-wide files only: per-process collection off (no processes of interest, top 0 still lists
// /proc to count processes but reads no stat file).
void BM_PollRealProcHostOnly(benchmark::State& state) {
  ProcfsSourceOptions options;
  options.top_processes = 0;
  options.per_core_cpu = false;
  RunPolls(state, options);
}
BENCHMARK(BM_PollRealProcHostOnly)->Unit(benchmark::kMicrosecond);

void BM_PollSnapshot(benchmark::State& state) {
  ProcfsSourceOptions options;
  options.root = std::string(WARPSCOPE_SOURCE_DIR) + "/test/data/root/gpuhost_t0";
  options.ticks_per_second = 100;
  options.page_size = 4096;
  RunPolls(state, options);
}
BENCHMARK(BM_PollSnapshot)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace warpscope::agent

BENCHMARK_MAIN();

// SPDX-License-Identifier: Apache-2.0
// Agent CPU per sample by user stack depth (docs/benchmarks.md, "CPU profiler"): parsing the
// perf record, DWARF unwinding through libdwfl with a warm per-process Dwfl, and aggregation into
// the window; and the window's build (symbolization, pprof) per distinct stack. The stacks are
// real: captured in this process from functions built without frame pointers.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <thread>

#include "agent/sources/cpu_profiler/cpu_window.h"
#include "agent/sources/cpu_profiler/perf_maps.h"
#include "agent/sources/cpu_profiler/perf_records.h"
#include "agent/sources/cpu_profiler/process_table.h"
#include "agent/sources/cpu_profiler/testing/record_writer.h"
#include "agent/sources/cpu_profiler/testing/unwind_fixture.h"
#include "agent/sources/cpu_profiler/unwinder.h"

namespace warpscope::agent::cpu_profiler {
namespace {

struct Captured {
  DwarfRegs regs{};
  std::vector<uint8_t> stack;
  uint32_t tid = 0;
};

// A stack `depth` frames deep (plus the thread's own few), captured on a thread that stays
// alive so its tid is real.
Captured Capture(int depth) {
  Captured c;
  std::thread([&] {
    c.tid = static_cast<uint32_t>(gettid());
    UnwindFixtureRecurse(depth, &c.regs, &c.stack, 16 * 1024);
  }).join();
  return c;
}

// One sample end to end in the reader thread: parse, unwind, aggregate.
void BM_SamplePath(benchmark::State& state) {
  const int depth = static_cast<int>(state.range(0));
  Captured c = Capture(depth);
  std::vector<uint8_t> record = testing::SampleBytes(static_cast<uint32_t>(getpid()), c.tid, 1, 0,
                                                     {}, &c.regs, c.stack, 16 * 1024);
  ProcessTable table;
  Unwinder unwinder({});
  CpuWindow window(profiling::ProfileFormats{.pprof = true});
  size_t frames = 0;
  for (auto _ : state) {
    auto parsed = ParseRecord(record);
    auto& s = std::get<SampleRecord>(*parsed);
    const ProcessInfo& p = table.Get(s.pid);
    UnwindResult r = unwinder.Unwind(p, s.tid, s.regs, s.stack);
    frames = r.pcs.size();
    UnwoundSample u;
    u.pid = s.pid;
    u.tid = s.tid;
    u.period_ns = 1;
    u.user_pcs = std::move(r.pcs);
    window.Add(std::move(u));
  }
  state.counters["frames"] = static_cast<double>(frames);
  state.counters["record_bytes"] = static_cast<double>(record.size());
}
BENCHMARK(BM_SamplePath)->Arg(4)->Arg(16)->Arg(64)->Arg(128);

// Unwinding alone.
void BM_Unwind(benchmark::State& state) {
  Captured c = Capture(static_cast<int>(state.range(0)));
  ProcessTable table;
  const ProcessInfo& p = table.Get(static_cast<uint32_t>(getpid()));
  Unwinder unwinder({});
  for (auto _ : state) {
    benchmark::DoNotOptimize(unwinder.Unwind(p, c.tid, c.regs, c.stack));
  }
}
BENCHMARK(BM_Unwind)->Arg(4)->Arg(16)->Arg(64)->Arg(128);

// Unwinding as the sampler configures it: JIT code looked up in the process's perf map (this
// process has none), for the CPython trampoline step.
void BM_UnwindWithPerfMaps(benchmark::State& state) {
  Captured c = Capture(static_cast<int>(state.range(0)));
  ProcessTable table;
  const ProcessInfo& p = table.Get(static_cast<uint32_t>(getpid()));
  PerfMaps perf_maps(PerfMaps::Options{});
  Unwinder::Options options;
  options.jit = [&](uint32_t pid, uint64_t address) { return perf_maps.Find(pid, address); };
  Unwinder unwinder(options);
  for (auto _ : state) {
    benchmark::DoNotOptimize(unwinder.Unwind(p, c.tid, c.regs, c.stack));
  }
}
BENCHMARK(BM_UnwindWithPerfMaps)->Arg(4)->Arg(16)->Arg(64)->Arg(128);

// A window's build per distinct stack: symbolization (warm ELF caches), file:line, pprof.
void BM_WindowBuildPerStack(benchmark::State& state) {
  const int depth = static_cast<int>(state.range(0));
  Captured c = Capture(depth);
  ProcessTable table;
  const uint32_t pid = static_cast<uint32_t>(getpid());
  const ProcessInfo& p = table.Get(pid);
  Unwinder unwinder({});
  UnwindResult r = unwinder.Unwind(p, c.tid, c.regs, c.stack);
  profiling::Symbolizer symbolizer({});
  KernelSymbols kernel;
  NoPythonStacks python;
  SymbolSources sources{table, symbolizer, kernel, python};
  CpuWindow window(profiling::ProfileFormats{.pprof = true});
  constexpr int kStacks = 50;  // distinct stacks (threads) per window
  for (auto _ : state) {
    for (int i = 0; i < kStacks; ++i) {
      UnwoundSample u;
      u.pid = pid;
      u.tid = static_cast<uint32_t>(i);
      u.period_ns = 1;
      u.user_pcs = r.pcs;
      window.Add(std::move(u));
    }
    benchmark::DoNotOptimize(window.Build(0, 1, sources));
  }
  state.SetItemsProcessed(state.iterations() * kStacks);
}
BENCHMARK(BM_WindowBuildPerStack)->Arg(16)->Arg(64);

}  // namespace
}  // namespace warpscope::agent::cpu_profiler

BENCHMARK_MAIN();

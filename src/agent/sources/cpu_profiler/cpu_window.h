// SPDX-License-Identifier: Apache-2.0
// One window of CPU samples, aggregated per process and stack while the window is open, and
// turned into one profiling::WindowProfile per process when it closes: kind "cpu", sample
// types samples/count and cpu/nanoseconds, labels tid and thread_name, stacks root first as
// process → [unwinding stopped in <binary>] → user frames → (Python spliced in) → kernel frames.
//
// User frames are symbolized through the shared symbolizer (src/profiling/symbolizer.h) with
// the mappings the process table tracked (so exited processes still resolve), with file:line
// and inlined frames from DWARF (the symbolizer's, one reader per binary); the addresses it cannot name (JIT code in
// anonymous memory) through the process's /tmp/perf-<pid>.map (perf_maps.h); kernel frames
// through /proc/kallsyms.
//
// Thread contract: not thread-safe; owned by the sampler's thread.
#ifndef WARPSCOPE_AGENT_SOURCES_CPU_PROFILER_CPU_WINDOW_H_
#define WARPSCOPE_AGENT_SOURCES_CPU_PROFILER_CPU_WINDOW_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "agent/sources/cpu_profiler/kernel_symbols.h"
#include "agent/sources/cpu_profiler/perf_maps.h"
#include "agent/sources/cpu_profiler/process_table.h"
#include "agent/sources/cpu_profiler/python_stack_source.h"
#include "profiling/profile.h"
#include "profiling/symbolizer.h"
#include "profiling/window_profile.h"

namespace warpscope::agent::cpu_profiler {

// One sample after unwinding, before symbolization.
struct UnwoundSample {
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint64_t period_ns = 0;
  std::vector<uint64_t> kernel_ips;      // leaf first
  std::vector<uint64_t> user_pcs;        // leaf first (lookup addresses)
  bool truncated = false;                // the user stack ends in an "unwinding stopped" marker
  std::string stopped_in;                // the binary where it stopped
  std::vector<PythonStackFrame> python;  // innermost first; empty for native-only
};

// What a window's build needs, all owned by the sampler.
struct SymbolSources {
  const ProcessTable& processes;
  profiling::Symbolizer& symbolizer;
  const KernelSymbols& kernel;
  PythonStackSource& python;
  std::string host_root = "/";  // binaries are read under it (through /proc/<pid>/root first)
  // JIT symbols for the addresses the symbolizer cannot name; null: none looked up.
  PerfMaps* perf_maps = nullptr;
};

class CpuWindow {
 public:
  explicit CpuWindow(profiling::ProfileFormats formats) : formats_(formats) {}

  void Add(UnwoundSample sample);
  bool empty() const { return by_pid_.empty(); }
  // The processes with samples in the window.
  std::set<uint32_t> pids() const;
  uint64_t samples() const { return samples_; }

  // One profile per process with samples, sorted by pid, in the formats asked for; then the
  // window is empty again.
  std::vector<profiling::WindowProfile> Build(int64_t start_ns, int64_t end_ns,
                                              const SymbolSources& sources);

 private:
  struct Aggregate {
    UnwoundSample sample;  // the first one of this key
    int64_t count = 0;
    int64_t cpu_ns = 0;
  };
  profiling::WindowProfile BuildProcess(uint32_t pid,
                                        const std::unordered_map<std::string, Aggregate>& stacks,
                                        int64_t start_ns, int64_t end_ns,
                                        const SymbolSources& sources);

  profiling::ProfileFormats formats_;
  uint64_t samples_ = 0;
  std::map<uint32_t, std::unordered_map<std::string, Aggregate>> by_pid_;
  std::string key_;  // scratch
};

}  // namespace warpscope::agent::cpu_profiler

#endif  // WARPSCOPE_AGENT_SOURCES_CPU_PROFILER_CPU_WINDOW_H_

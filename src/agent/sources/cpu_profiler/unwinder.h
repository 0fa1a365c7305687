// SPDX-License-Identifier: Apache-2.0
// DWARF unwinding of a sample's user stack without frame pointers: the registers and the stack
// copy perf took (PERF_SAMPLE_REGS_USER, PERF_SAMPLE_STACK_USER) are replayed through the
// .eh_frame/.debug_frame CFI of the mapped ELF files with elfutils' libdwfl
// (dwfl_attach_state with our own Dwfl_Thread_Callbacks, then dwfl_getthread_frames).
//
// One Dwfl per process, reused across its samples: its modules (one per mapped ELF file, with
// their parsed CFI and, for file:line, DWARF) are reported again only when the process's
// mappings changed (ProcessInfo::maps_generation). At most `max_processes` Dwfls are kept
// (least recently used go first); file:line is the symbolizer's, per binary. Reads: 8-byte words
// inside the stack copy come from it; other addresses from the file contents of the mapped ELF
// (PT_LOAD data), never from the live process.
//
// Code without CFI: libdwfl's x86-64 backend steps over a frame it has no CFI for through its
// frame pointer (rbp → saved rbp, return address), its reads bounded by the stack copy like
// every other; that walks JIT trampolines that keep one. CPython's `-X perf` trampoline keeps
// none (`sub $8,%rsp; call *%rcx; add $8,%rsp; ret`): a frame whose pc the JIT lookup names as
// one (a "py::" perf-map entry of that size) is stepped over by that known layout (return
// address at the frame's sp + 8 once inside the call, the caller's sp 16 bytes up, the other
// registers untouched), and libdwfl resumes at its caller. At most kMaxTrampolineSteps per
// sample, each checked to stay inside the stack copy.
//
// Thread contract: not thread-safe; owned by the sampler's thread.
#ifndef WARPSCOPE_AGENT_SOURCES_CPU_PROFILER_UNWINDER_H_
#define WARPSCOPE_AGENT_SOURCES_CPU_PROFILER_UNWINDER_H_

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "agent/sources/cpu_profiler/perf_records.h"
#include "agent/sources/cpu_profiler/process_table.h"
#include "profiling/symbolizer.h"

namespace warpscope::agent::cpu_profiler {

struct UnwindResult {
  // Lookup addresses, leaf first: the sampled pc, then each caller's return address minus one
  // (so the address falls inside the call instruction's line and function).
  std::vector<uint64_t> pcs;
  // False when unwinding stopped before the outermost frame (no CFI, a read outside the stack
  // copy, a corrupt frame): the stack ends in a marker frame.
  bool complete = false;
  // The mapped file where unwinding stopped ("" when outside every mapping), for the
  // per-binary count of truncated stacks.
  std::string stopped_in;
};

class Unwinder {
 public:
  struct Options {
    std::string host_root = "/";
    size_t max_processes = 256;  // Dwfls kept
    size_t max_frames = 256;
    // Names JIT code of a process (the sampler's perf maps); null: no trampoline steps.
    std::function<const profiling::PerfMapSymbol*(uint32_t pid, uint64_t address)> jit;
  };
  static constexpr int kMaxTrampolineSteps = 32;
  struct Stats {
    uint64_t unwinds = 0;
    uint64_t truncated = 0;
    uint64_t reports = 0;  // (re-)reports of a process's modules
    uint64_t attach_failures = 0;
    uint64_t trampoline_steps = 0;  // CPython perf trampolines stepped over
  };

  explicit Unwinder(Options options);
  ~Unwinder();
  Unwinder(const Unwinder&) = delete;
  Unwinder& operator=(const Unwinder&) = delete;

  UnwindResult Unwind(const ProcessInfo& process, uint32_t tid, const DwarfRegs& regs,
                      std::span<const uint8_t> stack);

  // Drops the process's Dwfl.
  void Forget(uint32_t pid);

  const Stats& stats() const { return stats_; }

  // One process's Dwfl and the sample being unwound (unwinder.cc; public for its callbacks).
  struct ProcessDwfl;

 private:
  ProcessDwfl* DwflFor(const ProcessInfo& process);

  Options options_;
  Stats stats_;
  std::list<uint32_t> lru_;  // most recently used first
  std::unordered_map<uint32_t, std::unique_ptr<ProcessDwfl>> dwfls_;
};

}  // namespace warpscope::agent::cpu_profiler

#endif  // WARPSCOPE_AGENT_SOURCES_CPU_PROFILER_UNWINDER_H_

// SPDX-License-Identifier: Apache-2.0
// JIT symbol maps: the /tmp/perf-<pid>.map files that Python's perf trampoline (`-X perf`,
// CPython 3.12+) and other JITs (V8, the JVM's agents, LuaJIT…) append to, one line per
// compiled function: "START SIZE name", hex without 0x. The CPU profiler names the user
// addresses the ELF symbolizer could not name (anonymous executable memory, memfd code) from
// them.
//
// A process's file is read through <host_root>/proc/<pid>/root/tmp (its mount namespace, for
// containers) and named by the pid the process sees in its own pid namespace (the last field
// of NSpid in /proc/<pid>/status). It is looked at at most once per window (BeginWindow): when
// it grew, only the appended complete lines are parsed (JITs append); when it shrank or was
// replaced, it is read again from the start. What was read stays while the process is known,
// so an exited process (its /proc gone) still resolves. Bounded: `max_bytes` read per file,
// `max_entries` symbols per process (later lines are dropped and counted), `max_processes`
// maps (least recently used go first).
//
// Thread contract: not thread-safe; owned by the sampler's thread.
#ifndef WARPSCOPE_AGENT_SOURCES_CPU_PROFILER_PERF_MAPS_H_
#define WARPSCOPE_AGENT_SOURCES_CPU_PROFILER_PERF_MAPS_H_

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "profiling/symbolizer.h"

namespace warpscope::agent::cpu_profiler {

class PerfMaps {
 public:
  struct Options {
    std::string host_root = "/";
    uint64_t max_bytes = 32u << 20;  // of one file
    size_t max_entries = 1u << 17;   // symbols kept per process
    size_t max_processes = 64;
  };
  struct Stats {
    uint64_t reads = 0;            // reads of a file's new part
    uint64_t symbols = 0;          // symbols parsed
    uint64_t dropped_symbols = 0;  // past max_entries
    uint64_t capped_files = 0;     // files larger than max_bytes (read up to it)
  };

  explicit PerfMaps(Options options);

  // Opens a window: each process's file is looked at again (once) at its next Find.
  void BeginWindow() { ++window_; }
  // The symbol of `pid`'s perf map holding `address`, null when none (no file, no entry).
  // Valid until the next call.
  const profiling::PerfMapSymbol* Find(uint32_t pid, uint64_t address);
  // Drops what is known of `pid` (it exited and its last window was built, or it exec'ed).
  void Forget(uint32_t pid) { maps_.erase(pid); }

  size_t size() const { return maps_.size(); }
  const Stats& stats() const { return stats_; }

 private:
  struct Map {
    std::string path;  // resolved at first use
    uint64_t dev = 0;
    uint64_t inode = 0;
    uint64_t consumed = 0;  // bytes of complete lines parsed
    uint64_t checked_window = 0;
    uint64_t last_use = 0;
    bool capped = false;                            // larger than max_bytes
    std::vector<profiling::PerfMapSymbol> symbols;  // sorted by start; later lines last
  };

  Map& Get(uint32_t pid);
  void Refresh(Map& map);

  Options options_;
  Stats stats_;
  uint64_t window_ = 1;
  uint64_t clock_ = 0;
  std::unordered_map<uint32_t, Map> maps_;
};

}  // namespace warpscope::agent::cpu_profiler

#endif  // WARPSCOPE_AGENT_SOURCES_CPU_PROFILER_PERF_MAPS_H_

// SPDX-License-Identifier: Apache-2.0
// What the CPU profiler knows of every process it samples: its executable mappings, its name
// and its threads' names, so that addresses can be unwound and symbolized even after the
// process exited. A process's start state comes from <host_root>/proc/<pid>/{maps,comm,exe}
// when it is first seen, with its namespace pid and container (through a
// model::ProcessResolver, else the namespace pid from its status); mmap/mmap2, comm and
// fork/exit records keep it current.
//
// Exited processes are kept (marked exited) until the window holding their samples was built:
// the sampler calls Collect() with the pids the finished window still needs, and at most
// `max_processes` are kept (exited ones are dropped first, oldest first).
//
// Thread contract: not thread-safe; owned by the sampler's thread.
#ifndef WARPSCOPE_AGENT_SOURCES_CPU_PROFILER_PROCESS_TABLE_H_
#define WARPSCOPE_AGENT_SOURCES_CPU_PROFILER_PROCESS_TABLE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "agent/sources/cpu_profiler/perf_records.h"
#include "model/process.h"
#include "profiling/symbolizer.h"

namespace warpscope::agent::cpu_profiler {

struct ProcessInfo {
  uint32_t pid = 0;
  std::vector<profiling::MapEntry> maps;  // executable mappings, sorted, non-overlapping
  uint64_t maps_generation = 0;           // bumped on every change of `maps`
  std::string comm;                       // the process's name (main thread's comm)
  std::string executable;                 // /proc/<pid>/exe's target, or the exec mapping
  std::map<uint32_t, std::string> thread_names;
  // Its pid in its own (innermost) pid namespace, the last value of NSpid in
  // /proc/<pid>/status; 0 when unknown (the pid is the host's, as perf reports it).
  uint32_t ns_pid = 0;
  std::string container_id;  // from its cgroup path; "" outside containers (or no resolver)
  std::string pod_uid;       // likewise, for a Kubernetes pod
  std::string pod_namespace;  // from the Kubernetes API (--kubernetes), likewise
  std::string pod_name;
  std::string container_name;
  // Late symbolization (an exited process's files may be unreachable when its window is
  // built): the maps_generation the symbolizer holds, and which of `maps` it has parsed.
  std::optional<uint64_t> symbols_generation;
  std::vector<bool> symbols_parsed;
  bool exited = false;
  bool seeded = false;      // /proc was read (or found gone) for it
  uint64_t last_touch = 0;  // for eviction
};

class ProcessTable {
 public:
  struct Stats {
    uint64_t seeded = 0;       // processes read from /proc
    uint64_t seed_failed = 0;  // /proc/<pid> gone or unreadable when first seen
    uint64_t evicted = 0;
  };

  // `identities` (may be null, must outlive the table) names a process's namespace pid and
  // container at its first sight; without it the namespace pid comes from /proc/<pid>/status.
  explicit ProcessTable(std::string host_root = "/", size_t max_processes = 4096,
                        model::ProcessResolver* identities = nullptr);

  // The process, read from /proc the first time it is asked for (an unreadable /proc still
  // gives an entry, filled by records). Records alone never read /proc: most processes of a
  // busy host map files and exit without ever being sampled.
  ProcessInfo& Get(uint32_t pid);
  // Null when unknown.
  const ProcessInfo* Find(uint32_t pid) const;

  void Apply(const MmapRecord& record);
  void Apply(const CommRecord& record);
  void Apply(const TaskRecord& record);

  // Drops exited processes that are not in `keep`, then the oldest beyond max_processes.
  // Returns the pids dropped (their caches elsewhere can go too).
  std::vector<uint32_t> Collect(const std::set<uint32_t>& keep);

  size_t size() const { return processes_.size(); }
  const Stats& stats() const { return stats_; }

 private:
  void Seed(ProcessInfo& process);
  ProcessInfo& Track(uint32_t pid);  // without reading /proc
  std::string ThreadName(uint32_t pid, uint32_t tid) const;

  std::string host_root_;
  size_t max_processes_;
  model::ProcessResolver* identities_;
  uint64_t clock_ = 0;
  Stats stats_;
  std::unordered_map<uint32_t, ProcessInfo> processes_;
};

// Inserts `entry` into sorted, non-overlapping `maps`, cutting away what it overlaps (a new
// mapping replaces the old one over its range, as mmap(MAP_FIXED) does).
void InsertMapping(std::vector<profiling::MapEntry>& maps, const profiling::MapEntry& entry);

}  // namespace warpscope::agent::cpu_profiler

#endif  // WARPSCOPE_AGENT_SOURCES_CPU_PROFILER_PROCESS_TABLE_H_

// SPDX-License-Identifier: Apache-2.0
// The CPU sampler: opens the sampling events (one per online CPU for every process, or, when
// the kernel refuses system-wide sampling, one per thread of the processes the agent may
// profile), and on a thread of its own drains their rings, tracks processes, unwinds each
// sample and aggregates it into the open window. FinishWindow() closes the window: the thread
// symbolizes it and builds one profile per process, then fulfils the future.
//
// Reading order: each wakeup drains every ring and applies mmap/comm/task records before the
// samples read with them, so a library mapped on one CPU is known to a sample taken on another.
//
// Privileges (Start): a PermissionDenied on a per-CPU event logs what the kernel refused and
// the remedy (perf_event_paranoid, CAP_PERFMON/CAP_SYS_ADMIN) and falls back to per-process
// events (one per thread) for the selected pids, or every process of the agent's effective uid,
// looked for again at every window (new processes and threads join then); when the kernel also
// refuses kernel frames (perf_event_paranoid >= 2), those events sample user space only. Start
// fails only when not a single event opens.
//
// Thread contract: Start, FinishWindow, SetPidFilter, stats and Stop from any one thread (the
// agent main sequence); everything else runs on the sampler's thread.
#ifndef WARPSCOPE_AGENT_SOURCES_CPU_PROFILER_CPU_SAMPLER_H_
#define WARPSCOPE_AGENT_SOURCES_CPU_PROFILER_CPU_SAMPLER_H_

#include <atomic>
#include <condition_variable>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "agent/sources/cpu_profiler/perf_api.h"
#include "agent/sources/cpu_profiler/python_stack_source.h"
#include "base/status.h"
#include "model/process.h"
#include "profiling/window_profile.h"

namespace warpscope::agent::cpu_profiler {

class CpuSampler {
 public:
  struct Options {
    SamplingConfig sampling;
    size_t ring_pages = 128;  // per event, a power of two: 512 KiB with 4 KiB pages
    std::string host_root = "/";
    profiling::ProfileFormats formats;
    // Only these processes (from the start); nullopt: every process. SetPidFilter changes it.
    std::optional<std::set<uint32_t>> pids;
    // With `pids`: a process forked by a selected one is selected too, from its fork record on
    // (`warpscope profile` follows its command's process tree this way).
    bool follow_children = false;
    size_t max_processes = 4096;        // tracked (mappings, names)
    size_t max_unwind_processes = 256;  // with a Dwfl kept
    size_t max_fallback_events = 1024;  // per-thread events in the fallback
    // Who a sampled process is inside its container (model::ProcessInfo::container_pid,
    // container_id, pod_uid), asked once, at its first sample, on the sampler's thread: an
    // instance of its own (the agent passes a ProcfsProcessResolver). Null: the namespace pid
    // from /proc/<pid>/status only, no container.
    std::shared_ptr<model::ProcessResolver> identities;
  };
  struct Stats {
    bool system_wide = false;
    bool kernel_frames = true;
    size_t events = 0;
    uint64_t samples = 0;      // aggregated into windows
    uint64_t filtered = 0;     // of processes not selected
    uint64_t lost = 0;         // records the kernel dropped (ring full)
    uint64_t bad_records = 0;  // records that did not parse
    uint64_t truncated = 0;    // user stacks that ended in an "unwinding stopped" marker
    uint64_t windows = 0;
    uint64_t unwind_ns = 0;  // time spent unwinding, for the cost per sample
    std::map<std::string, uint64_t> truncated_by_binary;  // by the binary's base name
    PythonStackStats python;                              // the PythonStackSource's counters
  };

  // `api` and `python` must outlive the sampler.
  [[nodiscard]] static base::Result<std::unique_ptr<CpuSampler>> Start(Options options,
                                                                       PerfEventApi& api,
                                                                       PythonStackSource& python);
  ~CpuSampler();
  CpuSampler(const CpuSampler&) = delete;
  CpuSampler& operator=(const CpuSampler&) = delete;

  // Profiles of the window [start_ns, end_ns) (realtime), one per process with samples.
  std::future<std::vector<profiling::WindowProfile>> FinishWindow(int64_t start_ns, int64_t end_ns);
  // nullopt: every process.
  void SetPidFilter(std::optional<std::set<uint32_t>> pids);
  Stats stats() const;
  // Joins the thread; windows not yet built are built first. Idempotent.
  void Stop();

  // The message and remedy logged when system-wide sampling is refused (for tests and docs).
  static std::string PrivilegeMessage(const std::string& host_root, const base::Status& refused);

 private:
  struct State;
  explicit CpuSampler(std::unique_ptr<State> state);
  void Loop();
  void Wake();

  std::unique_ptr<State> state_;
  std::thread thread_;
};

}  // namespace warpscope::agent::cpu_profiler

#endif  // WARPSCOPE_AGENT_SOURCES_CPU_PROFILER_CPU_SAMPLER_H_

// SPDX-License-Identifier: Apache-2.0
// Aggregates what injected processes report during one export window into one profile per
// process, weighted by GPU time, launches and PC samples.
//
// Every stack reads, root to leaf:
//   executable -> Python frames (outermost first) -> native frames (outermost first)
//     -> launch API ("cudaLaunchKernel") -> kernel (demangled)
//     [-> SASS instruction "[sass] 0x0040 FFMA R5, R2, R3, R4" -> "[stall] long_scoreboard"]
// GPU time and launch totals are exact: every kernel the library reported, individually or in
// its aggregates (see AggregateMode for how they combine), is in the profile once. Kernels
// whose launch was not sampled (not admitted by the rate limiter: records without a stack and
// what the library only aggregated) are estimated (launch_estimator.h): per (kernel, device,
// stream), their launches are split over the window's sampled launch sites of that kernel
// (same device and stream when there are any; graph kernels to graph launches) in proportion
// to the sites' sampled launches, and their GPU time in proportion to the sites' sampled GPU
// time (largest remainder: integers, exact totals). The estimated part of a site is a sample
// of its own, with the site's stack and NVTX label, the pool's device and stream, and the
// string label "attribution" = "estimated"; measured samples have no "attribution" label. A
// kernel not sampled in the window but sampled by the process in the last
// Options::estimate_history_ns goes to those earlier sites (weights halving every
// estimate_half_life_ns; bounded), labelled "attribution" = "estimated_history", without an
// NVTX label. Only a kernel sampled neither now nor recently sits under
// "executable -> [unsampled launch site] -> kernel". PC samples carry no launch (continuous
// sampling), so each (function, PC, stall) count is split over the window's samples of that
// kernel (measured, estimated and unsampled) in proportion to their GPU time (largest
// remainder), keeping their labels; a kernel with no GPU time in the window gets
// "executable -> [unattributed PC samples] -> kernel -> ...".
//
// Memory copies and memsets add GPU time under "executable -> [memcpy HtoD]" (or "[memcpy DtoH]",
// "[memset]", ...): they have no launch stack (the library samples kernel launches only). They
// count in gpu_time, not in launches (which stays the number of kernel executions), so the
// gpu_time total is all the GPU work the process did and the sample types stay the three below
// (a fourth type would make profiles of older and newer agents unmergeable on the server).
//
// Sample types: gpu_time/nanoseconds (default), launches/count, pc_samples/count. Sample
// labels (numeric): device, stream, pid (PC samples that were not attributed have pid only).
// String label "attribution" on estimated parts (above). String label "nvtx": on kernel samples
// (and their estimated parts and the PC samples split over them) whose launch was sampled, the
// innermost NVTX range of the launching thread that contains the launch time
// (start <= launch < end; markers, with start == end, contain nothing). A range labels kernels
// only once it has arrived: ranges are reported when they end, so a kernel built into a window
// before its enclosing range arrived has no label. Ranges are kept for
// Options::nvtx_history_ns past their end (and at most max_nvtx_ranges_per_process), so a
// range that arrived in an earlier window still labels later kernels.
//
// Outputs: the pprof, the folded stacks and the trace are each built only when Options::formats
// asks for it; the totals and statistics are computed in any case.
//
// Trace (trace_json): kernels and memory copies/memsets as complete events on their GPU
// (device, stream) tracks, launch API slices and NVTX ranges on the launching CPU thread's track,
// flow arrows from launch to kernel. At most max_trace_kernels events per process and window are
// drawn, NVTX ranges first, then kernels, then copies.
//
// Thread contract: not thread-safe; one sequence feeds and finishes windows. Interned stacks,
// process descriptions, counters and the sampled-site history persist across windows until
// ForgetProcess(); kernels,
// aggregates and PC samples belong to the current window and are cleared by FinishWindow().
#ifndef WARPSCOPE_AGENT_SOURCES_CUDA_PROFILER_PROFILE_BUILDER_H_
#define WARPSCOPE_AGENT_SOURCES_CUDA_PROFILER_PROFILE_BUILDER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "agent/sources/cuda_profiler/profile_input.h"
#include "agent/sources/cuda_profiler/runtime_metrics.h"
#include "model/sample_sink.h"
#include "profiling/sass_disassembly.h"
#include "profiling/symbolizer.h"
#include "profiling/window_profile.h"

namespace warpscope::agent::cuda_profiler {

struct ProcessState;  // process_window.h
class KernelNames;    // process_window.h

class ProfileBuilder {
 public:
  // What KernelAggregate records cover.
  enum class AggregateMode {
    // Every kernel of the window, also those reported as KernelActivity (the injected library's
    // behaviour): the "[unsampled launch site]" gets the aggregate minus the activities of the
    // same (kernel, device, stream), so totals equal the aggregates.
    kTotals,
    // Only kernels not reported as KernelActivity: totals are activities + aggregates.
    kDisjoint,
  };

  struct Options {
    AggregateMode aggregate_mode = AggregateMode::kTotals;
    // Innermost native frames in modules whose file name starts with one of these are the
    // profiler's own (callback, CUPTI, driver internals below the launch API) and are dropped.
    std::vector<std::string> drop_module_prefixes = {"libwarpscope_cupti", "libcupti"};
    size_t max_stacks_per_process = 200000;  // interned stacks kept; beyond: "[stack evicted]"
    // Events (kernels, copies, NVTX ranges) drawn in one window's trace per process.
    size_t max_trace_kernels = 200000;
    // The outputs FinishWindow builds (the union of what the profile exporters write).
    profiling::ProfileFormats formats = profiling::ProfileFormats::All();
    // NVTX ranges are kept for labelling kernels until this long after they ended (kernel
    // records may arrive later than the range that contains their launch), and at most this
    // many per process (oldest arrival dropped first).
    int64_t nvtx_history_ns = 120'000'000'000;
    size_t max_nvtx_ranges_per_process = 100000;
    // Unsampled launches of a kernel not sampled in the window go to the sites it was sampled
    // at in earlier windows (weights halving every estimate_half_life_ns) for this long after
    // its last sampled launch; 0 turns that off. At most max_estimate_kernels kernels and
    // max_estimate_sites_per_kernel sites each per process are remembered.
    int64_t estimate_history_ns = 300'000'000'000;
    int64_t estimate_half_life_ns = 60'000'000'000;
    size_t max_estimate_kernels = 4096;
    size_t max_estimate_sites_per_kernel = 8;
  };

  struct Stats {
    uint64_t windows = 0;
    uint64_t kernels = 0;                // activities + aggregated counts
    uint64_t kernels_without_stack = 0;  // activities with no stack hash
    uint64_t unknown_stack_hashes = 0;   // per window: distinct hashes never received
    uint64_t pc_samples = 0;
    uint64_t pc_samples_unattributed = 0;
    uint64_t trace_kernels_dropped = 0;    // over max_trace_kernels
    uint64_t trace_events_dropped = 0;     // copies and NVTX ranges over max_trace_kernels
    uint64_t memory_ops = 0;               // memory copies and memsets profiled
    uint64_t nvtx_ranges = 0;              // NVTX ranges received
    uint64_t nvtx_ranges_evicted = 0;      // over max_nvtx_ranges_per_process
    uint64_t kernels_nvtx_labeled = 0;     // kernel activities given an nvtx label
    uint64_t unknown_process_records = 0;  // records for a pid never announced (process added)
    // kTotals: activities exceeded their aggregate (records of one kernel split across windows);
    // the aggregate's part is then clamped at 0.
    uint64_t aggregate_shortfalls = 0;
    // Kernel executions of unsampled launches given to the window's sampled sites, to sites of
    // earlier windows, and left under "[unsampled launch site]".
    uint64_t launches_estimated = 0;
    uint64_t launches_estimated_history = 0;
    uint64_t launches_unattributed = 0;
  };

  // `symbolizer` may be null: native frames then read "[unknown] 0x<address>". It must outlive
  // this builder.
  ProfileBuilder(profiling::Symbolizer* symbolizer, Options options);
  ~ProfileBuilder();
  ProfileBuilder(const ProfileBuilder&) = delete;
  ProfileBuilder& operator=(const ProfileBuilder&) = delete;

  void AddProcess(const ProcessDesc& process);
  void AddStack(int32_t pid, InternedStack stack);
  void AddKernel(int32_t pid, KernelActivity kernel);
  void AddKernelAggregate(int32_t pid, const KernelAggregate& aggregate);
  void AddPcSample(int32_t pid, const PcSample& sample);
  // A memory copy or memset of the current window.
  void AddMemoryActivity(int32_t pid, MemoryActivity activity);
  // An NVTX range: drawn in the next window trace that is built for the process, and kept for
  // labelling kernels (see the class comment).
  void AddNvtxRange(int32_t pid, NvtxRange range);
  // Disassembly for PC-sample frames; kept across windows.
  void AddSass(const profiling::SassMap& sass);
  void UpdateCounters(int32_t pid, const ProcessCounters& counters);
  // The library's latest allocation totals (runtime metrics only; they make no window).
  void UpdateDeviceMemory(int32_t pid, std::vector<DeviceMemoryTotals> totals);

  // Builds the window [start_ns, end_ns) of every process that reported kernels, aggregates,
  // memory copies/memsets or PC samples in it (NVTX ranges alone do not make a window), and
  // clears the window's data. Processes are in pid order.
  std::vector<profiling::WindowProfile> FinishWindow(int64_t start_ns, int64_t end_ns);

  // Writes the self-metrics and runtime metrics (cuda_profiler_metrics.h, runtime_metrics.h) of
  // every known process, with its entity.
  void EmitSelfMetrics(model::SampleSink& sink) const;

  // Forgets a process that exited (its stacks, counters and symbolizer state).
  void ForgetProcess(int32_t pid);

  const Stats& stats() const { return stats_; }

 private:
  ProcessState& State(int32_t pid);

  profiling::Symbolizer* symbolizer_;
  Options options_;
  Stats stats_;
  std::map<int32_t, std::unique_ptr<ProcessState>> processes_;
  std::map<int32_t, RuntimeMetrics> runtime_;  // a pid's entry lives as long as its state
  profiling::SassMap sass_;
  std::unique_ptr<KernelNames> kernel_names_;
};

}  // namespace warpscope::agent::cuda_profiler

#endif  // WARPSCOPE_AGENT_SOURCES_CUDA_PROFILER_PROFILE_BUILDER_H_

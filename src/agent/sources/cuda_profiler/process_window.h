// SPDX-License-Identifier: Apache-2.0
// ProfileBuilder's insides (profile_builder.h has the contract): what it keeps per process, and
// the phases that turn one process's window into its outputs. Private to this folder.
//
// A window is built in this order (ProcessWindow::Build):
//   1. launch stacks: each sampled stack resolved once for the process's life (Python frames,
//      then native frames symbolized, the profiler's own frames dropped);
//   2. NVTX labels: the innermost range of the launching thread containing each launch;
//   3. kernels: GPU time and launches per sampled launch site (stack, launch API, kernel,
//      device, stream, NVTX range); kernel records without a stack go to the unsampled pools
//      (kernel, device, stream, in a graph or not);
//   4. aggregates: what the library only counted (minus the records, AggregateMode) joins the
//      pools;
//   5. estimates (launch_estimator.h): each pool split over the window's sampled sites of its
//      kernel, else over the process's sites of earlier windows (LaunchHistory), else under
//      "[unsampled launch site]";
//   6. memory copies and memsets;
//   7. PC samples, split over the kernel's samples (measured, estimated, unsampled) by GPU time;
//   8. outputs: pprof and folded stacks (profiling/), the trace (gpu_trace.h), each only when
//      asked for; then the window's sampled sites join the history.
#ifndef WARPSCOPE_AGENT_SOURCES_CUDA_PROFILER_PROCESS_WINDOW_H_
#define WARPSCOPE_AGENT_SOURCES_CUDA_PROFILER_PROCESS_WINDOW_H_

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "agent/sources/cuda_profiler/launch_estimator.h"
#include "agent/sources/cuda_profiler/profile_builder.h"
#include "agent/sources/cuda_profiler/profile_input.h"
#include "profiling/profile.h"
#include "profiling/window_profile.h"

namespace warpscope::agent::cuda_profiler {

// Everything the builder knows about one injected process.
struct ProcessState {
  struct Stack {
    InternedStack raw;
    bool resolved = false;
    std::vector<profiling::Frame> frames;  // Python then native, root first
  };
  ProcessDesc desc;
  std::unordered_map<uint64_t, Stack> stacks;
  // The current window.
  std::vector<KernelActivity> kernels;
  std::vector<KernelAggregate> aggregates;
  std::vector<PcSample> pc_samples;
  std::vector<MemoryActivity> memory;
  // NVTX ranges: arrival order, for labels; and those not drawn in a trace yet.
  std::deque<NvtxRange> nvtx_history;
  std::vector<NvtxRange> nvtx_undrawn;
  // Self-metrics.
  ProcessCounters counters;
  uint64_t overhead_ns_at_window_start = 0;
  std::optional<double> overhead_ratio;
  uint64_t kernels_profiled = 0;
  uint64_t unresolved_frames = 0;
  // Sampled launch sites of earlier windows, for kernels a window did not sample.
  LaunchHistory launch_history;

  bool HasWindowData() const {
    return !kernels.empty() || !aggregates.empty() || !pc_samples.empty() || !memory.empty();
  }
  void ClearWindow() {
    kernels.clear();
    aggregates.clear();
    pc_samples.clear();
    memory.clear();
    nvtx_undrawn.clear();
  }
};

// Demangled kernel names, cached across windows (bounded).
class KernelNames {
 public:
  const std::string& Demangled(const std::string& mangled);

 private:
  std::unordered_map<std::string, std::string> demangled_;
};

// "pid 42" when the executable is unknown, else its base name.
std::string ProcessFrameName(const ProcessDesc& desc, int32_t pid);

// Builds one process's window; lives for one FinishWindow call.
class ProcessWindow {
 public:
  ProcessWindow(int32_t pid, ProcessState& state, const ProfileBuilder::Options& options,
                profiling::Symbolizer* symbolizer, KernelNames& names,
                const profiling::SassMap& sass, ProfileBuilder::Stats& stats);

  // The window [start_ns, end_ns) with the formats of options.formats; does not clear `state`.
  profiling::WindowProfile Build(int64_t start_ns, int64_t end_ns);

 private:
  // Site of a sampled kernel activity: what its GPU time and launches are summed under.
  struct SiteKey {
    uint64_t stack_hash;
    uint32_t launch;  // frame id
    uint32_t kernel;
    uint32_t device;
    uint32_t stream;
    uint32_t nvtx;  // index into nvtx_names_, 0: none
    bool operator==(const SiteKey&) const = default;
  };
  struct SiteKeyHash {
    size_t operator()(const SiteKey& k) const;
  };

  // What a sampled site needs beyond SampledSite: its sample, and its key for the history.
  struct SiteInfo {
    size_t sample = 0;
    uint64_t stack_hash = 0;
    std::string_view launch_api;
    uint32_t nvtx = 0;
  };

  uint32_t Marker(std::string_view name);
  uint32_t KernelFrame(const std::string& mangled);
  uint32_t LaunchFrame(std::string_view api);
  // Root-first frame ids of a sampled launch stack, the process frame included.
  const std::vector<uint32_t>& LaunchStack(uint64_t stack_hash);
  void ResolveStack(ProcessState::Stack& stack);
  // The nvtx_names_ index of each kernel's innermost enclosing range of its thread (0: none).
  std::vector<uint32_t> NvtxLabels();
  uint32_t NvtxLabel(const std::string& name);
  std::vector<profiling::Label> Labels(int64_t device, int64_t stream, uint32_t nvtx,
                                       std::string_view attribution = {}) const;
  size_t AddSample(const std::vector<uint32_t>& stack, int64_t gpu_ns, int64_t launches,
                   int64_t pc_samples, const std::vector<profiling::Label>& labels);
  void AddKernels(const std::vector<uint32_t>& nvtx);
  void AddToPool(uint32_t kernel, uint32_t device, uint32_t stream, LaunchKind kind,
                 uint64_t gpu_ns, uint64_t launches);
  void AddAggregates();
  void AddEstimates(int64_t start_ns);
  // Adds a kernel sample (measured or estimated) that PC samples may be split over.
  size_t AddKernelSample(const std::vector<uint32_t>& stack, uint64_t gpu_ns, uint64_t launches,
                         const std::vector<profiling::Label>& labels, uint32_t kernel);
  bool AddHistoryEstimate(const UnsampledPool& pool, int64_t start_ns);
  void UpdateHistory(int64_t end_ns);
  void AddMemory();
  void AddPcSamples();
  void WriteOutputs(int64_t start_ns, int64_t end_ns);

  const int32_t pid_;
  ProcessState& state_;
  const ProfileBuilder::Options& options_;
  profiling::Symbolizer* symbolizer_;
  KernelNames& names_;
  const profiling::SassMap& sass_;
  ProfileBuilder::Stats& stats_;

  profiling::ProfileAggregator profile_;
  profiling::WindowProfile out_;
  uint32_t process_frame_ = 0;
  std::vector<uint32_t> unsampled_stack_;  // executable -> [unsampled launch site]
  std::unordered_map<uint64_t, std::vector<uint32_t>> window_stacks_;  // stack hash -> ids
  std::unordered_map<std::string_view, uint32_t> launch_ids_;          // launch API -> frame
  std::unordered_map<std::string_view, uint32_t> kernel_ids_;          // mangled -> frame
  std::unordered_map<uint32_t, std::string_view> kernel_mangled_;      // frame -> mangled
  std::vector<std::string> nvtx_names_{""};
  std::unordered_map<std::string, uint32_t> nvtx_ids_;
  // kTotals: what individual records already account for, per (kernel frame, device, stream).
  std::map<std::tuple<uint32_t, uint32_t, uint32_t>, std::pair<uint64_t, uint64_t>> covered_;
  // The window's sampled sites (SiteInfo alongside) and unsampled pools, for the estimator.
  std::vector<SampledSite> sampled_sites_;
  std::vector<SiteInfo> site_info_;
  std::vector<UnsampledPool> pools_;
  std::map<std::tuple<uint32_t, uint32_t, uint32_t, LaunchKind>, size_t> pool_ids_;
  // mangled kernel -> sample index -> GPU ns: the launch sites PC samples are split over.
  std::unordered_map<std::string_view, std::map<size_t, uint64_t>> site_time_;
};

}  // namespace warpscope::agent::cuda_profiler

#endif  // WARPSCOPE_AGENT_SOURCES_CUDA_PROFILER_PROCESS_WINDOW_H_

// SPDX-License-Identifier: Apache-2.0
// The launch-site estimator: gives the GPU time and launch counts of kernels whose launch was
// not sampled (records without a stack, and what the library only aggregated) to the launch
// sites sampled for the same kernel. Private to this folder; ProcessWindow (process_window.h)
// feeds it one process's window, profile_builder.h states what the profile shows.
//
// Weights. The rate limiter admits launches regardless of what the kernel does, so when the
// launches of a kernel are admitted with one probability p, each site's sampled launches are
// p times its launches and its sampled GPU time p times its GPU time. The unsampled launches
// are therefore split in proportion to the sites' sampled launches, and the unsampled GPU time
// in proportion to their sampled GPU time (by launches when that is all 0): the ratio estimate
// of each site's total. Splitting GPU time by launches instead would be wrong whenever call
// sites run one kernel on different sizes (a GEMM called from several layers). Shares are
// integers with exact totals (largest remainder).
//
// Candidates for a pool of unsampled work (kernel, device, stream, graph or not): the sampled
// sites of the kernel on the same device and stream, else those of the kernel anywhere; of
// those, the graph sites for kernels known to run in a graph and the direct ones for kernels
// known not to, when there are any. Pools of a kernel with no sampled site in the window are
// left to the caller (LaunchHistory, then the "[unsampled launch site]" marker).
#ifndef WARPSCOPE_AGENT_SOURCES_CUDA_PROFILER_LAUNCH_ESTIMATOR_H_
#define WARPSCOPE_AGENT_SOURCES_CUDA_PROFILER_LAUNCH_ESTIMATOR_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace warpscope::agent::cuda_profiler {

// Splits `count` over `weights` in proportion, as integers summing exactly to `count` (all 0
// when every weight is 0). The leftover goes to the largest remainders; on ties the heavier
// weight, then the earlier one.
std::vector<uint64_t> SplitProportionally(uint64_t count, const std::vector<uint64_t>& weights);

// How the launches behind a kernel record or aggregate were made, when known: a kernel record
// says whether the kernel ran inside a CUDA graph (its graph id); an aggregate does not.
enum class LaunchKind : uint8_t { kUnknown, kDirect, kGraph };

// One sampled launch site of the window: the kernel executions of one (stack, launch API,
// kernel, device, stream, NVTX range). `kernel` is any id naming the kernel.
struct SampledSite {
  uint32_t kernel = 0;
  uint32_t device = 0;
  uint32_t stream = 0;
  LaunchKind kind = LaunchKind::kDirect;  // kDirect or kGraph
  uint64_t launches = 0;
  uint64_t gpu_ns = 0;
};

// Kernel executions of one (kernel, device, stream, kind) whose launches were not sampled.
struct UnsampledPool {
  uint32_t kernel = 0;
  uint32_t device = 0;
  uint32_t stream = 0;
  LaunchKind kind = LaunchKind::kUnknown;
  uint64_t launches = 0;
  uint64_t gpu_ns = 0;
};

// The part of pools[pool] given to sites[site].
struct EstimatedShare {
  size_t pool = 0;
  size_t site = 0;
  uint64_t launches = 0;
  uint64_t gpu_ns = 0;
};

struct WindowEstimate {
  std::vector<EstimatedShare> shares;  // pool order, then site order; no empty share
  std::vector<size_t> unmatched;       // pools whose kernel has no sampled site
};

// Splits every pool over its candidate sites (the header comment). O(pools x sites of a
// kernel).
WindowEstimate EstimateWindow(const std::vector<SampledSite>& sites,
                              const std::vector<UnsampledPool>& pools);

// Of `candidates` (indices into `kinds`), those whose kind is `want`, when `want` is known and
// one matches; else all of them.
std::vector<size_t> PreferKind(const std::vector<size_t>& candidates,
                               const std::vector<LaunchKind>& kinds, LaunchKind want);

// Splits `launches` by `launch_weights` and `gpu_ns` by `ns_weights` (by `launch_weights` when
// every ns weight is 0), into `launch_shares` and `ns_shares`.
void SplitPool(uint64_t launches, uint64_t gpu_ns, const std::vector<uint64_t>& launch_weights,
               const std::vector<uint64_t>& ns_weights, std::vector<uint64_t>* launch_shares,
               std::vector<uint64_t>* ns_shares);

// A process's sampled launch sites of earlier windows, per kernel, for kernels that were not
// sampled in the current window. Each window's sampled launches and GPU time are added to the
// kernel's sites after the older weights decayed by half per half_life_ns; a kernel not
// sampled for history_ns is forgotten. Bounded: the heaviest max_sites_per_kernel sites of a
// kernel, the max_kernels most recently sampled kernels. Not thread-safe.
class LaunchHistory {
 public:
  struct Limits {
    int64_t history_ns = 300'000'000'000;
    int64_t half_life_ns = 60'000'000'000;
    size_t max_kernels = 4096;
    size_t max_sites_per_kernel = 8;
  };
  struct Site {
    uint64_t stack_hash = 0;
    std::string launch_api;  // as in the kernel records ("" when not reported)
    LaunchKind kind = LaunchKind::kDirect;
    double launches = 0;
    double gpu_ns = 0;
  };

  // Adds one window's sampled sites of `kernel` (mangled), each (stack, API, kind) once, at
  // `end_ns`, the window's end.
  void Update(const std::string& kernel, const std::vector<Site>& window_sites, int64_t end_ns,
              const Limits& limits);
  // Forgets kernels last sampled before now_ns - history_ns, then the oldest beyond
  // max_kernels.
  void Prune(int64_t now_ns, const Limits& limits);
  // The kernel's sites when it was sampled within history_ns before `now_ns`, else null.
  const std::vector<Site>* Find(const std::string& kernel, int64_t now_ns,
                                const Limits& limits) const;
  size_t kernels() const { return kernels_.size(); }

 private:
  struct Kernel {
    std::vector<Site> sites;
    int64_t updated_ns = 0;
  };
  std::unordered_map<std::string, Kernel> kernels_;
};

// Integer weights for SplitProportionally from non-negative doubles (the largest becomes
// 2^32; relative order and ratios kept to about 1e-9).
std::vector<uint64_t> IntegerWeights(const std::vector<double>& weights);

}  // namespace warpscope::agent::cuda_profiler

#endif  // WARPSCOPE_AGENT_SOURCES_CUDA_PROFILER_LAUNCH_ESTIMATOR_H_

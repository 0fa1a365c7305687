// SPDX-License-Identifier: Apache-2.0
// Joins sampled launches (correlation id -> stack) with kernel activity records, whichever arrives
// first, with bounded pending maps. Used by the flusher thread only (not thread-safe).
//
// - A launch waits for its kernels for `launch_ttl_ticks` Tick()s; a graph launch, or a
//   cooperative multi-device launch, matches every kernel with its correlation id until it expires
//   (graph fan-out); any other launch is removed when its first kernel matches.
// - A kernel whose launch is unknown waits only when its correlation id is above `launch_watermark`
//   (the highest correlation id any thread has entered a launch callback with): then its launch may
//   still be in a ring. Otherwise it was not sampled and is returned at once without a stack.
//   Waiting kernels that expire after `kernel_ttl_ticks` are returned unjoined.
// - A second launch with the same correlation id (the nested driver call of a runtime launch)
//   keeps the first; a kernel record seen twice (same correlation, start and end) is dropped.
// - Each map is capped; the oldest entry is evicted (and counted) when full.
#ifndef WARPSCOPE_CUPTI_INJECT_CORRELATION_JOIN_H_
#define WARPSCOPE_CUPTI_INJECT_CORRELATION_JOIN_H_

#include <cstdint>
#include <deque>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "cupti/wire.h"

namespace warpscope::cupti_inject {

namespace wire = ::warpscope::cupti::wire;

struct JoinOptions {
  size_t max_launches = 32768;
  size_t max_kernels = 16384;
  size_t max_recent_kernels = 65536;  // for duplicate detection
  uint32_t launch_ttl_ticks = 10;
  uint32_t kernel_ttl_ticks = 2;
};

struct JoinStats {
  uint64_t joined = 0;
  uint64_t unjoined = 0;  // kernels returned without a stack
  uint64_t duplicate_launches = 0;
  uint64_t duplicate_kernels = 0;
  uint64_t evicted_launches = 0;
  uint64_t evicted_kernels = 0;
};

class CorrelationJoiner {
 public:
  explicit CorrelationJoiner(JoinOptions options = {}) : options_(options) {}

  // A sampled launch. Kernels that were waiting for it are appended to `out` with its stack,
  // thread, API (domain, cbid) and CPU timestamp.
  void OnLaunch(uint32_t correlation_id, uint64_t stack_hash, uint32_t tid, bool multi_kernel,
                std::vector<wire::KernelActivity>* out, uint32_t domain = 0, uint32_t cbid = 0,
                uint64_t launch_ns = 0);

  // A kernel record. Appended to `out` now (joined or known unsampled), or kept waiting.
  void OnKernel(const wire::KernelActivity& kernel, uint32_t launch_watermark,
                std::vector<wire::KernelActivity>* out);

  // Ages the maps; kernels whose wait ended are appended to `out` without a stack.
  void Tick(std::vector<wire::KernelActivity>* out);

  // Forgets everything (after fork, in the child).
  void Clear();

  const JoinStats& stats() const { return stats_; }
  size_t pending_launches() const { return launches_.size(); }
  size_t pending_kernels() const { return kernels_.size(); }

 private:
  struct Launch {
    uint64_t stack_hash;
    uint32_t tid;
    uint32_t domain;
    uint32_t cbid;
    uint64_t launch_ns;
    bool multi_kernel;
    uint64_t tick;
    void Fill(wire::KernelActivity* k) const {
      k->stack_hash = stack_hash;
      k->launch_tid = tid;
      k->launch_domain = domain;
      k->launch_cbid = cbid;
      k->launch_ns = launch_ns;
    }
  };
  struct Pending {
    std::vector<wire::KernelActivity> kernels;
    uint64_t tick;
  };
  bool IsDuplicate(const wire::KernelActivity& k);
  void EvictLaunches();
  void EvictKernels(std::vector<wire::KernelActivity>* out);

  JoinOptions options_;
  JoinStats stats_;
  uint64_t tick_ = 0;
  std::unordered_map<uint32_t, Launch> launches_;
  std::deque<std::pair<uint32_t, uint64_t>> launch_order_;  // (correlation, tick) by insertion
  std::unordered_map<uint32_t, Pending> kernels_;
  std::deque<std::pair<uint32_t, uint64_t>> kernel_order_;
  size_t kernel_count_ = 0;
  std::unordered_set<uint64_t> recent_;
  std::deque<uint64_t> recent_order_;
};

}  // namespace warpscope::cupti_inject

#endif  // WARPSCOPE_CUPTI_INJECT_CORRELATION_JOIN_H_

// SPDX-License-Identifier: Apache-2.0
// The CUDA runtime layer of one injected process as metrics (cuda_profiler_metrics.h, "runtime"):
// kernel executions and GPU kernel time per device, the busy share of each stream over the last
// export window, memcpy bytes and time per device and direction, memsets, and the allocations
// through the CUDA allocator. Fed by ProfileBuilder from the same inputs as the profiles:
//   - kernels: the library's KernelAggregate entries, which cover every kernel (in
//     ProfileBuilder::AggregateMode::kDisjoint also the individual KernelActivity records);
//   - copies and memsets: every MEMCPY / MEMSET record (MemoryActivity);
//   - allocations: the library's DeviceMemory totals (latest wins).
// Counters are totals since the agent first heard of the process; the library's allocation
// totals are its own (since the library started).
//
// Stream busy: the kernel GPU time that arrived for (device, stream) during the window divided by
// the window's wall time, at most 1. The library aggregates kernels per flush period (1 s by
// default) by when their records were processed, not by when they ran, so a window's share is
// exact over a long run and off by up to a flush period's worth at its edges. A stream seen in
// the previous window but not in this one reads 0 once, then its series ends. Bounded: per device
// the max_streams busiest streams of the window get their own series; the others are summed into
// stream "other" (a sum over several streams, so it may exceed 1).
//
// Thread contract: not thread-safe; owned by the ProfileBuilder's sequence.
#ifndef WARPSCOPE_AGENT_SOURCES_CUDA_PROFILER_RUNTIME_METRICS_H_
#define WARPSCOPE_AGENT_SOURCES_CUDA_PROFILER_RUNTIME_METRICS_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "agent/sources/cuda_profiler/profile_input.h"
#include "model/sample_sink.h"

namespace warpscope::agent::cuda_profiler {

// The direction label of a copy kind (MemoryActivity::kind of a memcpy): "H2D", "D2H", "D2D",
// "P2P", "H2H"; CUDA arrays are device memory, so "HtoA" is "H2D", "AtoH" "D2H", and "AtoA",
// "AtoD", "DtoA" are "D2D"; anything else "unknown".
std::string_view CopyDirection(std::string_view copy_kind);

// The stream label of streams beyond RuntimeMetrics::Options::max_streams.
inline constexpr std::string_view kOtherStreams = "other";

class RuntimeMetrics {
 public:
  struct Options {
    size_t max_streams = 16;  // stream busy series per device and process
  };

  RuntimeMetrics() : RuntimeMetrics(Options{}) {}
  explicit RuntimeMetrics(Options options) : options_(options) {}

  void AddKernelAggregate(const KernelAggregate& aggregate);
  void AddKernel(const KernelActivity& kernel);
  void AddMemory(const MemoryActivity& activity);
  void UpdateDeviceMemory(std::vector<DeviceMemoryTotals> totals);

  // Closes the window [start_ns, end_ns): computes the stream busy shares and starts the next.
  void FinishWindow(int64_t start_ns, int64_t end_ns);

  // Writes every runtime metric of the process entity `entity_id`.
  void Emit(model::SampleSink& sink, std::string_view entity_id) const;

  struct StreamBusy {
    uint32_t device = 0;
    std::string stream;  // the stream id, or kOtherStreams
    double ratio = 0;
    bool operator==(const StreamBusy&) const = default;
  };
  // The shares of the last finished window, by (device, stream id; "other" last).
  const std::vector<StreamBusy>& stream_busy() const { return busy_; }

 private:
  struct Totals {
    uint64_t count = 0;
    uint64_t bytes = 0;
    uint64_t ns = 0;
  };
  void AddKernelTime(uint32_t device, uint32_t stream, uint64_t count, uint64_t ns);

  Options options_;
  std::map<uint32_t, Totals> kernels_;                         // device -> launches, GPU ns
  std::map<std::pair<uint32_t, uint32_t>, uint64_t> window_;   // (device, stream) -> ns
  std::map<std::pair<uint32_t, std::string>, Totals> copies_;  // (device, direction)
  std::map<uint32_t, Totals> memsets_;                         // device
  std::vector<DeviceMemoryTotals> device_memory_;
  std::vector<StreamBusy> busy_;
};

}  // namespace warpscope::agent::cuda_profiler

#endif  // WARPSCOPE_AGENT_SOURCES_CUDA_PROFILER_RUNTIME_METRICS_H_

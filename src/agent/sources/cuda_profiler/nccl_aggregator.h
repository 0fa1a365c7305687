// SPDX-License-Identifier: Apache-2.0
// The NCCL profiler plugin's records (libwarpscope_nccl.so, docs/design/nccl.md) aggregated per
// process, communicator, rank and collective into the metrics of nccl_metrics.h.
//
// The listener feeds it what the plugin's connections send: the process (at Hello), its
// communicators (NcclComm), its completed operations (NcclCollective) and its counters (latest
// cumulative values). Counters of operations are totals since the process was first added;
// FinishWindow() closes a window and turns the operations that arrived in it into the window's
// gauges (bus bandwidth, time share, NCCL Inspector's two figures).
//
// Cardinality is bounded per process: the first `max_comms` (communicator, rank) pairs seen get
// series of their own, later ones are summed under comm="other"; the first `max_collectives`
// operation names of a communicator likewise, the rest under collective="other"; at most
// `max_inspector_series` Inspector series a window (message sizes are powers of two), the rest
// are left out and counted (inspector_series_dropped()). Both caps keep counters monotonic: a
// series never moves between "other" and its own.
//
// Thread contract: not thread-safe; owned by the listener thread.
#ifndef WARPSCOPE_AGENT_SOURCES_CUDA_PROFILER_NCCL_AGGREGATOR_H_
#define WARPSCOPE_AGENT_SOURCES_CUDA_PROFILER_NCCL_AGGREGATOR_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>

#include "cupti/wire.h"
#include "model/process.h"
#include "model/sample_sink.h"

namespace warpscope::agent::cuda_profiler {

class NcclAggregator {
 public:
  struct Options {
    size_t max_comms = 16;              // (communicator, rank) series per process
    size_t max_collectives = 16;        // operation names per communicator
    size_t max_inspector_series = 256;  // Inspector series per process and window
    size_t max_known_comms = 1024;      // NcclComm descriptions kept per process
  };

  explicit NcclAggregator(Options options) : options_(options) {}

  // A process announced itself (its pid, start ticks, executable and job go on its entity).
  // Adding a known pid again updates its description and keeps its totals.
  void AddProcess(const model::ProcessInfo& process);
  void AddComm(int32_t pid, const ::warpscope::cupti::wire::NcclComm& comm);
  void AddCollective(int32_t pid, const ::warpscope::cupti::wire::NcclCollective& op);
  // The plugin's cumulative counters; ids it does not send keep their last value.
  void UpdateCounters(int32_t pid, const ::warpscope::cupti::wire::Counters& counters);

  // Closes the window [start_ns, end_ns): its operations become the gauges EmitMetrics writes
  // until the next window.
  void FinishWindow(int64_t start_ns, int64_t end_ns);
  void ForgetProcess(int32_t pid);

  // The process entities and their metrics (nccl_metrics.h).
  void EmitMetrics(model::SampleSink& out) const;

  bool HasProcess(int32_t pid) const { return processes_.contains(pid); }
  uint64_t inspector_series_dropped() const { return inspector_dropped_; }

 private:
  // Sums of the operations of one series.
  struct Sums {
    uint64_t count = 0;
    uint64_t gpu_ns = 0;         // gpu_exec_ns
    uint64_t completion_ns = 0;  // complete - enqueue
    uint64_t exec_ns = 0;        // NcclExecNs (bandwidth's denominator)
    uint64_t bytes = 0;
    uint64_t bus_bytes = 0;
    void Add(const ::warpscope::cupti::wire::NcclCollective& op);
  };
  struct Comm {
    std::string id;  // 16 hex digits, or "other"
    std::string name;
    std::string rank;
    std::string nranks;
    std::map<std::string, Sums> totals;  // by operation name
    std::map<std::string, Sums> window;
    std::map<std::string, Sums> last;  // the last finished window
    std::optional<double> last_share;
  };
  // (collective, message_size, algo_proto, comm_name, nranks, rank)
  using InspectorKey =
      std::tuple<std::string, uint64_t, std::string, std::string, std::string, std::string>;
  struct Process {
    model::ProcessInfo info;
    std::map<std::pair<uint64_t, uint32_t>, ::warpscope::cupti::wire::NcclComm> known;
    std::map<std::pair<uint64_t, uint32_t>, Comm> comms;  // (comm_id, rank); other: {0, ~0u}
    std::map<::warpscope::cupti::wire::CounterId, uint64_t> counters;
    std::map<InspectorKey, Sums> inspector_window;
    std::map<InspectorKey, Sums> inspector_last;
  };

  Comm& CommOf(Process& p, uint64_t comm_id, uint32_t rank);

  Options options_;
  std::map<int32_t, Process> processes_;
  uint64_t inspector_dropped_ = 0;
};

// The message size label of NCCL Inspector's metrics: bytes rounded up to a power of two (0 for 0).
uint64_t MessageSizeBucket(uint64_t bytes);

}  // namespace warpscope::agent::cuda_profiler

#endif  // WARPSCOPE_AGENT_SOURCES_CUDA_PROFILER_NCCL_AGGREGATOR_H_

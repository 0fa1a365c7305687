// SPDX-License-Identifier: Apache-2.0
// Catalog of the NCCL metrics, written by NcclAggregator::EmitMetrics (nccl_aggregator.h) on the
// process entity of each process whose NCCL profiler plugin (libwarpscope_nccl.so) reports to
// the agent (docs/design/nccl.md, "Agent side").
//
// Labels: "comm" the communicator id (16 hex digits; ranks of one communicator share it, on
// every host), "comm_name" NCCL's name for it (may be empty), "rank" and "nranks" this process's
// rank in it and its size, "collective" NCCL's name of the operation ("AllReduce", "AllGather",
// "ReduceScatter", "Broadcast", "Send", "Recv"...). Counters are totals since the agent first
// heard of the process; gauges describe the last finished window (--cuda-profile-interval).
//
// The two NCCL Inspector names (nccl_bus_bandwidth_gbs, nccl_collective_exec_time_microseconds)
// are entries of their own, with Inspector's labels: "message_size" the message bytes rounded up
// to a power of two, "algo_proto" NCCL's algorithm and protocol ("RING_SIMPLE").
#ifndef WARPSCOPE_AGENT_SOURCES_CUDA_PROFILER_NCCL_METRICS_H_
#define WARPSCOPE_AGENT_SOURCES_CUDA_PROFILER_NCCL_METRICS_H_

#include <span>

#include "model/metric.h"

namespace warpscope::agent::nccl_metrics {

// Per communicator, rank and collective.
extern const model::MetricDesc kCollectives;     // counter {operation}
extern const model::MetricDesc kGpuTime;         // counter s
extern const model::MetricDesc kCompletionTime;  // counter s
extern const model::MetricDesc kBytes;           // counter By
extern const model::MetricDesc kBusBytes;        // counter By
extern const model::MetricDesc kBusBandwidth;    // gauge By/s, last window
// Per communicator and rank.
extern const model::MetricDesc kTimeShare;  // gauge 1, last window
// Per process.
extern const model::MetricDesc kRecordsDropped;  // counter {record}, reason
extern const model::MetricDesc kBytesDropped;    // counter By
// NCCL Inspector's Prometheus names, last window.
extern const model::MetricDesc kInspectorBusBandwidth;  // gauge By/s (GB/s in Prometheus)
extern const model::MetricDesc kInspectorExecTime;      // gauge s (µs in Prometheus)

// Every metric above, in declaration order. The pointers are stable for the program's life.
std::span<const model::MetricDesc* const> AllNcclMetrics();

}  // namespace warpscope::agent::nccl_metrics

#endif  // WARPSCOPE_AGENT_SOURCES_CUDA_PROFILER_NCCL_METRICS_H_

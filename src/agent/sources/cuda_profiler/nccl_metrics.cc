// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/cuda_profiler/nccl_metrics.h"

namespace warpscope::agent::nccl_metrics {

using model::EntityKind;
using model::MetricDesc;
using model::MetricKind;

namespace {
constexpr std::string_view kOpLabels = "comm,comm_name,rank,nranks,collective";
constexpr std::string_view kInspectorLabels =
    "collective,message_size,algo_proto,comm_name,nranks,rank";
}  // namespace

const MetricDesc kCollectives{
    .key = "nccl.collectives",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kCounter,
    .unit = "{operation}",
    .help =
        "NCCL operations of this rank that completed (collectives, and point-to-point "
        "operations under collective=\"Send\" or \"Recv\"), as the NCCL profiler plugin "
        "reported them.",
    .prom_name = "warpscope_nccl_collectives_total",
    .otel_name = "warpscope.nccl.collectives",
    .labels = kOpLabels,
};

const MetricDesc kGpuTime{
    .key = "nccl.collective.gpu_time",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kCounter,
    .unit = "s",
    .help =
        "GPU execution time of the rank's NCCL operations, in seconds: from the first kernel "
        "channel's start to the last one's stop, on the GPU timer (operations without "
        "kernel-channel events add nothing).",
    .prom_name = "warpscope_nccl_collective_gpu_seconds_total",
    .otel_name = "warpscope.nccl.collective.gpu_time",
    .labels = kOpLabels,
};

const MetricDesc kCompletionTime{
    .key = "nccl.collective.completion_time",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kCounter,
    .unit = "s",
    .help =
        "Time from enqueue to completion of the rank's NCCL operations, in seconds, on the CPU "
        "clock: from NCCL handing the operation to the plugin to the last child event's stop "
        "(includes waiting for the GPU and for the peers).",
    .prom_name = "warpscope_nccl_collective_completion_seconds_total",
    .otel_name = "warpscope.nccl.collective.completion_time",
    .labels = kOpLabels,
};

const MetricDesc kBytes{
    .key = "nccl.collective.bytes",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kCounter,
    .unit = "By",
    .help =
        "Message bytes of the rank's NCCL operations (count x datatype size, the message of one "
        "rank).",
    .prom_name = "warpscope_nccl_collective_bytes_total",
    .otel_name = "warpscope.nccl.collective.bytes",
    .labels = kOpLabels,
};

const MetricDesc kBusBytes{
    .key = "nccl.collective.bus_bytes",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kCounter,
    .unit = "By",
    .help =
        "Bus bytes of the rank's NCCL operations: message bytes times NCCL Inspector's bus "
        "factor (all-reduce 2(n-1)/n; reduce-scatter and all-gather (n-1)/n of n x message); "
        "its rate over the GPU time's rate is the bus bandwidth.",
    .prom_name = "warpscope_nccl_collective_bus_bytes_total",
    .otel_name = "warpscope.nccl.collective.bus_bytes",
    .labels = kOpLabels,
};

const MetricDesc kBusBandwidth{
    .key = "nccl.collective.bus_bandwidth",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kGauge,
    .unit = "By/s",
    .help =
        "Bus bandwidth of the rank's NCCL operations that completed in the last window: their "
        "bus bytes over their execution time (GPU time, or enqueue to completion without "
        "kernel-channel events), in bytes per second; absent for a window without operations.",
    .prom_name = "warpscope_nccl_bus_bandwidth_bytes_per_second",
    .otel_name = "warpscope.nccl.collective.bus_bandwidth",
    .labels = kOpLabels,
};

const MetricDesc kTimeShare{
    .key = "nccl.time.share",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kGauge,
    .unit = "1",
    .help =
        "Share of the last window the rank spent in NCCL on this communicator: the execution "
        "time of its operations that completed in the window over the window's wall time "
        "(ratio 0..1).",
    .prom_name = "warpscope_nccl_time_ratio",
    .otel_name = "warpscope.nccl.time.share",
    .labels = "comm,comm_name,rank,nranks",
};

const MetricDesc kRecordsDropped{
    .key = "nccl.records.dropped",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kCounter,
    .unit = "{record}",
    .help =
        "NCCL events and operation records the plugin could not record or send, by reason: "
        "event_pool (its event pool was exhausted), ring_full (a thread's ring was full), "
        "no_ring (a thread beyond WARPSCOPE_NCCL_MAX_THREADS). Non-zero means the counts above "
        "are under-reported.",
    .prom_name = "warpscope_nccl_records_dropped_total",
    .otel_name = "warpscope.nccl.records.dropped",
    .labels = "reason",
};

const MetricDesc kBytesDropped{
    .key = "nccl.transport.dropped",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kCounter,
    .unit = "By",
    .help =
        "Encoded bytes the NCCL plugin dropped instead of sending them to the agent (agent "
        "absent or slow, output cap WARPSCOPE_NCCL_OUT_KB reached).",
    .prom_name = "warpscope_nccl_transport_dropped_bytes_total",
    .otel_name = "warpscope.nccl.transport.dropped",
};

const MetricDesc kInspectorBusBandwidth{
    .key = "nccl.inspector.bus_bandwidth",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kGauge,
    .unit = "By/s",
    .help =
        "NCCL Inspector's name for the bus bandwidth of the rank's collectives that completed "
        "in the last window, by message size and algorithm (GB/s in Prometheus); the same "
        "figure as warpscope_nccl_bus_bandwidth_bytes_per_second, split by Inspector's labels.",
    .prom_name = "nccl_bus_bandwidth_gbs",
    .prom_scale = 1e-9,
    .otel_name = "warpscope.nccl.inspector.bus_bandwidth",
    .labels = kInspectorLabels,
};

const MetricDesc kInspectorExecTime{
    .key = "nccl.inspector.exec_time",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kGauge,
    .unit = "s",
    .help =
        "NCCL Inspector's name for the mean execution time of the rank's collectives that "
        "completed in the last window, by message size and algorithm (microseconds in "
        "Prometheus).",
    .prom_name = "nccl_collective_exec_time_microseconds",
    .prom_scale = 1e6,
    .otel_name = "warpscope.nccl.inspector.exec_time",
    .labels = kInspectorLabels,
};

namespace {
constexpr const MetricDesc* kAll[] = {
    &kCollectives,       &kGpuTime,   &kCompletionTime, &kBytes,        &kBusBytes,
    &kBusBandwidth,      &kTimeShare, &kRecordsDropped, &kBytesDropped, &kInspectorBusBandwidth,
    &kInspectorExecTime,
};
}  // namespace

std::span<const MetricDesc* const> AllNcclMetrics() { return kAll; }

}  // namespace warpscope::agent::nccl_metrics

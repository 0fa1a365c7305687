// SPDX-License-Identifier: Apache-2.0
// Catalog of the CUDA kernel profiler's self-metrics, written by ProfileBuilder::EmitSelfMetrics
// on process entities (one per injected process). The launch and record counters are the
// injected library's own cumulative counts as last reported; the overhead estimate is the
// library's CPU time over the wall time of the last export window.
//
// The runtime metrics below describe the application's own CUDA work as CUPTI's activity records
// show it (runtime_metrics.h; docs/design/cuda-profiler.md, "CUDA runtime metrics"). Their label
// "cuda.device" is the CUDA device ordinal inside the process (CUPTI's deviceId), which is NVML's
// gpu.index only when the process sees every GPU in PCI order (no CUDA_VISIBLE_DEVICES, and
// CUDA_DEVICE_ORDER=PCI_BUS_ID); "stream" is CUPTI's stream id; "direction" H2D, D2H, D2D, P2P,
// H2H or unknown; "kind" the CUDA memory kind (device, pinned, managed, ...).
#ifndef WARPSCOPE_AGENT_SOURCES_CUDA_PROFILER_CUDA_PROFILER_METRICS_H_
#define WARPSCOPE_AGENT_SOURCES_CUDA_PROFILER_CUDA_PROFILER_METRICS_H_

#include <span>

#include "model/metric.h"

namespace warpscope::agent::cuda_profiler_metrics {

extern const model::MetricDesc kLaunchesSeen;         // counter {launch}
extern const model::MetricDesc kLaunchesAdmitted;     // counter {launch}
extern const model::MetricDesc kLaunchesDropped;      // counter {launch}
extern const model::MetricDesc kRecordsLost;          // counter {record}
extern const model::MetricDesc kOverheadTime;         // counter s
extern const model::MetricDesc kOverheadRatio;        // gauge 1
extern const model::MetricDesc kKernelsProfiled;      // counter {kernel}
extern const model::MetricDesc kUnresolvedFrames;     // counter {frame}
extern const model::MetricDesc kPythonFramesSkipped;  // counter {frame}
// Runtime metrics.
extern const model::MetricDesc kKernelLaunches;        // counter {launch}, cuda.device
extern const model::MetricDesc kKernelTime;            // counter s, cuda.device
extern const model::MetricDesc kStreamBusy;            // gauge 1, cuda.device + stream
extern const model::MetricDesc kMemcpyBytes;           // counter By, cuda.device + direction
extern const model::MetricDesc kMemcpyTime;            // counter s, cuda.device + direction
extern const model::MetricDesc kMemsetBytes;           // counter By, cuda.device
extern const model::MetricDesc kMemsetTime;            // counter s, cuda.device
extern const model::MetricDesc kMemoryAllocated;       // gauge By, cuda.device + kind
extern const model::MetricDesc kMemoryAllocations;     // counter {allocation}, cuda.device + kind
extern const model::MetricDesc kMemoryAllocationBytes; // counter By, cuda.device + kind
extern const model::MetricDesc kMemoryReleases;        // counter {release}, cuda.device + kind
extern const model::MetricDesc kMemoryReleaseBytes;    // counter By, cuda.device + kind

// Every metric above, in declaration order. The pointers are stable for the program's life.
std::span<const model::MetricDesc* const> AllCudaProfilerMetrics();

}  // namespace warpscope::agent::cuda_profiler_metrics

#endif  // WARPSCOPE_AGENT_SOURCES_CUDA_PROFILER_CUDA_PROFILER_METRICS_H_

// SPDX-License-Identifier: Apache-2.0
// Catalog of the CUDA kernel profiler's self-metrics, written by ProfileBuilder::EmitSelfMetrics
// on process entities (one per injected process). The launch and record counters are the
// injected library's own cumulative counts as last reported; the overhead estimate is the
// library's CPU time over the wall time of the last export window.
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

// Every metric above, in declaration order. The pointers are stable for the program's life.
std::span<const model::MetricDesc* const> AllCudaProfilerMetrics();

}  // namespace warpscope::agent::cuda_profiler_metrics

#endif  // WARPSCOPE_AGENT_SOURCES_CUDA_PROFILER_CUDA_PROFILER_METRICS_H_

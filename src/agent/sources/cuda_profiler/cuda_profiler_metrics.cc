// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/cuda_profiler/cuda_profiler_metrics.h"

namespace warpscope::agent::cuda_profiler_metrics {

using model::EntityKind;
using model::MetricDesc;
using model::MetricKind;

const MetricDesc kLaunchesSeen{
    .key = "profiler.cuda.launches.seen",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kCounter,
    .unit = "{launch}",
    .help =
        "Kernel launches (driver and runtime launch APIs, graph launches) the injected CUDA "
        "profiler saw in this process since it started.",
    .prom_name = "warpscope_cuda_profiler_launches_seen_total",
    .otel_name = "warpscope.cuda_profiler.launches.seen",
};

const MetricDesc kLaunchesAdmitted{
    .key = "profiler.cuda.launches.admitted",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kCounter,
    .unit = "{launch}",
    .help =
        "Kernel launches admitted by the per-thread rate limiter for CPU and Python stack "
        "capture; the others are still timed, and estimated at the sampled launch sites of "
        "their kernel.",
    .prom_name = "warpscope_cuda_profiler_launches_admitted_total",
    .otel_name = "warpscope.cuda_profiler.launches.admitted",
};

const MetricDesc kLaunchesDropped{
    .key = "profiler.cuda.launches.dropped",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kCounter,
    .unit = "{launch}",
    .help =
        "Admitted kernel launches whose stack record was dropped before reaching the agent "
        "(per-thread ring full, agent absent or slow).",
    .prom_name = "warpscope_cuda_profiler_launches_dropped_total",
    .otel_name = "warpscope.cuda_profiler.launches.dropped",
};

const MetricDesc kRecordsLost{
    .key = "profiler.cuda.records.lost",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kCounter,
    .unit = "{record}",
    .help =
        "Activity and PC-sampling records lost: dropped by CUPTI (buffers full) or by the "
        "injected library's transport. Non-zero means GPU time totals are under-reported.",
    .prom_name = "warpscope_cuda_profiler_records_lost_total",
    .otel_name = "warpscope.cuda_profiler.records.lost",
};

const MetricDesc kOverheadTime{
    .key = "profiler.cuda.overhead.time",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kCounter,
    .unit = "s",
    .help =
        "CPU time the injected CUDA profiler spent in this process (launch callbacks, stack "
        "capture, buffer processing and its flusher thread), in seconds, as the library "
        "measured it.",
    .prom_name = "warpscope_cuda_profiler_overhead_seconds_total",
    .otel_name = "warpscope.cuda_profiler.overhead.time",
};

const MetricDesc kOverheadRatio{
    .key = "profiler.cuda.overhead.ratio",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kGauge,
    .unit = "1",
    .help =
        "Estimated profiler overhead over the last export window: the library's CPU time "
        "divided by the window's wall time (0.01 = one percent of one core).",
    .prom_name = "warpscope_cuda_profiler_overhead_ratio",
    .otel_name = "warpscope.cuda_profiler.overhead.ratio",
};

const MetricDesc kKernelsProfiled{
    .key = "profiler.cuda.kernels",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kCounter,
    .unit = "{kernel}",
    .help =
        "Kernel executions the agent put into exported profiles for this process, sampled "
        "(with a launch stack) or aggregated.",
    .prom_name = "warpscope_cuda_profiler_kernels_total",
    .otel_name = "warpscope.cuda_profiler.kernels",
};

const MetricDesc kUnresolvedFrames{
    .key = "profiler.cuda.frames.unresolved",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kCounter,
    .unit = "{frame}",
    .help =
        "Native launch-stack frames of this process the agent could not symbolize (no "
        "mapping, stripped file without a covering symbol, unreadable file).",
    .prom_name = "warpscope_cuda_profiler_unresolved_frames_total",
    .otel_name = "warpscope.cuda_profiler.frames.unresolved",
};

const MetricDesc kPythonFramesSkipped{
    .key = "profiler.cuda.python.frames.skipped",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kCounter,
    .unit = "{frame}",
    .help =
        "Python frames the injected CUDA profiler left out of launch stacks in this process "
        "because they could not be read (a code object or name that failed its type check or "
        "could not be read); the other frames of those stacks are kept.",
    .prom_name = "warpscope_cuda_profiler_python_frames_skipped_total",
    .otel_name = "warpscope.cuda_profiler.python.frames.skipped",
};

namespace {
constexpr const MetricDesc* kAll[] = {
    &kLaunchesSeen,  &kLaunchesAdmitted, &kLaunchesDropped,  &kRecordsLost,         &kOverheadTime,
    &kOverheadRatio, &kKernelsProfiled,  &kUnresolvedFrames, &kPythonFramesSkipped,
};
}  // namespace

std::span<const MetricDesc* const> AllCudaProfilerMetrics() { return kAll; }

}  // namespace warpscope::agent::cuda_profiler_metrics

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

// --- runtime metrics ------------------------------------------------------------------------

const MetricDesc kKernelLaunches{
    .key = "cuda.kernel.launches",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kCounter,
    .unit = "{launch}",
    .help =
        "Kernels the process ran on a CUDA device, each kernel of a graph launch counted, whether "
        "or not its launch was sampled for a stack (CUPTI kernel records, totalled in the "
        "injected library); its rate is the kernel launch rate.",
    .prom_name = "warpscope_cuda_kernel_launches_total",
    .otel_name = "warpscope.cuda.kernel.launches",
    .labels = "cuda.device",
};

const MetricDesc kKernelTime{
    .key = "cuda.kernel.time",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kCounter,
    .unit = "s",
    .help =
        "GPU time of the process's kernels on a CUDA device, in seconds: the sum of end - start "
        "of every kernel record (kernels that overlap on different streams each count in full).",
    .prom_name = "warpscope_cuda_kernel_seconds_total",
    .otel_name = "warpscope.cuda.kernel.time",
    .labels = "cuda.device",
};

const MetricDesc kStreamBusy{
    .key = "cuda.stream.busy",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kGauge,
    .unit = "1",
    .help =
        "Share of the last export window during which a CUDA stream of the process ran kernels: "
        "the stream's kernel GPU time received in the window over the window's wall time (ratio "
        "0..1). The 16 busiest streams of a device get their own series, the rest are summed "
        "under stream=\"other\" (which may exceed 1).",
    .prom_name = "warpscope_cuda_stream_busy_ratio",
    .otel_name = "warpscope.cuda.stream.busy",
    .labels = "cuda.device,stream",
};

const MetricDesc kMemcpyBytes{
    .key = "cuda.memcpy.bytes",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kCounter,
    .unit = "By",
    .help =
        "Bytes the process copied with the CUDA copy engines or copy kernels CUPTI reports as "
        "memcpy records, by direction (H2D, D2H, D2D, P2P, H2H; copies to and from CUDA arrays "
        "count as device memory).",
    .prom_name = "warpscope_cuda_memcpy_bytes_total",
    .otel_name = "warpscope.cuda.memcpy.bytes",
    .labels = "cuda.device,direction",
};

const MetricDesc kMemcpyTime{
    .key = "cuda.memcpy.time",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kCounter,
    .unit = "s",
    .help =
        "GPU time of the process's memory copies, in seconds (end - start of each memcpy "
        "record), by direction; bytes over time is the achieved copy bandwidth.",
    .prom_name = "warpscope_cuda_memcpy_seconds_total",
    .otel_name = "warpscope.cuda.memcpy.time",
    .labels = "cuda.device,direction",
};

const MetricDesc kMemsetBytes{
    .key = "cuda.memset.bytes",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kCounter,
    .unit = "By",
    .help = "Bytes the process set with cudaMemset and its driver equivalents (memset records).",
    .prom_name = "warpscope_cuda_memset_bytes_total",
    .otel_name = "warpscope.cuda.memset.bytes",
    .labels = "cuda.device",
};

const MetricDesc kMemsetTime{
    .key = "cuda.memset.time",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kCounter,
    .unit = "s",
    .help = "GPU time of the process's memsets, in seconds (end - start of each memset record).",
    .prom_name = "warpscope_cuda_memset_seconds_total",
    .otel_name = "warpscope.cuda.memset.time",
    .labels = "cuda.device",
};

const MetricDesc kMemoryAllocated{
    .key = "cuda.memory.allocated",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kGauge,
    .unit = "By",
    .help =
        "Memory the process holds through the CUDA allocator now, in bytes: allocations minus "
        "releases since the profiler started (CUPTI memory records). This is what the driver "
        "sees: a caching allocator (PyTorch's) holds reserved blocks here, not what its tensors "
        "use.",
    .prom_name = "warpscope_cuda_memory_allocated_bytes",
    .otel_name = "warpscope.cuda.memory.allocated",
    .labels = "cuda.device,kind",
};

const MetricDesc kMemoryAllocations{
    .key = "cuda.memory.allocations",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kCounter,
    .unit = "{allocation}",
    .help =
        "Allocations through the CUDA allocator (cudaMalloc, cuMemAlloc, cudaMallocAsync, "
        "cudaHostAlloc, managed memory) since the profiler started in the process.",
    .prom_name = "warpscope_cuda_memory_allocations_total",
    .otel_name = "warpscope.cuda.memory.allocations",
    .labels = "cuda.device,kind",
};

const MetricDesc kMemoryAllocationBytes{
    .key = "cuda.memory.allocation.bytes",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kCounter,
    .unit = "By",
    .help = "Bytes allocated through the CUDA allocator since the profiler started in the process.",
    .prom_name = "warpscope_cuda_memory_allocation_bytes_total",
    .otel_name = "warpscope.cuda.memory.allocation.bytes",
    .labels = "cuda.device,kind",
};

const MetricDesc kMemoryReleases{
    .key = "cuda.memory.releases",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kCounter,
    .unit = "{release}",
    .help =
        "Releases through the CUDA allocator (cudaFree, cuMemFree, cudaFreeAsync, cudaFreeHost) "
        "since the profiler started in the process.",
    .prom_name = "warpscope_cuda_memory_releases_total",
    .otel_name = "warpscope.cuda.memory.releases",
    .labels = "cuda.device,kind",
};

const MetricDesc kMemoryReleaseBytes{
    .key = "cuda.memory.release.bytes",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kCounter,
    .unit = "By",
    .help = "Bytes released through the CUDA allocator since the profiler started in the process.",
    .prom_name = "warpscope_cuda_memory_release_bytes_total",
    .otel_name = "warpscope.cuda.memory.release.bytes",
    .labels = "cuda.device,kind",
};

namespace {
constexpr const MetricDesc* kAll[] = {
    &kLaunchesSeen,      &kLaunchesAdmitted, &kLaunchesDropped,      &kRecordsLost,
    &kOverheadTime,      &kOverheadRatio,    &kKernelsProfiled,      &kUnresolvedFrames,
    &kPythonFramesSkipped, &kKernelLaunches, &kKernelTime,           &kStreamBusy,
    &kMemcpyBytes,       &kMemcpyTime,       &kMemsetBytes,          &kMemsetTime,
    &kMemoryAllocated,   &kMemoryAllocations, &kMemoryAllocationBytes, &kMemoryReleases,
    &kMemoryReleaseBytes,
};
}  // namespace

std::span<const MetricDesc* const> AllCudaProfilerMetrics() { return kAll; }

}  // namespace warpscope::agent::cuda_profiler_metrics

// SPDX-License-Identifier: Apache-2.0
// The run's Perfetto trace: the CUDA profiler's per-window Chrome traces (kernels on GPU
// tracks, launch API calls on the launching threads, flow arrows between them) merged into one
// document, plus the CPU profile of each process as a track of its own: per window, a counter
// of the CPU cores it used and a slice named after its hottest function.
#ifndef WARPSCOPE_REPORT_TRACE_MERGE_H_
#define WARPSCOPE_REPORT_TRACE_MERGE_H_

#include <string>
#include <vector>

#include "profiling/window_profile.h"

namespace warpscope::report {

// The pseudo thread id of a process's CPU-profile track.
inline constexpr int64_t kCpuTrackTid = 0;

// One Chrome trace event document ({"traceEvents": [...], "displayTimeUnit": "ns"}). Windows
// whose trace or pprof does not parse are left out; track-name events are written once.
std::string MergedTrace(const std::vector<profiling::WindowProfile>& windows);

}  // namespace warpscope::report

#endif  // WARPSCOPE_REPORT_TRACE_MERGE_H_

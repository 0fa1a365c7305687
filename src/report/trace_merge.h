// SPDX-License-Identifier: Apache-2.0
// The run's trace: the CUDA profiler's per-window traces (kernels on GPU tracks, launch API calls
// and NVTX ranges on the launching threads, flow arrows between them) merged into one, plus the
// CPU profile of each process as a track of its own: per window, a counter of the CPU cores it
// used and a slice named after its hottest function. Two formats: Perfetto's native protobuf
// (MergedPerfettoTrace, the default) and Chrome trace event JSON (MergedTrace).
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

// The sequence id of the CPU tracks' packets: above every GPU window's (GpuTraceSequenceId).
inline constexpr uint32_t kCpuTraceSequenceId = 0x80000000u;

// One perfetto.protos.Trace: the GPU windows' Perfetto traces concatenated (each is whole on its
// own sequence and clears the state it starts), then the CPU tracks on kCpuTraceSequenceId:
// "CPU profile" (slices, profiling::ProcessChildTrackUuid(pid, 0)) and "CPU cores" (a counter,
// index 1) under each process's track.
std::string MergedPerfettoTrace(const std::vector<profiling::WindowProfile>& windows);

}  // namespace warpscope::report

#endif  // WARPSCOPE_REPORT_TRACE_MERGE_H_

// SPDX-License-Identifier: Apache-2.0
// The trace of one process's GPU window, as a Perfetto trace (ProfileBuilder's perfetto_trace,
// gpu_perfetto_trace.cc) or a Chrome trace (trace_json, gpu_trace.cc): kernels and memory
// copies/memsets as slices on their GPU's (device, stream) tracks, launch API slices and NVTX
// ranges on the launching CPU thread's track, and flow arrows from launch to kernel. Private to
// this folder.
#ifndef WARPSCOPE_AGENT_SOURCES_CUDA_PROFILER_GPU_TRACE_H_
#define WARPSCOPE_AGENT_SOURCES_CUDA_PROFILER_GPU_TRACE_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "agent/sources/cuda_profiler/process_window.h"

namespace warpscope::agent::cuda_profiler {

struct GpuTraceOptions {
  int32_t pid = 0;
  std::string process_name;  // "python3.11"
  int64_t start_ns = 0;      // the window
  int64_t end_ns = 0;
  // At most this many events are drawn: NVTX ranges first (few, and what a reader orients by),
  // then kernels, then copies; the others are counted in `stats`.
  size_t max_events = 200000;
};

// Trace pids of GPU tracks: this base + device.
inline constexpr int64_t kGpuTrackPidBase = 1000000000;

// "64 MiB", "1.5 KiB", "512 B": binary units, one decimal unless exact.
std::string FormatTraceBytes(uint64_t bytes);

std::string GpuTraceJson(const ProcessState& state, const GpuTraceOptions& options,
                         KernelNames& names, ProfileBuilder::Stats& stats);

// The same window as a perfetto.protos.Trace on sequence GpuTraceSequenceId(pid). Tracks: the
// process, its threads, "GPU <d>" (top level, shared by every process) with a child track per
// (process, stream). Kernel slices carry correlation_id, context, grid, block,
// registers_per_thread, shared_memory_bytes and graph_id (when in a graph); device and stream are
// the track's.
std::string GpuTracePerfetto(const ProcessState& state, const GpuTraceOptions& options,
                             KernelNames& names, ProfileBuilder::Stats& stats);

// A process's trace sequence: its windows, concatenated, each clear the state they start.
inline uint32_t GpuTraceSequenceId(int32_t pid) {
  return 1 + (static_cast<uint32_t>(pid) & 0x3fffff);
}

}  // namespace warpscope::agent::cuda_profiler

#endif  // WARPSCOPE_AGENT_SOURCES_CUDA_PROFILER_GPU_TRACE_H_

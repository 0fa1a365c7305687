// SPDX-License-Identifier: Apache-2.0
// The Chrome trace of one process's GPU window (ProfileBuilder's trace_json): kernels and memory
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

std::string GpuTraceJson(const ProcessState& state, const GpuTraceOptions& options,
                         KernelNames& names, ProfileBuilder::Stats& stats);

}  // namespace warpscope::agent::cuda_profiler

#endif  // WARPSCOPE_AGENT_SOURCES_CUDA_PROFILER_GPU_TRACE_H_

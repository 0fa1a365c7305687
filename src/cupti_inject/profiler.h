// SPDX-License-Identifier: Apache-2.0
// The injected CUDA kernel profiler: CUPTI setup, the launch-callback hot path, per-thread rings,
// the activity buffer pool and the flusher thread that talks to the agent
// (docs/design/cuda-profiler.md). One instance per process, created by InitializeInjection.
#ifndef WARPSCOPE_CUPTI_INJECT_PROFILER_H_
#define WARPSCOPE_CUPTI_INJECT_PROFILER_H_

#include <cstdint>

namespace warpscope::cupti_inject {

// Sets up CUPTI and starts the flusher, once per process; later calls return the first result.
// Returns 1 (the driver's success value) even when the profiler went passive: the process runs
// on unprofiled and the agent is told why. Never throws.
int InitializeInjectionOnce() noexcept;

}  // namespace warpscope::cupti_inject

#endif  // WARPSCOPE_CUPTI_INJECT_PROFILER_H_

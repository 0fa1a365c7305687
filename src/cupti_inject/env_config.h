// SPDX-License-Identifier: Apache-2.0
// Configuration of the injected profiler, read once from WARPSCOPE_* environment variables at
// InitializeInjection. An invalid value is reported once (a warning) and the default is kept.
// docs/design/cuda-profiler.md documents every variable.
#ifndef WARPSCOPE_CUPTI_INJECT_ENV_CONFIG_H_
#define WARPSCOPE_CUPTI_INJECT_ENV_CONFIG_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cupti_inject/kernel_duty_cycle.h"
#include "cupti_inject/stack_capture.h"

namespace warpscope::cupti_inject {

struct InjectConfig {
  // WARPSCOPE_AGENT_SOCKET: the agent's unix socket. Empty: /run/warpscope/cupti.sock, and when
  // that does not exist, $XDG_RUNTIME_DIR/warpscope/cupti.sock.
  std::string agent_socket;
  // WARPSCOPE_CUPTI_LIBRARY: libcupti to dlopen. Empty: searched (cupti_search.h).
  std::string cupti_library;
  bool enabled = true;             // WARPSCOPE_CUPTI_ENABLED (0/1): collect from the start
  uint32_t rate = 200;             // WARPSCOPE_CUPTI_RATE: admitted launches per thread per s
  uint32_t burst = 20;             // WARPSCOPE_CUPTI_BURST: bucket depth
  Unwinder unwinder = Unwinder::kBacktrace;  // WARPSCOPE_CUPTI_UNWINDER: backtrace | fp
  uint32_t max_frames = 64;        // WARPSCOPE_CUPTI_MAX_FRAMES (4..128)
  bool python = true;              // WARPSCOPE_CUPTI_PYTHON (0/1)
  uint32_t ring_kb = 64;           // WARPSCOPE_CUPTI_RING_KB per launching thread (4..4096)
  uint32_t max_threads = 64;       // WARPSCOPE_CUPTI_MAX_THREADS with a ring (1..4096)
  uint32_t activity_buffers = 8;   // WARPSCOPE_CUPTI_ACTIVITY_BUFFERS in the pool (2..256)
  uint32_t activity_buffer_kb = 2048;  // WARPSCOPE_CUPTI_ACTIVITY_BUFFER_KB (64..65536)
  uint32_t out_kb = 4096;          // WARPSCOPE_CUPTI_OUT_KB: unsent bytes kept (64..262144)
  uint32_t flush_ms = 1000;        // WARPSCOPE_CUPTI_FLUSH_MS: activity flush/aggregate period
  bool all_kernels = false;        // WARPSCOPE_CUPTI_KERNELS=all: every kernel as KernelActivity
  // WARPSCOPE_CUPTI_ALL_KERNELS_WINDOW_MS / _INTERVAL_MS: every kernel as KernelActivity during a
  // window of this many ms every interval ms (kernel_duty_cycle.h); window 0 = off. Ignored, with
  // a warning, when all_kernels is set (always on).
  uint32_t all_kernels_window_ms = 0;
  uint32_t all_kernels_interval_ms = 10000;
  bool memcpy = true;              // WARPSCOPE_CUPTI_MEMCPY (0/1): memcpy + memset records
  bool nvtx = true;                // WARPSCOPE_CUPTI_NVTX (0/1): NVTX marker records
  bool device_memory = true;       // WARPSCOPE_CUPTI_DEVICE_MEMORY (0/1): MEMORY2 records
  // WARPSCOPE_CUPTI_LAUNCH_API_RECORDS (0/1): also enable driver API records for the launch
  // cbids, in case a CUPTI version assigns correlation ids only while API records are on.
  bool launch_api_records = false;
  bool pc_sampling = false;        // WARPSCOPE_CUPTI_PC_SAMPLING (0/1)
  uint32_t pc_window_ms = 200;     // WARPSCOPE_CUPTI_PC_WINDOW_MS: length of a sampling window
  uint32_t pc_interval_ms = 10000; // WARPSCOPE_CUPTI_PC_INTERVAL_MS: window start to start
  uint32_t pc_period = 0;          // WARPSCOPE_CUPTI_PC_PERIOD: 2^n cycles (5..31), 0 = default
  uint32_t cubin_cap_mb = 64;      // WARPSCOPE_CUPTI_CUBIN_CAP_MB: cubins kept for the agent
  bool log_stderr = false;         // WARPSCOPE_CUPTI_LOG=stderr: also log to stderr

  // Which unsampled kernels go out as KernelActivity at start: always (all_kernels), in windows
  // (all_kernels_window_ms > 0) or none.
  KernelDutyCycle AllKernelsCycle() const {
    if (all_kernels) {
      return KernelDutyCycle::Always();
    }
    return {all_kernels_window_ms, all_kernels_interval_ms};
  }
};

// Reads the configuration through `getenv` (a seam for tests). Each invalid variable adds one
// message naming it and the accepted values to `warnings`.
InjectConfig ReadInjectConfig(const std::function<const char*(const char*)>& getenv,
                              std::vector<std::string>* warnings);

// The agent socket path to use when none is configured: /run/warpscope/cupti.sock if it exists,
// else $XDG_RUNTIME_DIR/warpscope/cupti.sock when XDG_RUNTIME_DIR is set, else the /run path.
// `exists` is a seam for tests (default: stat()).
std::string DefaultAgentSocket(const std::function<const char*(const char*)>& getenv,
                               const std::function<bool(const char*)>& exists = {});

}  // namespace warpscope::cupti_inject

#endif  // WARPSCOPE_CUPTI_INJECT_ENV_CONFIG_H_

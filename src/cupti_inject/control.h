// SPDX-License-Identifier: Apache-2.0
// What the agent can change in a running process (wire::Control, ControlOp in cupti/wire.h), and
// how a Control message changes it.
//
// Threads: ApplyControl runs on the flusher thread only (it is the only writer). The atomics are
// read, relaxed, by the launch callbacks on the application's threads and by the flusher; the
// plain fields are read by the flusher only. Nothing here blocks.
#ifndef WARPSCOPE_CUPTI_INJECT_CONTROL_H_
#define WARPSCOPE_CUPTI_INJECT_CONTROL_H_

#include <atomic>
#include <cstdint>

#include "cupti/wire.h"

namespace warpscope::cupti_inject {

namespace wire = ::warpscope::cupti::wire;

struct RuntimeControls {
  std::atomic<bool> enabled{false};    // launches are collected (kEnable/kDisableCollection)
  std::atomic<uint32_t> rate{200};     // admitted launches per thread per second (kSetRate)
  std::atomic<bool> pc_wanted{false};  // PC sampling windows run (kEnable/kDisablePcSampling)
  // KernelDutyCycle::Pack() of the unsampled kernels sent as KernelActivity
  // (kSetAllKernelsDutyCycle).
  std::atomic<uint64_t> all_kernels_cycle{0};
  // Length of a PC sampling window, at most the interval (kEnablePcSampling with a value).
  // Flusher thread only.
  uint32_t pc_window_ms = 200;
};

// Applies `c` to `controls`; `pc_interval_ms` (WARPSCOPE_CUPTI_PC_INTERVAL_MS) caps the PC
// sampling window. The rate is capped at 1,000,000. Returns false for an op this library does not
// know (from a newer agent): it is ignored and not counted as applied.
bool ApplyControl(const wire::Control& c, uint32_t pc_interval_ms, RuntimeControls* controls);

}  // namespace warpscope::cupti_inject

#endif  // WARPSCOPE_CUPTI_INJECT_CONTROL_H_

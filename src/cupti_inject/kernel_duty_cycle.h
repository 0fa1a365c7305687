// SPDX-License-Identifier: Apache-2.0
// The duty cycle of "all kernels" mode: which kernels the library sends as KernelActivity beyond
// the sampled ones (docs/design/cuda-profiler.md, "All kernels, duty-cycled").
//
// A kernel whose launch was not sampled is sent when its GPU start timestamp falls in a window:
// windows are [k * interval, k * interval + window) on the clock of the activity records
// (CUPTI's, CLOCK_REALTIME unless another tool installed a timestamp callback). Windows are thus
// aligned to wall-clock multiples of the interval, not to the process start: every process on a
// host (the ranks of one job) sends the same slices of time, and a slice is complete (every
// kernel that started in it), however late its activity buffer arrives.
//
// window 0: sampled kernels only. window >= interval: every kernel, always
// (WARPSCOPE_CUPTI_KERNELS=all). The flusher reads the cycle once per batch of kernels; the agent
// can replace it at run time (ControlOp::kSetAllKernelsDutyCycle, value Pack()).
#ifndef WARPSCOPE_CUPTI_INJECT_KERNEL_DUTY_CYCLE_H_
#define WARPSCOPE_CUPTI_INJECT_KERNEL_DUTY_CYCLE_H_

#include <cstdint>

namespace warpscope::cupti_inject {

struct KernelDutyCycle {
  uint32_t window_ms = 0;
  uint32_t interval_ms = 10000;

  static KernelDutyCycle Off() { return {0, 10000}; }
  static KernelDutyCycle Always() { return {1, 1}; }

  bool IsOff() const { return window_ms == 0; }
  bool IsAlways() const { return window_ms != 0 && window_ms >= interval_ms; }

  // True when an unsampled kernel that started at `start_ns` is sent.
  bool Contains(uint64_t start_ns) const {
    if (IsOff()) {
      return false;
    }
    if (IsAlways()) {
      return true;
    }
    const uint64_t interval_ns = static_cast<uint64_t>(interval_ms) * 1'000'000;
    return start_ns % interval_ns < static_cast<uint64_t>(window_ms) * 1'000'000;
  }

  // The Control value: window_ms << 32 | interval_ms. Every value unpacks to a valid cycle
  // (window 0 = off; window >= interval, interval 0 included, = always).
  uint64_t Pack() const { return static_cast<uint64_t>(window_ms) << 32 | interval_ms; }
  static KernelDutyCycle Unpack(uint64_t value) {
    return {static_cast<uint32_t>(value >> 32), static_cast<uint32_t>(value)};
  }

  friend bool operator==(const KernelDutyCycle&, const KernelDutyCycle&) = default;
};

}  // namespace warpscope::cupti_inject

#endif  // WARPSCOPE_CUPTI_INJECT_KERNEL_DUTY_CYCLE_H_

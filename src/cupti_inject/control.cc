// SPDX-License-Identifier: Apache-2.0
#include "cupti_inject/control.h"

#include <algorithm>

#include "cupti_inject/kernel_duty_cycle.h"

namespace warpscope::cupti_inject {

bool ApplyControl(const wire::Control& c, uint32_t pc_interval_ms, RuntimeControls* controls) {
  switch (c.op) {
    case wire::ControlOp::kEnableCollection:
      controls->enabled.store(true, std::memory_order_relaxed);
      return true;
    case wire::ControlOp::kDisableCollection:
      controls->enabled.store(false, std::memory_order_relaxed);
      return true;
    case wire::ControlOp::kSetRate:
      controls->rate.store(static_cast<uint32_t>(std::min<uint64_t>(c.value, 1'000'000)),
                           std::memory_order_relaxed);
      return true;
    case wire::ControlOp::kEnablePcSampling:
      if (c.value != 0) {
        controls->pc_window_ms = static_cast<uint32_t>(std::min<uint64_t>(c.value, pc_interval_ms));
      }
      controls->pc_wanted.store(true, std::memory_order_relaxed);
      return true;
    case wire::ControlOp::kDisablePcSampling:
      controls->pc_wanted.store(false, std::memory_order_relaxed);
      return true;
    case wire::ControlOp::kSetAllKernelsDutyCycle:
      controls->all_kernels_cycle.store(KernelDutyCycle::Unpack(c.value).Pack(),
                                        std::memory_order_relaxed);
      return true;
    case wire::ControlOp::kSetNcclProxyDetail:
      return false;  // the NCCL plugin's
  }
  return false;
}

}  // namespace warpscope::cupti_inject

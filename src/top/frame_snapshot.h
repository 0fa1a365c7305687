// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_TOP_FRAME_SNAPSHOT_H_
#define WARPSCOPE_TOP_FRAME_SNAPSHOT_H_

#include "model/frame.h"
#include "top/snapshot.h"

namespace warpscope::top {

// The GPUs and GPU processes of one agent cycle (the NVML source's entities and series, with the
// host source's CPU series of the same processes), by metric key: gpu.utilization, gpu.sm.active,
// gpu.memory.used/total, gpu.power.usage/limit, gpu.temperature, gpu.pcie.*.rate,
// gpu.nvlink.*.rate (summed over links), gpu.degraded; gpu.process.memory.used and
// gpu.process.sm.utilization per GPU (label gpu.index); process.cpu.utilization times
// host.cpu.logical_count. GPUs by index; processes in frame order. Host and origin stay empty.
Snapshot SnapshotFromFrame(const model::Frame& frame);

}  // namespace warpscope::top

#endif  // WARPSCOPE_TOP_FRAME_SNAPSHOT_H_

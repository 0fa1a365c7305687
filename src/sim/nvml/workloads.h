// SPDX-License-Identifier: Apache-2.0
// The demo workloads a scenario process may name (`workload:` in a scenario, docs/simulator.md):
// what `warpscope up --simulate` runs as a real process for that GPU process, through the real
// injected CUDA library over the fake libcupti (src/sim/workload). One table, read by the
// scenario parser (validation) and by the workload program (what to launch).
#ifndef WARPSCOPE_SIM_NVML_WORKLOADS_H_
#define WARPSCOPE_SIM_NVML_WORKLOADS_H_

#include <string>
#include <string_view>

namespace warpscope::sim {

struct WorkloadName {
  std::string_view name;
  std::string_view what;
};

inline constexpr WorkloadName kWorkloads[] = {
    {"training", "bf16 transformer training step: cuBLAS GEMMs, flash attention, NCCL all-reduce"},
    {"dataloader", "the training step, each batch first decoded on the CPU (image decoding)"},
    {"fp32-training", "the training step in fp32: SGEMMs that leave the tensor cores idle"},
    {"memory-bound", "elementwise, layer-norm and reduction kernels bound by DRAM bandwidth"},
    {"inference", "a decode loop: small GEMMs, paged flash-decoding attention, sampling"},
    {"ddp", "a rank of a data-parallel job: the training step in lockstep with the other ddp "
            "ranks, NVTX ProfilerStep#N ranges, gradient all-reduces through the NCCL plugin"},
};

// The workload whose processes form one distributed job under `up` (docs/simulator.md).
inline constexpr std::string_view kDdpWorkload = "ddp";

inline bool IsKnownWorkload(std::string_view name) {
  for (const WorkloadName& w : kWorkloads) {
    if (w.name == name) return true;
  }
  return false;
}

// "training, dataloader, ..." for error messages.
inline std::string KnownWorkloadList() {
  std::string out;
  for (const WorkloadName& w : kWorkloads) {
    if (!out.empty()) out += ", ";
    out += w.name;
  }
  return out;
}

}  // namespace warpscope::sim

#endif  // WARPSCOPE_SIM_NVML_WORKLOADS_H_

// SPDX-License-Identifier: Apache-2.0
// The PC samples of the demo workloads (docs/simulator.md, "PC samples"): the functions of the
// demo cubin (ptxas's output, read with libelf), the sampled instructions of each with the stall
// reason each is given, and how a window's samples split among them.
//
// What is real: the cubin, its functions and their instruction offsets (16 bytes per
// instruction from sm_70 on); CUPTI's stall reason names. What is modelled: which instructions
// are sampled how often (a heavy-tailed weight per instruction) and with which reason (drawn from
// the workload's mix), both from a hash of (function, offset), so the same every run. The model
// does not read the SASS, so an instruction's reason does not follow its opcode.
//
// Pure functions; no state.
#ifndef WARPSCOPE_SIM_WORKLOAD_PC_SAMPLE_MIX_H_
#define WARPSCOPE_SIM_WORKLOAD_PC_SAMPLE_MIX_H_

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace warpscope::sim::workload {

// A function of a cubin: its ".text.<name>" section's size in bytes.
struct CubinFunction {
  std::string name;
  uint64_t size = 0;
};

// The functions of an ELF cubin image, in section order. InvalidArgument when `image` is not an
// ELF file.
[[nodiscard]] base::Result<std::vector<CubinFunction>> CubinFunctions(std::string_view image);

// One stall reason of a mix, named without CUPTI's "smsp__pcsamp_warps_issue_stalled_" prefix.
struct StallShare {
  std::string_view reason;
  double share = 0;
};

// The stall mix of a workload's GEMM kernels (sim/nvml/workloads.h names): bf16 training
// waits on memory and barriers, fp32 training on the FMA pipe, decoding on memory.
std::span<const StallShare> StallMixOf(std::string_view workload);

// One sampled instruction.
struct PcSite {
  uint64_t offset = 0;
  uint32_t reason_index = 0;  // CUPTI's stall reason index
  uint64_t weight = 0;        // relative share of the function's samples, > 0
};

// The sampled instructions of `fn`: every instruction except the first two (parameter loads) and
// the last nine (ptxas pads a function with a branch and no-ops to 128 bytes), each with one
// reason of `mix` (by share) and a weight. `index_of` gives a reason's CUPTI index or UINT32_MAX
// when the device lacks it (such reasons are left out of the mix). Empty when the function has
// fewer than 16 instructions or no reason of the mix is known.
std::vector<PcSite> PcSitesOf(const CubinFunction& fn, std::span<const StallShare> mix,
                              const std::function<uint32_t(std::string_view)>& index_of);

// `samples` split among `sites` by weight, largest remainder first: one count per site, summing
// to `samples`.
std::vector<uint64_t> SplitSamples(uint64_t samples, std::span<const PcSite> sites);

}  // namespace warpscope::sim::workload

#endif  // WARPSCOPE_SIM_WORKLOAD_PC_SAMPLE_MIX_H_

// SPDX-License-Identifier: Apache-2.0
// `--cpu-profile-gpu-processes`: the CPU profiler's pid filter follows the processes that use a
// GPU. Every collection cycle, before the CPU profiler's Poll, the agent hands Update() the
// entities the GPU metrics source (NVML) wrote in that cycle. The process entities among them
// that name a process of this machine (an id with a start time; simulated or unresolved GPU
// processes have none) are the GPU processes; with the `--cpu-profile-pids` ones they are the
// filter. A process that starts using a GPU is sampled from that cycle on; one that stops using
// it, or exits, leaves the filter at the next cycle (the samples it already has stay in the
// open window).
//
// Only the GPU source's entities may be passed: the host metrics source writes process entities
// too (its top processes by CPU), which are not GPU processes. `src/cli/agent_main.cc` therefore
// registers the CPU profiler right after the NVML source, so that the hook sees the host entity
// and NVML's entities only.
//
// Thread contract: not thread-safe; the agent main sequence (a source's before_poll hook).
#ifndef WARPSCOPE_AGENT_SOURCES_CPU_PROFILER_GPU_PROCESS_SELECTION_H_
#define WARPSCOPE_AGENT_SOURCES_CPU_PROFILER_GPU_PROCESS_SELECTION_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <span>

#include "model/entity.h"

namespace warpscope::agent::cpu_profiler {

class GpuProcessSelection {
 public:
  // Receives the new filter; called only when it changed (CpuProfilerSource::SetPidFilter).
  using ApplyFilter = std::function<void(std::optional<std::set<uint32_t>>)>;

  // `listed`: the --cpu-profile-pids processes, always selected. The profiler starts with
  // `listed` as its filter (CpuSampler::Options::pids), so Update() applies only changes.
  GpuProcessSelection(std::set<uint32_t> listed, ApplyFilter apply);

  // `gpu_entities`: the entities of the GPU source in this cycle (other kinds are ignored).
  void Update(std::span<const model::Entity> gpu_entities);

  // The pids the filter holds now.
  const std::set<uint32_t>& selected() const { return selected_; }
  // Times the filter was changed.
  uint64_t changes() const { return changes_; }

 private:
  std::set<uint32_t> listed_;
  ApplyFilter apply_;
  std::set<uint32_t> selected_;
  uint64_t changes_ = 0;
};

}  // namespace warpscope::agent::cpu_profiler

#endif  // WARPSCOPE_AGENT_SOURCES_CPU_PROFILER_GPU_PROCESS_SELECTION_H_

// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/cpu_profiler/gpu_process_selection.h"

#include <utility>

#include "model/process.h"

namespace warpscope::agent::cpu_profiler {

GpuProcessSelection::GpuProcessSelection(std::set<uint32_t> listed, ApplyFilter apply)
    : listed_(std::move(listed)), apply_(std::move(apply)), selected_(listed_) {}

void GpuProcessSelection::Update(std::span<const model::Entity> gpu_entities) {
  std::set<uint32_t> pids = listed_;
  for (const model::Entity& e : gpu_entities) {
    if (e.kind != model::EntityKind::kProcess) {
      continue;
    }
    std::optional<model::ProcessIdentity> identity = model::ParseProcessEntityId(e.id);
    if (identity && identity->known() && identity->pid > 0) {
      pids.insert(static_cast<uint32_t>(identity->pid));
    }
  }
  if (pids == selected_) {
    return;
  }
  selected_ = pids;
  ++changes_;
  apply_(std::move(pids));
}

}  // namespace warpscope::agent::cpu_profiler

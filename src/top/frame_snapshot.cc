// SPDX-License-Identifier: Apache-2.0
#include "top/frame_snapshot.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <string>
#include <string_view>

namespace warpscope::top {
namespace {

int ParseInt(std::string_view text, int fallback) {
  int value = fallback;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() ? value : fallback;
}

std::string Attribute(const model::Entity& e, std::string_view key) {
  std::string_view v = e.attributes.Get(key);
  return std::string(v);
}

void Accumulate(std::optional<double>& slot, double value) { slot = slot.value_or(0) + value; }

// A GPU gauge's slot in the row, or null for a metric top does not show.
std::optional<double>* GpuSlot(GpuRow& gpu, std::string_view key, bool& summed) {
  summed = false;
  if (key == "gpu.utilization") return &gpu.utilization;
  if (key == "gpu.sm.active") return &gpu.sm_active;
  if (key == "gpu.memory.used") return &gpu.memory_used;
  if (key == "gpu.memory.total") return &gpu.memory_total;
  if (key == "gpu.power.usage") return &gpu.power;
  if (key == "gpu.power.limit") return &gpu.power_limit;
  if (key == "gpu.temperature") return &gpu.temperature;
  if (key == "gpu.pcie.transmit.rate") return &gpu.pcie_tx;
  if (key == "gpu.pcie.receive.rate") return &gpu.pcie_rx;
  summed = true;
  if (key == "gpu.nvlink.transmit.rate") return &gpu.nvlink_tx;
  if (key == "gpu.nvlink.receive.rate") return &gpu.nvlink_rx;
  return nullptr;
}

}  // namespace

Snapshot SnapshotFromFrame(const model::Frame& frame) {
  Snapshot snapshot;
  std::map<std::string, GpuRow, std::less<>> gpus;  // by entity id
  for (const model::Entity& e : frame.entities) {
    if (e.kind != model::EntityKind::kGpu) continue;
    GpuRow row;
    row.uuid = e.id;
    row.index = ParseInt(e.attributes.Get(model::attr::kGpuIndex), -1);
    row.name = Attribute(e, model::attr::kGpuModel);
    gpus.emplace(e.id, std::move(row));
  }
  double cpus = 0;
  std::map<std::string, double, std::less<>> cpu_by_process;
  // (process entity, GPU index) -> row, in the order the frame writes them.
  std::map<std::pair<std::string, int>, size_t> process_rows;
  for (const model::SeriesPoint& s : frame.series) {
    if (s.metric == nullptr) continue;
    std::string_view key = s.metric->key;
    if (key == "host.cpu.logical_count") {
      cpus = s.last;
      continue;
    }
    if (key == "process.cpu.utilization") {
      cpu_by_process[s.entity] = s.last;
      continue;
    }
    if (key == "gpu.process.memory.used" || key == "gpu.process.sm.utilization") {
      int gpu_index = ParseInt(s.labels.Get(model::attr::kGpuIndex), -1);
      auto [it, inserted] =
          process_rows.try_emplace({s.entity, gpu_index}, snapshot.processes.size());
      if (inserted) {
        ProcessRow row;
        row.gpu_index = gpu_index;
        if (const model::Entity* e = frame.FindEntity(s.entity)) {
          row.pid = ParseInt(e->attributes.Get(model::attr::kPid), 0);
          row.user = Attribute(*e, model::attr::kUser);
          row.executable = Attribute(*e, model::attr::kExecutable);
          row.command_line = Attribute(*e, model::attr::kCommandLine);
        }
        snapshot.processes.push_back(std::move(row));
      }
      ProcessRow& row = snapshot.processes[it->second];
      // Compute and graphics contexts of one process on one GPU are added up.
      Accumulate(key == "gpu.process.memory.used" ? row.gpu_memory : row.sm, s.last);
      continue;
    }
    auto gpu = gpus.find(s.entity);
    if (gpu == gpus.end()) continue;
    if (key == "gpu.degraded") {
      gpu->second.degraded = s.last != 0;
      continue;
    }
    bool summed = false;
    std::optional<double>* slot = GpuSlot(gpu->second, key, summed);
    if (slot == nullptr) continue;
    if (summed) {
      Accumulate(*slot, s.last);
    } else {
      *slot = s.last;
    }
  }
  // Process entities carry the pid; the map's key order would lose the frame's, so keep rows.
  std::vector<ProcessRow>& rows = snapshot.processes;
  std::map<size_t, std::string> entity_of_row;
  for (const auto& [k, index] : process_rows) entity_of_row[index] = k.first;
  for (size_t i = 0; i < rows.size(); ++i) {
    auto cpu = cpu_by_process.find(entity_of_row[i]);
    if (cpu != cpu_by_process.end() && cpus > 0) rows[i].cpu = cpu->second * cpus;
  }
  for (auto& [id, row] : gpus) snapshot.gpus.push_back(std::move(row));
  std::sort(snapshot.gpus.begin(), snapshot.gpus.end(),
            [](const GpuRow& a, const GpuRow& b) { return a.index < b.index; });
  return snapshot;
}

}  // namespace warpscope::top

// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/nvml/process_emitter.h"

#include <algorithm>
#include <string>

#include "agent/sources/nvml/nvml_metrics.h"

namespace warpscope::agent::nvml_internal {

namespace m = nvml_metrics;
using model::Labels;

void ProcessEmitter::BeginPoll() {
  ++poll_seq_;
  emitted_executables_.clear();
  emitted_containers_.clear();
}

void ProcessEmitter::EndPoll() {
  // Forget processes that were not seen in this poll.
  for (auto it = cache_.begin(); it != cache_.end();) {
    if (it->second.seen_poll != poll_seq_) {
      it = cache_.erase(it);
    } else {
      ++it;
    }
  }
}

ProcessEmitter::CacheEntry& ProcessEmitter::Resolve(const ProcessRow& row, Reporter& reporter) {
  const unsigned pid = row.pid;
  auto [it, inserted] = cache_.try_emplace(pid);
  CacheEntry& entry = it->second;
  entry.seen_poll = poll_seq_;
  const model::ProcessInfo* info = resolver_.Resolve(static_cast<int>(pid));
  auto build = [&](const model::ProcessInfo& p, bool from_nvml) {
    entry.from_nvml_name = from_nvml;
    entry.start_ticks = p.start_ticks;
    entry.process = model::MakeProcessEntity(p);
    entry.executable = model::MakeExecutableEntity(p);
    if (p.container_id.empty()) {
      entry.container.reset();
    } else {
      entry.container = model::MakeContainerEntity(p);
    }
    entry.emitted_poll = 0;
  };
  if (info != nullptr) {
    // A pod's names may arrive after its process is first seen (--kubernetes: the pod directory
    // learns them from the API server), so they are compared too.
    const model::Labels& a = entry.process.attributes;
    if (inserted || entry.from_nvml_name || entry.start_ticks != info->start_ticks ||
        a.Get(model::attr::kPodName) != info->pod_name ||
        a.Get(model::attr::kPodNamespace) != info->pod_namespace ||
        a.Get(model::attr::kContainerName) != info->container_name) {
      build(*info, false);
    }
    return entry;
  }
  if (!inserted) {
    // Known already: a process that leaves /proc while NVML still lists it (it is exiting) keeps
    // the identity it had, rather than becoming a second process "pid/<pid>/0" for its last
    // polls; one named by NVML keeps that name.
    return entry;
  }
  // Not in /proc (another pid namespace, already exited, or a simulated process): NVML's name.
  model::ProcessInfo fallback;
  fallback.pid = static_cast<int>(pid);
  fallback.container_pid = static_cast<int>(pid);
  static const std::string kNoName;
  const std::string& full = row.nvml_name != nullptr ? *row.nvml_name : kNoName;
  if (full.empty()) {
    reporter.ReportError("process_name");
    fallback.executable = "unknown";
  } else {
    size_t slash = full.rfind('/');
    fallback.executable = slash == std::string::npos ? full : full.substr(slash + 1);
    if (full.front() == '/') {
      fallback.executable_path = full;
    }
  }
  build(fallback, true);
  return entry;
}

void ProcessEmitter::EmitEntities(CacheEntry& entry, model::SampleSink& out) {
  if (entry.emitted_poll == poll_seq_) {
    return;
  }
  entry.emitted_poll = poll_seq_;
  out.AddEntity(entry.process);
  std::string_view exe = entry.executable.id;
  if (std::find(emitted_executables_.begin(), emitted_executables_.end(), exe) ==
      emitted_executables_.end()) {
    emitted_executables_.push_back(exe);
    out.AddEntity(entry.executable);
  }
  if (entry.container) {
    std::string_view ctr = entry.container->id;
    if (std::find(emitted_containers_.begin(), emitted_containers_.end(), ctr) ==
        emitted_containers_.end()) {
      emitted_containers_.push_back(ctr);
      out.AddEntity(*entry.container);
    }
  }
}

void ProcessEmitter::Emit(const ProcessGroup& group, std::span<const ProcessRow> rows,
                          std::span<const UtilAccumulator> utilization, Reporter& reporter,
                          model::SampleSink& out) {
  const bool util_known = group.util_known;
  rollups_.clear();
  for (const ProcessRow& row : rows.subspan(group.rows_begin, group.rows_end - group.rows_begin)) {
    CacheEntry& entry = Resolve(row, reporter);
    EmitEntities(entry, out);
    const Labels& l = group.labels[row.type];
    const std::string& pid_id = entry.process.id;
    if (row.has_memory) {
      out.AddValue(m::kProcessMemoryUsed, pid_id, l, static_cast<double>(row.memory));
    }
    double sm = 0;
    if (util_known) {
      double mem_util = 0;
      auto it =
          std::lower_bound(utilization.begin(), utilization.end(), row.pid,
                           [](const UtilAccumulator& a, unsigned pid) { return a.pid < pid; });
      if (it != utilization.end() && it->pid == row.pid && it->samples > 0) {
        sm = it->sm_sum / it->samples / 100.0;
        mem_util = it->mem_sum / it->samples / 100.0;
      }
      out.AddValue(m::kProcessSmUtilization, pid_id, l, sm);
      out.AddValue(m::kProcessMemoryUtilization, pid_id, l, mem_util);
    }
    auto r = std::find_if(rollups_.begin(), rollups_.end(), [&](const Rollup& x) {
      return x.entry->executable.id == entry.executable.id;
    });
    if (r == rollups_.end()) {
      rollups_.push_back({&entry, 0, 0, false, 0});
      r = rollups_.end() - 1;
    }
    if (row.has_memory) {
      r->memory += static_cast<double>(row.memory);
      r->has_memory = true;
    }
    r->sm += sm;
    ++r->processes;
  }
  for (const Rollup& r : rollups_) {
    const std::string& exe_id = r.entry->executable.id;
    if (r.has_memory) {
      out.AddValue(m::kExecutableMemoryUsed, exe_id, *group.consumer_labels, r.memory);
    }
    if (util_known) {
      out.AddValue(m::kExecutableSmUtilization, exe_id, *group.consumer_labels, r.sm);
    }
    out.AddValue(m::kExecutableProcesses, exe_id, *group.consumer_labels, r.processes);
  }
}

}  // namespace warpscope::agent::nvml_internal

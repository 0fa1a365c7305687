// SPDX-License-Identifier: Apache-2.0
// GpuPoller's running processes: the compute and graphics lists (per MIG instance, or the
// parent's list attributed by GPU instance id) and per-process utilisation samples.
#include <algorithm>

#include "agent/sources/nvml/gpu_poller.h"
#include "base/logging.h"

namespace warpscope::agent::nvml_internal {

namespace abi = nvml::abi;
using abi::nvmlReturn_t;
using nvml::Device;

// Rows only: resolving pids and writing process entities and series is the process emitter's job
// (it needs the process resolver).
void GpuPoller::PollProcesses(model::SampleSink& /*out*/) {
  if (!ctx_.options.collect_processes) {
    return;
  }
  if (g_.mig_enabled.value_or(false) && !g_.migs.empty()) {
    // Per MIG instance through its own handle; when that is refused, through the parent's list
    // attributed by GPU instance id.
    bool need_parent = false;
    for (auto& mig : g_.migs) {
      if (mig->unsupported[kQComputeProcesses] && mig->unsupported[kQGraphicsProcesses]) {
        need_parent = true;
        continue;
      }
      if (CollectProcessRows(mig->unsupported, mig->handle)) {
        AddGroup(mig->process_labels, mig->consumer_labels, false, scratch_.rows);
      } else if (g_.degraded) {
        return;
      } else if (mig->unsupported[kQComputeProcesses] && mig->unsupported[kQGraphicsProcesses]) {
        need_parent = true;
      }
    }
    if (!need_parent || !CollectProcessRows(g_.unsupported, g_.handle)) {
      return;
    }
    scratch_.mig_rows.swap(scratch_.rows);  // every process of the GPU, with its GPU instance id
    for (auto& mig : g_.migs) {
      if (!(mig->unsupported[kQComputeProcesses] && mig->unsupported[kQGraphicsProcesses])) {
        continue;
      }
      scratch_.rows.clear();
      for (const auto& row : scratch_.mig_rows) {
        if (row.gpu_instance_id == mig->gpu_instance_id) {
          scratch_.rows.push_back(row);
        }
      }
      AddGroup(mig->process_labels, mig->consumer_labels, false, scratch_.rows);
    }
    return;
  }
  if (!CollectProcessRows(g_.unsupported, g_.handle) || scratch_.rows.empty()) {
    return;  // nothing runs: no need for utilisation samples
  }
  const bool util_known = ReadProcessUtilization();
  if (g_.degraded) {
    return;
  }
  AddGroup(g_.process_labels, g_.consumer_labels, util_known, scratch_.rows);
}

bool GpuPoller::CollectProcessRows(Support& support, Device handle) {
  scratch_.rows.clear();
  bool any = false;
  for (uint8_t type = 0; type < 2; ++type) {
    const Query q = type == 0 ? kQComputeProcesses : kQGraphicsProcesses;
    if (support[q]) {
      continue;
    }
    nvmlReturn_t rc = lib_.DeviceGetRunningProcesses(
        handle, type == 0 ? nvml::ProcessListKind::kCompute : nvml::ProcessListKind::kGraphics,
        scratch_.process_buffer, scratch_.process_entries);
    if (!Check(support, q, rc)) {
      if (g_.degraded) {
        return false;
      }
      continue;
    }
    any = true;
    for (const auto& e : scratch_.process_entries) {
      auto it = std::find_if(scratch_.rows.begin(), scratch_.rows.end(),
                             [&](const ProcessRow& r) { return r.pid == e.pid; });
      if (it != scratch_.rows.end()) {
        // Both a compute and a graphics context: one row, typed compute, memory counted once.
        it->memory = std::max(it->memory, e.used_memory);
        it->has_memory = it->has_memory || e.has_used_memory;
        continue;
      }
      scratch_.rows.push_back({e.pid, e.used_memory, e.has_used_memory, type, e.gpu_instance_id});
    }
  }
  return any;
}

bool GpuPoller::ReadProcessUtilization() {
  util_acc_.clear();
  if (g_.unsupported[kQProcessUtilization]) {
    return false;
  }
  nvmlReturn_t rc = abi::kSuccess;
  unsigned count = 0;
  for (int attempt = 0; attempt < 4; ++attempt) {
    count = static_cast<unsigned>(scratch_.util_samples.size());
    rc = WARPSCOPE_NVML_CALL(lib_, nvmlDeviceGetProcessUtilization, g_.handle,
                             scratch_.util_samples.empty() ? nullptr : scratch_.util_samples.data(),
                             &count, g_.last_util_timestamp);
    if (rc == abi::kErrorInsufficientSize ||
        (rc == abi::kSuccess && scratch_.util_samples.empty() && count > 0)) {
      scratch_.util_samples.resize(std::max<size_t>(count, scratch_.util_samples.size()) * 2 + 8);
      continue;
    }
    break;
  }
  if (rc == abi::kErrorNotFound) {
    return true;  // no samples since the last poll: every running process was idle
  }
  if (!Check(g_.unsupported, kQProcessUtilization, rc)) {
    return false;
  }
  count = std::min<unsigned>(count, static_cast<unsigned>(scratch_.util_samples.size()));
  unsigned long long newest = g_.last_util_timestamp;
  for (unsigned i = 0; i < count; ++i) {
    const auto& s = scratch_.util_samples[i];
    // Stale or out-of-range samples (nvtop bug #110) are dropped.
    if (s.timeStamp <= g_.last_util_timestamp || s.smUtil > 100 || s.memUtil > 100) {
      continue;
    }
    newest = std::max(newest, s.timeStamp);
    util_acc_.push_back({s.pid, static_cast<double>(s.smUtil), static_cast<double>(s.memUtil), 1});
  }
  g_.last_util_timestamp = newest;
  // One accumulator per pid, sorted for the binary search of the process emitter (n log n, not n^2
  // with 64 processes and several samples each).
  std::sort(util_acc_.begin(), util_acc_.end(),
            [](const UtilAccumulator& a, const UtilAccumulator& b) { return a.pid < b.pid; });
  size_t out = 0;
  for (size_t i = 0; i < util_acc_.size(); ++i) {
    if (out > 0 && util_acc_[out - 1].pid == util_acc_[i].pid) {
      util_acc_[out - 1].sm_sum += util_acc_[i].sm_sum;
      util_acc_[out - 1].mem_sum += util_acc_[i].mem_sum;
      util_acc_[out - 1].samples += util_acc_[i].samples;
    } else {
      util_acc_[out++] = util_acc_[i];
    }
  }
  util_acc_.resize(out);
  return true;
}

void GpuPoller::FetchProcessNames() {
  for (ProcessRow& row : group_rows_) {
    auto [it, inserted] = process_names_.try_emplace(row.pid);
    if (inserted) {
      // Not in /proc (another pid namespace, or a simulated process): the emitter names it from
      // NVML. Asked once per pid while it runs here; "" when NVML cannot tell.
      char name[256] = {};
      if (WARPSCOPE_NVML_CALL(lib_, nvmlSystemGetProcessName, row.pid, name, sizeof(name)) ==
          abi::kSuccess) {
        it->second.name = CopyString(name, sizeof(name));
      }
    }
    it->second.seen_poll = polls_;
    row.nvml_name = &it->second.name;
  }
  std::erase_if(process_names_, [&](const auto& kv) { return kv.second.seen_poll != polls_; });
}

void GpuPoller::AddGroup(const model::Labels (&labels)[2], const model::Labels& consumer_labels,
                         bool util_known, const std::vector<ProcessRow>& rows) {
  const size_t begin = group_rows_.size();
  group_rows_.insert(group_rows_.end(), rows.begin(), rows.end());
  groups_.push_back({labels, &consumer_labels, util_known, begin, group_rows_.size()});
}

}  // namespace warpscope::agent::nvml_internal

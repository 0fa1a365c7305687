// SPDX-License-Identifier: Apache-2.0
// ProfileListener's NCCL plugin connections and the training steps they and the CUDA library's
// records give (profile_listener.h).
#include <utility>
#include <variant>

#include "agent/sources/cuda_profiler/listen_socket.h"
#include "agent/sources/cuda_profiler/profile_listener.h"
#include "agent/sources/cuda_profiler/profile_listener_connection.h"
#include "base/logging.h"

namespace warpscope::agent::cuda_profiler {

bool ControlApplies(bool nccl, wire::ControlOp op) {
  switch (op) {
    case wire::ControlOp::kEnableCollection:
    case wire::ControlOp::kDisableCollection:
      return true;
    case wire::ControlOp::kSetNcclProxyDetail:
      return nccl;
    default:
      return !nccl;
  }
}

void ProfileListener::HandleNccl(Connection& c, const wire::Message& message) {
  if (const auto* hello = std::get_if<wire::Hello>(&message)) {
    if (c.nccl) {
      return;  // one per connection; a repeat changes nothing
    }
    c.nccl = true;
    // Before Hello the converter's pid is the peer's (SO_PEERCRED), or 0.
    const int32_t pid =
        c.converter.pid() > 0 ? c.converter.pid() : static_cast<int32_t>(hello->pid);
    if (pid <= 0) {
      return;
    }
    model::ProcessInfo info;
    info.pid = pid;
    info.container_pid = pid;
    info.start_ticks =
        options_.converter.start_ticks_of ? options_.converter.start_ticks_of(pid) : 0;
    info.executable = hello->exe.substr(hello->exe.rfind('/') + 1);
    info.executable_path = hello->exe;
    ProcessEnviron environ = ReadProcessEnviron(options_.symbolizer.host_root, pid);
    info.job = environ.job;
    nccl_.AddProcess(info);
    if (!steps_.HasProcess(pid)) {
      steps_.AddProcess(info, std::move(environ.step_range));
    }
    ++stats_.nccl_hellos;
    c.live_pid = pid;
    ++nccl_live_by_pid_[pid];
    for (const auto& control : options_.controls_on_connect) {
      if (ControlApplies(true, control.op)) {
        Queue(c, control);
      }
    }
    return;
  }
  if (c.live_pid == 0) {
    return;
  }
  if (const auto* op = std::get_if<wire::NcclCollective>(&message)) {
    ++stats_.nccl_records;
    nccl_.AddCollective(c.live_pid, *op);
    steps_.AddCollective(c.live_pid, *op);
  } else if (const auto* comm = std::get_if<wire::NcclComm>(&message)) {
    nccl_.AddComm(c.live_pid, *comm);
    steps_.AddComm(c.live_pid, *comm);
  } else if (const auto* counters = std::get_if<wire::Counters>(&message)) {
    nccl_.UpdateCounters(c.live_pid, *counters);
  } else if (const auto* notice = std::get_if<wire::Notice>(&message)) {
    ++stats_.notices;
    WARPSCOPE_LOG_FIRST_N(WARNING, 16, "NCCL profiler: pid {}: {}", c.live_pid,
                          notice->message);
  }
}

void ProfileListener::CollectSteps(int64_t now_ns) { QueueSteps(steps_.Collect(now_ns)); }

void ProfileListener::ForgetSteps(int32_t pid) { QueueSteps(steps_.ForgetProcess(pid)); }

void ProfileListener::QueueSteps(std::vector<model::TrainingStep> steps) {
  if (steps.empty()) {
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& step : steps) {
    if (pending_steps_.size() >= options_.max_pending_steps) {
      ++stats_.steps_dropped;
      continue;
    }
    pending_steps_.push_back(std::move(step));
  }
  stats_.steps += steps.size();
}

std::vector<model::TrainingStep> ProfileListener::TakeSteps() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<model::TrainingStep> steps;
  steps.swap(pending_steps_);
  return steps;
}

}  // namespace warpscope::agent::cuda_profiler

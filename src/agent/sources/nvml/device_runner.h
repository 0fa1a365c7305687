// SPDX-License-Identifier: Apache-2.0
// Internal to the NVML source: DeviceRunner, one GPU as NvmlSource drives it. Its GpuPoller runs
// on one of the source's poll workers (PollPool, poll_pool.h), writing into buffers of its own:
// values, degraded-mode reasons and events. The source waits for it up to the poll's deadline and
// merges what it wrote; meanwhile it describes the GPU from a copy of its identity, so a GPU that
// hangs in an NVML call holds up nothing but itself (docs/design/nvml.md, section 9).
//
// Threads: while a read of the GPU is in flight (PollPool::in_flight), the worker reading it owns
// the poller, its scratch and the three buffers; the source's thread owns everything else, and
// may touch the worker's share only while the GPU is not in flight (the handoff goes through the
// pool's mutex).
#ifndef WARPSCOPE_AGENT_SOURCES_NVML_DEVICE_RUNNER_H_
#define WARPSCOPE_AGENT_SOURCES_NVML_DEVICE_RUNNER_H_

#include <string>
#include <string_view>
#include <vector>

#include "agent/sources/nvml/gpu_poller.h"
#include "agent/sources/nvml/gpu_state.h"
#include "agent/sources/sample_buffer.h"
#include "base/time.h"
#include "model/frame.h"

namespace warpscope::agent::nvml_internal {

class DeviceRunner final : public Reporter {
 public:
  // `ctx` must outlive the runner, and the runner any read of it in flight (NvmlSource::Stop
  // leaves both behind when one does not return).
  DeviceRunner(const PollerContext& ctx, unsigned index, nvml::Device handle);
  DeviceRunner(const DeviceRunner&) = delete;
  DeviceRunner& operator=(const DeviceRunner&) = delete;

  GpuPoller& poller() { return poller_; }
  const GpuPoller& poller() const { return poller_; }
  unsigned index() const { return poller_.state().index; }

  // --- Source thread, not in flight ---
  // The GPU's entities and event attribution as of its last finished poll.
  const GpuIdentity& identity() const { return identity_; }
  // Copies the poller's identity when it changed.
  void RefreshIdentity();
  // XIDs that arrived while the poll ran, counted on the GPU before its next poll.
  std::vector<uint64_t>& pending_xids() { return pending_xids_; }
  // Hands the reasons and events reported since the last call over to `to`. Returns whether
  // one of the events was a "gpu_recovered".
  bool TakeReports(Reporter& to);
  // Readies the next read, at (`now`, `mono`): counts the XIDs that arrived meanwhile.
  void PreparePoll(base::TimePoint now, base::Duration mono);
  // What the last finished poll wrote.
  const SampleBuffer& values() const { return values_; }

  // --- A poll worker, in flight ---
  // One poll, at the times PreparePoll() gave.
  void RunPoll();

  // The source's view of lateness; source thread only.
  bool late = false;             // the current poll missed its deadline
  base::TimePoint late_since{};  // the poll time it missed

  // Reporter, for the poller: buffered until TakeReports().
  void ReportError(std::string_view reason) override { errors_.emplace_back(reason); }
  void AddEvent(model::Event event) override { events_.push_back(std::move(event)); }

 private:
  PollScratch scratch_;
  GpuPoller poller_;
  SampleBuffer values_;
  std::vector<std::string> errors_;
  std::vector<model::Event> events_;
  base::TimePoint job_now_{};
  base::Duration job_mono_{};

  GpuIdentity identity_;
  uint64_t identity_version_ = ~uint64_t{0};
  std::vector<uint64_t> pending_xids_;
};

}  // namespace warpscope::agent::nvml_internal

#endif  // WARPSCOPE_AGENT_SOURCES_NVML_DEVICE_RUNNER_H_

// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/nvml/device_runner.h"

#include <algorithm>

#include "agent/sources/nvml/nvml_events.h"
#include "base/logging.h"

namespace warpscope::agent::nvml_internal {

DeviceRunner::DeviceRunner(const PollerContext& ctx, unsigned index, nvml::Device handle)
    : poller_(ctx, *this, scratch_, index, handle),
      worker_(std::make_unique<DeadlineWorker>(fmt::format("nvml-gpu{}", index),
                                               [this] { RunPoll(); })) {}

DeviceRunner::~DeviceRunner() {
  // Never destroyed under a running poll: NvmlSource stops the worker (or leaves the runner
  // behind) first.
  const bool joined = worker_->Stop(std::chrono::milliseconds(0));
  WARPSCOPE_CHECK(joined);
}

void DeviceRunner::RunPoll() {
  values_.Clear();
  poller_.Poll(job_now_, job_mono_, values_);
}

void DeviceRunner::RefreshIdentity() {
  if (identity_version_ == poller_.identity_version()) {
    return;
  }
  identity_version_ = poller_.identity_version();
  poller_.CopyIdentity(identity_);
}

bool DeviceRunner::TakeReports(Reporter& to) {
  for (const std::string& reason : errors_) {
    to.ReportError(reason);
  }
  errors_.clear();
  bool recovered = false;
  for (model::Event& e : events_) {
    recovered = recovered || e.kind == "gpu_recovered";
    to.AddEvent(std::move(e));
  }
  events_.clear();
  return recovered;
}

bool DeviceRunner::StartPoll(base::TimePoint now, base::Duration mono,
                             DeadlineWorker::Clock::time_point due) {
  if (worker_->busy()) {
    return false;
  }
  CountXids(pending_xids_, poller_.state());
  pending_xids_.clear();
  job_now_ = now;
  job_mono_ = mono;
  due_ = due;
  return worker_->Run();
}

}  // namespace warpscope::agent::nvml_internal

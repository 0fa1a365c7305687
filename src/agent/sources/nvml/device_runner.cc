// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/nvml/device_runner.h"

#include "agent/sources/nvml/nvml_events.h"

namespace warpscope::agent::nvml_internal {

DeviceRunner::DeviceRunner(const PollerContext& ctx, unsigned index, nvml::Device handle)
    : poller_(ctx, *this, scratch_, index, handle) {}

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

void DeviceRunner::PreparePoll(base::TimePoint now, base::Duration mono) {
  CountXids(pending_xids_, poller_.state());
  pending_xids_.clear();
  job_now_ = now;
  job_mono_ = mono;
}

}  // namespace warpscope::agent::nvml_internal

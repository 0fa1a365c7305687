// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/cupti/cuda_profiler_source.h"

#include "base/logging.h"

namespace warpscope::agent::cupti {

CudaProfilerSource::CudaProfilerSource(Options options, std::vector<SinkEntry> sinks,
                                       const base::Clock& clock, SourceErrorHook on_error)
    : options_(std::move(options)),
      sinks_(std::move(sinks)),
      clock_(clock),
      on_error_(std::move(on_error)) {}

CudaProfilerSource::~CudaProfilerSource() { Stop(); }

base::Status CudaProfilerSource::Start() {
  WARPSCOPE_ASSIGN_OR_RETURN(listener_, ProfileListener::Start(options_.listener));
  for (auto& entry : sinks_) {
    uploaders_.push_back(std::make_unique<ProfileUploader>(std::move(entry.sink), entry.upload));
  }
  sinks_.clear();
  if (uploaders_.empty()) {
    WARPSCOPE_LOG(WARNING,
                  "CUDA profiler: no --cuda-profile-dir and no --server: profiles are built and "
                  "dropped (self-metrics only)");
  }
  return base::OkStatus();
}

void CudaProfilerSource::Poll(base::TimePoint now, model::SampleSink& out) {
  if (listener_ == nullptr) {
    return;
  }
  if (!window_start_) {
    window_start_ = now;
  } else if (now - *window_start_ >= options_.window) {
    FinishWindow(now);
  }
  listener_->EmitSelfMetrics(out);
  ReportErrors();
}

void CudaProfilerSource::FinishWindow(base::TimePoint end) {
  const base::TimePoint start = window_start_.value_or(end);
  WindowFuture window =
      listener_->FinishWindow(base::ToUnixNanos(start), base::ToUnixNanos(end)).share();
  for (auto& uploader : uploaders_) {
    uploader->Enqueue(window);
  }
  window_start_ = end;
}

void CudaProfilerSource::ReportErrors() {
  if (!on_error_) {
    return;
  }
  const ProfileListener::Stats s = listener_->stats();
  uint64_t dropped = 0;
  for (const auto& u : uploaders_) {
    dropped += u->stats().dropped();
  }
  const std::pair<const char*, uint64_t> totals[] = {
      {"connection_corrupt", s.closed_corrupt},   {"connection_overflow", s.closed_overflow},
      {"connection_refused", s.refused_over_cap}, {"notice", s.notices},
      {"unnamed_kernel", s.unnamed_kernels},      {"profile_dropped", dropped},
  };
  for (const auto& [reason, total] : totals) {
    uint64_t& seen = reported_[reason];
    for (; seen < total; ++seen) {
      on_error_(reason);
    }
  }
}

void CudaProfilerSource::Stop() {
  if (stopped_ || listener_ == nullptr) {
    return;
  }
  stopped_ = true;
  if (window_start_) {
    FinishWindow(clock_.Now());
  }
  listener_->Stop();
  for (auto& uploader : uploaders_) {
    uploader->BeginStop();
  }
  for (auto& uploader : uploaders_) {
    uploader->Stop();
  }
}

void CudaProfilerSource::SendControl(std::optional<int32_t> pid, const wire::Control& control) {
  if (listener_ != nullptr) {
    listener_->SendControl(pid, control);
  }
}

}  // namespace warpscope::agent::cupti

// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/cuda_profiler/cuda_profiler_source.h"

#include "base/logging.h"

namespace warpscope::agent::cuda_profiler {

CudaProfilerSource::CudaProfilerSource(Options options, Exporters exporters,
                                       const base::Clock& clock, SourceErrorHook on_error)
    : options_(std::move(options)),
      exporters_(std::move(exporters)),
      clock_(clock),
      on_error_(std::move(on_error)) {}

CudaProfilerSource::~CudaProfilerSource() { Stop(); }

base::Status CudaProfilerSource::Start() {
  profiling::ProfileFormats formats;
  for (const auto& exporter : exporters_) {
    formats |= exporter->formats();
  }
  options_.listener.builder.formats = formats;
  WARPSCOPE_ASSIGN_OR_RETURN(listener_, ProfileListener::Start(options_.listener));
  if (exporters_.empty()) {
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
  for (const model::TrainingStep& step : listener_->TakeSteps()) {
    out.AddStep(step);
  }
  ReportErrors();
}

void CudaProfilerSource::FinishWindow(base::TimePoint end) {
  const base::TimePoint start = window_start_.value_or(end);
  profiling::WindowFuture window =
      listener_->FinishWindow(base::ToUnixNanos(start), base::ToUnixNanos(end)).share();
  for (auto& exporter : exporters_) {
    exporter->Enqueue(window);
  }
  window_start_ = end;
}

void CudaProfilerSource::ReportErrors() {
  if (!on_error_) {
    return;
  }
  const ProfileListener::Stats s = listener_->stats();
  uint64_t dropped = 0;
  for (const auto& exporter : exporters_) {
    dropped += exporter->dropped();
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
  for (auto& exporter : exporters_) {
    exporter->BeginStop();
  }
  for (auto& exporter : exporters_) {
    exporter->Stop();
  }
}

void CudaProfilerSource::SendControl(std::optional<int32_t> pid, const wire::Control& control) {
  if (listener_ != nullptr) {
    listener_->SendControl(pid, control);
  }
}

}  // namespace warpscope::agent::cuda_profiler

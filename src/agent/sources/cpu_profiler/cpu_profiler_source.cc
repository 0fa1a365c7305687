// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/cpu_profiler/cpu_profiler_source.h"

#include "agent/sources/cpu_profiler/cpu_profiler_metrics.h"
#include "base/logging.h"
#include "model/labels.h"

namespace warpscope::agent::cpu_profiler {

namespace m = cpu_profiler_metrics;

CpuProfilerSource::CpuProfilerSource(Options options, Exporters exporters,
                                     std::unique_ptr<PerfEventApi> api,
                                     std::unique_ptr<PythonStackSource> python,
                                     const base::Clock& clock, SourceErrorHook on_error)
    : options_(std::move(options)),
      exporters_(std::move(exporters)),
      api_(std::move(api)),
      python_(python != nullptr ? std::move(python) : std::make_unique<NoPythonStacks>()),
      clock_(clock),
      on_error_(std::move(on_error)) {}

CpuProfilerSource::~CpuProfilerSource() { Stop(); }

base::Status CpuProfilerSource::Start() {
  profiling::ProfileFormats formats;
  for (const auto& exporter : exporters_) {
    formats |= exporter->formats();
  }
  options_.sampler.formats = formats;
  WARPSCOPE_ASSIGN_OR_RETURN(sampler_, CpuSampler::Start(options_.sampler, *api_, *python_));
  if (exporters_.empty()) {
    WARPSCOPE_LOG(WARNING,
                  "CPU profiler: no --cpu-profile-dir and no --server: profiles are built and "
                  "dropped (self-metrics only)");
  }
  return base::OkStatus();
}

void CpuProfilerSource::SetPidFilter(std::optional<std::set<uint32_t>> pids) {
  if (sampler_ != nullptr) {
    sampler_->SetPidFilter(std::move(pids));
  } else {
    options_.sampler.pids = std::move(pids);
  }
}

void CpuProfilerSource::Poll(base::TimePoint now, model::SampleSink& out) {
  if (sampler_ == nullptr) {
    return;
  }
  if (!window_start_) {
    window_start_ = now;
  } else if (now - *window_start_ >= options_.window) {
    FinishWindow(now);
  }
  const CpuSampler::Stats s = sampler_->stats();
  const std::string& host = options_.host_id;
  out.AddValue(m::kSamples, host, static_cast<double>(s.samples));
  out.AddValue(m::kRecordsLost, host, static_cast<double>(s.lost));
  for (const auto& [binary, count] : s.truncated_by_binary) {
    out.AddValue(m::kStacksTruncated, host, model::Labels{{"binary", binary}},
                 static_cast<double>(count));
  }
  out.AddValue(m::kUnwindTime, host, static_cast<double>(s.unwind_ns) / 1e9);
  out.AddValue(m::kEvents, host, static_cast<double>(s.events));
  out.AddValue(m::kSystemWide, host, s.system_wide ? 1.0 : 0.0);
  out.AddValue(m::kPythonStacks, host, static_cast<double>(s.python.stacks));
  for (const auto& [reason, count] : s.python.unreadable) {
    out.AddValue(m::kPythonUnreadable, host, model::Labels{{"reason", reason}},
                 static_cast<double>(count));
  }
  for (const auto& [reason, count] : s.python.splice_mismatches) {
    out.AddValue(m::kPythonSpliceMismatches, host, model::Labels{{"reason", reason}},
                 static_cast<double>(count));
  }
  ReportErrors(s);
}

void CpuProfilerSource::FinishWindow(base::TimePoint end) {
  const base::TimePoint start = window_start_.value_or(end);
  profiling::WindowFuture window =
      sampler_->FinishWindow(base::ToUnixNanos(start), base::ToUnixNanos(end)).share();
  for (auto& exporter : exporters_) {
    exporter->Enqueue(window);
  }
  window_start_ = end;
}

void CpuProfilerSource::ReportErrors(const CpuSampler::Stats& s) {
  if (!on_error_) {
    return;
  }
  uint64_t dropped = 0;
  for (const auto& exporter : exporters_) {
    dropped += exporter->dropped();
  }
  const std::pair<const char*, uint64_t> totals[] = {
      {"records_lost", s.lost},
      {"stack_truncated", s.truncated},
      {"profile_dropped", dropped},
  };
  for (const auto& [reason, total] : totals) {
    uint64_t& seen = reported_[reason];
    for (; seen < total; ++seen) {
      on_error_(reason);
    }
  }
}

void CpuProfilerSource::Stop() {
  if (stopped_ || sampler_ == nullptr) {
    return;
  }
  stopped_ = true;
  if (window_start_) {
    FinishWindow(clock_.Now());
  }
  sampler_->Stop();
  for (auto& exporter : exporters_) {
    exporter->BeginStop();
  }
  for (auto& exporter : exporters_) {
    exporter->Stop();
  }
}

}  // namespace warpscope::agent::cpu_profiler

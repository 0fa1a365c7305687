// SPDX-License-Identifier: Apache-2.0
// The CPU profiler as an agent Source (`warpscope agent --enable-cpu-profiler`).
//
// Start() opens the sampling events through the CpuSampler (which falls back to the processes
// the agent may profile when system-wide sampling is refused; see cpu_sampler.h). Every Poll()
// writes the profiler's self-metrics (cpu_profiler_metrics.h) on the host entity and, once
// `window` has passed since the window began, asks the sampler to finish the window
// [start, now) and hands the result to every profile exporter (src/exporters/profiles:
// directory, server). Poll never waits: the sampler builds profiles on its thread, the
// exporters write them on theirs. Windows are checked at each Poll, so their length is
// `window` rounded up to the agent's collect interval.
//
// Degraded-mode events go to the SourceErrorHook as deltas since the last Poll: "records_lost"
// (a ring was full), "stack_truncated", "profile_dropped" (an exporter dropped a profile).
//
// Thread contract: Start/Poll/Stop on the agent main sequence; SetPidFilter from the main
// sequence too (the agent's before_poll hook).
#ifndef WARPSCOPE_AGENT_SOURCES_CPU_PROFILER_CPU_PROFILER_SOURCE_H_
#define WARPSCOPE_AGENT_SOURCES_CPU_PROFILER_CPU_PROFILER_SOURCE_H_

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent/sources/cpu_profiler/cpu_sampler.h"
#include "agent/sources/cpu_profiler/perf_api.h"
#include "agent/sources/cpu_profiler/python_stack_source.h"
#include "agent/sources/source.h"
#include "base/time.h"
#include "profiling/profile_exporter.h"

namespace warpscope::agent::cpu_profiler {

class CpuProfilerSource final : public Source {
 public:
  struct Options {
    CpuSampler::Options sampler;
    base::Duration window = std::chrono::seconds(60);
    std::string host_id;  // the host entity the self-metrics go on
  };
  using Exporters = std::vector<std::unique_ptr<profiling::ProfileExporter>>;

  // `clock` (for the final window at Stop) must outlive the source. `python` may be null (no
  // Python frames).
  CpuProfilerSource(Options options, Exporters exporters, std::unique_ptr<PerfEventApi> api,
                    std::unique_ptr<PythonStackSource> python, const base::Clock& clock,
                    SourceErrorHook on_error);
  ~CpuProfilerSource() override;

  std::string_view name() const override { return "cpu_profiler"; }
  base::Status Start() override;
  void Poll(base::TimePoint now, model::SampleSink& out) override;
  // Finishes a last window, stops sampling and gives the exporters their deadline.
  void Stop() override;

  // Only these processes from now on; nullopt: every process.
  void SetPidFilter(std::optional<std::set<uint32_t>> pids);

  // Null before Start() succeeded.
  CpuSampler* sampler() { return sampler_.get(); }

 private:
  void FinishWindow(base::TimePoint end);
  void ReportErrors(const CpuSampler::Stats& stats);

  Options options_;
  Exporters exporters_;
  std::unique_ptr<PerfEventApi> api_;
  std::unique_ptr<PythonStackSource> python_;
  const base::Clock& clock_;
  SourceErrorHook on_error_;
  std::unique_ptr<CpuSampler> sampler_;
  std::optional<base::TimePoint> window_start_;
  std::map<std::string, uint64_t> reported_;
  bool stopped_ = false;
};

}  // namespace warpscope::agent::cpu_profiler

#endif  // WARPSCOPE_AGENT_SOURCES_CPU_PROFILER_CPU_PROFILER_SOURCE_H_

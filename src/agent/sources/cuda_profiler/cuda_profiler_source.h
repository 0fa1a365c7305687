// SPDX-License-Identifier: Apache-2.0
// The CUDA kernel profiler as an agent Source (`warpscope agent --cuda-profiler`).
//
// Start() opens the socket (ProfileListener) with a profile builder that makes only the formats
// the exporters ask for. Every Poll() replays the profiler's self-metrics
// (cuda_profiler_metrics.h, one process entity per injected process) and the NCCL metrics of the
// processes whose NCCL profiler plugin reports on the same socket (nccl_metrics.h), the training
// steps cut since the last Poll (SampleSink::AddStep, step_tracker.h) and their metrics
// (training_metrics.h), and, once
// `window` has passed since the window began, asks the listener to finish the window
// [start, now) (the NCCL gauges' window too) and hands the result to every profile exporter
// (src/exporters/profiles: directory, server). Poll never waits: the listener builds profiles on
// its thread, the exporters write them on theirs. Windows are checked at each Poll, so their
// length is `window` rounded up to the agent's collect interval.
//
// Degraded-mode events go to the SourceErrorHook as deltas since the last Poll:
// "connection_corrupt", "connection_overflow", "connection_refused" (over max_connections),
// "notice" (a process reported a problem, e.g. CUPTI held by another tool), "unnamed_kernel",
// "profile_dropped" (an exporter dropped a profile: queue or retry queue full, permanent error,
// shutdown).
//
// Control: SendControl() reaches one process or all; controls for every process that connects
// are ProfileListener::Options::controls_on_connect.
//
// Thread contract: Start/Poll/Stop on the agent main sequence; SendControl and listener() from
// any thread.
#ifndef WARPSCOPE_AGENT_SOURCES_CUDA_PROFILER_CUDA_PROFILER_SOURCE_H_
#define WARPSCOPE_AGENT_SOURCES_CUDA_PROFILER_CUDA_PROFILER_SOURCE_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/sources/cuda_profiler/profile_listener.h"
#include "agent/sources/source.h"
#include "base/time.h"
#include "profiling/profile_exporter.h"

namespace warpscope::agent::cuda_profiler {

class CudaProfilerSource final : public Source {
 public:
  struct Options {
    ProfileListener::Options listener;
    base::Duration window = std::chrono::seconds(60);
  };
  using Exporters = std::vector<std::unique_ptr<profiling::ProfileExporter>>;

  // `clock` (for the final window at Stop) must outlive the source. With no exporters, windows
  // are still finished (for the self-metrics) but no output format is built.
  CudaProfilerSource(Options options, Exporters exporters, const base::Clock& clock,
                     SourceErrorHook on_error);
  ~CudaProfilerSource() override;

  std::string_view name() const override { return "cuda_profiler"; }
  base::Status Start() override;
  void Poll(base::TimePoint now, model::SampleSink& out) override;
  // Finishes a last window, stops listening and gives the exporters their deadline.
  void Stop() override;

  // Sends a Control message to process `pid`, or to every connected process.
  void SendControl(std::optional<int32_t> pid, const wire::Control& control);

  // Null before Start() succeeded.
  ProfileListener* listener() { return listener_.get(); }
  // The exporters, in the order given.
  const Exporters& exporters() const { return exporters_; }

 private:
  void FinishWindow(base::TimePoint end);
  void ReportErrors();

  Options options_;
  Exporters exporters_;
  const base::Clock& clock_;
  SourceErrorHook on_error_;
  std::unique_ptr<ProfileListener> listener_;
  std::optional<base::TimePoint> window_start_;
  std::map<std::string, uint64_t> reported_;
  bool stopped_ = false;
};

}  // namespace warpscope::agent::cuda_profiler

#endif  // WARPSCOPE_AGENT_SOURCES_CUDA_PROFILER_CUDA_PROFILER_SOURCE_H_

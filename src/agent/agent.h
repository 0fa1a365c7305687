// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_AGENT_AGENT_H_
#define WARPSCOPE_AGENT_AGENT_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "agent/aggregator.h"
#include "agent/self_stats.h"
#include "agent/sources/source.h"
#include "base/task_runner.h"
#include "base/time.h"
#include "exporters/exporter.h"
#include "model/entity.h"

namespace warpscope::agent {

// The agent's main sequence: every collect interval it polls each source into the aggregator,
// hands the cycle's frame to the cycle exporters (Prometheus /metrics), and every export interval
// closes a window and hands it to the window exporters (OTLP, server push).
//
// Threading: every method runs on `task_runner` (the main sequence). Sources and exporters
// that block own their threads.
class Agent {
 public:
  struct SourceEntry {
    std::unique_ptr<Source> source;
    // Runs just before this source's Poll, with the cycle written so far (e.g. the host source
    // learns which pids use a GPU). Optional.
    std::function<void(const Aggregator&)> before_poll;
  };
  struct Options {
    base::Duration collect_interval;
    base::Duration export_interval;
    model::Entity host;  // the host entity; its id is the host name
    std::string version;
  };

  Agent(Options options, base::TaskRunner& task_runner, const base::Clock& clock);
  ~Agent();

  void AddSource(SourceEntry entry);
  // Runs at the start of every cycle, before any source (e.g. the process resolver drops the
  // cache entries of exited processes).
  void SetBeforeCycle(std::function<void()> fn) { before_cycle_ = std::move(fn); }
  void AddCycleExporter(std::unique_ptr<exporters::Exporter> exporter);
  void AddWindowExporter(std::unique_ptr<exporters::Exporter> exporter);

  // Starts every source (a failing one is logged once, reported as source_up=0 and skipped) and
  // schedules the first cycle immediately.
  void Start();
  // Stops sources, closes a final window for the window exporters, and shuts exporters down.
  void Stop(base::Duration exporter_timeout = std::chrono::seconds(2));

  // One collection cycle now (also what the scheduler runs).
  void CollectCycle();
  // Closes the current window and exports it.
  void ExportWindow();

  SelfStats& self_stats() { return self_stats_; }
  const Aggregator& aggregator() const { return aggregator_; }
  int cycles() const { return cycles_; }

 private:
  void ScheduleNextCycle();

  Options options_;
  base::TaskRunner& task_runner_;
  const base::Clock& clock_;
  Aggregator aggregator_;
  SelfStats self_stats_;
  std::function<void()> before_cycle_;
  std::vector<SourceEntry> sources_;
  std::vector<bool> source_running_;
  std::vector<std::unique_ptr<exporters::Exporter>> cycle_exporters_;
  std::vector<std::unique_ptr<exporters::Exporter>> window_exporters_;
  base::Duration next_cycle_{0};
  base::Duration next_export_{0};
  int cycles_ = 0;
  int cycles_in_window_ = 0;
  bool started_ = false;
  bool stopped_ = false;
  // Delayed tasks check this token so that nothing runs after Stop or destruction.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace warpscope::agent

#endif  // WARPSCOPE_AGENT_AGENT_H_

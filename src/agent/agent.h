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
// Threading: every method runs on `task_runner` (the main sequence). Each running source polls on
// a worker thread of its own (one per source, for the agent's lifetime) into a private buffer,
// with a deadline; the main sequence merges what answered in time and closes the cycle without
// the rest (docs/design/agent.md, "Deadlines"). Exporters that block own their threads.
class Agent {
 public:
  struct SourceEntry {
    std::unique_ptr<Source> source;
    // Runs on the main sequence just before this source's Poll, with the cycle written so far:
    // every source registered before this one has answered, or missed its deadline, by then
    // (e.g. the host source learns which pids use a GPU). Optional.
    std::function<void(const Aggregator&)> before_poll;
    // This source's deadline; zero: Options::source_deadline.
    base::Duration deadline{0};
  };
  struct Options {
    base::Duration collect_interval;
    base::Duration export_interval;
    model::Entity host;  // the host entity; its id is the host name
    std::string version;
    // How long the cycle waits for one source's Poll, from the moment it starts; zero: half the
    // collect interval. A source that misses it is counted (agent.source.late) and left out of
    // the cycle; it is not polled again until its Poll has returned.
    base::Duration source_deadline{0};
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
  // A source whose Poll is still running is not stopped: it is waited for up to its deadline
  // (not at all when it already missed one), then left behind with its thread.
  void Stop(base::Duration exporter_timeout = std::chrono::seconds(2));

  // One collection cycle now (also what the scheduler runs).
  void CollectCycle();
  // Closes the current window and exports it.
  void ExportWindow();

  SelfStats& self_stats() { return self_stats_; }
  const Aggregator& aggregator() const { return aggregator_; }
  int cycles() const { return cycles_; }
  // The deadline of a source's Poll (its own, or the default).
  base::Duration deadline_of(size_t source_index) const;

  // Blocks until the worker of source `name` is idle or `timeout` passes; true when idle.
  bool WaitForSourceIdleForTesting(std::string_view name, std::chrono::milliseconds timeout);

 private:
  struct SourceRun;  // one source, its worker and its buffer (agent.cc)

  void ScheduleNextCycle();
  // Merges a late Poll that has returned meanwhile; false while it is still running.
  bool Rejoin(SourceRun& run);
  void Dispatch(SourceRun& run, base::TimePoint now);
  // Waits for each dispatched source up to its deadline and merges what answered, in
  // registration order.
  void Settle(base::TimePoint now);
  // Stops the workers: a source left inside Poll is leaked, never destroyed under its thread.
  void StopWorkers(bool stop_sources);
  // Sources left inside a hung Poll by Stop or the destructor; never freed. Main sequence.
  static std::vector<std::unique_ptr<SourceRun>>& LeftBehind();

  Options options_;
  base::TaskRunner& task_runner_;
  const base::Clock& clock_;
  Aggregator aggregator_;
  SelfStats self_stats_;
  std::function<void()> before_cycle_;
  std::vector<std::unique_ptr<SourceRun>> sources_;
  std::vector<SourceRun*> dispatched_;  // this cycle's, not settled yet
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

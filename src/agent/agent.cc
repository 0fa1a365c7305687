// SPDX-License-Identifier: Apache-2.0
#include "agent/agent.h"

#include "agent/sources/deadline_worker.h"
#include "agent/sources/sample_buffer.h"
#include "base/logging.h"

namespace warpscope::agent {

// One source and how it is polled: its worker thread runs Poll into `buffer`; the main sequence
// merges the buffer once the worker is idle again. Fields other than `buffer` and `poll_now` are
// main-sequence only; those two belong to the worker from Run() until it is idle.
struct Agent::SourceRun {
  SourceEntry entry;
  std::string name;
  bool running = false;  // Start() succeeded
  base::Duration deadline{0};
  std::unique_ptr<DeadlineWorker> worker;
  base::TimePoint poll_now;               // input of the current run
  SampleBuffer buffer;                    // output of the current run
  DeadlineWorker::Clock::time_point due;  // when the main sequence stops waiting for this run
  bool late = false;  // the current run missed its deadline and has not been merged
};

std::vector<std::unique_ptr<Agent::SourceRun>>& Agent::LeftBehind() {
  static auto* runs = new std::vector<std::unique_ptr<SourceRun>>();
  return *runs;
}

Agent::Agent(Options options, base::TaskRunner& task_runner, const base::Clock& clock)
    : options_(std::move(options)),
      task_runner_(task_runner),
      clock_(clock),
      self_stats_(options_.host.id, options_.version) {}

Agent::~Agent() {
  *alive_ = false;
  StopWorkers(/*stop_sources=*/false);
}

void Agent::AddSource(SourceEntry entry) {
  auto run = std::make_unique<SourceRun>();
  run->name = std::string(entry.source->name());
  run->entry = std::move(entry);
  sources_.push_back(std::move(run));
}

void Agent::AddCycleExporter(std::unique_ptr<exporters::Exporter> exporter) {
  cycle_exporters_.push_back(std::move(exporter));
}

void Agent::AddWindowExporter(std::unique_ptr<exporters::Exporter> exporter) {
  window_exporters_.push_back(std::move(exporter));
}

base::Duration Agent::deadline_of(size_t source_index) const {
  const base::Duration own = sources_[source_index]->entry.deadline;
  if (own > base::Duration::zero()) return own;
  if (options_.source_deadline > base::Duration::zero()) return options_.source_deadline;
  return options_.collect_interval / 2;
}

void Agent::Start() {
  WARPSCOPE_CHECK(!started_);
  started_ = true;
  for (size_t i = 0; i < sources_.size(); ++i) {
    SourceRun& run = *sources_[i];
    Source& s = *run.entry.source;
    run.deadline = deadline_of(i);
    s.SetPollDeadline(run.deadline);
    base::Status st = s.Start();
    run.running = st.ok();
    self_stats_.SetSourceUp(run.name, st.ok());
    if (st.ok()) {
      WARPSCOPE_LOG(INFO, "source {} started (poll deadline {})", run.name,
                    base::FormatDuration(run.deadline));
      run.worker = std::make_unique<DeadlineWorker>(
          "src-" + run.name, [r = &run] { r->entry.source->Poll(r->poll_now, r->buffer); });
    } else {
      self_stats_.ErrorsFor(run.name).Count("start_failed");
      WARPSCOPE_LOG(WARNING, "source {} disabled: {}", run.name, st.message());
    }
  }
  next_cycle_ = clock_.Monotonic();
  next_export_ = next_cycle_ + options_.export_interval;
  std::weak_ptr<bool> alive = alive_;
  task_runner_.PostTask([this, alive] {
    if (auto a = alive.lock(); a && *a) CollectCycle();
  });
}

void Agent::CollectCycle() {
  if (stopped_) return;
  base::TimePoint now = clock_.Now();
  aggregator_.BeginCycle(now);
  aggregator_.AddEntity(options_.host);
  if (before_cycle_) before_cycle_();
  for (auto& run : sources_) {
    if (!run->running) continue;
    if (!Rejoin(*run)) {
      self_stats_.CountLate(run->name);  // still inside a late Poll: skipped this cycle
      continue;
    }
    if (run->entry.before_poll) {
      Settle(now);  // the hook sees every earlier source of this cycle
      run->entry.before_poll(aggregator_);
    }
    Dispatch(*run, now);
  }
  Settle(now);
  self_stats_.SetDroppedSeries(aggregator_.dropped_series_total());
  self_stats_.WriteTo(aggregator_);
  aggregator_.EndCycle();
  ++cycles_;
  ++cycles_in_window_;

  for (auto& e : cycle_exporters_) {
    auto r = e->Export(aggregator_.latest());
    if (r != exporters::ExportResult::kSuccess) {
      self_stats_.RecordExport(e->name(), exporters::ExportResultName(r));
    }
  }
  if (clock_.Monotonic() >= next_export_) {
    ExportWindow();
    // Windows stay aligned to the schedule even if a cycle ran late.
    while (next_export_ <= clock_.Monotonic()) next_export_ += options_.export_interval;
  }
  ScheduleNextCycle();
}

bool Agent::Rejoin(SourceRun& run) {
  if (!run.late) return true;
  if (run.worker->busy()) return false;
  // The late Poll has returned: its values belong to a cycle that is closed, its events do not.
  run.buffer.ReplayEventsInto(aggregator_);
  run.late = false;
  const base::Duration took =
      std::chrono::duration_cast<base::Duration>(run.worker->last_run_time());
  self_stats_.RecordCollection(run.name, took);
  WARPSCOPE_LOG(INFO, "source {} answered after {}; collecting it again", run.name,
                base::FormatDuration(std::chrono::floor<std::chrono::milliseconds>(took)));
  return true;
}

void Agent::Dispatch(SourceRun& run, base::TimePoint now) {
  run.buffer.Clear();
  run.poll_now = now;
  run.due = DeadlineWorker::Clock::now() +
            std::chrono::duration_cast<DeadlineWorker::Clock::duration>(run.deadline);
  const bool started = run.worker->Run();
  WARPSCOPE_CHECK(started);  // idle: Rejoin() checked
  dispatched_.push_back(&run);
}

void Agent::Settle(base::TimePoint now) {
  for (SourceRun* run : dispatched_) {
    if (!run->worker->WaitUntil(run->due)) {
      run->late = true;
      self_stats_.CountLate(run->name);
      WARPSCOPE_LOG_EVERY_N(WARNING, 10,
                            "source {} did not answer within {}; the cycle closes without it and "
                            "it is skipped until it answers",
                            run->name, base::FormatDuration(run->deadline));
      continue;
    }
    run->buffer.ReplayInto(aggregator_);
    run->entry.source->Finish(now, aggregator_);
    self_stats_.RecordCollection(
        run->name, std::chrono::duration_cast<base::Duration>(run->worker->last_run_time()));
  }
  dispatched_.clear();
}

void Agent::ExportWindow() {
  if (cycles_in_window_ == 0) return;  // nothing collected since the last window
  cycles_in_window_ = 0;
  model::Frame window = aggregator_.CloseWindow(clock_.Now());
  for (auto& e : window_exporters_) {
    auto r = e->Export(window);
    self_stats_.RecordExport(e->name(), exporters::ExportResultName(r));
  }
}

void Agent::ScheduleNextCycle() {
  base::Duration now = clock_.Monotonic();
  next_cycle_ += options_.collect_interval;
  if (next_cycle_ <= now) {
    // We fell behind (a suspended process, or sources that used up their deadlines): skip the
    // missed cycles rather than running them back to back.
    auto missed = (now - next_cycle_) / options_.collect_interval + 1;
    next_cycle_ += missed * options_.collect_interval;
    WARPSCOPE_LOG_EVERY_N(WARNING, 10, "collection fell behind; skipped {} cycle(s)", missed);
  }
  std::weak_ptr<bool> alive = alive_;
  task_runner_.PostDelayedTask(
      [this, alive] {
        if (auto a = alive.lock(); a && *a) CollectCycle();
      },
      next_cycle_ - now);
}

bool Agent::WaitForSourceIdleForTesting(std::string_view name, std::chrono::milliseconds timeout) {
  for (auto& run : sources_) {
    if (run != nullptr && run->name == name && run->worker != nullptr) {
      return run->worker->WaitUntil(DeadlineWorker::Clock::now() + timeout);
    }
  }
  return true;
}

void Agent::StopWorkers(bool stop_sources) {
  for (auto& run : sources_) {
    if (run == nullptr || run->worker == nullptr) continue;
    // A Poll in progress normally ends within its deadline; one that already missed it is
    // presumed hung and not waited for.
    const auto wait = run->late
                          ? std::chrono::milliseconds(0)
                          : std::chrono::duration_cast<std::chrono::milliseconds>(run->deadline);
    if (!run->worker->Stop(wait)) {
      WARPSCOPE_LOG(WARNING, "source {} is still inside Poll; leaving it behind unstopped",
                    run->name);
      // Its thread still uses the source and the buffer: never destroy them under it. They stay
      // reachable (and allocated) for the rest of the process, which is about to exit.
      LeftBehind().push_back(std::move(run));
      continue;
    }
    run->worker.reset();
    if (stop_sources && run->running) run->entry.source->Stop();
  }
}

void Agent::Stop(base::Duration exporter_timeout) {
  if (stopped_) return;
  stopped_ = true;
  *alive_ = false;
  StopWorkers(/*stop_sources=*/true);
  if (started_) ExportWindow();
  for (auto& e : window_exporters_) e->Shutdown(exporter_timeout);
  for (auto& e : cycle_exporters_) e->Shutdown(exporter_timeout);
}

}  // namespace warpscope::agent

// SPDX-License-Identifier: Apache-2.0
#include "agent/agent.h"

#include "base/logging.h"

namespace warpscope::agent {

Agent::Agent(Options options, base::TaskRunner& task_runner, const base::Clock& clock)
    : options_(std::move(options)),
      task_runner_(task_runner),
      clock_(clock),
      self_stats_(options_.host.id, options_.version) {}

Agent::~Agent() { *alive_ = false; }

void Agent::AddSource(SourceEntry entry) {
  sources_.push_back(std::move(entry));
  source_running_.push_back(false);
}

void Agent::AddCycleExporter(std::unique_ptr<exporters::Exporter> exporter) {
  cycle_exporters_.push_back(std::move(exporter));
}

void Agent::AddWindowExporter(std::unique_ptr<exporters::Exporter> exporter) {
  window_exporters_.push_back(std::move(exporter));
}

void Agent::Start() {
  WARPSCOPE_CHECK(!started_);
  started_ = true;
  for (size_t i = 0; i < sources_.size(); ++i) {
    Source& s = *sources_[i].source;
    base::Status st = s.Start();
    source_running_[i] = st.ok();
    self_stats_.SetSourceUp(s.name(), st.ok());
    if (st.ok()) {
      WARPSCOPE_LOG(INFO, "source {} started", s.name());
    } else {
      self_stats_.ErrorsFor(s.name()).Count("start_failed");
      WARPSCOPE_LOG(WARNING, "source {} disabled: {}", s.name(), st.message());
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
  for (size_t i = 0; i < sources_.size(); ++i) {
    if (!source_running_[i]) continue;
    auto& entry = sources_[i];
    if (entry.before_poll) entry.before_poll(aggregator_);
    base::Duration t0 = base::RealClock::Get().Monotonic();
    entry.source->Poll(now, aggregator_);
    self_stats_.RecordCollection(entry.source->name(), base::RealClock::Get().Monotonic() - t0);
  }
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
    // We fell behind (a slow source or a suspended process): skip the missed cycles rather than
    // running them back to back.
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

void Agent::Stop(base::Duration exporter_timeout) {
  if (stopped_) return;
  stopped_ = true;
  *alive_ = false;
  for (size_t i = 0; i < sources_.size(); ++i) {
    if (source_running_[i]) sources_[i].source->Stop();
  }
  if (started_) ExportWindow();
  for (auto& e : window_exporters_) e->Shutdown(exporter_timeout);
  for (auto& e : cycle_exporters_) e->Shutdown(exporter_timeout);
}

}  // namespace warpscope::agent

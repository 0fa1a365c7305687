// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_AGENT_SELF_STATS_H_
#define WARPSCOPE_AGENT_SELF_STATS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>

#include "base/time.h"
#include "model/metric.h"
#include "model/sample_sink.h"

namespace warpscope::agent {

// Counts the degraded-mode events of one source ("nvml_not_supported", "gpu_lost",
// "proc_unreadable"). Thread-safe: sources report from their worker threads.
class ErrorCounter {
 public:
  virtual ~ErrorCounter() = default;
  virtual void Count(std::string_view reason, uint64_t n = 1) = 0;
};

// The agent's own health: collection time per source, errors by source and reason, dropped
// series, export results, sources that missed their deadline, its CPU time and RSS, build info.
// Written as series of the host entity every cycle, so they reach /metrics and every push
// exporter like any other metric.
// Main sequence only, except the ErrorCounter of ErrorsFor(), which any thread may use.
class SelfStats {
 public:
  SelfStats(std::string host_entity_id, std::string version);

  ErrorCounter& ErrorsFor(std::string_view source);
  void SetSourceUp(std::string_view source, bool up);
  void RecordCollection(std::string_view source, base::Duration took);
  // One cycle closed without the source's answer: its Poll missed the deadline, or it was still
  // busy with a late one and was not polled.
  void CountLate(std::string_view source) { ++late_[std::string(source)]; }
  uint64_t late(std::string_view source) const;
  void RecordExport(std::string_view exporter, std::string_view result);
  void SetDroppedSeries(uint64_t total) { dropped_series_ = total; }
  void SetExporterDropped(std::string_view exporter, uint64_t total);
  // The Kubernetes pod directory's state (--kubernetes); no series until first set.
  struct KubernetesState {
    uint64_t pods = 0;
    bool synced = false;
    uint64_t watch_restarts = 0;
  };
  void SetKubernetes(KubernetesState state) { kubernetes_ = state; }

  uint64_t errors(std::string_view source, std::string_view reason) const;
  // Reads /proc/self (under `proc_root`, default "/proc") for the agent's CPU time and RSS.
  void set_proc_root(std::string root) { proc_root_ = std::move(root); }

  void WriteTo(model::SampleSink& out);

 private:
  class SourceErrors : public ErrorCounter {
   public:
    void Count(std::string_view reason, uint64_t n) override {
      std::lock_guard lock(mu);
      counts[std::string(reason)] += n;
    }
    std::mutex mu;
    std::map<std::string, uint64_t> counts;  // guarded by mu
  };

  std::string host_;
  std::string version_;
  std::string proc_root_ = "/proc";
  std::map<std::string, std::unique_ptr<SourceErrors>, std::less<>> errors_;
  std::map<std::string, bool, std::less<>> up_;
  std::map<std::string, double, std::less<>> collection_seconds_;
  std::map<std::string, uint64_t, std::less<>> late_;
  std::map<std::pair<std::string, std::string>, uint64_t> exports_;
  std::map<std::string, uint64_t, std::less<>> exporter_dropped_;
  uint64_t dropped_series_ = 0;
  std::optional<KubernetesState> kubernetes_;
};

// Descriptions of the self-metrics, for the docs.
std::span<const model::MetricDesc* const> AllSelfMetrics();

}  // namespace warpscope::agent

#endif  // WARPSCOPE_AGENT_SELF_STATS_H_

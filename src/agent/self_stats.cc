// SPDX-License-Identifier: Apache-2.0
#include "agent/self_stats.h"

#include <unistd.h>

#include <charconv>

#include "base/file_util.h"

namespace warpscope::agent {
namespace {

using model::EntityKind;
using model::MetricDesc;
using model::MetricKind;

constexpr MetricDesc kCollectionDuration{
    "agent.collection.duration", EntityKind::kHost, MetricKind::kGauge, "s",
    "Wall time the last collection cycle spent in each source (label source).",
    "warpscope_agent_collection_duration_seconds", 1.0, "warpscope.agent.collection.duration", {},
    "source"};
constexpr MetricDesc kSourceUp{
    "agent.source.up", EntityKind::kHost, MetricKind::kGauge, "1",
    "1 when the source started and is collecting, 0 when it failed to start (label source).",
    "warpscope_agent_source_up", 1.0, "warpscope.agent.source.up", {}, "source"};
constexpr MetricDesc kSourceErrors{
    "agent.source.errors", EntityKind::kHost, MetricKind::kCounter, "{error}",
    "Degraded-mode events per source and reason, e.g. NVML NOT_SUPPORTED, GPU lost, unreadable "
    "/proc file (labels source, reason).",
    "warpscope_agent_source_errors_total", 1.0, "warpscope.agent.source.errors", {},
    "source,reason"};
constexpr MetricDesc kSourceLate{
    "agent.source.late",
    EntityKind::kHost,
    MetricKind::kCounter,
    "{cycle}",
    "Collection cycles that closed without this source's answer: its poll missed the deadline, "
    "or it was still busy with a late poll and was skipped (label source).",
    "warpscope_agent_source_late_total",
    1.0,
    "warpscope.agent.source.late",
    {},
    "source"};
constexpr MetricDesc kDroppedSeries{
    "agent.dropped_series", EntityKind::kHost, MetricKind::kCounter, "{series}",
    "Series values dropped because the per-window series limit was reached.",
    "warpscope_agent_dropped_series_total", 1.0, "warpscope.agent.dropped_series"};
constexpr MetricDesc kExports{
    "agent.exports", EntityKind::kHost, MetricKind::kCounter, "{export}",
    "Export attempts per exporter and result (success, failure, dropped).",
    "warpscope_agent_exports_total", 1.0, "warpscope.agent.exports", {}, "exporter,result"};
constexpr MetricDesc kExporterDropped{
    "agent.exporter.dropped", EntityKind::kHost, MetricKind::kCounter, "{frame}",
    "Frames an exporter dropped because its bounded queue was full (label exporter).",
    "warpscope_agent_exporter_dropped_frames_total", 1.0, "warpscope.agent.exporter.dropped", {},
    "exporter"};
constexpr MetricDesc kCpuSeconds{
    "agent.cpu.time", EntityKind::kHost, MetricKind::kCounter, "s",
    "CPU time (user + system) consumed by the agent process, from /proc/self/stat.",
    "warpscope_agent_cpu_seconds_total", 1.0, "warpscope.agent.cpu.time"};
constexpr MetricDesc kRss{
    "agent.memory.rss", EntityKind::kHost, MetricKind::kGauge, "By",
    "Resident set size of the agent process, from /proc/self/statm.",
    "warpscope_agent_resident_memory_bytes", 1.0, "warpscope.agent.memory.rss"};
constexpr MetricDesc kBuildInfo{
    "agent.build_info", EntityKind::kHost, MetricKind::kGauge, "1",
    "Always 1; label version carries the agent version.", "warpscope_agent_build_info", 1.0,
    "warpscope.agent.build_info", {}, "version"};

constexpr MetricDesc kKubernetesPods{
    "agent.kubernetes.pods", EntityKind::kHost, MetricKind::kGauge, "{pod}",
    "Pods of this node the agent knows through the Kubernetes API (--kubernetes); its errors are "
    "warpscope_agent_source_errors_total{source=\"kubernetes\"}.",
    "warpscope_agent_kubernetes_pods", 1.0, "warpscope.agent.kubernetes.pods"};
constexpr MetricDesc kKubernetesSynced{
    "agent.kubernetes.synced", EntityKind::kHost, MetricKind::kGauge, "1",
    "1 while the node's pods are listed and watched, 0 while the Kubernetes API fails "
    "(--kubernetes).",
    "warpscope_agent_kubernetes_synced", 1.0, "warpscope.agent.kubernetes.synced"};
constexpr MetricDesc kKubernetesWatchRestarts{
    "agent.kubernetes.watch_restarts", EntityKind::kHost, MetricKind::kCounter, "{restart}",
    "Pod watches that ended in a re-list: 410 Gone, an ERROR event, a bad or oversized event "
    "(--kubernetes).",
    "warpscope_agent_kubernetes_watch_restarts_total", 1.0,
    "warpscope.agent.kubernetes.watch_restarts"};

constexpr const MetricDesc* kAll[] = {
    &kCollectionDuration, &kSourceUp,   &kSourceErrors, &kSourceLate, &kDroppedSeries, &kExports,
    &kExporterDropped,    &kCpuSeconds, &kRss,          &kBuildInfo,  &kKubernetesPods,
    &kKubernetesSynced,   &kKubernetesWatchRestarts};

}  // namespace

std::span<const model::MetricDesc* const> AllSelfMetrics() { return kAll; }

SelfStats::SelfStats(std::string host_entity_id, std::string version)
    : host_(std::move(host_entity_id)), version_(std::move(version)) {}

ErrorCounter& SelfStats::ErrorsFor(std::string_view source) {
  auto it = errors_.find(source);
  if (it == errors_.end()) {
    it = errors_.emplace(std::string(source), std::make_unique<SourceErrors>()).first;
  }
  return *it->second;
}

void SelfStats::SetSourceUp(std::string_view source, bool up) {
  up_[std::string(source)] = up;
  if (up) {
    late_.try_emplace(std::string(source), 0);  // a running source reports 0 from the start
  }
}

uint64_t SelfStats::late(std::string_view source) const {
  auto it = late_.find(source);
  return it == late_.end() ? 0 : it->second;
}

void SelfStats::RecordCollection(std::string_view source, base::Duration took) {
  collection_seconds_[std::string(source)] = base::ToSeconds(took);
}

void SelfStats::RecordExport(std::string_view exporter, std::string_view result) {
  ++exports_[{std::string(exporter), std::string(result)}];
}

void SelfStats::SetExporterDropped(std::string_view exporter, uint64_t total) {
  exporter_dropped_[std::string(exporter)] = total;
}

uint64_t SelfStats::errors(std::string_view source, std::string_view reason) const {
  auto it = errors_.find(source);
  if (it == errors_.end()) return 0;
  std::lock_guard lock(it->second->mu);
  auto r = it->second->counts.find(std::string(reason));
  return r == it->second->counts.end() ? 0 : r->second;
}

void SelfStats::WriteTo(model::SampleSink& out) {
  for (const auto& [source, secs] : collection_seconds_) {
    out.AddValue(kCollectionDuration, host_, model::Labels{{"source", source}}, secs);
  }
  for (const auto& [source, up] : up_) {
    out.AddValue(kSourceUp, host_, model::Labels{{"source", source}}, up ? 1 : 0);
  }
  for (const auto& [source, errs] : errors_) {
    std::lock_guard lock(errs->mu);
    for (const auto& [reason, n] : errs->counts) {
      out.AddValue(kSourceErrors, host_, model::Labels{{"source", source}, {"reason", reason}},
                   static_cast<double>(n));
    }
  }
  for (const auto& [source, n] : late_) {
    out.AddValue(kSourceLate, host_, model::Labels{{"source", source}}, static_cast<double>(n));
  }
  out.AddValue(kDroppedSeries, host_, static_cast<double>(dropped_series_));
  for (const auto& [key, n] : exports_) {
    out.AddValue(kExports, host_, model::Labels{{"exporter", key.first}, {"result", key.second}},
                 static_cast<double>(n));
  }
  for (const auto& [exporter, n] : exporter_dropped_) {
    out.AddValue(kExporterDropped, host_, model::Labels{{"exporter", exporter}},
                 static_cast<double>(n));
  }
  out.AddValue(kBuildInfo, host_, model::Labels{{"version", version_}}, 1);
  if (kubernetes_) {
    out.AddValue(kKubernetesPods, host_, static_cast<double>(kubernetes_->pods));
    out.AddValue(kKubernetesSynced, host_, kubernetes_->synced ? 1 : 0);
    out.AddValue(kKubernetesWatchRestarts, host_,
                 static_cast<double>(kubernetes_->watch_restarts));
  }

  std::string buf;
  if (base::ReadFileInto((proc_root_ + "/self/stat").c_str(), buf)) {
    // Fields after the command name (which may contain spaces) start after the last ')'.
    auto close = buf.rfind(')');
    if (close != std::string::npos) {
      auto fields = base::SplitString(std::string_view(buf).substr(close + 1), " ");
      // fields[0] is field 3 (state); utime is field 14, stime field 15.
      if (fields.size() > 13) {
        uint64_t utime = 0, stime = 0;
        std::from_chars(fields[11].data(), fields[11].data() + fields[11].size(), utime);
        std::from_chars(fields[12].data(), fields[12].data() + fields[12].size(), stime);
        static const double kTicks = static_cast<double>(sysconf(_SC_CLK_TCK));
        out.AddValue(kCpuSeconds, host_, static_cast<double>(utime + stime) / kTicks);
      }
    }
  }
  if (base::ReadFileInto((proc_root_ + "/self/statm").c_str(), buf)) {
    auto fields = base::SplitString(buf, " ");
    uint64_t pages = 0;
    if (fields.size() > 1 &&
        std::from_chars(fields[1].data(), fields[1].data() + fields[1].size(), pages).ec ==
            std::errc()) {
      static const double kPage = static_cast<double>(sysconf(_SC_PAGESIZE));
      out.AddValue(kRss, host_, static_cast<double>(pages) * kPage);
    }
  }
}

}  // namespace warpscope::agent

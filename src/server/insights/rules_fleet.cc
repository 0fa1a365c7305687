// SPDX-License-Identifier: Apache-2.0
// Rule 15: a cluster whose GPUs' utilization declines gradually and together for more than half
// an hour, judged on the long view (1-minute buckets). docs/insights.md states the logic.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "fmt/format.h"
#include "server/insights/rules.h"
#include "server/insights/series_math.h"

namespace warpscope::server::insights {
namespace {

constexpr RuleInfo kFleetRegression{
    .name = "fleet_regression",
    .title = "Fleet regression",
    .severity = Severity::kTicket,
    .hold_for = std::chrono::minutes(5),
    .clear_after = std::chrono::minutes(10),
    .suggestion =
        "Compare what changed across the cluster when the decline began: the data pipeline "
        "and the storage it reads, the code or container version, the driver. Open the CPU "
        "profile of one host's training process, and look for input_bound findings on its "
        "GPUs.",
};

double Round(double v, double unit) { return std::round(v / unit) * unit; }

// Per bucket, the median of `member` over `gpus`; NaN where fewer than half report.
Series MedianSeries(const std::vector<const LongGpuInput*>& gpus, Series LongGpuInput::*member,
                    size_t from, size_t n) {
  Series out(n, std::nan(""));
  std::vector<double> values;
  for (size_t i = from; i < n; ++i) {
    values.clear();
    for (const LongGpuInput* g : gpus) {
      const Series& s = g->*member;
      if (i < s.size() && std::isfinite(s[i])) values.push_back(s[i]);
    }
    if (values.size() * 2 >= gpus.size() && !values.empty()) out[i] = *Median(values);
  }
  return out;
}

// The largest fall of `s` within any `w` buckets of [from, n).
double LargestFallWithin(const Series& s, size_t from, size_t n, size_t w) {
  double fall = 0;
  for (size_t i = from; i < n; ++i) {
    if (!std::isfinite(s[i])) continue;
    for (size_t j = i + 1; j < std::min(n, i + w + 1); ++j) {
      if (std::isfinite(s[j])) fall = std::max(fall, s[i] - s[j]);
    }
  }
  return fall;
}

// A job that ended on the GPU: it idles at the end of the window, its memory was freed, or it
// stopped reporting. Idle GPUs are idle_allocated's, not a regression.
bool JobEnded(const LongGpuInput& g, const InsightConfig& cfg, size_t from, size_t n,
              size_t step_w) {
  const size_t tail = n > step_w ? n - step_w : 0;
  std::optional<double> recent = Mean(Slice(g.utilization, tail, n));
  if (!recent || *recent < cfg.fleet_idle_utilization) return true;
  std::optional<double> peak = Max(Slice(g.memory_used, from, n));
  std::optional<std::pair<size_t, double>> memory = Last(Slice(g.memory_used, tail, n));
  return peak && memory && memory->second < *peak / 2;
}

struct Thirds {
  double first = 0;
  double last = 0;
};

// The means of `s` over the first and last thirds of [from, n).
std::optional<Thirds> ThirdsOf(const Series& s, size_t from, size_t n) {
  const size_t third = std::max<size_t>(1, (n - from) / 3);
  std::optional<double> first = Mean(Slice(s, from, from + third));
  std::optional<double> last = Mean(Slice(s, n - third, n));
  if (!first || !last) return std::nullopt;
  return Thirds{*first, *last};
}

class FleetRegression final : public Rule {
 public:
  const RuleInfo& info() const override { return kFleetRegression; }
  base::Duration HoldFor(const InsightConfig& config) const override { return config.fleet_hold; }

  std::vector<Observation> Evaluate(const RuleContext& ctx) const override {
    if (!ctx.inputs.long_view) return {};
    const LongView& lv = *ctx.inputs.long_view;
    // Clusters come from the hosts' tags in the short view; a GPU gone from it is not judged.
    std::map<std::pair<std::string_view, std::string_view>, std::string_view> cluster_of;
    for (const GpuInput& g : ctx.inputs.gpus) cluster_of[{g.host, g.uuid}] = g.cluster;
    std::map<std::string_view, std::vector<const LongGpuInput*>> clusters;
    for (const LongGpuInput& g : lv.gpus) {
      auto it = cluster_of.find({g.host, g.uuid});
      if (it != cluster_of.end()) clusters[it->second].push_back(&g);
    }
    std::vector<Observation> out;
    for (const auto& [cluster, gpus] : clusters) {
      std::optional<Observation> o = Judge(ctx, lv, cluster, gpus);
      if (o) out.push_back(std::move(*o));
    }
    return out;
  }

 private:
  static std::optional<Observation> Judge(const RuleContext& ctx, const LongView& lv,
                                          std::string_view cluster,
                                          const std::vector<const LongGpuInput*>& all) {
    const InsightConfig& cfg = ctx.config;
    const size_t n = lv.buckets;
    const size_t w = std::max<size_t>(1, static_cast<size_t>(cfg.fleet_window / lv.step));
    const size_t step_w = std::max<size_t>(1, static_cast<size_t>(cfg.fleet_step_window / lv.step));
    const size_t min_span = static_cast<size_t>(cfg.fleet_min_span / lv.step);
    const size_t window_from = n > w ? n - w : 0;
    std::vector<const LongGpuInput*> working;
    for (const LongGpuInput* g : all) {
      if (!JobEnded(*g, cfg, window_from, n, step_w)) working.push_back(g);
    }
    std::set<std::string_view> hosts;
    for (const LongGpuInput* g : working) hosts.insert(g->host);
    if (hosts.size() < cfg.fleet_min_hosts && working.size() < cfg.fleet_min_gpus) {
      return std::nullopt;
    }
    const Series median = MedianSeries(working, &LongGpuInput::utilization, window_from, n);
    // The span judged: from the first bucket with a median, at least fleet_min_span long and
    // reaching the latest step window.
    size_t from = window_from;
    while (from < n && !std::isfinite(median[from])) ++from;
    std::optional<std::pair<size_t, double>> last = Last(median);
    if (from >= n || n - from < min_span || !last || last->first + step_w < n) {
      return std::nullopt;
    }
    std::optional<Thirds> cluster_thirds = ThirdsOf(median, from, n);
    std::optional<double> slope = SlopePerBucket(Slice(median, from, n));
    if (!cluster_thirds || !slope) return std::nullopt;
    const double drop = cluster_thirds->first - cluster_thirds->last;
    const double step_fall = LargestFallWithin(median, from, n, step_w);
    const std::string entity = cluster.empty() ? "fleet" : fmt::format("cluster/{}", cluster);
    const bool open = ctx.open("", entity);
    if (open) {
      if (drop < cfg.fleet_clear_drop) return std::nullopt;
    } else if (drop < cfg.fleet_drop || *slope >= 0 || step_fall > cfg.fleet_max_step_share * drop) {
      return std::nullopt;
    }
    // Broad: most of the working GPUs declined on their own, not a few dragging the median.
    struct HostDecline {
      size_t gpus = 0;
      size_t declined = 0;
      double first = 0;
      double last = 0;
    };
    std::map<std::string_view, HostDecline> per_host;
    size_t judged = 0;
    size_t declined = 0;
    for (const LongGpuInput* g : working) {
      std::optional<Thirds> t = ThirdsOf(g->utilization, from, n);
      if (!t) continue;
      ++judged;
      HostDecline& h = per_host[g->host];
      ++h.gpus;
      h.first += t->first;
      h.last += t->last;
      if (t->first - t->last >= cfg.fleet_gpu_drop) ++declined, ++h.declined;
    }
    if (judged == 0 ||
        static_cast<double>(declined) < cfg.fleet_broad_share * static_cast<double>(judged)) {
      return std::nullopt;
    }
    return Describe(ctx, lv, cluster, entity, working, all.size() - working.size(), median, from,
                    *cluster_thirds, *slope, per_host, judged, declined);
  }

  template <typename PerHost>
  static Observation Describe(const RuleContext& ctx, const LongView& lv,
                              std::string_view cluster, const std::string& entity,
                              const std::vector<const LongGpuInput*>& working, size_t ended,
                              const Series& median, size_t from, Thirds thirds, double slope,
                              const PerHost& per_host, size_t judged, size_t declined) {
    const InsightConfig& cfg = ctx.config;
    const size_t n = lv.buckets;
    const double drop = thirds.first - thirds.last;
    const size_t step_w = std::max<size_t>(1, static_cast<size_t>(cfg.fleet_step_window / lv.step));
    const double now = Mean(Slice(median, n > step_w ? n - step_w : 0, n)).value_or(thirds.last);
    Observation o;
    o.host = "";
    o.entity = entity;
    o.kind = model::EntityKind::kCluster;
    o.attributes.Set("cluster", cluster);
    o.attributes.Set("host.count", std::to_string(per_host.size()));
    o.attributes.Set("gpu.count", std::to_string(working.size()));
    o.gpus = static_cast<double>(working.size());
    o.lost_fraction = thirds.first > 0 ? std::clamp((thirds.first - now) / thirds.first, 0.0, 1.0)
                                       : 0.0;
    const base::Duration span = lv.step * static_cast<int64_t>(n - from);
    o.summary = fmt::format(
        "{} ({} hosts, {} GPUs): the median GPU utilization fell gradually from {:.1f} % to "
        "{:.1f} % over the last {} ({} of {} GPUs declined), with no step and no job ending.",
        cluster.empty() ? std::string("The hosts without a cluster tag")
                        : fmt::format("Cluster {}", cluster),
        per_host.size(), working.size(), thirds.first * 100, now * 100,
        base::FormatDuration(span), declined, judged);
    nlohmann::json hosts = nlohmann::json::array();
    nlohmann::json peers = nlohmann::json::array();
    for (const auto& [host, h] : per_host) {
      const double count = static_cast<double>(h.gpus);
      hosts.push_back({{"host", host},
                       {"gpus", h.gpus},
                       {"declined_gpus", h.declined},
                       {"from_utilization", Round(h.first / count, 0.001)},
                       {"to_utilization", Round(h.last / count, 0.001)},
                       {"drop", Round((h.first - h.last) / count, 0.001)}});
      peers.push_back(host);
    }
    const Series power = MedianSeries(working, &LongGpuInput::power, from, n);
    const double per_hour = 3600.0 / base::ToSeconds(lv.step);
    nlohmann::json utilization_series =
        SeriesEvidence(lv.start, lv.step, "gpu.utilization", "1", median, from, n);
    nlohmann::json power_series =
        SeriesEvidence(lv.start, lv.step, "gpu.power.usage", "W", power, from, n);
    utilization_series["of"] = "median of the cluster's GPUs";
    power_series["of"] = "median of the cluster's GPUs";
    o.evidence = {
        {"cluster", cluster},
        {"baseline_utilization", Round(thirds.first, 0.001)},
        {"utilization", Round(now, 0.001)},
        {"drop", Round(drop, 0.001)},
        {"threshold_drop", cfg.fleet_drop},
        {"slope_per_hour", Round(slope * per_hour, 0.001)},
        {"span_minutes", Round(base::ToSeconds(span) / 60, 1)},
        {"gpus", working.size()},
        {"judged_gpus", judged},
        {"declined_gpus", declined},
        {"ended_gpus", ended},
        {"hosts", std::move(hosts)},
        {"peers", std::move(peers)},
        {"series", {std::move(utilization_series), std::move(power_series)}},
    };
    return o;
  }
};

}  // namespace

std::unique_ptr<Rule> MakeFleetRegressionRule() { return std::make_unique<FleetRegression>(); }

}  // namespace warpscope::server::insights

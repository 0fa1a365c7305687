// SPDX-License-Identifier: Apache-2.0
// Rules 5 and 6: a GPU hotter than its peers at similar power, and a GPU whose temperature
// climbs faster than cooling allows.
#include <cmath>
#include <map>
#include <tuple>

#include "fmt/format.h"
#include "server/insights/rules.h"
#include "server/insights/series_math.h"

namespace warpscope::server::insights {
namespace {

constexpr RuleInfo kCoolingFailure{
    .name = "cooling_failure",
    .title = "Cooling failure",
    .severity = Severity::kPage,
    .hold_for = {},
    .clear_after = std::chrono::minutes(2),
    .suggestion =
        "Check the node's fans, airflow or liquid-cooling loop now, and drain the "
        "GPU's jobs before it throttles or shuts itself down.",
};

class CoolingFailure final : public Rule {
 public:
  const RuleInfo& info() const override { return kCoolingFailure; }
  base::Duration ClearAfter(const InsightConfig& config) const override {
    return config.cooling_clear_after;
  }

  std::vector<Observation> Evaluate(const RuleContext& ctx) const override {
    const InsightInputs& in = ctx.inputs;
    const InsightConfig& cfg = ctx.config;
    const auto [n, w, from] = Trailing(in, cfg.cooling_window);
    const double buckets_per_minute = 60.0 / base::ToSeconds(in.step);
    std::vector<Observation> out;
    for (const GpuInput& g : in.gpus) {
      std::span<const double> window = Slice(g.temperature, from, n);
      if (CountValues(window) < std::max<size_t>(3, w / 2)) continue;
      std::optional<double> slope = SlopePerBucket(window);
      std::optional<std::pair<size_t, double>> last = Last(window);
      std::optional<double> coolest = Min(window);
      if (!slope || !last || !coolest) continue;
      const double rate = *slope * buckets_per_minute;
      const double rise = last->second - *coolest;
      // Once open, it holds while the climb goes on at half the rate that raised it.
      const double needed =
          ctx.open(g.host, g.uuid) ? cfg.cooling_rate_c_per_min / 2 : cfg.cooling_rate_c_per_min;
      if (rate <= needed || rise < cfg.cooling_min_rise_c) continue;
      Observation o = OnGpu(g);
      o.summary = fmt::format(
          "{} heats up at {:.1f} °C/min ({:.1f} °C → {:.1f} °C within {}), faster than the "
          "{:.0f} °C/min cooling keeps up with.",
          GpuName(g), rate, *coolest, last->second, base::FormatDuration(cfg.cooling_window),
          cfg.cooling_rate_c_per_min);
      const size_t shown = n > 3 * w ? n - 3 * w : 0;
      o.evidence = {
          {"rate_c_per_min", std::round(rate * 10) / 10},
          {"threshold_c_per_min", cfg.cooling_rate_c_per_min},
          {"from_c", *coolest},
          {"to_c", last->second},
          {"series",
           {SeriesEvidence(in, "gpu.temperature", "Cel", g.temperature, shown, n),
            SeriesEvidence(in, "gpu.power.usage", "W", g.power, shown, n)}},
      };
      out.push_back(std::move(o));
    }
    return out;
  }
};

constexpr RuleInfo kThermalOutlier{
    .name = "thermal_outlier",
    .title = "Thermal outlier",
    .severity = Severity::kTicket,
    .hold_for = std::chrono::minutes(2),
    .clear_after = std::chrono::minutes(5),
    .suggestion =
        "Inspect this GPU's cooling (heatsink seating, thermal paste, fan or cold "
        "plate, blocked airflow in its slot) at the next maintenance window; a GPU "
        "running hotter than its peers fails and throttles first.",
};

class ThermalOutlier final : public Rule {
 public:
  const RuleInfo& info() const override { return kThermalOutlier; }

  std::vector<Observation> Evaluate(const RuleContext& ctx) const override {
    const InsightInputs& in = ctx.inputs;
    const InsightConfig& cfg = ctx.config;
    const auto [n, w, from] = Trailing(in, cfg.thermal_window);
    struct Means {
      const GpuInput* gpu;
      double temperature;
      double power;
      double lowest_power;  // the window's lowest bucket
    };
    // Peers: the same cluster and GPU model.
    std::map<std::pair<std::string_view, std::string_view>, std::vector<Means>> groups;
    for (const GpuInput& g : in.gpus) {
      std::span<const double> t = Slice(g.temperature, from, n);
      std::optional<double> mean_t = Mean(t);
      std::span<const double> p = Slice(g.power, from, n);
      std::optional<double> mean_p = Mean(p);
      std::optional<double> lowest_p = Min(p);
      if (!mean_t || !mean_p || !lowest_p || CountValues(t) < w / 2) continue;
      groups[{g.cluster, g.attributes.Get(model::attr::kGpuModel)}].push_back(
          {&g, *mean_t, *mean_p, *lowest_p});
    }
    std::vector<Observation> out;
    for (const auto& [group, members] : groups) {
      for (const Means& m : members) {
        // Peers draw similar or more power: a GPU hotter than cards working harder is as much
        // an outlier as one hotter than cards working alike. Throughout the window, not only on
        // average: a card whose power has just come back (a brake released) is still cooler
        // from before for minutes, and would pull the median down.
        std::vector<double> peer_temperatures;
        for (const Means& p : members) {
          if (p.gpu != m.gpu &&
              p.lowest_power >= m.power * (1 - cfg.thermal_peer_power_fraction)) {
            peer_temperatures.push_back(p.temperature);
          }
        }
        if (peer_temperatures.size() < cfg.thermal_min_peers) continue;
        const double median = *Median(peer_temperatures);
        const double excess = m.temperature - median;
        const double needed =
            ctx.open(m.gpu->host, m.gpu->uuid) ? cfg.thermal_clear_c : cfg.thermal_outlier_c;
        if (excess <= needed) continue;
        const GpuInput& g = *m.gpu;
        Observation o = OnGpu(g);
        o.summary = fmt::format(
            "{} runs at {:.1f} °C, {:.1f} °C above the median of {} peers ({:.1f} °C) at "
            "{:.0f} W or more, over the last {}.",
            GpuName(g), m.temperature, excess, peer_temperatures.size(), median,
            m.power * (1 - cfg.thermal_peer_power_fraction),
            base::FormatDuration(cfg.thermal_window));
        o.evidence = {
            {"temperature_c", std::round(m.temperature * 10) / 10},
            {"power_w", std::round(m.power)},
            {"peer_median_c", std::round(median * 10) / 10},
            {"peers", peer_temperatures.size()},
            {"threshold_c", cfg.thermal_outlier_c},
            {"cluster", g.cluster},
            {"series",
             {SeriesEvidence(in, "gpu.temperature", "Cel", g.temperature, from, n),
              SeriesEvidence(in, "gpu.power.usage", "W", g.power, from, n)}},
        };
        out.push_back(std::move(o));
      }
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<Rule> MakeCoolingFailureRule() { return std::make_unique<CoolingFailure>(); }
std::unique_ptr<Rule> MakeThermalOutlierRule() { return std::make_unique<ThermalOutlier>(); }

}  // namespace warpscope::server::insights

// SPDX-License-Identifier: Apache-2.0
// Rule 7: a busy GPU whose power falls sharply within one interval and stays down while it is
// still busy — a throttle (thermal, power brake, a failing power supply), not a job ending.
#include <algorithm>
#include <cmath>

#include "fmt/format.h"
#include "server/insights/gpu_models.h"
#include "server/insights/rules.h"
#include "server/insights/series_math.h"

namespace warpscope::server::insights {
namespace {

constexpr RuleInfo kPowerDrop{
    .name = "power_drop",
    .title = "Power drop while busy",
    .severity = Severity::kPage,
    .hold_for = {},
    .clear_after = std::chrono::minutes(2),
    .suggestion =
        "Look at the GPU's clock event reasons (thermal or power-brake slowdown) and "
        "the node's power supplies and cooling; the job on it now runs slower than "
        "its peers and holds back every rank that waits for it.",
};

class PowerDrop final : public Rule {
 public:
  const RuleInfo& info() const override { return kPowerDrop; }

  std::vector<Observation> Evaluate(const RuleContext& ctx) const override {
    const InsightInputs& in = ctx.inputs;
    const InsightConfig& cfg = ctx.config;
    const size_t w = BucketsIn(in, cfg.power_drop_window);
    const size_t n = in.buckets;
    std::vector<Observation> out;
    for (const GpuInput& g : in.gpus) {
      const double full_load = FullLoadWatts(g);
      const double threshold = ScaleWatts(cfg.power_drop_watts, full_load);
      // The first bucket of the latest run of buckets whose power is more than `threshold`
      // under the highest of the window before, while the GPU was busy in that window.
      std::optional<size_t> drop;
      double before = 0;
      bool in_run = false;
      for (size_t i = w; i < n; ++i) {
        std::optional<double> high = Max(Slice(g.power, i - w, i));
        std::optional<double> busy = Mean(Slice(g.utilization, i - w, i));
        const bool dropped = std::isfinite(g.power[i]) && high && busy &&
                             *high - g.power[i] > threshold &&
                             *busy >= cfg.power_drop_busy_utilization;
        if (dropped && !in_run) {
          drop = i;
          before = *high;
        }
        in_run = dropped;
      }
      if (!drop) continue;
      // Still down (no bucket since back within half the threshold of the level before) and
      // still busy: a job that ended drops its power and its utilization together.
      std::span<const double> after = Slice(g.power, *drop, n);
      std::optional<double> highest_after = Max(after);
      std::optional<double> busy_after = Mean(Slice(g.utilization, *drop, n));
      std::optional<std::pair<size_t, double>> now = Last(after);
      if (!highest_after || !now || *highest_after >= before - threshold / 2 || !busy_after ||
          *busy_after < cfg.power_drop_busy_utilization) {
        continue;
      }
      // A throttle slows the clocks (thermal or power-brake slowdown, a power cap); power that
      // falls at full clocks is the work changing, e.g. ranks spinning in a collective that
      // hangs on a lost peer. The median since the drop, so that one bucket of a job ending
      // does not count as a throttle. Without the SM clock, power alone decides.
      std::optional<double> clock_before = Max(Slice(g.sm_clock, *drop - w, *drop));
      std::span<const double> clock_since = Slice(g.sm_clock, *drop, n);
      std::optional<double> clock_after =
          Median(std::vector<double>(clock_since.begin(), clock_since.end()));
      if (clock_before && clock_after &&
          *clock_after > *clock_before * (1 - cfg.power_drop_clock_fraction)) {
        continue;
      }
      Observation o = OnGpu(g);
      o.lost_fraction = std::clamp(1 - now->second / before, 0.0, 1.0);
      o.summary = fmt::format(
          "{} dropped from {:.0f} W to {:.0f} W {} ago while {:.0f} % busy, and stays down "
          "({:.0f} W now; threshold {:.0f} W for a {:.0f} W card).",
          GpuName(g), before, g.power[*drop],
          base::FormatDuration(in.end() - in.BucketStart(*drop)), *busy_after * 100, now->second,
          threshold, full_load);
      const size_t shown = *drop > 3 * w ? *drop - 3 * w : 0;
      o.evidence = {
          {"before_w", std::round(before)},
          {"after_w", std::round(g.power[*drop])},
          {"now_w", std::round(now->second)},
          {"threshold_w", std::round(threshold)},
          {"full_load_w", full_load},
          {"drop_time", base::ToUnixMillis(in.BucketStart(*drop))},
          {"series",
           {SeriesEvidence(in, "gpu.power.usage", "W", g.power, shown, n),
            SeriesEvidence(in, "gpu.utilization", "1", g.utilization, shown, n)}},
      };
      out.push_back(std::move(o));
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<Rule> MakePowerDropRule() { return std::make_unique<PowerDrop>(); }

}  // namespace warpscope::server::insights

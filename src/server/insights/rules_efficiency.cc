// SPDX-License-Identifier: Apache-2.0
// Rules 2 and 4: a busy GPU whose kernels wait on memory, and a training GPU that draws far
// less power than its card does at full load — both say the GPU works below what it can.
#include <algorithm>
#include <cmath>

#include "fmt/format.h"
#include "server/insights/gpu_models.h"
#include "server/insights/rules.h"
#include "server/insights/series_math.h"

namespace warpscope::server::insights {
namespace {

// Means over the rule's window, and whether enough of it has data.
struct WindowMeans {
  std::optional<double> utilization, power, occupancy, dram;
  bool judged = false;
};

WindowMeans MeansOver(const InsightInputs& in, const GpuInput& g, base::Duration window) {
  const auto [n, w, from] = Trailing(in, window);
  WindowMeans m;
  std::span<const double> util = Slice(g.utilization, from, n);
  m.judged = CountValues(util) * 5 >= w * 4;  // seen for most of the window
  m.utilization = Mean(util);
  m.power = Mean(Slice(g.power, from, n));
  m.occupancy = Mean(Slice(g.sm_occupancy, from, n));
  m.dram = Mean(Slice(g.dram_active, from, n));
  return m;
}

double Percent(double ratio) { return std::round(ratio * 1000) / 10; }

constexpr RuleInfo kMemoryBound{
    .name = "memory_bound",
    .title = "Memory-bound kernels",
    .severity = Severity::kInfo,
    .hold_for = std::chrono::minutes(2),
    .clear_after = std::chrono::minutes(5),
    .suggestion =
        "The kernels wait on memory rather than compute: fuse element-wise operations "
        "(torch.compile), move fewer bytes (BF16/FP8, fused optimizers), and look at "
        "the GPU profile's top kernels for the memory-bound ones.",
};

class MemoryBound final : public Rule {
 public:
  const RuleInfo& info() const override { return kMemoryBound; }

  std::vector<Observation> Evaluate(const RuleContext& ctx) const override {
    const InsightInputs& in = ctx.inputs;
    const InsightConfig& cfg = ctx.config;
    const auto [n, w, from] = Trailing(in, cfg.efficiency_window);
    std::vector<Observation> out;
    for (const GpuInput& g : in.gpus) {
      WindowMeans m = MeansOver(in, g, cfg.efficiency_window);
      if (!m.judged || !m.utilization || !m.occupancy || !m.dram ||
          *m.utilization < cfg.efficiency_busy_utilization ||
          *m.occupancy >= cfg.memory_bound_occupancy || *m.dram <= cfg.memory_bound_dram) {
        continue;
      }
      Observation o = OnGpu(g);
      o.summary = fmt::format(
          "{}: DRAM {:.0f} % busy while SM occupancy is {:.0f} % over the last {} — its kernels "
          "are limited by memory bandwidth.",
          GpuName(g), *m.dram * 100, *m.occupancy * 100,
          base::FormatDuration(cfg.efficiency_window));
      o.evidence = {
          {"dram_active", Percent(*m.dram) / 100},
          {"sm_occupancy", Percent(*m.occupancy) / 100},
          {"utilization", Percent(*m.utilization) / 100},
          {"series",
           {SeriesEvidence(in, "gpu.dram.active", "1", g.dram_active, from, n),
            SeriesEvidence(in, "gpu.sm.occupancy", "1", g.sm_occupancy, from, n)}},
      };
      out.push_back(std::move(o));
    }
    return out;
  }
};

constexpr RuleInfo kUnderpowered{
    .name = "underpowered",
    .title = "Under-powered training",
    .severity = Severity::kTicket,
    .hold_for = std::chrono::minutes(2),
    .clear_after = std::chrono::minutes(5),
    .suggestion =
        "The GPU is busy but draws far less than its card at full load: small "
        "kernels, launch overhead or synchronisation keep it from real work. Larger "
        "batches, CUDA graphs or torch.compile, and the GPU profile's gaps between "
        "kernels say which.",
};

class Underpowered final : public Rule {
 public:
  const RuleInfo& info() const override { return kUnderpowered; }

  std::vector<Observation> Evaluate(const RuleContext& ctx) const override {
    const InsightInputs& in = ctx.inputs;
    const InsightConfig& cfg = ctx.config;
    const auto [n, w, from] = Trailing(in, cfg.efficiency_window);
    std::vector<Observation> out;
    for (const GpuInput& g : in.gpus) {
      WindowMeans m = MeansOver(in, g, cfg.efficiency_window);
      if (!m.judged || !m.utilization || !m.power ||
          *m.utilization < cfg.underpowered_utilization) {
        continue;
      }
      const double full_load = FullLoadWatts(g);
      const double threshold = ScaleWatts(cfg.underpowered_watts, full_load);
      // Occupancy is a condition where the GPU reports it (GPM); older GPUs are judged on
      // power alone, and the evidence says so.
      if (*m.power >= threshold || (m.occupancy && *m.occupancy >= cfg.underpowered_occupancy)) {
        continue;
      }
      Observation o = OnGpu(g);
      o.lost_fraction = std::clamp(1 - *m.power / full_load, 0.0, 1.0);
      o.summary = fmt::format(
          "{} is {:.0f} % busy but draws {:.0f} W on average over the last {}, under {:.0f} W "
          "for a {:.0f} W card{}.",
          GpuName(g), *m.utilization * 100, *m.power, base::FormatDuration(cfg.efficiency_window),
          threshold, full_load,
          m.occupancy ? fmt::format(", with {:.0f} % SM occupancy", *m.occupancy * 100) : "");
      o.evidence = {
          {"power_w", std::round(*m.power)},
          {"threshold_w", std::round(threshold)},
          {"full_load_w", full_load},
          {"utilization", Percent(*m.utilization) / 100},
          {"sm_occupancy",
           m.occupancy ? nlohmann::json(Percent(*m.occupancy) / 100) : nlohmann::json(nullptr)},
          {"series",
           {SeriesEvidence(in, "gpu.power.usage", "W", g.power, from, n),
            SeriesEvidence(in, "gpu.utilization", "1", g.utilization, from, n)}},
      };
      out.push_back(std::move(o));
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<Rule> MakeMemoryBoundRule() { return std::make_unique<MemoryBound>(); }
std::unique_ptr<Rule> MakeUnderpoweredRule() { return std::make_unique<Underpowered>(); }

}  // namespace warpscope::server::insights

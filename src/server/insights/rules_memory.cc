// SPDX-License-Identifier: Apache-2.0
// Rules 12 and 14: a process whose GPU memory keeps growing after its start-up, and GPUs that
// hold memory while doing nothing.
#include <algorithm>
#include <cmath>
#include <map>

#include "fmt/format.h"
#include "server/insights/rules.h"
#include "server/insights/series_math.h"

namespace warpscope::server::insights {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

constexpr RuleInfo kIdleAllocated{
    .name = "idle_allocated",
    .title = "GPU allocated but idle",
    // Low utilisation alone never pages anyone: it is a cost to act on, not an outage.
    .severity = Severity::kTicket,
    .hold_for = {},
    .clear_after = std::chrono::minutes(2),
    .suggestion =
        "Release the GPU (stop the idle notebook kernel or process holding its "
        "memory), or give idle sessions a timeout, so the GPU can run other work.",
};

class IdleAllocated final : public Rule {
 public:
  const RuleInfo& info() const override { return kIdleAllocated; }

  std::vector<Observation> Evaluate(const RuleContext& ctx) const override {
    const InsightInputs& in = ctx.inputs;
    const InsightConfig& cfg = ctx.config;
    const auto [n, w, from] = Trailing(in, cfg.idle_window);
    const size_t clear = BucketsIn(in, cfg.idle_clear_window);
    std::vector<Observation> out;
    for (const GpuInput& g : in.gpus) {
      std::span<const double> util = Slice(g.utilization, from, n);
      // A GPU seen for less than most of the window is not judged yet.
      if (CountValues(util) * 5 < w * 4) continue;
      std::optional<double> memory = Mean(Slice(g.memory_used, from, n));
      std::optional<double> mean_util = Mean(util);
      if (!memory || !mean_util || *memory < cfg.idle_min_memory_bytes) continue;
      if (ctx.open(g.host, g.uuid)) {
        std::optional<double> recent = Mean(Slice(g.utilization, n > clear ? n - clear : 0, n));
        if (recent && *recent > cfg.idle_clear_utilization) continue;
      } else if (*mean_util >= cfg.idle_utilization) {
        continue;
      }
      Observation o = OnGpu(g);
      o.lost_fraction = std::clamp(1 - *mean_util, 0.0, 1.0);
      nlohmann::json holders = nlohmann::json::array();
      for (const ProcessGpuInput& p : in.processes) {
        if (p.host != g.host || p.gpu != g.uuid) continue;
        std::optional<std::pair<size_t, double>> held = Last(Slice(p.memory_used, from, n));
        if (!held || held->second <= 0) continue;
        holders.push_back({{"entity", p.entity},
                           {"pid", p.attributes.Get(model::attr::kPid)},
                           {"executable", p.attributes.Get(model::attr::kExecutable)},
                           {"memory_bytes", held->second}});
      }
      o.summary = fmt::format(
          "{} holds {:.1f} GiB of memory{} but has averaged {:.1f} % utilization over the last "
          "{}.",
          GpuName(g), *memory / kGiB,
          holders.empty()
              ? ""
              : fmt::format(" for {} process{}", holders.size(), holders.size() > 1 ? "es" : ""),
          *mean_util * 100, base::FormatDuration(cfg.idle_window));
      o.evidence = {
          {"memory_bytes", std::round(*memory)},
          {"utilization", std::round(*mean_util * 10000) / 10000},
          {"threshold_utilization", cfg.idle_utilization},
          {"processes", std::move(holders)},
          {"series",
           {SeriesEvidence(in, "gpu.utilization", "1", g.utilization, from, n),
            SeriesEvidence(in, "gpu.memory.used", "By", g.memory_used, from, n)}},
      };
      out.push_back(std::move(o));
    }
    return out;
  }
};

constexpr RuleInfo kMemoryLeak{
    .name = "memory_leak",
    .title = "GPU memory leak",
    .severity = Severity::kTicket,
    .hold_for = {},
    .clear_after = std::chrono::minutes(5),
    .suggestion =
        "Look for tensors kept alive across steps (a loss or metric history that "
        "holds the autograd graph: store .item() or .detach()), growing caches and "
        "lists of outputs; torch.cuda.memory_snapshot() shows what holds the memory.",
};

class MemoryLeak final : public Rule {
 public:
  const RuleInfo& info() const override { return kMemoryLeak; }

  std::vector<Observation> Evaluate(const RuleContext& ctx) const override {
    const InsightInputs& in = ctx.inputs;
    const InsightConfig& cfg = ctx.config;
    const auto [n, w, from] = Trailing(in, cfg.leak_window);
    const double buckets_per_minute = 60.0 / base::ToSeconds(in.step);
    std::map<std::pair<std::string_view, std::string_view>, const GpuInput*> gpus;
    for (const GpuInput& g : in.gpus) gpus[{g.host, g.uuid}] = &g;
    std::vector<Observation> out;
    for (const ProcessGpuInput& p : in.processes) {
      // Loading a model grows memory too: only a process past its start-up is judged.
      if (p.first_seen + cfg.leak_warmup > in.BucketStart(from)) continue;
      std::span<const double> s = Slice(p.memory_used, from, n);
      if (CountValues(s) * 5 < w * 3) continue;
      std::optional<double> peak = Max(s);
      std::optional<double> first = Min(Slice(s, 0, std::max<size_t>(1, w / 6)));
      std::optional<std::pair<size_t, double>> last = Last(s);
      std::optional<double> slope = SlopePerBucket(s);
      if (!peak || *peak <= 0 || !first || !last || !slope || *slope <= 0) continue;
      const double growth = last->second - *first;
      // Still growing in the last third: a cache that filled and stopped is not a leak.
      std::optional<double> at_two_thirds = Max(Slice(s, 0, 2 * w / 3));
      const double tail = at_two_thirds ? last->second - *at_two_thirds : 0;
      // Memory that is freed again (a sawtooth of batches of different sizes) is not a leak.
      const double fall = LargestFall(s);
      if (growth <= cfg.leak_growth_of_peak * *peak ||
          tail <= cfg.leak_tail_growth_of_peak * *peak ||
          fall > cfg.leak_max_fall_of_peak * *peak) {
        continue;
      }
      const double rate_per_minute = *slope * buckets_per_minute;
      Observation o;
      o.host = p.host;
      o.entity = p.entity;
      o.kind = model::EntityKind::kProcess;
      o.attributes = p.attributes;
      o.attributes.Set(model::attr::kGpuUuid, p.gpu);
      std::string where = p.gpu;
      std::optional<double> until_full;
      auto g = gpus.find({p.host, p.gpu});
      if (g != gpus.end()) {
        where = GpuName(*g->second);
        std::string_view index = g->second->attributes.Get(model::attr::kGpuIndex);
        if (!index.empty()) o.attributes.Set(model::attr::kGpuIndex, index);
        std::optional<std::pair<size_t, double>> used = Last(g->second->memory_used);
        std::optional<std::pair<size_t, double>> total = Last(g->second->memory_total);
        if (used && total && total->second > used->second) {
          until_full = (total->second - used->second) / rate_per_minute;
        }
      }
      // Where the injected library ran: how many allocations the CUDA allocator saw and how few
      // were released (a caching allocator that keeps reserving shows as allocations only).
      const double window_s = base::ToSeconds(cfg.leak_window);
      std::optional<double> allocs = Mean(Slice(p.cuda_allocations, from, n));
      std::optional<double> releases = Mean(Slice(p.cuda_releases, from, n));
      std::string_view exe = p.attributes.Get(model::attr::kExecutable);
      std::string_view pid = p.attributes.Get(model::attr::kPid);
      o.summary = fmt::format(
          "{} (pid {}) on {} grew its GPU memory by {:.2f} GiB ({:.1f} % of its peak) over the "
          "last {}, {:.2f} GiB/min and still growing{}.",
          exe.empty() ? std::string_view("process") : exe, pid.empty() ? p.entity : pid, where,
          growth / kGiB, growth / *peak * 100, base::FormatDuration(cfg.leak_window),
          rate_per_minute / kGiB,
          until_full ? fmt::format("; the GPU is full in about {:.0f} min", *until_full) : "");
      if (allocs && releases) {
        o.summary += fmt::format(" The CUDA allocator saw {:.0f} allocations and {:.0f} releases.",
                                 *allocs * window_s, *releases * window_s);
      }
      o.evidence = {
          {"growth_bytes", std::round(growth)},
          {"peak_bytes", std::round(*peak)},
          {"rate_bytes_per_min", std::round(rate_per_minute)},
          {"minutes_until_full",
           until_full ? nlohmann::json(std::round(*until_full)) : nlohmann::json(nullptr)},
          {"cuda_allocations",
           allocs ? nlohmann::json(std::round(*allocs * window_s)) : nlohmann::json(nullptr)},
          {"cuda_releases",
           releases ? nlohmann::json(std::round(*releases * window_s)) : nlohmann::json(nullptr)},
          {"series", {SeriesEvidence(in, "gpu.process.memory.used", "By", p.memory_used, from, n)}},
      };
      out.push_back(std::move(o));
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<Rule> MakeIdleAllocatedRule() { return std::make_unique<IdleAllocated>(); }
std::unique_ptr<Rule> MakeMemoryLeakRule() { return std::make_unique<MemoryLeak>(); }

}  // namespace warpscope::server::insights

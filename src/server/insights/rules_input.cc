// SPDX-License-Identifier: Apache-2.0
// Rule 1: a GPU that works well under its capacity while the process feeding it is busy on the
// CPU — a data loader or CPU-side bottleneck — or spends its GPU time waiting for host-to-device
// copies (the CUDA runtime metrics of the injected library). The finding links that process's
// CPU profile.
#include <algorithm>
#include <cmath>
#include <map>

#include "fmt/format.h"
#include "server/insights/gpu_models.h"
#include "server/insights/rules.h"
#include "server/insights/series_math.h"

namespace warpscope::server::insights {
namespace {

constexpr RuleInfo kInputBound{
    .name = "input_bound",
    .title = "GPU starved by the CPU",
    .severity = Severity::kTicket,
    .hold_for = std::chrono::minutes(2),
    .clear_after = std::chrono::minutes(3),
    .suggestion =
        "The GPU waits for its process's CPU work (data loading, augmentation, "
        "Python overhead): open the process's CPU flamegraph; more DataLoader "
        "workers, pin_memory and prefetching, moving augmentation to the GPU, or "
        "CUDA graphs for Python-bound loops are the usual fixes.",
};

class InputBound final : public Rule {
 public:
  const RuleInfo& info() const override { return kInputBound; }

  std::vector<Observation> Evaluate(const RuleContext& ctx) const override {
    const InsightInputs& in = ctx.inputs;
    const InsightConfig& cfg = ctx.config;
    const auto [n, w, from] = Trailing(in, cfg.input_window);
    std::map<std::string_view, const HostInput*> hosts;
    for (const HostInput& h : in.hosts) hosts[h.host] = &h;
    std::map<std::pair<std::string_view, std::string_view>, const GpuInput*> gpus;
    for (const GpuInput& g : in.gpus) gpus[{g.host, g.uuid}] = &g;
    std::vector<Observation> out;
    for (const ProcessGpuInput& p : in.processes) {
      auto gpu = gpus.find({p.host, p.gpu});
      auto host = hosts.find(p.host);
      if (gpu == gpus.end() || host == hosts.end()) continue;
      const GpuInput& g = *gpu->second;
      const HostInput& h = *host->second;
      std::span<const double> util_window = Slice(g.utilization, from, n);
      if (CountValues(util_window) * 5 < w * 4) continue;  // not seen long enough
      std::optional<double> util = Mean(util_window);
      std::optional<double> power = Mean(Slice(g.power, from, n));
      std::optional<double> share = Mean(Slice(p.cpu_utilization, from, n));
      std::optional<double> cpus = Mean(Slice(h.logical_cpus, from, n));
      std::optional<double> idle = Mean(Slice(h.cpu_idle, from, n));
      std::optional<double> iowait = Mean(Slice(h.cpu_iowait, from, n));
      if (!util || !share || !cpus || *util < cfg.input_min_utilization) continue;
      const double full_load = FullLoadWatts(g);
      const bool open = ctx.open(g.host, g.uuid);
      // The GPU works under its capacity: low utilization, or (at any utilization) low power.
      const double util_limit = cfg.input_gpu_utilization + (open ? 0.1 : 0.0);
      const bool starved =
          *util < util_limit || (power && *power < cfg.input_gpu_power_fraction * full_load);
      const double cores = *share * *cpus;
      const double host_busy = idle ? 1 - *idle - iowait.value_or(0) : 0;
      const bool cpu_bound =
          cores >= cfg.input_process_cores || (idle && host_busy >= cfg.input_host_busy);
      // Host-to-device copies against the kernels, where the process was profiled.
      std::optional<double> h2d = Mean(Slice(p.cuda_h2d_time, from, n));
      std::optional<double> kernels = Mean(Slice(p.cuda_kernel_time, from, n));
      std::optional<double> h2d_share;
      if (h2d && kernels && *h2d + *kernels > 0) h2d_share = *h2d / (*h2d + *kernels);
      const bool copy_bound = h2d_share && *h2d_share >= cfg.input_h2d_copy_share;
      if (!starved || !(cpu_bound || copy_bound)) continue;
      Observation o = OnGpu(g);
      for (const auto& [k, v] : p.attributes) o.attributes.Set(k, v);
      o.lost_fraction = std::clamp(1 - *util, 0.0, 1.0);
      std::string_view exe = p.attributes.Get(model::attr::kExecutable);
      std::string_view pid = p.attributes.Get(model::attr::kPid);
      o.summary = fmt::format(
          "{} is {:.0f} % busy{} while its process {} (pid {}) uses {:.1f} CPU cores and the "
          "host's CPUs are {:.0f} % busy, over the last {}: the GPU waits for {}.",
          GpuName(g), *util * 100,
          power ? fmt::format(" at {:.0f} W of {:.0f}", *power, full_load) : "",
          exe.empty() ? std::string_view("?") : exe, pid.empty() ? p.entity : pid, cores,
          host_busy * 100, base::FormatDuration(cfg.input_window),
          cpu_bound ? "the CPU" : "its input");
      if (copy_bound) {
        o.summary += fmt::format(
            " Host-to-device copies take {:.0f} % of its GPU time: pinned memory "
            "(pin_memory=True) and non_blocking copies let them overlap the kernels.",
            *h2d_share * 100);
      }
      o.evidence = {
          {"gpu_utilization", std::round(*util * 1000) / 1000},
          {"power_w", power ? nlohmann::json(std::round(*power)) : nlohmann::json(nullptr)},
          {"process", p.entity},
          {"process_cpu_cores", std::round(cores * 100) / 100},
          {"host_cpu_busy", std::round(host_busy * 1000) / 1000},
          {"host_cpus", *cpus},
          {"h2d_copy_share",
           h2d_share ? nlohmann::json(std::round(*h2d_share * 1000) / 1000) : nlohmann::json(nullptr)},
          // The profile that explains it: the process's CPU samples over the window.
          {"profile",
           {{"kind", "cpu"},
            {"host", p.host},
            {"entity", p.entity},
            {"start", base::ToUnixMillis(in.BucketStart(from))},
            {"end", base::ToUnixMillis(in.end())}}},
          {"series",
           {SeriesEvidence(in, "gpu.utilization", "1", g.utilization, from, n),
            SeriesEvidence(in, "process.cpu.utilization", "1", p.cpu_utilization, from, n)}},
      };
      out.push_back(std::move(o));
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<Rule> MakeInputBoundRule() { return std::make_unique<InputBound>(); }

}  // namespace warpscope::server::insights

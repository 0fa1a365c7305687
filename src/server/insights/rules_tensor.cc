// SPDX-License-Identifier: Apache-2.0
// Rule 3: a busy GPU whose tensor cores are idle while its work is matrix multiplication —
// matmuls running on the CUDA cores (FP32 without TF32, no mixed precision, odd shapes). The
// best evidence that the work is matmuls is the GPU profile of its processes; without one, its
// FP32/FP16 pipes busy while the tensor pipes are not say that dense math runs on CUDA cores.
#include <algorithm>
#include <cmath>
#include <map>

#include "fmt/format.h"
#include "server/insights/rules.h"
#include "server/insights/series_math.h"

namespace warpscope::server::insights {
namespace {

constexpr RuleInfo kTensorCoresIdle{
    .name = "tensor_cores_idle",
    .title = "Tensor cores idle",
    .severity = Severity::kTicket,
    .hold_for = std::chrono::minutes(2),
    .clear_after = std::chrono::minutes(5),
    .suggestion =
        "The matrix multiplications run on the CUDA cores, not the tensor cores: train in "
        "mixed precision (torch.autocast(\"cuda\", dtype=torch.bfloat16)), or allow TF32 for "
        "FP32 matmuls (torch.set_float32_matmul_precision(\"high\"), "
        "torch.backends.cuda.matmul.allow_tf32 = True); keep the matmul dimensions (hidden "
        "size, batch x sequence, vocabulary) multiples of 8 (FP16/BF16) or 16 (FP8/INT8).",
};

// Tensor cores would speed the matmuls up by at least this factor: H100 SXM offers ~7x the FP32
// rate with TF32 and ~15x with BF16 (NVIDIA H100 datasheet, dense); the estimate assumes 2x.
constexpr double kAssumedSpeedup = 2;
constexpr size_t kTopKernels = 5;
constexpr size_t kMaxNameChars = 160;

double Round3(double v) { return std::round(v * 1000) / 1000; }

struct Means {
  std::optional<double> utilization, tensor, fp32, fp16;
  bool judged = false;
};

Means MeansOver(const InsightInputs& in, const GpuInput& g, base::Duration window) {
  const auto [n, w, from] = Trailing(in, window);
  Means m;
  std::span<const double> util = Slice(g.utilization, from, n);
  std::span<const double> tensor = Slice(g.tensor_active, from, n);
  // Seen for most of the window, tensor activity included (no GPM: not judged).
  m.judged = CountValues(util) * 5 >= w * 4 && CountValues(tensor) * 5 >= w * 4;
  m.utilization = Mean(util);
  m.tensor = Mean(tensor);
  m.fp32 = Mean(Slice(g.fp32_active, from, n));
  m.fp16 = Mean(Slice(g.fp16_active, from, n));
  return m;
}

// The GPU's processes' profile digests, summed: kernel and matmul time, the largest matmuls,
// and the process with the most kernel time (the profile the finding links).
struct ProfileEvidence {
  size_t profiles = 0;
  int64_t kernel_ns = 0;
  int64_t matmul_ns = 0;
  std::vector<KernelTime> matmuls;
  const GpuProfileDigest* main = nullptr;
  std::string executable;
};

// The processes on each GPU and the profile digests by process, for one evaluation.
struct ProfileIndex {
  using Key = std::pair<std::string_view, std::string_view>;
  std::map<Key, std::vector<const ProcessGpuInput*>> processes;  // by (host, GPU uuid)
  std::map<Key, const GpuProfileDigest*> digests;                // by (host, process entity)
  explicit ProfileIndex(const InsightInputs& in) {
    for (const GpuProfileDigest& d : in.gpu_profiles) digests[{d.host, d.entity}] = &d;
    if (digests.empty()) return;
    for (const ProcessGpuInput& p : in.processes) processes[{p.host, p.gpu}].push_back(&p);
  }
};

ProfileEvidence ProfilesOf(const ProfileIndex& index, const GpuInput& g) {
  ProfileEvidence e;
  auto procs = index.processes.find({g.host, g.uuid});
  if (procs == index.processes.end()) return e;
  std::map<std::string_view, int64_t> matmuls;
  for (const ProcessGpuInput* p : procs->second) {
    auto it = index.digests.find({p->host, p->entity});
    if (it == index.digests.end() || it->second->profiles == 0) continue;
    const GpuProfileDigest& d = *it->second;
    e.profiles += d.profiles;
    e.kernel_ns += d.kernel_ns;
    e.matmul_ns += d.matmul_ns;
    for (const KernelTime& k : d.matmuls) matmuls[k.name] += k.gpu_ns;
    if (!e.main || d.kernel_ns > e.main->kernel_ns) {
      e.main = &d;
      e.executable = std::string(p->attributes.Get(model::attr::kExecutable));
    }
  }
  for (const auto& [name, ns] : matmuls) e.matmuls.push_back({std::string(name), ns});
  std::stable_sort(e.matmuls.begin(), e.matmuls.end(),
                   [](const KernelTime& a, const KernelTime& b) { return a.gpu_ns > b.gpu_ns; });
  if (e.matmuls.size() > kTopKernels) e.matmuls.resize(kTopKernels);
  return e;
}

std::string ShortName(const std::string& name) {
  return name.size() <= kMaxNameChars ? name : name.substr(0, kMaxNameChars - 3) + "...";
}

class TensorCoresIdle final : public Rule {
 public:
  const RuleInfo& info() const override { return kTensorCoresIdle; }

  // Profiles are read only for GPUs whose tensor activity already decides for the rule.
  bool WantsGpuProfiles(const InsightInputs& in, const InsightConfig& cfg,
                        const GpuInput& g) const override {
    Means m = MeansOver(in, g, cfg.tensor_window);
    return m.judged && m.utilization && m.tensor &&
           *m.utilization >= cfg.efficiency_busy_utilization &&
           *m.tensor < cfg.tensor_clear_active;
  }

  std::vector<Observation> Evaluate(const RuleContext& ctx) const override {
    const InsightInputs& in = ctx.inputs;
    const InsightConfig& cfg = ctx.config;
    const ProfileIndex index(in);
    std::vector<Observation> out;
    for (const GpuInput& g : in.gpus) {
      Means m = MeansOver(in, g, cfg.tensor_window);
      if (!m.judged || !m.utilization || !m.tensor ||
          *m.utilization < cfg.efficiency_busy_utilization) {
        continue;
      }
      // An open finding clears only above the clear thresholds: no flapping at the line.
      const bool open = ctx.open(g.host, g.uuid);
      const double tensor_limit = open ? cfg.tensor_clear_active : cfg.tensor_active;
      const double margin = open ? 0.1 : 0.0;
      if (*m.tensor >= tensor_limit) continue;
      ProfileEvidence p = ProfilesOf(index, g);
      if (p.kernel_ns > 0) {
        const double share = static_cast<double>(p.matmul_ns) / static_cast<double>(p.kernel_ns);
        if (share < cfg.tensor_matmul_share - margin) continue;
        out.push_back(FromProfile(in, cfg, g, m, p, share));
      } else {
        // No profile: dense math on the CUDA cores' FP32/FP16 pipes stands in for the matmuls.
        if (!m.fp32) continue;
        const double pipes = *m.fp32 + m.fp16.value_or(0);
        if (pipes < cfg.tensor_fp_pipes_busy - margin) continue;
        out.push_back(FromPipes(in, cfg, g, m, pipes));
      }
    }
    return out;
  }

 private:
  static Observation Common(const InsightInputs& in, const InsightConfig& cfg, const GpuInput& g,
                            const Means& m, std::string_view source) {
    const auto [n, w, from] = Trailing(in, cfg.tensor_window);
    Observation o = OnGpu(g);
    o.evidence = {
        {"source", source},
        {"tensor_active", Round3(*m.tensor)},
        {"threshold", cfg.tensor_active},
        {"utilization", Round3(*m.utilization)},
        {"fp32_active", m.fp32 ? nlohmann::json(Round3(*m.fp32)) : nlohmann::json(nullptr)},
        {"fp16_active", m.fp16 ? nlohmann::json(Round3(*m.fp16)) : nlohmann::json(nullptr)},
        {"series",
         {SeriesEvidence(in, "gpu.tensor.active", "1", g.tensor_active, from, n),
          SeriesEvidence(in, "gpu.fp32.active", "1", g.fp32_active, from, n)}},
    };
    return o;
  }

  static Observation FromProfile(const InsightInputs& in, const InsightConfig& cfg,
                                 const GpuInput& g, const Means& m, const ProfileEvidence& p,
                                 double share) {
    Observation o = Common(in, cfg, g, m, "gpu_profile");
    o.lost_fraction = std::clamp(*m.utilization * share * (1 - 1 / kAssumedSpeedup), 0.0, 1.0);
    nlohmann::json kernels = nlohmann::json::array();
    for (const KernelTime& k : p.matmuls) {
      kernels.push_back({{"name", ShortName(k.name)},
                         {"share", Round3(static_cast<double>(k.gpu_ns) / p.kernel_ns)}});
    }
    o.evidence["matmul_share"] = Round3(share);
    o.evidence["matmul_kernels"] = std::move(kernels);
    o.evidence["kernel_seconds"] = Round3(static_cast<double>(p.kernel_ns) / 1e9);
    o.evidence["profiles"] = p.profiles;
    o.evidence["profile"] = {{"kind", "gpu"},
                             {"host", p.main->host},
                             {"entity", p.main->entity},
                             {"pid", p.main->pid},
                             {"start", base::ToUnixMillis(p.main->start)},
                             {"end", base::ToUnixMillis(p.main->end)}};
    o.summary = fmt::format(
        "{} is {:.0f} % busy with its tensor cores active {:.0f} % of the time over the last {}, "
        "while matmul kernels take {:.0f} % of its GPU time (GPU profile of {} pid {}{}): its "
        "matmuls run without tensor cores.",
        GpuName(g), *m.utilization * 100, *m.tensor * 100,
        base::FormatDuration(cfg.tensor_window), share * 100,
        p.executable.empty() ? std::string_view("process") : std::string_view(p.executable),
        p.main->pid,
        p.matmuls.empty() ? "" : fmt::format("; top: {}", ShortName(p.matmuls[0].name)));
    return o;
  }

  static Observation FromPipes(const InsightInputs& in, const InsightConfig& cfg,
                               const GpuInput& g, const Means& m, double pipes) {
    Observation o = Common(in, cfg, g, m, "gpm_pipes");
    // Without kernel names the busy FP pipes stand for the matmul share of the time.
    o.lost_fraction =
        std::clamp(*m.utilization * std::min(pipes, 1.0) * (1 - 1 / kAssumedSpeedup), 0.0, 1.0);
    o.evidence["fp_pipes_active"] = Round3(pipes);
    o.evidence["fp_pipes_threshold"] = cfg.tensor_fp_pipes_busy;
    o.evidence["matmul_share"] = nullptr;
    o.summary = fmt::format(
        "{} is {:.0f} % busy with its FP32/FP16 pipes {:.0f} % active but its tensor cores only "
        "{:.0f} % over the last {}: dense math runs on the CUDA cores (GPM pipe activity; no GPU "
        "profile of its processes names the kernels).",
        GpuName(g), *m.utilization * 100, pipes * 100, *m.tensor * 100,
        base::FormatDuration(cfg.tensor_window));
    return o;
  }
};

}  // namespace

std::unique_ptr<Rule> MakeTensorCoresIdleRule() { return std::make_unique<TensorCoresIdle>(); }

}  // namespace warpscope::server::insights

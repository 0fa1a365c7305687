// SPDX-License-Identifier: Apache-2.0
// Rule 13, inference sizing, per model a serving process serves (the agent's inference metrics,
// docs/design/inference.md): batches that run mostly empty (inference_overprovisioned), batches
// that run full while requests wait (inference_queueing), a p95 time to first token above its
// target (inference_slow_first_token), and a full KV cache with a growing queue
// (inference_memory_bound).
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fmt/format.h"
#include "server/insights/rules.h"
#include "server/insights/series_math.h"

namespace warpscope::server::insights {
namespace {

// A ratio as a percentage for a summary: whole percents, but one decimal under 1 % so that a
// pool at 0.3 % does not read "0 %".
std::string PercentText(double ratio) {
  const double percent = ratio * 100;
  return percent > 0 && percent < 1 ? fmt::format("{:.1f}", percent)
                                    : fmt::format("{:.0f}", percent);
}

// The serving process's entity attributes and the model label (inference_metrics.h).
constexpr std::string_view kAttrEngine = "inference.engine";
constexpr std::string_view kAttrGpuUuids = "inference.gpu.uuids";
constexpr std::string_view kModel = "model";

double Round(double v, double unit) { return std::round(v / unit) * unit; }

nlohmann::json Figure(std::optional<double> v, double unit = 0.001) {
  return v ? nlohmann::json(Round(*v, unit)) : nlohmann::json(nullptr);
}

// Buckets of `s` where `holds` is true (no data never holds).
size_t CountWhere(std::span<const double> s, const std::function<bool(double)>& holds) {
  return static_cast<size_t>(
      std::count_if(s.begin(), s.end(), [&](double v) { return std::isfinite(v) && holds(v); }));
}

// The least whole number of a window's `w` buckets that is `share` of it.
size_t Needed(size_t w, double share) {
  return std::max<size_t>(1, static_cast<size_t>(std::ceil(share * static_cast<double>(w) - 1e-9)));
}

// The GPUs a serving process uses: its inference.gpu.uuids ("GPU-a,GPU-b").
std::vector<std::string> GpuUuids(const InferenceInput& s) {
  std::vector<std::string> out;
  std::string_view list = s.attributes.Get(kAttrGpuUuids);
  while (!list.empty()) {
    const size_t comma = list.find(',');
    std::string_view one = list.substr(0, comma);
    while (!one.empty() && one.front() == ' ') one.remove_prefix(1);
    while (!one.empty() && one.back() == ' ') one.remove_suffix(1);
    if (!one.empty()) out.emplace_back(one);
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return out;
}

// "vllm (pid 4242) serving llama-3-8b on node-1" for summaries.
std::string ServerName(const InferenceInput& s) {
  std::string_view engine = s.attributes.Get(kAttrEngine);
  std::string_view pid = s.attributes.Get(model::attr::kPid);
  return fmt::format("{} (pid {}) serving {} on {}",
                     engine.empty() ? std::string_view("inference server") : engine,
                     pid.empty() ? std::string_view(s.entity) : pid,
                     s.model.empty() ? std::string_view("its model") : std::string_view(s.model),
                     s.host);
}

// An observation on the serving process, its model in the attributes.
Observation OnServer(const InferenceInput& s) {
  Observation o;
  o.host = s.host;
  o.entity = s.entity;
  o.kind = model::EntityKind::kProcess;
  o.attributes = s.attributes;
  o.attributes.Set(kModel, s.model);
  o.gpus = std::max<double>(1, static_cast<double>(GpuUuids(s).size()));
  return o;
}

// What every inference finding shows besides its own figures: the model's load over [from, n)
// and the GPUs it runs on with their mean utilization.
struct Load {
  nlohmann::json evidence;
  std::optional<double> gpu_utilization;  // mean over the serving GPUs that report it
  size_t gpus = 0;                        // the GPUs named in inference.gpu.uuids
  std::string text;                       // "2.1 requests/s, 350 output tokens/s"
};

Load LoadOf(const InsightInputs& in, const InferenceInput& s, size_t from, size_t n) {
  Load load;
  std::map<std::pair<std::string_view, std::string_view>, const GpuInput*> by_uuid;
  for (const GpuInput& g : in.gpus) by_uuid[{g.host, g.uuid}] = &g;
  nlohmann::json gpus = nlohmann::json::array();
  double util_sum = 0;
  size_t util_count = 0;
  const std::vector<std::string> uuids = GpuUuids(s);
  load.gpus = uuids.size();
  for (const std::string& uuid : uuids) {
    auto it = by_uuid.find({s.host, uuid});
    std::optional<double> util;
    nlohmann::json gpu = {{"uuid", uuid}};
    if (it != by_uuid.end()) {
      util = Mean(Slice(it->second->utilization, from, n));
      gpu["index"] = it->second->attributes.Get(model::attr::kGpuIndex);
      gpu["model"] = it->second->attributes.Get(model::attr::kGpuModel);
    }
    gpu["utilization"] = Figure(util, 0.0001);
    if (util) {
      util_sum += *util;
      ++util_count;
    }
    gpus.push_back(std::move(gpu));
  }
  if (util_count > 0) load.gpu_utilization = util_sum / static_cast<double>(util_count);
  std::optional<double> requests = Mean(Slice(s.request_rate, from, n));
  std::optional<double> output = Mean(Slice(s.output_token_rate, from, n));
  load.text = fmt::format("{} requests/s, {} output tokens/s",
                          requests ? fmt::format("{:.1f}", *requests) : "unknown",
                          output ? fmt::format("{:.0f}", *output) : "unknown");
  load.evidence = {
      {"model", s.model},
      {"engine", s.attributes.Get(kAttrEngine)},
      {"request_rate", Figure(requests)},
      {"input_token_rate", Figure(Mean(Slice(s.input_token_rate, from, n)), 0.1)},
      {"output_token_rate", Figure(output, 0.1)},
      {"requests_running", Figure(Mean(Slice(s.requests_running, from, n)), 0.01)},
      {"requests_waiting", Figure(Mean(Slice(s.requests_waiting, from, n)), 0.01)},
      {"gpus", std::move(gpus)},
      {"gpu_utilization", Figure(load.gpu_utilization, 0.0001)},
  };
  return load;
}

std::string GpusText(const Load& load) {
  if (load.gpus == 0) return "its GPUs (not attributed)";
  std::string text = fmt::format("{} GPU{}", load.gpus, load.gpus > 1 ? "s" : "");
  if (load.gpu_utilization) {
    text += fmt::format(" averaging {:.0f} % utilization", *load.gpu_utilization * 100);
  }
  return text;
}

constexpr RuleInfo kOverprovisioned{
    .name = "inference_overprovisioned",
    .title = "Inference pool over-provisioned",
    // A cost to act on, not an outage.
    .severity = Severity::kTicket,
    .hold_for = {},
    .clear_after = std::chrono::minutes(5),
    .suggestion =
        "Serve the model on fewer GPUs: consolidate replicas (fewer processes behind the load "
        "balancer, or scale the deployment down), give each replica fewer GPUs (a smaller "
        "tensor-parallel size where the weights and KV cache fit), or let each batch take more "
        "requests (raise max-num-seqs / max-num-batched-tokens) so fewer replicas carry the "
        "load; free the GPUs for other work.",
};

// The GPUs a model's pool could free: its serving processes' GPUs (at least one each) less
// those its load needs at the target efficiency (their GPUs × their efficiency, summed, over
// the target, rounded up, at least one).
struct Pool {
  size_t processes = 0;
  double gpus = 0;
  double demand = 0;  // GPUs' worth of full batches: Σ gpus × efficiency
  double needed = 0;
  double freeable = 0;
  double idle = 0;  // Σ gpus × (1 − efficiency / target) over the over-provisioned processes
};

class InferenceOverprovisioned final : public Rule {
 public:
  const RuleInfo& info() const override { return kOverprovisioned; }

  std::vector<Observation> Evaluate(const RuleContext& ctx) const override {
    const InsightInputs& in = ctx.inputs;
    const InsightConfig& cfg = ctx.config;
    const auto [n, w, from] = Trailing(in, cfg.inference_window);
    const size_t need = Needed(w, cfg.inference_sustained_share);
    struct Judged {
      const InferenceInput* s;
      double efficiency;
      double gpus;
      size_t low;
    };
    std::vector<Judged> judged;
    std::map<std::string, Pool, std::less<>> pools;
    for (const InferenceInput& s : in.inference) {
      std::span<const double> eff = Slice(s.batch_efficiency, from, n);
      std::optional<double> mean = Mean(eff);
      if (!mean) continue;
      const double gpus = std::max<double>(1, static_cast<double>(GpuUuids(s).size()));
      Pool& pool = pools[s.model];
      ++pool.processes;
      pool.gpus += gpus;
      pool.demand += gpus * std::clamp(*mean, 0.0, 1.0);
      const size_t low =
          CountWhere(eff, [&](double v) { return v < cfg.inference_low_efficiency; });
      if (low < need) continue;
      judged.push_back({&s, std::clamp(*mean, 0.0, 1.0), gpus, low});
      pool.idle += gpus * std::max(0.0, 1 - *mean / cfg.inference_target_efficiency);
    }
    for (auto& [model_name, pool] : pools) {
      pool.needed = std::max(1.0, std::ceil(pool.demand / cfg.inference_target_efficiency - 1e-9));
      pool.freeable = std::max(0.0, pool.gpus - pool.needed);
    }
    std::vector<Observation> out;
    for (const Judged& j : judged) {
      const InferenceInput& s = *j.s;
      const Pool& pool = pools.find(s.model)->second;
      const double own_idle =
          j.gpus * std::max(0.0, 1 - j.efficiency / cfg.inference_target_efficiency);
      // This process's share of the GPUs the pool could free, by its idle capacity.
      const double freed = pool.idle > 0 ? pool.freeable * own_idle / pool.idle : 0;
      Observation o = OnServer(s);
      o.gpus = j.gpus;
      o.lost_fraction = std::clamp(freed / j.gpus, 0.0, 1.0);
      const Load load = LoadOf(in, s, from, n);
      o.summary = fmt::format(
          "{} ran its batches at {} % of their limit over the last {} ({}) on {}; the "
          "model's {} GPU{} could carry this load on {:.0f} at {:.0f} % batch efficiency, "
          "freeing {:.0f}.",
          ServerName(s), PercentText(j.efficiency), base::FormatDuration(cfg.inference_window),
          load.text, GpusText(load), pool.gpus, pool.gpus > 1 ? "s" : "", pool.needed,
          cfg.inference_target_efficiency * 100, pool.freeable);
      o.evidence = load.evidence;
      o.evidence["batch_efficiency"] = Round(j.efficiency, 0.0001);
      o.evidence["low_share"] = Round(static_cast<double>(j.low) / static_cast<double>(w), 0.01);
      o.evidence["threshold_efficiency"] = cfg.inference_low_efficiency;
      o.evidence["target_efficiency"] = cfg.inference_target_efficiency;
      o.evidence["pool"] = {{"model", s.model},
                            {"processes", pool.processes},
                            {"gpus", std::llround(pool.gpus)},
                            {"gpus_needed", std::llround(pool.needed)},
                            {"gpus_freeable", std::llround(pool.freeable)}};
      o.evidence["gpus_freed_here"] = Round(freed, 0.01);
      o.evidence["series"] = {
          SeriesEvidence(in, "inference.batch.efficiency", "1", s.batch_efficiency, from, n),
          SeriesEvidence(in, "inference.request.rate", "{request}/s", s.request_rate, from, n)};
      out.push_back(std::move(o));
    }
    return out;
  }
};

constexpr RuleInfo kQueueing{
    .name = "inference_queueing",
    .title = "Inference queueing",
    .severity = Severity::kTicket,
    .hold_for = {},
    .clear_after = std::chrono::minutes(2),
    .suggestion =
        "Scale out: add replicas of the model (or let the autoscaler scale on waiting requests "
        "and batch efficiency, not on GPU utilization, which a full engine shows as it does a "
        "half-full one); where latency allows, raise max-num-seqs / max-num-batched-tokens so "
        "each batch takes more of the queue.",
};

class InferenceQueueing final : public Rule {
 public:
  const RuleInfo& info() const override { return kQueueing; }

  std::vector<Observation> Evaluate(const RuleContext& ctx) const override {
    const InsightInputs& in = ctx.inputs;
    const InsightConfig& cfg = ctx.config;
    const auto [n, w, from] = Trailing(in, cfg.inference_window);
    const size_t need = Needed(w, cfg.inference_sustained_share);
    std::vector<Observation> out;
    for (const InferenceInput& s : in.inference) {
      std::span<const double> eff = Slice(s.batch_efficiency, from, n);
      const size_t high =
          CountWhere(eff, [&](double v) { return v > cfg.inference_high_efficiency; });
      std::optional<double> waiting = Mean(Slice(s.requests_waiting, from, n));
      if (high < need || !waiting || *waiting < cfg.inference_queue_waiting) continue;
      std::optional<double> efficiency = Mean(eff);
      std::optional<double> queue_p95 = Mean(Slice(s.queue_time_p95, from, n));
      Observation o = OnServer(s);
      const Load load = LoadOf(in, s, from, n);
      o.summary = fmt::format(
          "{} ran its batches at {} % of their limit over the last {} with {:.1f} requests "
          "waiting on average{} ({}) on {}: it needs more replicas.",
          ServerName(s), PercentText(efficiency.value_or(0)),
          base::FormatDuration(cfg.inference_window), *waiting,
          queue_p95 ? fmt::format(", {:.0f} ms in the queue at p95", *queue_p95 * 1000) : "",
          load.text, GpusText(load));
      o.evidence = load.evidence;
      o.evidence["batch_efficiency"] = Figure(efficiency, 0.0001);
      o.evidence["high_share"] = Round(static_cast<double>(high) / static_cast<double>(w), 0.01);
      o.evidence["threshold_efficiency"] = cfg.inference_high_efficiency;
      o.evidence["threshold_waiting"] = cfg.inference_queue_waiting;
      o.evidence["queue_time_p95_s"] = Figure(queue_p95);
      o.evidence["ttft_p95_s"] = Figure(Mean(Slice(s.ttft_p95, from, n)));
      o.evidence["series"] = {
          SeriesEvidence(in, "inference.batch.efficiency", "1", s.batch_efficiency, from, n),
          SeriesEvidence(in, "inference.requests.waiting", "{request}", s.requests_waiting, from,
                         n)};
      out.push_back(std::move(o));
    }
    return out;
  }
};

constexpr RuleInfo kSlowFirstToken{
    .name = "inference_slow_first_token",
    .title = "Time to first token above target",
    // Users of an interactive service wait: page (a batch service raises its target instead).
    .severity = Severity::kPage,
    .hold_for = {},
    .clear_after = std::chrono::minutes(2),
    .suggestion =
        "Find where the first token waits: queue time (scale out, see inference_queueing), long "
        "prompts prefilled in one piece (enable chunked prefill, lower max-num-batched-tokens so "
        "decodes are not stalled behind prefills), prefix caching off for shared prompts; for a "
        "batch (non-interactive) service raise inference-ttft-target-s.",
};

class InferenceSlowFirstToken final : public Rule {
 public:
  const RuleInfo& info() const override { return kSlowFirstToken; }

  std::vector<Observation> Evaluate(const RuleContext& ctx) const override {
    const InsightInputs& in = ctx.inputs;
    const InsightConfig& cfg = ctx.config;
    const auto [n, w, from] = Trailing(in, cfg.inference_ttft_window);
    std::vector<Observation> out;
    for (const InferenceInput& s : in.inference) {
      std::span<const double> ttft = Slice(s.ttft_p95, from, n);
      // A percentile exists only for windows in which requests finished (never for TGI).
      const size_t with_data = CountValues(ttft);
      if (with_data * 2 < w) continue;
      const size_t slow =
          CountWhere(ttft, [&](double v) { return v > cfg.inference_ttft_target_s; });
      if (slow < Needed(with_data, cfg.inference_sustained_share)) continue;
      std::optional<double> mean = Mean(ttft);
      std::optional<double> worst = Max(ttft);
      std::optional<double> queue_p95 = Mean(Slice(s.queue_time_p95, from, n));
      Observation o = OnServer(s);
      const Load load = LoadOf(in, s, from, n);
      o.summary = fmt::format(
          "{}: the p95 time to first token averaged {:.0f} ms over the last {} (worst {:.0f} ms), "
          "above the {:.0f} ms target{} ({}).",
          ServerName(s), mean.value_or(0) * 1000, base::FormatDuration(cfg.inference_ttft_window),
          worst.value_or(0) * 1000, cfg.inference_ttft_target_s * 1000,
          queue_p95
              ? fmt::format("; requests waited {:.0f} ms in the queue at p95", *queue_p95 * 1000)
              : "",
          load.text);
      o.evidence = load.evidence;
      o.evidence["ttft_p95_s"] = Figure(mean);
      o.evidence["ttft_p95_max_s"] = Figure(worst);
      o.evidence["target_s"] = cfg.inference_ttft_target_s;
      o.evidence["slow_share"] =
          Round(static_cast<double>(slow) / static_cast<double>(with_data), 0.01);
      o.evidence["queue_time_p95_s"] = Figure(queue_p95);
      o.evidence["batch_efficiency"] = Figure(Mean(Slice(s.batch_efficiency, from, n)), 0.0001);
      o.evidence["series"] = {
          SeriesEvidence(in, "inference.time_to_first_token", "s", s.ttft_p95, from, n),
          SeriesEvidence(in, "inference.queue_time", "s", s.queue_time_p95, from, n)};
      o.evidence["series"][0]["labels"] = {{"model", s.model}, {"quantile", "0.95"}};
      o.evidence["series"][1]["labels"] = {{"model", s.model}, {"quantile", "0.95"}};
      out.push_back(std::move(o));
    }
    return out;
  }
};

constexpr RuleInfo kMemoryBoundServing{
    .name = "inference_memory_bound",
    .title = "Memory-bound serving",
    .severity = Severity::kTicket,
    .hold_for = {},
    .clear_after = std::chrono::minutes(5),
    .suggestion =
        "Give the KV cache more room or make it go further: raise gpu-memory-utilization (or "
        "the engine's KV-cache memory fraction), lower max-model-len to what requests need, "
        "enable prefix caching for shared prompts, store the KV cache in FP8 "
        "(kv-cache-dtype fp8), or shard the model over more GPUs (a larger tensor-parallel "
        "size) so each holds less of the weights.",
};

class InferenceMemoryBound final : public Rule {
 public:
  const RuleInfo& info() const override { return kMemoryBoundServing; }

  std::vector<Observation> Evaluate(const RuleContext& ctx) const override {
    const InsightInputs& in = ctx.inputs;
    const InsightConfig& cfg = ctx.config;
    const auto [n, w, from] = Trailing(in, cfg.inference_window);
    const size_t need = Needed(w, cfg.inference_sustained_share);
    const double buckets_per_minute = 60.0 / base::ToSeconds(in.step);
    std::vector<Observation> out;
    for (const InferenceInput& s : in.inference) {
      std::span<const double> kv = Slice(s.kv_cache_usage, from, n);
      const size_t full =
          CountWhere(kv, [&](double v) { return v >= cfg.inference_kv_cache_full; });
      if (full < need) continue;
      std::span<const double> waiting = Slice(s.requests_waiting, from, n);
      const size_t third = std::max<size_t>(1, waiting.size() / 3);
      std::optional<double> first = Mean(waiting.subspan(0, third));
      std::optional<double> last = Mean(waiting.subspan(waiting.size() - third));
      std::optional<double> slope = SlopePerBucket(waiting);
      if (!first || !last || !slope || *slope <= 0 || *last - *first < cfg.inference_queue_growth) {
        continue;
      }
      std::optional<double> usage = Mean(kv);
      Observation o = OnServer(s);
      const Load load = LoadOf(in, s, from, n);
      o.summary = fmt::format(
          "{}: its KV cache was {:.0f} % full over the last {} while the waiting requests rose "
          "from {:.1f} to {:.1f} ({:+.1f}/min): requests wait for cache memory, not compute.",
          ServerName(s), usage.value_or(0) * 100, base::FormatDuration(cfg.inference_window),
          *first, *last, *slope * buckets_per_minute);
      o.evidence = load.evidence;
      o.evidence["kv_cache_usage"] = Figure(usage, 0.0001);
      o.evidence["full_share"] = Round(static_cast<double>(full) / static_cast<double>(w), 0.01);
      o.evidence["threshold_kv_cache"] = cfg.inference_kv_cache_full;
      o.evidence["waiting_first_third"] = Figure(first, 0.01);
      o.evidence["waiting_last_third"] = Figure(last, 0.01);
      o.evidence["waiting_per_min"] = Round(*slope * buckets_per_minute, 0.01);
      o.evidence["batch_efficiency"] = Figure(Mean(Slice(s.batch_efficiency, from, n)), 0.0001);
      o.evidence["series"] = {
          SeriesEvidence(in, "inference.kv_cache.usage", "1", s.kv_cache_usage, from, n),
          SeriesEvidence(in, "inference.requests.waiting", "{request}", s.requests_waiting, from,
                         n)};
      out.push_back(std::move(o));
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<Rule> MakeInferenceOverprovisionedRule() {
  return std::make_unique<InferenceOverprovisioned>();
}
std::unique_ptr<Rule> MakeInferenceQueueingRule() { return std::make_unique<InferenceQueueing>(); }
std::unique_ptr<Rule> MakeInferenceSlowFirstTokenRule() {
  return std::make_unique<InferenceSlowFirstToken>();
}
std::unique_ptr<Rule> MakeInferenceMemoryBoundRule() {
  return std::make_unique<InferenceMemoryBound>();
}

}  // namespace warpscope::server::insights

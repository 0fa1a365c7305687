// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/inference/engines.h"

#include <map>
#include <span>

namespace warpscope::agent::inference {
namespace {

using Names = std::vector<std::string_view>;

// Where one engine keeps each field: candidate family names, the current name first and the
// older ones after it (the first present wins). The sources of every name are in
// docs/design/inference.md.
struct EngineSpec {
  Names time_to_first_token, inter_token_latency, request_latency, queue_time, iteration_tokens;
  Names running, waiting, kv_cache_usage;
  Names requests_finished, input_tokens, output_tokens;
  Names prefix_queries, prefix_hits, prefix_misses;
  // TGI: token totals are the sums of its per-request length histograms.
  bool tokens_from_histograms = false;
  // SGLang: cached prompt tokens against all prompt tokens.
  bool prefix_queries_are_input_tokens = false;
};

const EngineSpec& SpecOf(Engine engine) {
  static const EngineSpec kVllm{
      .time_to_first_token = {"vllm:time_to_first_token_seconds"},
      // vLLM 0.11 renamed time_per_output_token to inter_token_latency (same observations).
      .inter_token_latency = {"vllm:inter_token_latency_seconds",
                              "vllm:time_per_output_token_seconds"},
      .request_latency = {"vllm:e2e_request_latency_seconds"},
      .queue_time = {"vllm:request_queue_time_seconds"},
      .iteration_tokens = {"vllm:iteration_tokens_total"},
      .running = {"vllm:num_requests_running"},
      .waiting = {"vllm:num_requests_waiting"},
      // 0.9.2 renamed gpu_cache_usage_perc and gpu_prefix_cache_* (hidden since 0.11).
      .kv_cache_usage = {"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"},
      .requests_finished = {"vllm:request_success"},
      .input_tokens = {"vllm:prompt_tokens"},
      .output_tokens = {"vllm:generation_tokens"},
      .prefix_queries = {"vllm:prefix_cache_queries", "vllm:gpu_prefix_cache_queries"},
      .prefix_hits = {"vllm:prefix_cache_hits", "vllm:gpu_prefix_cache_hits"},
  };
  static const EngineSpec kSglang{
      .time_to_first_token = {"sglang:time_to_first_token_seconds"},
      .inter_token_latency = {"sglang:inter_token_latency_seconds",
                              "sglang:time_per_output_token_seconds"},
      .request_latency = {"sglang:e2e_request_latency_seconds"},
      .queue_time = {"sglang:queue_time_seconds"},
      .running = {"sglang:num_running_reqs"},
      .waiting = {"sglang:num_queue_reqs"},
      .kv_cache_usage = {"sglang:token_usage"},
      .requests_finished = {"sglang:num_requests"},
      .input_tokens = {"sglang:prompt_tokens"},
      .output_tokens = {"sglang:generation_tokens"},
      .prefix_hits = {"sglang:cached_tokens"},
      .prefix_queries_are_input_tokens = true,
  };
  static const EngineSpec kTrtllm{
      .time_to_first_token = {"trtllm_time_to_first_token_seconds"},
      .inter_token_latency = {"trtllm_time_per_output_token_seconds"},
      .request_latency = {"trtllm_e2e_request_latency_seconds"},
      .queue_time = {"trtllm_request_queue_time_seconds"},
      .running = {"trtllm_num_requests_running"},
      .waiting = {"trtllm_num_requests_waiting"},
      .kv_cache_usage = {"trtllm_kv_cache_utilization"},
      .requests_finished = {"trtllm_request_success"},
      .input_tokens = {"trtllm_prompt_tokens"},
      .output_tokens = {"trtllm_generation_tokens"},
      .prefix_hits = {"trtllm_kv_cache_reused_blocks"},
      .prefix_misses = {"trtllm_kv_cache_missed_blocks"},
  };
  // TGI has no time-to-first-token histogram and no KV-cache gauge.
  static const EngineSpec kTgi{
      .inter_token_latency = {"tgi_request_mean_time_per_token_duration"},
      .request_latency = {"tgi_request_duration"},
      .queue_time = {"tgi_request_queue_duration"},
      .running = {"tgi_batch_current_size"},
      .waiting = {"tgi_queue_size"},
      .requests_finished = {"tgi_request_success"},
      .input_tokens = {"tgi_request_input_length"},
      .output_tokens = {"tgi_request_generated_tokens"},
      .tokens_from_histograms = true,
  };
  switch (engine) {
    case Engine::kVllm:
      return kVllm;
    case Engine::kSglang:
      return kSglang;
    case Engine::kTrtllm:
      return kTrtllm;
    case Engine::kTgi:
      return kTgi;
  }
  return kVllm;
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// The family of `name`, also under the other spelling of a counter (`x` / `x_total`): client
// libraries differ in whether the TYPE line carries the suffix.
const Family* FindFamily(const Exposition& exposition, std::string_view name) {
  const std::string total = std::string(name) + "_total";
  const std::string_view bare = EndsWith(name, "_total") ? name.substr(0, name.size() - 6) : name;
  for (const Family& f : exposition.families) {
    if (f.name == name) return &f;
  }
  for (const Family& f : exposition.families) {
    if (f.name == total || f.name == bare) return &f;
  }
  return nullptr;
}

const Family* FirstFamily(const Exposition& exposition, const Names& names) {
  for (std::string_view name : names) {
    if (const Family* f = FindFamily(exposition, name)) return f;
  }
  return nullptr;
}

std::string_view LabelValue(const std::vector<Label>& labels, std::string_view name) {
  for (const Label& l : labels) {
    if (l.name == name) return l.value;
  }
  return {};
}

class Builder {
 public:
  Builder(const Exposition& exposition, std::string_view default_model)
      : exposition_(exposition),
        default_model_(default_model.empty() ? std::string_view("unknown") : default_model) {}

  ModelSnapshot& Model(const std::vector<Label>& labels) {
    std::string_view model = LabelValue(labels, "model_name");
    if (model.empty()) model = default_model_;
    auto it = models_.find(model);
    if (it == models_.end()) {
      it = models_.emplace(std::string(model), ModelSnapshot{}).first;
      it->second.model = std::string(model);
    }
    return it->second;
  }

  // Sums the label sets of each model; a series whose bucket layout differs from the first one
  // of its model cannot be added and is left out.
  base::Status Histograms(const Names& names, std::optional<Histogram> ModelSnapshot::*field) {
    const Family* family = FirstFamily(exposition_, names);
    if (family == nullptr) return base::OkStatus();
    if (family->type != MetricType::kHistogram) {
      return base::InvalidArgument("{} is a {}, not the histogram the engine documents",
                                   family->name, MetricTypeName(family->type));
    }
    auto series = AssembleHistograms(*family);
    if (!series) return series.error().WithContext(family->name);
    for (HistogramSeries& s : *series) {
      std::optional<Histogram>& h = Model(s.labels).*field;
      if (!h) {
        h = Histogram{std::move(s.buckets), s.sum, s.count};
        continue;
      }
      if (!SameLayout(h->buckets, s.buckets)) continue;
      for (size_t i = 0; i < s.buckets.size(); ++i) h->buckets[i].count += s.buckets[i].count;
      h->sum += s.sum;
      h->count += s.count;
    }
    return base::OkStatus();
  }

  // Gauges and counters: the values of a model's label sets summed (or averaged).
  void Values(const Names& names, std::optional<double> ModelSnapshot::*field, bool average) {
    const Family* family = FirstFamily(exposition_, names);
    if (family == nullptr || family->type == MetricType::kHistogram ||
        family->type == MetricType::kSummary) {
      return;
    }
    std::map<std::string, int, std::less<>> seen;
    for (const Sample& s : family->samples) {
      if (EndsWith(s.name, "_created")) continue;
      ModelSnapshot& m = Model(s.labels);
      std::optional<double>& v = m.*field;
      const int n = ++seen[m.model];
      if (!v || n == 1) {
        v = s.value;
      } else if (average) {
        *v += (s.value - *v) / n;
      } else {
        *v += s.value;
      }
    }
  }

  // TGI's token totals: the `_sum` of a per-request length histogram, over its label sets.
  base::Status HistogramSums(const Names& names, std::optional<double> ModelSnapshot::*field) {
    const Family* family = FirstFamily(exposition_, names);
    if (family == nullptr) return base::OkStatus();
    auto series = AssembleHistograms(*family);
    if (!series) return series.error().WithContext(family->name);
    for (const HistogramSeries& s : *series) {
      std::optional<double>& v = Model(s.labels).*field;
      v = v.value_or(0) + s.sum;
    }
    return base::OkStatus();
  }

  EngineSnapshot Finish() {
    EngineSnapshot snapshot;
    for (auto& [name, m] : models_) snapshot.models.push_back(std::move(m));
    return snapshot;
  }

 private:
  static bool SameLayout(std::span<const HistogramBucket> a, std::span<const HistogramBucket> b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i].le != b[i].le) return false;
    }
    return true;
  }

  const Exposition& exposition_;
  std::string_view default_model_;
  std::map<std::string, ModelSnapshot, std::less<>> models_;
};

}  // namespace

std::string_view EngineName(Engine engine) {
  switch (engine) {
    case Engine::kVllm:
      return "vllm";
    case Engine::kSglang:
      return "sglang";
    case Engine::kTrtllm:
      return "trtllm";
    case Engine::kTgi:
      return "tgi";
  }
  return "unknown";
}

std::optional<Engine> EngineFromName(std::string_view name) {
  for (Engine e : {Engine::kVllm, Engine::kSglang, Engine::kTrtllm, Engine::kTgi}) {
    if (EngineName(e) == name) return e;
  }
  return std::nullopt;
}

std::optional<Engine> DetectEngine(const Exposition& exposition) {
  for (const Family& f : exposition.families) {
    std::string_view n = f.name;
    if (n.starts_with("vllm:")) return Engine::kVllm;
    if (n.starts_with("sglang:")) return Engine::kSglang;
    if (n.starts_with("trtllm_")) return Engine::kTrtllm;
    if (n.starts_with("tgi_")) return Engine::kTgi;
  }
  return std::nullopt;
}

base::Result<EngineSnapshot> Normalize(Engine engine, const Exposition& exposition,
                                       std::string_view default_model) {
  const EngineSpec& spec = SpecOf(engine);
  Builder b(exposition, default_model);
  using M = ModelSnapshot;
  WARPSCOPE_RETURN_IF_ERROR(b.Histograms(spec.time_to_first_token, &M::time_to_first_token));
  WARPSCOPE_RETURN_IF_ERROR(b.Histograms(spec.inter_token_latency, &M::inter_token_latency));
  WARPSCOPE_RETURN_IF_ERROR(b.Histograms(spec.request_latency, &M::request_latency));
  WARPSCOPE_RETURN_IF_ERROR(b.Histograms(spec.queue_time, &M::queue_time));
  if (spec.tokens_from_histograms) {
    WARPSCOPE_RETURN_IF_ERROR(b.HistogramSums(spec.input_tokens, &M::input_tokens));
    WARPSCOPE_RETURN_IF_ERROR(b.HistogramSums(spec.output_tokens, &M::output_tokens));
  } else {
    b.Values(spec.input_tokens, &M::input_tokens, false);
    b.Values(spec.output_tokens, &M::output_tokens, false);
  }
  WARPSCOPE_RETURN_IF_ERROR(b.Histograms(spec.iteration_tokens, &M::iteration_tokens));
  b.Values(spec.running, &M::requests_running, false);
  b.Values(spec.waiting, &M::requests_waiting, false);
  b.Values(spec.kv_cache_usage, &M::kv_cache_usage, true);
  b.Values(spec.requests_finished, &M::requests_finished, false);
  b.Values(spec.prefix_queries, &M::prefix_cache_queries, false);
  b.Values(spec.prefix_hits, &M::prefix_cache_hits, false);
  if (!spec.prefix_misses.empty()) {
    // TensorRT-LLM counts reused and missed blocks: the queries are their sum (below).
    b.Values(spec.prefix_misses, &M::prefix_cache_queries, false);
  }
  EngineSnapshot snapshot = b.Finish();
  for (ModelSnapshot& m : snapshot.models) {
    if (spec.prefix_queries_are_input_tokens && m.prefix_cache_hits) {
      m.prefix_cache_queries = m.input_tokens;
    }
    if (!spec.prefix_misses.empty() && m.prefix_cache_hits && m.prefix_cache_queries) {
      *m.prefix_cache_queries += *m.prefix_cache_hits;
    }
  }
  return snapshot;
}

}  // namespace warpscope::agent::inference

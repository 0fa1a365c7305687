// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/inference/inference_window.h"

#include <cmath>

#include "agent/sources/inference/inference_metrics.h"

namespace warpscope::agent::inference {
namespace {

namespace m = inference_metrics;

bool SameLayout(const Histogram& a, const Histogram& b) {
  if (a.buckets.size() != b.buckets.size()) return false;
  for (size_t i = 0; i < a.buckets.size(); ++i) {
    if (a.buckets[i].le != b.buckets[i].le) return false;
  }
  return true;
}

double Total(const Histogram& h) { return h.buckets.empty() ? h.count : h.buckets.back().count; }

void WritePercentiles(const model::MetricDesc& metric, const std::optional<Histogram>& prev,
                      const std::optional<Histogram>& cur, std::string_view entity_id,
                      const model::Labels& base, model::SampleSink& out) {
  if (!cur) return;
  const Histogram delta = HistogramDelta(prev ? &*prev : nullptr, *cur);
  static constexpr std::pair<double, std::string_view> kQuantiles[] = {
      {0.5, "0.5"}, {0.95, "0.95"}, {0.99, "0.99"}};
  for (const auto& [q, name] : kQuantiles) {
    std::optional<double> v = HistogramQuantile(delta, q);
    if (!v) return;  // no request finished in the window
    model::Labels labels = base;
    labels.Set(m::kLabelQuantile, name);
    out.AddValue(metric, entity_id, labels, *v);
  }
}

void WriteBatch(const ModelSnapshot* prev, const ModelSnapshot& cur, const BatchLimits& limits,
                std::string_view entity_id, const model::Labels& base, model::SampleSink& out) {
  std::string_view basis;
  std::optional<double> size;
  std::optional<double> limit;
  if (cur.iteration_tokens && limits.max_num_batched_tokens) {
    basis = "tokens";
    limit = limits.max_num_batched_tokens;
    if (prev != nullptr && prev->iteration_tokens) {
      const Histogram d = HistogramDelta(&*prev->iteration_tokens, *cur.iteration_tokens);
      const double steps = Total(d);
      size = steps > 0 ? d.sum / steps : 0.0;  // no engine step in the window: an idle batch
    }
  } else if (cur.requests_running && limits.max_num_seqs) {
    basis = "sequences";
    limit = limits.max_num_seqs;
    if (prev != nullptr && prev->requests_running) {
      size = (*prev->requests_running + *cur.requests_running) / 2;
    }
  } else {
    return;
  }
  model::Labels labels = base;
  labels.Set(m::kLabelBasis, basis);
  out.AddValue(m::kBatchLimit, entity_id, labels, *limit);
  if (!size) return;
  out.AddValue(m::kBatchSize, entity_id, labels, *size);
  if (*limit > 0) out.AddValue(m::kBatchEfficiency, entity_id, labels, *size / *limit);
}

void WriteTokens(const ModelSnapshot* prev, const ModelSnapshot& cur, double seconds,
                 std::string_view entity_id, const model::Labels& base, model::SampleSink& out) {
  const std::pair<std::optional<double> ModelSnapshot::*, std::string_view> kTypes[] = {
      {&ModelSnapshot::input_tokens, "input"}, {&ModelSnapshot::output_tokens, "output"}};
  for (const auto& [field, type] : kTypes) {
    if (!(cur.*field)) continue;
    model::Labels labels = base;
    labels.Set(m::kLabelTokenType, type);
    out.AddValue(m::kTokens, entity_id, labels, *(cur.*field));
    if (prev == nullptr || seconds <= 0) continue;
    if (auto inc = CounterIncrease(prev->*field, cur.*field)) {
      out.AddValue(m::kTokenRate, entity_id, labels, *inc / seconds);
    }
  }
}

}  // namespace

std::optional<double> CounterIncrease(std::optional<double> prev, std::optional<double> cur) {
  if (!prev || !cur) return std::nullopt;
  return *cur < *prev ? *cur : *cur - *prev;
}

Histogram HistogramDelta(const Histogram* prev, const Histogram& cur) {
  if (prev == nullptr || !SameLayout(*prev, cur) || Total(cur) < Total(*prev)) return cur;
  Histogram d = cur;
  for (size_t i = 0; i < d.buckets.size(); ++i) {
    d.buckets[i].count = std::max(0.0, cur.buckets[i].count - prev->buckets[i].count);
  }
  d.sum = cur.sum - prev->sum;
  d.count = cur.count - prev->count;
  return d;
}

std::optional<double> HistogramQuantile(const Histogram& h, double q) {
  const double total = Total(h);
  if (h.buckets.empty() || !(total > 0)) return std::nullopt;
  const double rank = q * total;
  size_t i = 0;
  while (i + 1 < h.buckets.size() && h.buckets[i].count < rank) ++i;
  const HistogramBucket& b = h.buckets[i];
  const double lower = i == 0 ? std::min(0.0, b.le) : h.buckets[i - 1].le;
  if (std::isinf(b.le)) return i == 0 ? std::nullopt : std::optional<double>(lower);
  const double below = i == 0 ? 0.0 : h.buckets[i - 1].count;
  const double in_bucket = b.count - below;
  if (in_bucket <= 0) return b.le;
  return lower + (b.le - lower) * (rank - below) / in_bucket;
}

void WriteWindow(const ModelSnapshot* prev, const ModelSnapshot& cur, double seconds,
                 const BatchLimits& limits, std::string_view entity_id, model::SampleSink& out) {
  const model::Labels base{{std::string(m::kLabelModel), cur.model}};
  if (cur.requests_running)
    out.AddValue(m::kRequestsRunning, entity_id, base, *cur.requests_running);
  if (cur.requests_waiting)
    out.AddValue(m::kRequestsWaiting, entity_id, base, *cur.requests_waiting);
  if (cur.kv_cache_usage) out.AddValue(m::kKvCacheUsage, entity_id, base, *cur.kv_cache_usage);
  if (cur.requests_finished) {
    out.AddValue(m::kRequestsFinished, entity_id, base, *cur.requests_finished);
    if (prev != nullptr && seconds > 0) {
      if (auto inc = CounterIncrease(prev->requests_finished, cur.requests_finished)) {
        out.AddValue(m::kRequestRate, entity_id, base, *inc / seconds);
      }
    }
  }
  WriteTokens(prev, cur, seconds, entity_id, base, out);
  WriteBatch(prev, cur, limits, entity_id, base, out);
  if (prev == nullptr) return;
  WritePercentiles(m::kTimeToFirstToken, prev->time_to_first_token, cur.time_to_first_token,
                   entity_id, base, out);
  WritePercentiles(m::kInterTokenLatency, prev->inter_token_latency, cur.inter_token_latency,
                   entity_id, base, out);
  WritePercentiles(m::kRequestLatency, prev->request_latency, cur.request_latency, entity_id, base,
                   out);
  WritePercentiles(m::kQueueTime, prev->queue_time, cur.queue_time, entity_id, base, out);
  const auto queries = CounterIncrease(prev->prefix_cache_queries, cur.prefix_cache_queries);
  const auto hits = CounterIncrease(prev->prefix_cache_hits, cur.prefix_cache_hits);
  if (queries && hits && *queries > 0) {
    out.AddValue(m::kPrefixCacheHitRatio, entity_id, base, std::min(1.0, *hits / *queries));
  }
}

}  // namespace warpscope::agent::inference

// SPDX-License-Identifier: Apache-2.0
#include "server/traces/trace_breakdown.h"

#include <algorithm>
#include <array>
#include <map>

namespace warpscope::server::traces {
namespace {

constexpr std::array<std::string_view, 8> kLifecycle = {
    "receive", "preprocess", "tokenize", "queue", "prefill", "decode", "detokenize", "respond"};

double Percentile(const std::vector<double>& sorted, double p) {
  const double rank = p * static_cast<double>(sorted.size() - 1);
  const auto below = static_cast<size_t>(rank);
  if (below + 1 >= sorted.size()) return sorted.back();
  const double frac = rank - static_cast<double>(below);
  return sorted[below] + frac * (sorted[below + 1] - sorted[below]);
}

double Seconds(int64_t ns) { return static_cast<double>(ns) / 1e9; }

}  // namespace

int PhaseOrder(std::string_view phase) {
  for (size_t i = 0; i < kLifecycle.size(); ++i) {
    if (kLifecycle[i] == phase) return static_cast<int>(i);
  }
  return static_cast<int>(kLifecycle.size());
}

LatencyStats Summarize(std::vector<double> seconds) {
  LatencyStats s;
  if (seconds.empty()) return s;
  std::sort(seconds.begin(), seconds.end());
  s.count = seconds.size();
  double sum = 0;
  for (double v : seconds) sum += v;
  s.mean = sum / static_cast<double>(seconds.size());
  s.p50 = Percentile(seconds, 0.50);
  s.p95 = Percentile(seconds, 0.95);
  s.p99 = Percentile(seconds, 0.99);
  s.max = seconds.back();
  return s;
}

Breakdown ComputeBreakdown(const std::vector<RequestTrace>& requests) {
  Breakdown b;
  std::map<std::string, std::vector<double>> phases;
  std::vector<double> e2e, ttft, hit, miss;
  for (const RequestTrace& r : requests) {
    ++b.requests;
    if (r.request.error) ++b.errors;
    e2e.push_back(Seconds(r.Duration()));
    std::map<std::string, int64_t> per_phase;
    for (const TraceSpan& p : r.phases) per_phase[p.phase] += p.end_ns - p.start_ns;
    for (const auto& [name, ns] : per_phase) phases[name].push_back(Seconds(ns));
    std::optional<int64_t> first = r.Ttft();
    if (!first) continue;
    ttft.push_back(Seconds(*first));
    if (!r.request.cached_tokens) {
      ++b.ttft_cache_unknown;
    } else if (*r.request.cached_tokens > 0) {
      hit.push_back(Seconds(*first));
    } else {
      miss.push_back(Seconds(*first));
    }
  }
  for (auto& [name, values] : phases) {
    b.phases.push_back(PhaseStats{.phase = name, .latency = Summarize(std::move(values))});
  }
  std::stable_sort(b.phases.begin(), b.phases.end(), [](const auto& x, const auto& y) {
    return PhaseOrder(x.phase) < PhaseOrder(y.phase);
  });
  b.e2e = Summarize(std::move(e2e));
  b.ttft = Summarize(std::move(ttft));
  b.ttft_cache_hit = Summarize(std::move(hit));
  b.ttft_cache_miss = Summarize(std::move(miss));
  return b;
}

}  // namespace warpscope::server::traces

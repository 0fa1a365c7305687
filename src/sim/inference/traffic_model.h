// SPDX-License-Identifier: Apache-2.0
// The traffic of a fake serving engine: deterministic requests over time with known latency
// and token distributions, so that a test can compute the true percentiles, throughput and batch
// efficiency of any window (docs/design/inference.md, "Fake serving engines").
//
// Request k (k = 0, 1, ...) arrives at t = k / requests_per_second (seconds since the start). Its
// values come from cyclic patterns: the queue time is queue_seconds[k % size], the time to first
// token ttft_seconds[k % size] (measured from arrival, so it includes the queue time), every
// inter-token gap itl_seconds[k % size], and so on. It is scheduled at arrival + queue, its first
// output token comes at arrival + ttft and token j (0-based) at arrival + ttft + j * itl; it
// finishes with its last token, so e2e = ttft + (output_tokens - 1) * itl.
//
// What the engine observes, as the engines do: TTFT at the first token, one inter-token gap per
// later token, e2e, queue time and the request's token counts when it finishes, prefix-cache
// queries (its prompt tokens) and hits (prefix_hit_percent of them, rounded down) when it is
// scheduled. Engine steps run every step_seconds; a step's tokens are the prompt tokens scheduled
// and the output tokens produced since the previous step, and a step with no tokens is not
// counted (an idle engine does not step).
//
// Observations are kept as exact value -> count maps (ValueCounts), so any bucket layout can be
// filled exactly and a window's percentiles are Quantile(Subtract(later, earlier), q).
// Not thread-safe; Totals() is cheapest when called with non-decreasing times.
#ifndef WARPSCOPE_SIM_INFERENCE_TRAFFIC_MODEL_H_
#define WARPSCOPE_SIM_INFERENCE_TRAFFIC_MODEL_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/status.h"

namespace warpscope::sim::inference {

struct TrafficConfig {
  double requests_per_second = 2.0;
  std::vector<double> queue_seconds = {0.002};
  std::vector<double> ttft_seconds = {0.040, 0.060, 0.080, 0.120};
  std::vector<double> itl_seconds = {0.015, 0.020};
  std::vector<uint32_t> prompt_tokens = {512, 1024};
  std::vector<uint32_t> output_tokens = {128, 256};
  uint32_t prefix_hit_percent = 25;   // of each request's prompt tokens, found in the prefix cache
  double step_seconds = 0.020;        // the engine's step period
  uint64_t kv_cache_tokens = 200000;  // KV-cache capacity; usage = tokens held by running requests

  // Every pattern non-empty, times positive and finite, each queue time below the smallest TTFT,
  // output tokens >= 1, percent <= 100. Errors name the field and the fix.
  [[nodiscard]] base::Status Validate() const;
};

// Exact observations: value -> how many times it was observed.
using ValueCounts = std::map<double, uint64_t>;

uint64_t Count(const ValueCounts& v);
double Sum(const ValueCounts& v);
// `later` minus `earlier` (counts of `earlier` must not exceed those of `later`).
ValueCounts Subtract(const ValueCounts& later, const ValueCounts& earlier);
// The nearest-rank quantile: the smallest value with at least ceil(q * count) observations at or
// below it (q in (0, 1]); 0 for no observations.
double Quantile(const ValueCounts& v, double q);
// How many observations are <= bound (what a histogram bucket `le=bound` counts).
uint64_t CountAtMost(const ValueCounts& v, double bound);

// Everything an engine exposes, cumulative since the start, at one time.
struct TrafficTotals {
  double t = 0;
  uint64_t requests_arrived = 0;
  uint64_t requests_finished = 0;
  uint64_t prompt_tokens = 0;      // of scheduled requests
  uint64_t generation_tokens = 0;  // output tokens produced so far
  uint64_t prefix_queries = 0;
  uint64_t prefix_hits = 0;
  uint64_t steps = 0;
  uint32_t running = 0;       // scheduled, not finished
  uint32_t waiting = 0;       // arrived, not scheduled
  double kv_cache_usage = 0;  // 0..1: prompt + output tokens of running requests / capacity
  // Seconds. tpot: each finished request's mean time per output token after the first (its
  // itl, for requests of >= 2 tokens); inference: e2e minus queue time.
  ValueCounts ttft, itl, e2e, queue, tpot, inference;
  ValueCounts request_prompt_tokens, request_output_tokens;  // per finished request
  ValueCounts iteration_tokens;                              // per engine step
};

class TrafficModel {
 public:
  explicit TrafficModel(TrafficConfig config);  // config must be valid (CHECKed)

  // The totals at `t` seconds since the start (t >= 0).
  TrafficTotals Totals(double t);

  const TrafficConfig& config() const { return config_; }

 private:
  struct Request {
    double arrival, scheduled, first_token, itl, finish;
    uint32_t prompt, output, cached;
    double queue, ttft;
  };
  Request RequestAt(uint64_t k) const;
  // Output tokens of `r` produced by t.
  static uint64_t TokensBy(const Request& r, double t);
  // Adds request r's contribution by time t to `out` (counters and observations, not gauges).
  static void AddRequest(const Request& r, double t, TrafficTotals& out);
  // Prompt tokens scheduled + output tokens produced by t, over all requests.
  uint64_t WorkBy(double t) const;
  void Reset();

  TrafficConfig config_;
  TrafficTotals settled_;      // full contributions of requests [0, settled_k_) and steps so far
  uint64_t settled_k_ = 0;     // every request below it has finished
  uint64_t settled_work_ = 0;  // WorkBy contribution of those requests
  uint64_t next_step_ = 1;     // the next engine step to count (step j at j * step_seconds)
  uint64_t last_step_work_ = 0;
  double last_t_ = 0;
};

}  // namespace warpscope::sim::inference

#endif  // WARPSCOPE_SIM_INFERENCE_TRAFFIC_MODEL_H_

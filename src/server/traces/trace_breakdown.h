// SPDX-License-Identifier: Apache-2.0
// The latency breakdown of a model's requests: per phase, time to first token (all requests,
// and split by KV/prefix-cache reuse where the spans say how many prompt tokens were cached)
// and end to end. Pure functions over RequestTrace; thread-safe.
#ifndef WARPSCOPE_SERVER_TRACES_TRACE_BREAKDOWN_H_
#define WARPSCOPE_SERVER_TRACES_TRACE_BREAKDOWN_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "server/traces/trace_span.h"

namespace warpscope::server::traces {

// Count, mean, percentiles and maximum of durations in seconds. Percentiles interpolate
// linearly between the two nearest ranks (p of n sorted values sits at rank p * (n - 1)).
struct LatencyStats {
  uint64_t count = 0;
  double mean = 0;
  double p50 = 0;
  double p95 = 0;
  double p99 = 0;
  double max = 0;
};

[[nodiscard]] LatencyStats Summarize(std::vector<double> seconds);

struct PhaseStats {
  std::string phase;
  LatencyStats latency;  // per request that has the phase (its spans of that phase summed)
};

struct Breakdown {
  uint64_t requests = 0;
  uint64_t errors = 0;
  std::vector<PhaseStats> phases;  // in lifecycle order (PhaseOrder), then by name
  LatencyStats e2e;
  LatencyStats ttft;                // requests with a time to first token
  LatencyStats ttft_cache_hit;      // ... and cached prompt tokens > 0
  LatencyStats ttft_cache_miss;     // ... and cached prompt tokens == 0
  uint64_t ttft_cache_unknown = 0;  // ... whose spans do not say
};

[[nodiscard]] Breakdown ComputeBreakdown(const std::vector<RequestTrace>& requests);

// The place of a phase in a request's lifecycle: receive, preprocess, tokenize, queue, prefill,
// decode, detokenize, respond; other phases after them.
[[nodiscard]] int PhaseOrder(std::string_view phase);

}  // namespace warpscope::server::traces

#endif  // WARPSCOPE_SERVER_TRACES_TRACE_BREAKDOWN_H_

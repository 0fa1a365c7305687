// SPDX-License-Identifier: Apache-2.0
// A serving engine's Prometheus exposition of a TrafficTotals: the engine's own metric names,
// types, labels, histogram bucket boundaries and number formatting (the sources of each are
// listed in docs/design/inference.md, "Fake serving engines"). Pure functions, no I/O.
#ifndef WARPSCOPE_SIM_INFERENCE_EXPOSITION_H_
#define WARPSCOPE_SIM_INFERENCE_EXPOSITION_H_

#include <string>
#include <vector>

#include "sim/inference/engine_command.h"
#include "sim/inference/traffic_model.h"

namespace warpscope::sim::inference {

// vLLM's metric names: V1's (`vllm:kv_cache_usage_perc`, `vllm:inter_token_latency_seconds`,
// prefix-cache counters, `vllm:iteration_tokens_total`) or the older V0 set
// (`vllm:gpu_cache_usage_perc`, `vllm:time_per_output_token_seconds`, no prefix-cache counters,
// no iteration histogram).
enum class VllmNames { kV1, kLegacy };

struct ExpositionOptions {
  EngineCommand command;  // engine, model name and the limits the histograms depend on
  VllmNames vllm_names = VllmNames::kV1;
};

// What a histogram observes.
enum class Observed {
  kTtft,
  kItl,
  kTpot,
  kE2e,
  kQueue,
  kInference,
  kIterationTokens,
  kPromptTokens,
  kOutputTokens
};
const ValueCounts& Observations(const TrafficTotals& totals, Observed what);

struct HistogramSpec {
  std::string name;  // without _bucket/_sum/_count
  Observed what = Observed::kTtft;
  std::vector<double> bounds;  // the engine's finite `le` boundaries, ascending
};

// The histograms the engine exposes, with their boundaries.
std::vector<HistogramSpec> EngineHistograms(const ExpositionOptions& options);

// The exposition text (format 0.0.4) of `totals`.
std::string RenderExposition(const ExpositionOptions& options, const TrafficTotals& totals);

// Numbers as Python's prometheus_client writes them ("1.0", "0.25", "8.128902e+06"): the
// Python engines' formatting.
std::string PythonNumber(double v);

}  // namespace warpscope::sim::inference

#endif  // WARPSCOPE_SIM_INFERENCE_EXPOSITION_H_

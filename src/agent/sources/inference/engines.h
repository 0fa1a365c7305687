// SPDX-License-Identifier: Apache-2.0
// Normalisation of the inference engines' Prometheus expositions (vLLM, SGLang, TensorRT-LLM,
// TGI) into one per-model snapshot in warpscope's terms (docs/design/inference.md, "Collection
// in the agent", lists every engine name with its source). Version-aware: where an engine renamed
// a metric the current name is preferred and the older one read when the current is absent.
// Pure functions, no I/O; errors only for expositions that contradict the engine's own layout.
#ifndef WARPSCOPE_AGENT_SOURCES_INFERENCE_ENGINES_H_
#define WARPSCOPE_AGENT_SOURCES_INFERENCE_ENGINES_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/sources/inference/prom_text.h"
#include "base/status.h"

namespace warpscope::agent::inference {

enum class Engine { kVllm, kSglang, kTrtllm, kTgi };
// "vllm", "sglang", "trtllm", "tgi": the value of the inference.engine attribute.
std::string_view EngineName(Engine engine);
std::optional<Engine> EngineFromName(std::string_view name);
// The engine whose metric prefix (`vllm:`, `sglang:`, `trtllm_`, `tgi_`) the exposition's first
// such family carries; nullopt when none does.
std::optional<Engine> DetectEngine(const Exposition& exposition);

// One histogram of one model: cumulative buckets sorted by le, +Inf last, as exposed (the sum
// of the engine's label sets of that model, e.g. vLLM's per-engine series).
struct Histogram {
  std::vector<HistogramBucket> buckets;
  double sum = 0;
  double count = 0;
};

// What one scrape says about one model. A field is empty when the engine (or its version) does
// not expose it. Counters are cumulative since the engine started.
struct ModelSnapshot {
  std::string model;
  // Latency histograms, seconds.
  std::optional<Histogram> time_to_first_token;
  std::optional<Histogram> inter_token_latency;
  std::optional<Histogram> request_latency;
  std::optional<Histogram> queue_time;
  // Tokens per engine step (vLLM's iteration_tokens_total).
  std::optional<Histogram> iteration_tokens;
  // Gauges.
  std::optional<double> requests_running;
  std::optional<double> requests_waiting;
  std::optional<double> kv_cache_usage;  // ratio 0..1
  // Counters.
  std::optional<double> requests_finished;
  std::optional<double> input_tokens;
  std::optional<double> output_tokens;
  std::optional<double> prefix_cache_queries;  // tokens (or blocks) looked up
  std::optional<double> prefix_cache_hits;     // of those, found
};

struct EngineSnapshot {
  std::vector<ModelSnapshot> models;  // sorted by model
};

// Reads `exposition` as `engine` exposes it. `default_model` names the model when the engine
// has no model label (TGI) or a series lacks it (the served model from the command line);
// "unknown" when that is empty too. Families of other names are ignored. Error
// (InvalidArgument): a histogram family the engine documents that does not assemble (a bucket
// without its +Inf, ...), naming the family.
[[nodiscard]] base::Result<EngineSnapshot> Normalize(Engine engine, const Exposition& exposition,
                                                     std::string_view default_model);

}  // namespace warpscope::agent::inference

#endif  // WARPSCOPE_AGENT_SOURCES_INFERENCE_ENGINES_H_

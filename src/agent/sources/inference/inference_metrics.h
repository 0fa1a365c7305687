// SPDX-License-Identifier: Apache-2.0
// Catalog of the inference-serving metrics (docs/design/inference.md): what the `inference`
// source writes for each serving process it scrapes (vLLM, SGLang, TensorRT-LLM, TGI), in
// warpscope's own names whatever the engine calls them.
//
// Entity: the serving process (model::EntityKind::kProcess, the process that serves the
// Prometheus endpoint). Its entity attributes, set by the source:
//   inference.engine     "vllm", "sglang", "trtllm" or "tgi"
//   inference.gpu.uuids  the GPUs that process and its descendants use (NVML's process lists),
//                        comma-separated UUIDs in NVML index order ("" when none is known)
//   inference.endpoint   the scraped URL ("http://127.0.0.1:8000/metrics")
// Labels of every series: "model" (the served model name as the engine labels it; the
// engine's default when it has no model label). Latency percentiles add "quantile" ("0.5",
// "0.95", "0.99"); token counters and rates add "token_type" ("input" or "output"); batch
// efficiency adds "basis" ("tokens": iteration tokens against max_num_batched_tokens, or
// "sequences": running requests against max_num_seqs).
//
// Percentiles are of the requests that finished in the window (the bucket deltas of the
// engine's histogram between two scrapes, linear interpolation inside a bucket); a window
// without finished requests writes no percentile. Rates are counter deltas over the window's
// wall time; a counter that went down (engine restart) starts again from its new value.
#ifndef WARPSCOPE_AGENT_SOURCES_INFERENCE_INFERENCE_METRICS_H_
#define WARPSCOPE_AGENT_SOURCES_INFERENCE_INFERENCE_METRICS_H_

#include <span>
#include <string_view>

#include "model/metric.h"

namespace warpscope::agent::inference_metrics {

// Entity attribute keys of a serving process.
inline constexpr std::string_view kAttrEngine = "inference.engine";
inline constexpr std::string_view kAttrGpuUuids = "inference.gpu.uuids";
inline constexpr std::string_view kAttrEndpoint = "inference.endpoint";
// Series label keys.
inline constexpr std::string_view kLabelModel = "model";
inline constexpr std::string_view kLabelQuantile = "quantile";
inline constexpr std::string_view kLabelTokenType = "token_type";
inline constexpr std::string_view kLabelBasis = "basis";

// Latency percentiles of the window, gauges in seconds, with "quantile".
extern const model::MetricDesc kTimeToFirstToken;   // gauge s
extern const model::MetricDesc kInterTokenLatency;  // gauge s (time per output token)
extern const model::MetricDesc kRequestLatency;     // gauge s (end to end)
extern const model::MetricDesc kQueueTime;          // gauge s (waiting before scheduled)
// Load.
extern const model::MetricDesc kRequestsRunning;   // gauge {request}
extern const model::MetricDesc kRequestsWaiting;   // gauge {request}
extern const model::MetricDesc kRequestsFinished;  // counter {request}
extern const model::MetricDesc kRequestRate;       // gauge {request}/s
extern const model::MetricDesc kTokens;            // counter {token}, token_type
extern const model::MetricDesc kTokenRate;         // gauge {token}/s, token_type
// Memory and batching.
extern const model::MetricDesc kKvCacheUsage;         // gauge 1
extern const model::MetricDesc kPrefixCacheHitRatio;  // gauge 1
extern const model::MetricDesc kBatchSize;            // gauge (tokens or sequences), basis
extern const model::MetricDesc kBatchLimit;           // gauge (tokens or sequences), basis
extern const model::MetricDesc kBatchEfficiency;      // gauge 1, basis
// The scrape itself.
extern const model::MetricDesc kScrapeDuration;  // gauge s
extern const model::MetricDesc kScrapeSamples;   // gauge {sample}

// Every metric above, in declaration order. The pointers are stable for the program's life.
std::span<const model::MetricDesc* const> AllInferenceMetrics();

}  // namespace warpscope::agent::inference_metrics

#endif  // WARPSCOPE_AGENT_SOURCES_INFERENCE_INFERENCE_METRICS_H_

// SPDX-License-Identifier: Apache-2.0
// The window math of the inference metrics (docs/design/inference.md, "Collection in the
// agent"): percentiles from histogram bucket deltas, rates from counter deltas, the prefix-cache
// hit ratio and batch efficiency between two snapshots of one model. Pure functions, no I/O.
#ifndef WARPSCOPE_AGENT_SOURCES_INFERENCE_INFERENCE_WINDOW_H_
#define WARPSCOPE_AGENT_SOURCES_INFERENCE_INFERENCE_WINDOW_H_

#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "agent/sources/inference/engines.h"
#include "model/sample_sink.h"

namespace warpscope::agent::inference {

// The increase of a counter from `prev` to `cur`. A counter that went down was reset (the
// engine restarted): its increase is its new value. nullopt without both values.
std::optional<double> CounterIncrease(std::optional<double> prev, std::optional<double> cur);

// The observations of `cur` that `prev` did not have yet, bucket by bucket (cumulative, like the
// input). Without `prev`, after a reset (the count went down) or when the bucket layouts differ,
// `cur` itself.
Histogram HistogramDelta(const Histogram* prev, const Histogram& cur);

// The q-quantile (0..1) of a histogram's observations: the bucket that holds rank q * count,
// linear interpolation between its lower bound (the previous bucket's le, 0 for the first) and
// its le; in the +Inf bucket the answer is its lower bound. nullopt without observations.
std::optional<double> HistogramQuantile(const Histogram& histogram, double q);

// The server's batch limits, from its arguments or the engine's documented defaults.
struct BatchLimits {
  std::optional<double> max_num_batched_tokens;  // basis=tokens (needs iteration_tokens)
  std::optional<double> max_num_seqs;            // basis=sequences
};

// Writes the series of one model for the window that ends with `cur` (inference_metrics.h, with
// its labels) on `entity_id`. `prev` is the model's previous snapshot, `seconds` the wall time
// between the two; without `prev` (the first scrape) only what needs no window is written: the
// gauges, the counters and the batch limit.
void WriteWindow(const ModelSnapshot* prev, const ModelSnapshot& cur, double seconds,
                 const BatchLimits& limits, std::string_view entity_id, model::SampleSink& out);

}  // namespace warpscope::agent::inference

#endif  // WARPSCOPE_AGENT_SOURCES_INFERENCE_INFERENCE_WINDOW_H_

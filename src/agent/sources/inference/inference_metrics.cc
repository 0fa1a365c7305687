// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/inference/inference_metrics.h"

namespace warpscope::agent::inference_metrics {

using model::EntityKind;
using model::MetricDesc;
using model::MetricKind;

const MetricDesc kTimeToFirstToken{
    .key = "inference.time_to_first_token",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kGauge,
    .unit = "s",
    .help =
        "Time to first token of the requests that finished in the window, at the percentile in "
        "\"quantile\" (the engine's histogram bucket deltas, linear inside a bucket). TGI has no "
        "such histogram: absent for TGI.",
    .prom_name = "warpscope_inference_time_to_first_token_seconds",
    .otel_name = "gen_ai.server.time_to_first_token",
    .labels = "model,quantile",
};

const MetricDesc kInterTokenLatency{
    .key = "inference.inter_token_latency",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kGauge,
    .unit = "s",
    .help =
        "Time per output token after the first (inter-token latency) of the requests that "
        "finished in the window, at the percentile in \"quantile\".",
    .prom_name = "warpscope_inference_inter_token_latency_seconds",
    .otel_name = "gen_ai.server.time_per_output_token",
    .labels = "model,quantile",
};

const MetricDesc kRequestLatency{
    .key = "inference.request_latency",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kGauge,
    .unit = "s",
    .help =
        "End-to-end latency of the requests that finished in the window, from arrival to the last"
        " token, at the percentile in \"quantile\".",
    .prom_name = "warpscope_inference_request_latency_seconds",
    .otel_name = "gen_ai.server.request.duration",
    .labels = "model,quantile",
};

const MetricDesc kQueueTime{
    .key = "inference.queue_time",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kGauge,
    .unit = "s",
    .help =
        "Time the requests that finished in the window waited in the engine's queue before first "
        "being scheduled, at the percentile in \"quantile\".",
    .prom_name = "warpscope_inference_queue_time_seconds",
    .otel_name = "warpscope.inference.queue_time",
    .labels = "model,quantile",
};

const MetricDesc kRequestsRunning{
    .key = "inference.requests.running",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kGauge,
    .unit = "{request}",
    .help = "Requests the engine is running (in the current batch) at the scrape.",
    .prom_name = "warpscope_inference_requests_running",
    .otel_name = "warpscope.inference.requests.running",
    .labels = "model",
};

const MetricDesc kRequestsWaiting{
    .key = "inference.requests.waiting",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kGauge,
    .unit = "{request}",
    .help = "Requests waiting in the engine's queue at the scrape.",
    .prom_name = "warpscope_inference_requests_waiting",
    .otel_name = "warpscope.inference.requests.waiting",
    .labels = "model",
};

const MetricDesc kRequestsFinished{
    .key = "inference.requests.finished",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kCounter,
    .unit = "{request}",
    .help = "Requests the engine finished since it started (any finish reason).",
    .prom_name = "warpscope_inference_requests_finished_total",
    .otel_name = "warpscope.inference.requests.finished",
    .labels = "model",
};

const MetricDesc kRequestRate{
    .key = "inference.request.rate",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kGauge,
    .unit = "{request}/s",
    .help = "Requests finished per second over the window (request throughput).",
    .prom_name = "warpscope_inference_request_rate",
    .otel_name = "warpscope.inference.request.rate",
    .labels = "model",
};

const MetricDesc kTokens{
    .key = "inference.tokens",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kCounter,
    .unit = "{token}",
    .help =
        "Tokens the engine processed since it started: prompt tokens (token_type=input) and "
        "generated tokens (token_type=output).",
    .prom_name = "warpscope_inference_tokens_total",
    .otel_name = "warpscope.inference.tokens",
    .labels = "model,token_type",
};

const MetricDesc kTokenRate{
    .key = "inference.token.rate",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kGauge,
    .unit = "{token}/s",
    .help =
        "Tokens per second over the window (token throughput), prompt (input) or generated "
        "(output).",
    .prom_name = "warpscope_inference_token_rate",
    .otel_name = "warpscope.inference.token.rate",
    .labels = "model,token_type",
};

const MetricDesc kKvCacheUsage{
    .key = "inference.kv_cache.usage",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kGauge,
    .unit = "1",
    .help = "Share of the engine's KV-cache blocks in use at the scrape (ratio 0..1).",
    .prom_name = "warpscope_inference_kv_cache_usage_ratio",
    .otel_name = "warpscope.inference.kv_cache.usage",
    .labels = "model",
};

const MetricDesc kPrefixCacheHitRatio{
    .key = "inference.prefix_cache.hit_ratio",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kGauge,
    .unit = "1",
    .help =
        "Share of the prompt tokens looked up in the prefix cache during the window that were "
        "found there (ratio 0..1); absent in a window without lookups or when the engine does not"
        " report it.",
    .prom_name = "warpscope_inference_prefix_cache_hit_ratio",
    .otel_name = "warpscope.inference.prefix_cache.hit_ratio",
    .labels = "model",
};

const MetricDesc kBatchSize{
    .key = "inference.batch.size",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kGauge,
    .unit = "1",
    .help =
        "Average batch size over the window, in the unit of \"basis\": tokens per engine step "
        "(basis=tokens) or running requests (basis=sequences).",
    .prom_name = "warpscope_inference_batch_size",
    .otel_name = "warpscope.inference.batch.size",
    .labels = "model,basis",
};

const MetricDesc kBatchLimit{
    .key = "inference.batch.limit",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kGauge,
    .unit = "1",
    .help =
        "The engine's configured batch limit the efficiency is measured against: "
        "max_num_batched_tokens (basis=tokens) or max_num_seqs (basis=sequences), read from its "
        "arguments or its defaults.",
    .prom_name = "warpscope_inference_batch_limit",
    .otel_name = "warpscope.inference.batch.limit",
    .labels = "model,basis",
};

const MetricDesc kBatchEfficiency{
    .key = "inference.batch.efficiency",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kGauge,
    .unit = "1",
    .help =
        "Average batch size over the configured limit during the window (ratio 0..1): low means "
        "over-provisioned, near 1 means queueing.",
    .prom_name = "warpscope_inference_batch_efficiency_ratio",
    .otel_name = "warpscope.inference.batch.efficiency",
    .labels = "model,basis",
};

const MetricDesc kScrapeDuration{
    .key = "inference.scrape.duration",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kGauge,
    .unit = "s",
    .help =
        "Wall time of the last scrape of the serving process's metrics endpoint (connect, read, "
        "parse).",
    .prom_name = "warpscope_inference_scrape_duration_seconds",
    .otel_name = "warpscope.inference.scrape.duration",
};

const MetricDesc kScrapeSamples{
    .key = "inference.scrape.samples",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kGauge,
    .unit = "{sample}",
    .help = "Samples in the last exposition scraped from the serving process.",
    .prom_name = "warpscope_inference_scrape_samples",
    .otel_name = "warpscope.inference.scrape.samples",
};

namespace {
constexpr const MetricDesc* kAll[] = {
    &kTimeToFirstToken, &kInterTokenLatency,   &kRequestLatency, &kQueueTime,  &kRequestsRunning,
    &kRequestsWaiting,  &kRequestsFinished,    &kRequestRate,    &kTokens,     &kTokenRate,
    &kKvCacheUsage,     &kPrefixCacheHitRatio, &kBatchSize,      &kBatchLimit, &kBatchEfficiency,
    &kScrapeDuration,   &kScrapeSamples,
};
}  // namespace

std::span<const MetricDesc* const> AllInferenceMetrics() { return kAll; }

}  // namespace warpscope::agent::inference_metrics

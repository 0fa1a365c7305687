// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/cuda_profiler/training_metrics.h"

namespace warpscope::agent::training_metrics {

using model::EntityKind;
using model::MetricDesc;
using model::MetricKind;

namespace {
constexpr std::string_view kLabels = "job,rank";
}  // namespace

const MetricDesc kSteps{
    .key = "training.steps",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kCounter,
    .unit = "{step}",
    .help =
        "Training steps of this rank the agent cut, from NVTX step ranges (ProfilerStep#N or "
        "WARPSCOPE_STEP_RANGE) or from the periodicity of its NCCL collectives.",
    .prom_name = "warpscope_training_steps_total",
    .otel_name = "warpscope.training.steps",
    .labels = kLabels,
};

const MetricDesc kLastStep{
    .key = "training.step.last",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kGauge,
    .unit = "{step}",
    .help =
        "Number of the rank's last step cut (ProfilerStep#N's N, else counted; equal across the "
        "ranks of a job).",
    .prom_name = "warpscope_training_last_step",
    .otel_name = "warpscope.training.step.last",
    .labels = kLabels,
};

const MetricDesc kStepDuration{
    .key = "training.step.duration",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kGauge,
    .unit = "s",
    .help = "Mean duration of the rank's steps cut in the last window, in seconds.",
    .prom_name = "warpscope_training_step_duration_seconds",
    .otel_name = "warpscope.training.step.duration",
    .labels = kLabels,
};

const MetricDesc kComputeShare{
    .key = "training.step.compute.share",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kGauge,
    .unit = "1",
    .help =
        "Share of the last window's step time the GPU ran compute (non-NCCL) kernels (ratio "
        "0..1); absent without kernel records.",
    .prom_name = "warpscope_training_compute_ratio",
    .otel_name = "warpscope.training.step.compute.share",
    .labels = kLabels,
};

const MetricDesc kCommShare{
    .key = "training.step.communication.share",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kGauge,
    .unit = "1",
    .help =
        "Share of the last window's step time in NCCL not overlapped by compute (ratio 0..1): "
        "NCCL kernels outside compute kernels, or the NCCL operations' GPU time without kernel "
        "records. Ranks waiting for a straggler show a larger share.",
    .prom_name = "warpscope_training_communication_ratio",
    .otel_name = "warpscope.training.step.communication.share",
    .labels = kLabels,
};

const MetricDesc kIdleShare{
    .key = "training.step.idle.share",
    .entity = EntityKind::kProcess,
    .kind = MetricKind::kGauge,
    .unit = "1",
    .help =
        "Share of the last window's step time the GPU ran no kernel (ratio 0..1); absent "
        "without kernel records.",
    .prom_name = "warpscope_training_idle_ratio",
    .otel_name = "warpscope.training.step.idle.share",
    .labels = kLabels,
};

namespace {
constexpr const MetricDesc* kAll[] = {
    &kSteps, &kLastStep, &kStepDuration, &kComputeShare, &kCommShare, &kIdleShare,
};
}  // namespace

std::span<const MetricDesc* const> AllTrainingMetrics() { return kAll; }

}  // namespace warpscope::agent::training_metrics

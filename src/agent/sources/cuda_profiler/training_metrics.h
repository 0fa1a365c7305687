// SPDX-License-Identifier: Apache-2.0
// Catalog of the training step metrics, written by StepTracker::EmitMetrics (step_tracker.h) on
// the process entity of each rank whose steps the agent cuts (docs/design/training.md, "Steps in
// the agent").
//
// Labels: "job" the step's job (the launcher's job id, else "comm-<communicator id>"), "rank" the
// rank in the job (else in the communicator). Counters are totals since the agent first heard of
// the process; gauges describe the steps emitted in the last window (--cuda-profile-interval)
// and are absent for a window without steps; the compute and idle shares are absent too when
// the process sent no kernel records (the CUDA library is not loaded).
#ifndef WARPSCOPE_AGENT_SOURCES_CUDA_PROFILER_TRAINING_METRICS_H_
#define WARPSCOPE_AGENT_SOURCES_CUDA_PROFILER_TRAINING_METRICS_H_

#include <span>

#include "model/metric.h"

namespace warpscope::agent::training_metrics {

extern const model::MetricDesc kSteps;         // counter {step}
extern const model::MetricDesc kLastStep;      // gauge {step}
extern const model::MetricDesc kStepDuration;  // gauge s, mean of the last window's steps
extern const model::MetricDesc kComputeShare;  // gauge 1
extern const model::MetricDesc kCommShare;     // gauge 1
extern const model::MetricDesc kIdleShare;     // gauge 1

// Every metric above, in declaration order. The pointers are stable for the program's life.
std::span<const model::MetricDesc* const> AllTrainingMetrics();

}  // namespace warpscope::agent::training_metrics

#endif  // WARPSCOPE_AGENT_SOURCES_CUDA_PROFILER_TRAINING_METRICS_H_

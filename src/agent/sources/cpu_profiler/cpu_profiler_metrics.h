// SPDX-License-Identifier: Apache-2.0
// Catalog of the CPU profiler's self-metrics, written by CpuProfilerSource::Poll on the host
// entity.
#ifndef WARPSCOPE_AGENT_SOURCES_CPU_PROFILER_CPU_PROFILER_METRICS_H_
#define WARPSCOPE_AGENT_SOURCES_CPU_PROFILER_CPU_PROFILER_METRICS_H_

#include <span>

#include "model/metric.h"

namespace warpscope::agent::cpu_profiler_metrics {

extern const model::MetricDesc kSamples;                 // counter {sample}
extern const model::MetricDesc kRecordsLost;             // counter {record}
extern const model::MetricDesc kStacksTruncated;         // counter {stack}, label binary
extern const model::MetricDesc kUnwindTime;              // counter s
extern const model::MetricDesc kEvents;                  // gauge {event}
extern const model::MetricDesc kSystemWide;              // gauge 1
extern const model::MetricDesc kPythonStacks;            // counter {stack}
extern const model::MetricDesc kPythonUnreadable;        // counter {read}, label reason
extern const model::MetricDesc kPythonSpliceMismatches;  // counter {stack}, label reason

// Every metric above, in declaration order. The pointers are stable for the program's life.
std::span<const model::MetricDesc* const> AllCpuProfilerMetrics();

}  // namespace warpscope::agent::cpu_profiler_metrics

#endif  // WARPSCOPE_AGENT_SOURCES_CPU_PROFILER_CPU_PROFILER_METRICS_H_

// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/cpu_profiler/cpu_profiler_metrics.h"

namespace warpscope::agent::cpu_profiler_metrics {

using model::EntityKind;
using model::MetricDesc;
using model::MetricKind;

const MetricDesc kSamples{
    .key = "profiler.cpu.samples",
    .entity = EntityKind::kHost,
    .kind = MetricKind::kCounter,
    .unit = "{sample}",
    .help = "CPU samples the CPU profiler unwound into profiles since it started.",
    .prom_name = "warpscope_cpu_profiler_samples_total",
    .otel_name = "warpscope.cpu_profiler.samples",
};

const MetricDesc kRecordsLost{
    .key = "profiler.cpu.records.lost",
    .entity = EntityKind::kHost,
    .kind = MetricKind::kCounter,
    .unit = "{record}",
    .help = "perf_event records the kernel dropped because a ring buffer was full.",
    .prom_name = "warpscope_cpu_profiler_records_lost_total",
    .otel_name = "warpscope.cpu_profiler.records.lost",
};

const MetricDesc kStacksTruncated{
    .key = "profiler.cpu.stacks.truncated",
    .entity = EntityKind::kHost,
    .kind = MetricKind::kCounter,
    .unit = "{stack}",
    .help =
        "User stacks whose unwinding stopped before the outermost frame (no CFI, a frame beyond "
        "the stack copy), by the binary where it stopped (label binary).",
    .prom_name = "warpscope_cpu_profiler_truncated_stacks_total",
    .otel_name = "warpscope.cpu_profiler.stacks.truncated",
    .labels = "binary",
};

const MetricDesc kUnwindTime{
    .key = "profiler.cpu.unwind.time",
    .entity = EntityKind::kHost,
    .kind = MetricKind::kCounter,
    .unit = "s",
    .help = "Agent CPU time spent unwinding samples (DWARF CFI through libdwfl).",
    .prom_name = "warpscope_cpu_profiler_unwind_seconds_total",
    .otel_name = "warpscope.cpu_profiler.unwind.time",
};

const MetricDesc kEvents{
    .key = "profiler.cpu.events",
    .entity = EntityKind::kHost,
    .kind = MetricKind::kGauge,
    .unit = "{event}",
    .help = "Sampling events open: one per online CPU, or one per thread in the fallback.",
    .prom_name = "warpscope_cpu_profiler_events",
    .otel_name = "warpscope.cpu_profiler.events",
};

const MetricDesc kSystemWide{
    .key = "profiler.cpu.system_wide",
    .entity = EntityKind::kHost,
    .kind = MetricKind::kGauge,
    .unit = "1",
    .help =
        "1 when every process is sampled (per-CPU events), 0 in the fallback to the processes "
        "the agent may profile (perf_event_paranoid or missing CAP_PERFMON).",
    .prom_name = "warpscope_cpu_profiler_system_wide",
    .otel_name = "warpscope.cpu_profiler.system_wide",
};

const MetricDesc kPythonStacks{
    .key = "profiler.cpu.python.stacks",
    .entity = EntityKind::kHost,
    .kind = MetricKind::kCounter,
    .unit = "{stack}",
    .help = "CPU samples given Python frames read from the sampled thread's interpreter.",
    .prom_name = "warpscope_cpu_profiler_python_stacks_total",
    .otel_name = "warpscope.cpu_profiler.python.stacks",
};

const MetricDesc kPythonUnreadable{
    .key = "profiler.cpu.python.unreadable",
    .entity = EntityKind::kHost,
    .kind = MetricKind::kCounter,
    .unit = "{read}",
    .help =
        "Reads of a sampled thread's Python frames that failed or were read only in part, by "
        "reason (label reason: no_access, unsupported, torn).",
    .prom_name = "warpscope_cpu_profiler_python_unreadable_total",
    .otel_name = "warpscope.cpu_profiler.python.unreadable",
    .labels = "reason",
};

const MetricDesc kPythonSpliceMismatches{
    .key = "profiler.cpu.python.splice_mismatches",
    .entity = EntityKind::kHost,
    .kind = MetricKind::kCounter,
    .unit = "{stack}",
    .help =
        "Stacks whose Python frames did not match the native eval-loop frames (label reason: "
        "mismatch, placed at the outermost eval-loop frame; unplaced, no eval-loop frame).",
    .prom_name = "warpscope_cpu_profiler_python_splice_mismatches_total",
    .otel_name = "warpscope.cpu_profiler.python.splice_mismatches",
    .labels = "reason",
};

std::span<const MetricDesc* const> AllCpuProfilerMetrics() {
  static const MetricDesc* const kAll[] = {
      &kSamples,      &kRecordsLost,      &kStacksTruncated,
      &kUnwindTime,   &kEvents,           &kSystemWide,
      &kPythonStacks, &kPythonUnreadable, &kPythonSpliceMismatches};
  return kAll;
}

}  // namespace warpscope::agent::cpu_profiler_metrics

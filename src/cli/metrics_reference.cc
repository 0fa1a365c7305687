// SPDX-License-Identifier: Apache-2.0
#include <fmt/format.h>

#include <cmath>
#include <span>
#include <string>

#include "agent/self_stats.h"
#include "agent/sources/cpu_profiler/cpu_profiler_metrics.h"
#include "agent/sources/cuda_profiler/cuda_profiler_metrics.h"
#include "agent/sources/cuda_profiler/nccl_metrics.h"
#include "agent/sources/cuda_profiler/training_metrics.h"
#include "agent/sources/inference/inference_metrics.h"
#include "agent/sources/nvml/nvml_metrics.h"
#include "agent/sources/procfs/host_metrics.h"
#include "cli/commands.h"

namespace warpscope::cli {
namespace {

bool Near(double a, double b) { return std::fabs(a - b) <= 1e-12 * std::fabs(b); }

// The unit a Prometheus family is exposed in: the base unit times prom_scale.
std::string PromUnit(const model::MetricDesc& m) {
  std::string_view u = m.unit;
  double s = m.prom_scale;
  if (u == "1") return Near(s, 100) ? "%" : "ratio";
  if (u == "By") return Near(s, 1.0 / 1048576) ? "MiB" : "bytes";
  if (u == "By/s") {
    if (Near(s, 1e-9)) return "GB/s";
    return Near(s, 1e-6) ? "MB/s" : Near(s, 1.0 / 1024) ? "KiB/s" : "bytes/s";
  }
  if (u == "s" && Near(s, 1e6)) return "µs";
  if (u == "J") return Near(s, 1000) ? "mJ" : "J";
  if (u == "Hz") return Near(s, 1e-6) ? "MHz" : "Hz";
  if (u == "Cel") return "°C";
  if (Near(s, 1)) return std::string(u);
  return fmt::format("{} × {}", u, s);
}

std::string Escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '|')
      out += "\\|";
    else
      out += c;
  }
  return out;
}

void Section(std::string& out, std::string_view title, std::string_view intro,
             std::span<const model::MetricDesc* const> metrics, bool markdown) {
  if (markdown) {
    out += fmt::format("\n## {}\n\n{}\n\n", title, intro);
    out += "| Prometheus name | type | unit | labels | OpenTelemetry name | description |\n";
    out += "|---|---|---|---|---|---|\n";
  }
  for (const model::MetricDesc* m : metrics) {
    std::string_view type = m->kind == model::MetricKind::kCounter ? "counter" : "gauge";
    std::string otel(m->otel_name);
    if (!m->otel_attrs.empty()) otel += fmt::format(" ({})", m->otel_attrs);
    if (markdown) {
      out += fmt::format("| `{}` | {} | {} | {} | `{}` | {} |\n", m->prom_name, type, PromUnit(*m),
                         Escape(m->labels), Escape(otel), Escape(m->help));
    } else {
      out += fmt::format("{}\t{}\t{}\t{}\t{}\t{}\t{}\n", title, m->prom_name, type, PromUnit(*m),
                         m->labels, otel, m->key);
    }
  }
}

}  // namespace

std::vector<MetricCatalog> AllMetricCatalogs() {
  return {
      {"GPU (NVML)",
       "Read through NVML each collection cycle by the `nvml` source "
       "(`--enable-gpu-metrics`). GPM metrics (`DCGM_FI_PROF_*`) need Hopper or newer.",
       agent::nvml_metrics::AllNvmlMetrics()},
      {"Host",
       "Read from /proc and /sys under `--host-root` by the `procfs` source "
       "(`--enable-host-metrics`, on by default).",
       agent::host_metrics::AllHostMetrics()},
      {"CUDA kernel profiler",
       "On the process entity of each process the injected CUDA profiler "
       "(`libwarpscope_cupti.so`) reports from, written by the `cuda_profiler` source "
       "(`--cuda-profiler`).",
       agent::cuda_profiler_metrics::AllCudaProfilerMetrics()},
      {"NCCL",
       "On the process entity of each process whose NCCL profiler plugin "
       "(`libwarpscope_nccl.so`) reports to the `cuda_profiler` source (`--cuda-profiler`); "
       "per communicator, rank and collective (docs/design/nccl.md, \"Agent side\"). Gauges "
       "describe the last window (`--cuda-profile-interval`). `nccl_bus_bandwidth_gbs` and "
       "`nccl_collective_exec_time_microseconds` are NCCL Inspector's names and labels.",
       agent::nccl_metrics::AllNcclMetrics()},
      {"Training steps",
       "On the process entity of each rank whose training steps the `cuda_profiler` source "
       "(`--cuda-profiler`) cuts, from NVTX step ranges or from the periodicity of its NCCL "
       "collectives (docs/design/training.md, \"Steps in the agent\"). Gauges describe the "
       "steps cut in the last window (`--cuda-profile-interval`) and are absent for a window "
       "without steps; compute and idle shares are absent without kernel records.",
       agent::training_metrics::AllTrainingMetrics()},
      {"CPU profiler",
       "On the host entity, written by the `cpu_profiler` source (`--enable-cpu-profiler`).",
       agent::cpu_profiler_metrics::AllCpuProfilerMetrics()},
      {"Inference serving",
       "On the process entity of each inference server the agent scrapes (vLLM, SGLang, "
       "TensorRT-LLM, TGI), written by the `inference` source (docs/design/inference.md).",
       agent::inference_metrics::AllInferenceMetrics()},
      {"Agent self-metrics", "The agent's own health, on the host entity.",
       agent::AllSelfMetrics()},
  };
}

std::string MetricsReference(std::string_view format) {
  bool markdown = format == "markdown";
  std::string out;
  if (markdown) {
    out +=
        "# Metric reference\n\n"
        "Generated by `warpscope metrics --format markdown` from the metric catalogs in the "
        "source (a test keeps this file in sync). Prometheus names and units are what "
        "`/metrics` serves: dcgm-exporter's names, units and labels where dcgm-exporter has "
        "the metric, `warpscope_` names in base units otherwise. OpenTelemetry names are what "
        "the OTLP exporter pushes, always in base units. A metric a device does not support is "
        "absent, never zero.\n\n"
        "Every GPU series carries dcgm-exporter's labels `gpu`, `UUID`, `pci_bus_id`, `device`, "
        "`modelName`, `Hostname`, `DCGM_FI_DRIVER_VERSION` (plus `GPU_I_PROFILE`, `GPU_I_ID` on "
        "MIG instances); process series carry `pid`, `executable`, `container_id`, `pod_uid`, "
        "`Hostname`, and with `--kubernetes` dcgm-exporter's `namespace`, `pod`, `container` "
        "(docs/design/kubernetes.md); host series carry `Hostname`; `--tags` adds constant "
        "labels to all. The labels column lists the extra dimensions of each metric.\n";
  }
  for (const MetricCatalog& c : AllMetricCatalogs()) {
    Section(out, c.title, c.intro, c.metrics, markdown);
  }
  return out;
}

}  // namespace warpscope::cli

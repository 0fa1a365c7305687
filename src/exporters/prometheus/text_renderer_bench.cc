// SPDX-License-Identifier: Apache-2.0
// /metrics render cost for the product's reference host: 8 GPUs (about 60 series each) and 64
// GPU processes, in both exposition formats, plus the gzip of the text body.
#include <benchmark/benchmark.h>

#include "base/gzip.h"
#include "exporters/prometheus/prometheus_exporter.h"
#include "exporters/prometheus/text_renderer.h"
#include "exporters/testing/sample_frame.h"

namespace warpscope::exporters {
namespace {

const model::Frame& ReferenceFrame() {
  static const model::Frame frame = sample::MakeSampleFrame({.gpus = 8, .processes = 64});
  return frame;
}

void BM_RenderText004(benchmark::State& state) {
  TextRenderer renderer({});
  std::string out;
  for (auto _ : state) {
    renderer.Render(ReferenceFrame(), ExpositionFormat::kText004, &out);
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["series"] = static_cast<double>(ReferenceFrame().series.size());
  state.counters["bytes"] = static_cast<double>(out.size());
}
BENCHMARK(BM_RenderText004)->Unit(benchmark::kMicrosecond);

void BM_RenderOpenMetrics(benchmark::State& state) {
  TextRenderer renderer({});
  std::string out;
  for (auto _ : state) {
    renderer.Render(ReferenceFrame(), ExpositionFormat::kOpenMetrics1, &out);
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["bytes"] = static_cast<double>(out.size());
}
BENCHMARK(BM_RenderOpenMetrics)->Unit(benchmark::kMicrosecond);

void BM_RenderBoth(benchmark::State& state) {
  TextRenderer renderer({});
  std::string text;
  std::string om;
  for (auto _ : state) {
    renderer.RenderBoth(ReferenceFrame(), &text, &om);
    benchmark::DoNotOptimize(text.data());
    benchmark::DoNotOptimize(om.data());
  }
}
BENCHMARK(BM_RenderBoth)->Unit(benchmark::kMicrosecond);

// What the agent pays per collection cycle: render both formats and publish.
void BM_PrometheusExporterExport(benchmark::State& state) {
  PrometheusExporter exporter({}, std::make_shared<MetricsSnapshotStore>());
  for (auto _ : state) {
    benchmark::DoNotOptimize(exporter.Export(ReferenceFrame()));
  }
}
BENCHMARK(BM_PrometheusExporterExport)->Unit(benchmark::kMicrosecond);

void BM_GzipText004(benchmark::State& state) {
  TextRenderer renderer({});
  std::string text = renderer.Render(ReferenceFrame(), ExpositionFormat::kText004);
  const int level = static_cast<int>(state.range(0));
  size_t compressed = 0;
  for (auto _ : state) {
    auto gz = base::GzipCompress(text, level);
    compressed = gz ? gz->size() : 0;
    benchmark::DoNotOptimize(compressed);
  }
  state.counters["in_bytes"] = static_cast<double>(text.size());
  state.counters["out_bytes"] = static_cast<double>(compressed);
}
BENCHMARK(BM_GzipText004)->Arg(1)->Arg(6)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace warpscope::exporters

BENCHMARK_MAIN();

// SPDX-License-Identifier: Apache-2.0
// /metrics render cost for the product's reference host: 8 GPUs (about 60 series each) and 64
// GPU processes, in both exposition formats, plus the gzip of the text body.
#include <benchmark/benchmark.h>

#include "base/gzip.h"
#include "bench/alloc_counter/alloc_counter.h"
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

// Heap allocations per iteration since `before`, as a benchmark counter.
void CountAllocations(benchmark::State& state, uint64_t before) {
  state.counters["allocs"] = static_cast<double>(bench::AllocationCount() - before) /
                             static_cast<double>(state.iterations());
}

// What the agent pays per collection cycle when nobody scrapes: publish the frame.
void BM_PrometheusExporterExport(benchmark::State& state) {
  PrometheusExporter exporter({}, std::make_shared<MetricsSnapshotStore>());
  const uint64_t before = bench::AllocationCount();
  for (auto _ : state) {
    benchmark::DoNotOptimize(exporter.Export(ReferenceFrame()));
  }
  CountAllocations(state, before);
}
BENCHMARK(BM_PrometheusExporterExport)->Unit(benchmark::kMicrosecond);

// A cycle followed by a scrape: Arg 1, in OpenMetrics (what Prometheus asks for); Arg 2, in both
// formats (two scrapers). The agent's cost plus the HTTP threads'.
void BM_PrometheusExporterExportAndScrape(benchmark::State& state) {
  auto store = std::make_shared<MetricsSnapshotStore>();
  PrometheusExporter exporter({}, store);
  const bool both = state.range(0) == 2;
  const uint64_t before = bench::AllocationCount();
  for (auto _ : state) {
    benchmark::DoNotOptimize(exporter.Export(ReferenceFrame()));
    auto snapshot = store->Get();
    benchmark::DoNotOptimize(snapshot->body(ExpositionFormat::kOpenMetrics1).data());
    if (both) {
      benchmark::DoNotOptimize(snapshot->body(ExpositionFormat::kText004).data());
    }
  }
  CountAllocations(state, before);
}
BENCHMARK(BM_PrometheusExporterExportAndScrape)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond);

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

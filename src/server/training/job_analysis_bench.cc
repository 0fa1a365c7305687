// SPDX-License-Identifier: Apache-2.0
// What one AnalyzeJob costs: the Jobs view's detail answer and, per job and evaluation, the
// training rules' input. Jobs of 8 to 1,024 ranks with 200 steps each (the view's default), one
// straggler; the input is made once, outside the timing.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "server/training/job_analysis.h"
#include "server/training/testing/job_builder.h"

namespace {

using warpscope::server::StoredStep;
namespace training = warpscope::server::training;

std::vector<StoredStep> Job(int ranks, int steps) {
  training::testing::JobSpec spec;
  spec.hosts.clear();
  const int hosts = ranks >= 8 ? ranks / 8 : 1;
  for (int h = 0; h < hosts; ++h) spec.hosts.push_back("node-" + std::to_string(h));
  spec.ranks_per_host = static_cast<uint32_t>(ranks / hosts);
  spec.steps = steps;
  spec.late_rank = ranks / 2;
  spec.lag_ms = 40;
  return training::testing::MakeJob(spec);
}

void BM_AnalyzeJob(benchmark::State& state) {
  const std::vector<StoredStep> steps = Job(static_cast<int>(state.range(0)), 200);
  const training::AnalysisOptions options;
  for (auto _ : state) {
    training::JobAnalysis a = training::AnalyzeJob("job-1", steps, options);
    benchmark::DoNotOptimize(a);
  }
  state.counters["steps"] = static_cast<double>(steps.size());
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(steps.size()));
}
BENCHMARK(BM_AnalyzeJob)->Arg(8)->Arg(64)->Arg(1024)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();

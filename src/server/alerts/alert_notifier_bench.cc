// SPDX-License-Identifier: Apache-2.0
// What the Alertmanager notifier adds to each insights evaluation (it runs on the same
// sequence): Update over the engine's findings for a fleet of 1,000 GPUs, with `firing` page
// findings among 1,000 resolved ones (the most the engine keeps) of which 50 resolved in the
// last 15 minutes.
//   BM_UpdateSteady  an evaluation between two resends: nothing is due
//   BM_UpdateResend  an evaluation at a resend: every firing alert is due
// Run a release build: build/release/bin/alert_notifier_bench
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "server/alerts/alert_notifier.h"

namespace warpscope::server::alerts {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;

const base::TimePoint kT0 = base::FromUnixNanos(1'764'927'000'000'000'000);

std::vector<insights::Finding> Findings(int firing) {
  std::vector<insights::Finding> out;
  for (int i = 0; i < firing + 1000; ++i) {
    insights::Finding f;
    f.id = "f" + std::to_string(i);
    f.rule = i % 2 ? "cooling_failure" : "power_drop";
    f.title = "Cooling failure";
    f.severity = insights::Severity::kPage;
    f.state = i < firing ? insights::FindingState::kFiring : insights::FindingState::kResolved;
    f.host = "node-" + std::to_string(i / 8);
    f.entity = "GPU-" + std::to_string(i);
    f.attributes = model::Labels(
        {{"gpu.index", std::to_string(i % 8)}, {"gpu.uuid", "GPU-" + std::to_string(i)}});
    f.summary = "GPU heats up at 25.0 °C/min (60.0 °C → 85.0 °C within 1m)";
    f.suggestion = "Check the GPU's fans and the airflow of its chassis.";
    f.evidence = {{"rate_c_per_min", 25.0}, {"series", std::vector<double>(90, 70.0)}};
    f.start = kT0 - minutes(30);
    f.end = kT0;
    // 50 of the resolved ones within the resend window, the rest long ago.
    f.updated = i < firing + 50 ? kT0 - minutes(5) : kT0 - minutes(60);
    out.push_back(std::move(f));
  }
  return out;
}

void Run(benchmark::State& state, base::Duration offset) {
  const std::vector<insights::Finding> findings = Findings(static_cast<int>(state.range(0)));
  AlertNotifier notifier(NotifierOptions{.external_url = "http://warpscope:9410"});
  (void)notifier.Update(findings, kT0);  // everything sent once
  base::TimePoint now = kT0;
  size_t due = 0;
  for (auto _ : state) {
    now += offset;
    std::vector<Alert> out = notifier.Update(findings, now);
    due = out.size();
    benchmark::DoNotOptimize(out);
  }
  state.counters["due"] = static_cast<double>(due);
}

void BM_UpdateSteady(benchmark::State& state) { Run(state, base::Duration(1)); }
// Each iteration a minute later: a resend of everything firing (and the 50 recent resolutions
// until their 15 minutes are over).
void BM_UpdateResend(benchmark::State& state) { Run(state, minutes(1)); }

BENCHMARK(BM_UpdateSteady)->Arg(10)->Arg(100)->Arg(1000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_UpdateResend)->Arg(10)->Arg(100)->Arg(1000)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace warpscope::server::alerts

BENCHMARK_MAIN();

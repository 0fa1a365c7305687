// SPDX-License-Identifier: Apache-2.0
// Cost of one NvmlSource collection cycle for 8 GPUs x 64 processes (PRODUCT.md §4: < 1 ms of
// agent CPU beyond the NVML calls). Runs on the NVML simulator, so the figure includes the
// simulator's own work (scenario signals, a mutex per call): it is an upper bound of the agent's
// share. BM_NvmlCallsOnly makes the same NVML calls without the source, for the difference.
// One "poll" is what the agent does per cycle: Poll (the GPUs in turn, on the source's poll
// worker) then Finish (the processes).
//
//   ninja -C build/<dir> nvml_source_bench && build/<dir>/bin/nvml_source_bench
#include <benchmark/benchmark.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "agent/sources/deadline_worker.h"
#include "agent/sources/nvml/nvml_source.h"
#include "agent/sources/nvml/poll_pool.h"
#include "agent/sources/sample_buffer.h"
#include "base/time.h"
#include "model/process.h"
#include "model/sample_sink.h"
#include "nvml/testing/sim_environment.h"

namespace warpscope::agent {
namespace {

constexpr int kGpus = 8;
constexpr int kProcessesPerGpu = 64;

std::string BenchScenario() {
  std::string yaml = R"yaml(
name: bench-8x64
devices:
  - repeat: 8
    name: "NVIDIA H100 80GB HBM3"
    architecture: hopper
    uuid: "GPU-00000000-0000-4000-8000-00000000000{i}"
    memory_total: 80GiB
    nvlink_links: 18
    ecc: true
    signals: {gpu_util: 90, sm_active: 80, power: 650, nvlink_tx: 1e9, nvlink_rx: 1e9}
    processes:
)yaml";
  for (int k = 0; k < kProcessesPerGpu; ++k) {
    char pid[16];
    snprintf(pid, sizeof(pid), "1{i}0%02d", k);
    yaml += std::string("      - {pid: \"") + pid + "\", name: worker" + std::to_string(k % 4) +
            ", type: compute, memory: 1GiB, sm_util: " + std::to_string(k % 50 + 1) + "}\n";
  }
  return yaml;
}

// Counts what it is given; no storage, so the benchmark measures the source.
class NullSink : public model::SampleSink {
 public:
  void AddEntity(const model::Entity&) override { ++entities; }
  void AddValue(const model::MetricDesc&, std::string_view, const model::Labels&, double) override {
    ++values;
  }
  void AddEvent(const model::Event&) override { ++events; }
  size_t entities = 0;
  size_t values = 0;
  size_t events = 0;
};

// A resolver that knows every pid, as the procfs resolver would on a real host.
class AllKnownResolver : public model::ProcessResolver {
 public:
  const model::ProcessInfo* Resolve(int pid) override {
    auto [it, inserted] = table_.try_emplace(pid);
    if (inserted) {
      it->second.pid = pid;
      it->second.start_ticks = 1000 + pid;
      it->second.executable = "python3";
      it->second.executable_path = "/usr/bin/python3.11";
    }
    return &it->second;
  }

 private:
  std::map<int, model::ProcessInfo> table_;
};

// A started source on the bench scenario, and the times of one poll after another.
class BenchSource {
 public:
  // False (and the benchmark skipped) when the source cannot start.
  bool Start(benchmark::State& state) {
    if (!sim_.ok()) {
      state.SkipWithError(sim_.error().c_str());
      return false;
    }
    NvmlSourceOptions options;
    options.library_path = sim_.library_path();
    options.event_wait_timeout = std::chrono::milliseconds(50);
    source_ = NvmlSource::Create(options, clock_, resolver_);
    if (base::Status s = source_->Start(); !s.ok()) {
      state.SkipWithError(s.ToString().c_str());
      return false;
    }
    return true;
  }
  // Moves the simulated and the agent's time one second on, untimed.
  void NextCycle(benchmark::State& state) {
    state.PauseTiming();
    t_ += 1;
    sim_.SetTime(t_);
    clock_.Advance(std::chrono::seconds(1));
    state.ResumeTiming();
  }
  void Finish(benchmark::State& state, const NullSink& sink) {
    state.counters["values_per_poll"] =
        static_cast<double>(sink.values) / static_cast<double>(state.iterations());
    source_->Stop();
  }
  NvmlSource& source() { return *source_; }
  base::TimePoint now() const { return clock_.Now(); }

 private:
  nvml::testing::SimEnvironment sim_{BenchScenario()};
  base::FakeClock clock_;
  AllKnownResolver resolver_;
  std::unique_ptr<NvmlSource> source_;
  double t_ = 1;
};

void BM_NvmlSourcePoll(benchmark::State& state) {
  BenchSource bench;
  if (!bench.Start(state)) {
    return;
  }
  NullSink sink;
  for (auto _ : state) {
    bench.NextCycle(state);
    bench.source().Poll(bench.now(), sink);
    bench.source().Finish(bench.now(), sink);
  }
  bench.Finish(state, sink);
}
BENCHMARK(BM_NvmlSourcePoll)->Unit(benchmark::kMicrosecond);
// The same with the CPU time of every thread of the process: the GPUs are read on the source's
// poll worker, so the CPU time above is only the polling thread's share.
BENCHMARK(BM_NvmlSourcePoll)->Unit(benchmark::kMicrosecond)->MeasureProcessCPUTime()->UseRealTime();

// One poll as the agent makes it (docs/design/agent.md, "Deadlines"): Poll on the source's worker
// into its buffer, then, on the calling thread, the buffer replayed and Finish. CPU time of every
// thread of the process.
void BM_NvmlSourceAgentCycle(benchmark::State& state) {
  BenchSource bench;
  if (!bench.Start(state)) {
    return;
  }
  SampleBuffer buffer;
  base::TimePoint now{};
  DeadlineWorker worker("src-nvml", [&] {
    buffer.Clear();
    bench.source().Poll(now, buffer);
  });
  NullSink sink;
  for (auto _ : state) {
    bench.NextCycle(state);
    now = bench.now();
    (void)worker.Run();
    (void)worker.WaitUntil(DeadlineWorker::Clock::now() + std::chrono::seconds(30));
    buffer.ReplayInto(sink);
    bench.source().Finish(now, sink);
  }
  (void)worker.Stop(std::chrono::seconds(1));
  bench.Finish(state, sink);
}
BENCHMARK(BM_NvmlSourceAgentCycle)
    ->Unit(benchmark::kMicrosecond)
    ->MeasureProcessCPUTime()
    ->UseRealTime();

// What the source's one handoff per poll costs: the poll pool reading 8 GPUs that return at once
// (a wake of the poll worker and of the caller, and the pool's bookkeeping).
void BM_PollPoolHandoff(benchmark::State& state) {
  nvml_internal::PollPool pool(kGpus, [](size_t) {});
  std::vector<size_t> batch;
  for (size_t i = 0; i < kGpus; ++i) {
    batch.push_back(i);
  }
  for (auto _ : state) {
    pool.Poll(batch, nvml_internal::PollPool::Clock::now() + std::chrono::seconds(5),
              std::chrono::seconds(1));
  }
  (void)pool.Stop(std::chrono::seconds(1));
}
BENCHMARK(BM_PollPoolHandoff)
    ->Unit(benchmark::kMicrosecond)
    ->MeasureProcessCPUTime()
    ->UseRealTime();

// The NVML calls one poll makes per GPU (utilisation, memory, power x3, energy, temperature,
// clocks x2, reasons, PCIe x3, field values, ECC x4, remapped rows, GPM x2, process lists x2,
// process utilisation, 64 process names on the first poll only), without the source.
void BM_NvmlCallsOnly(benchmark::State& state) {
  nvml::testing::SimEnvironment sim(BenchScenario());
  if (!sim.ok()) {
    state.SkipWithError(sim.error().c_str());
    return;
  }
  auto loaded = nvml::NvmlLibrary::Load(sim.library_path());
  if (!loaded) {
    state.SkipWithError(loaded.error().ToString().c_str());
    return;
  }
  const nvml::NvmlLibrary& lib = **loaded;
  namespace abi = nvml::abi;
  std::vector<nvml::Device> devices(kGpus);
  for (unsigned i = 0; i < kGpus; ++i) {
    (void)lib.DeviceGetHandleByIndex(i, &devices[i]);
  }
  std::vector<abi::nvmlFieldValue_t> fields(1 + 2 * 18);
  std::vector<abi::nvmlProcessUtilizationSample_t> util(1024);
  auto get = std::make_unique<abi::nvmlGpmMetricsGet_t>();
  std::vector<abi::nvmlGpmSample_t> samples(2 * kGpus);
  for (auto& s : samples) {
    (void)WARPSCOPE_NVML_CALL(lib, nvmlGpmSampleAlloc, &s);
  }
  nvml::ProcessListBuffer buffer;
  std::vector<nvml::ProcessEntry> entries;
  std::vector<unsigned long long> last_seen(kGpus, 0);
  double t = 1;
  int flip = 0;
  for (auto _ : state) {
    state.PauseTiming();
    t += 1;
    sim.SetTime(t);
    state.ResumeTiming();
    for (unsigned i = 0; i < kGpus; ++i) {
      nvml::Device d = devices[i];
      abi::nvmlUtilization_t u;
      unsigned v = 0, p = 0;
      unsigned long long ull = 0;
      nvml::MemoryInfo mem;
      (void)WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetUtilizationRates, d, &u);
      (void)WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetEncoderUtilization, d, &v, &p);
      (void)WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetDecoderUtilization, d, &v, &p);
      (void)lib.DeviceGetMemoryInfo(d, &mem);
      (void)WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetPowerUsage, d, &v);
      (void)WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetPowerManagementLimit, d, &v);
      (void)WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetEnforcedPowerLimit, d, &v);
      (void)WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetTotalEnergyConsumption, d, &ull);
      (void)WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetTemperature, d, 0, &v);
      (void)WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetClockInfo, d, abi::kClockSm, &v);
      (void)WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetClockInfo, d, abi::kClockMem, &v);
      (void)lib.DeviceGetClocksEventReasons(d, &ull);
      (void)WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetPcieThroughput, d, 0, &v);
      (void)WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetPcieThroughput, d, 1, &v);
      (void)WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetPcieReplayCounter, d, &v);
      fields[0].fieldId = abi::kFiMemoryTemp;
      for (unsigned l = 0; l < 18; ++l) {
        fields[1 + 2 * l].fieldId = abi::kFiNvlinkThroughputDataTx;
        fields[1 + 2 * l].scopeId = l;
        fields[2 + 2 * l].fieldId = abi::kFiNvlinkThroughputDataRx;
        fields[2 + 2 * l].scopeId = l;
      }
      (void)WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetFieldValues, d, static_cast<int>(fields.size()),
                                fields.data());
      for (unsigned e = 0; e < 4; ++e) {
        (void)WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetTotalEccErrors, d, e / 2, e % 2, &ull);
      }
      unsigned a, b, c, dd;
      (void)WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetRemappedRows, d, &a, &b, &c, &dd);
      (void)WARPSCOPE_NVML_CALL(lib, nvmlGpmSampleGet, d, samples[2 * i + flip]);
      get->version = abi::kGpmMetricsGetVersion;
      get->numMetrics = 16;
      get->sample1 = samples[2 * i + 1 - flip];
      get->sample2 = samples[2 * i + flip];
      for (unsigned k = 0; k < 16; ++k) {
        get->metrics[k].metricId = k + 1;
      }
      (void)WARPSCOPE_NVML_CALL(lib, nvmlGpmMetricsGet, get.get());
      (void)lib.DeviceGetRunningProcesses(d, nvml::ProcessListKind::kCompute, buffer, entries);
      (void)lib.DeviceGetRunningProcesses(d, nvml::ProcessListKind::kGraphics, buffer, entries);
      unsigned n = static_cast<unsigned>(util.size());
      if (WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetProcessUtilization, d, util.data(), &n,
                              last_seen[i]) == abi::kSuccess) {
        for (unsigned k = 0; k < n; ++k) {
          last_seen[i] = std::max(last_seen[i], util[k].timeStamp);
        }
      }
    }
    flip = 1 - flip;
  }
  for (auto& s : samples) {
    (void)WARPSCOPE_NVML_CALL(lib, nvmlGpmSampleFree, s);
  }
}
BENCHMARK(BM_NvmlCallsOnly)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace warpscope::agent

BENCHMARK_MAIN();

// SPDX-License-Identifier: Apache-2.0
// The insights engine's cost per evaluation for a fleet of 1,000 GPUs (125 hosts x 8), with 15
// minutes of 10-second windows stored in a real SqliteStorage (13 GPU metrics and one GPU
// process per GPU; two GPUs per host idle, one cooling failure, and one GPU per host training
// in FP32 with idle tensor cores whose process has a GPU profile per window for the last 2
// minutes, so rules do find things):
//   BM_Evaluate      one evaluation in steady state: the newest minute read from storage (the
//                    rest kept from the evaluation before), every rule, the tracker
//                    (the slow GPU metrics not read: five evaluations of six)
//   BM_EvaluateFull  the same reading the whole 15 minutes (the first evaluation, and one every
//                    5 minutes)
//   BM_EvaluateSlowRead  a steady evaluation that also reads the slow GPU metrics' newest
//                    minute (one of six)
//   BM_ReadInputs    the storage reads of a full evaluation alone
//   BM_Rules       every rule and the tracker over inputs already read
//   BM_GpuProfileReads  the most an evaluation adds for profile evidence: 8 processes read
//                    from storage (their newest 6 GPU profiles decoded, merged and digested)
//   BM_ReadLongView      the long view's once-a-minute refresh: its last 5 minutes re-read,
//                        the rest shifted from the view a minute before
//   BM_ReadLongViewFull  the long view read whole (90 minutes; the first evaluation and one
//                        every 30 minutes), from 1-minute rollups built by Compact
// The store also holds the 75 minutes before, of the three metrics the long view reads.
// Counters: gpus, and inputs_bytes / long_view_bytes, the memory the snapshot and the long view
// hold during an evaluation.
// Run a release build: build/release/bin/insights_bench
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <string>

#include "profiling/pprof.h"
#include "server/insights/finding_tracker.h"
#include "server/insights/gpu_profiles.h"
#include "server/insights/insight_engine.h"
#include "server/storage/sqlite_storage.h"

namespace warpscope::server::insights {
namespace {

using std::chrono::seconds;

constexpr int kHosts = 125;
constexpr int kGpusPerHost = 8;
constexpr int kWindows = 90;          // 15 minutes
constexpr int kLongOnlyWindows = 450;  // the 75 minutes before, for the long view
constexpr int kFp32Gpu = 5;            // per host: trains in FP32, tensor cores idle
constexpr int kProfiledWindows = 12;
const base::TimePoint kT0 = base::FromUnixNanos(1'700'000'000'000'000'000);

struct Fleet {
  std::string dir;
  std::unique_ptr<SqliteStorage> storage;
  base::TimePoint now;
};

IngestBatch HostWindow(int host, int w) {
  IngestBatch b;
  b.host = "node-" + std::to_string(host);
  b.agent_id = "agent-" + b.host;
  b.sequence = static_cast<uint64_t>(w + 1);
  b.start = kT0 + seconds(10 * w);
  b.end = b.start + seconds(10);
  for (const char* key :
       {"gpu.utilization", "gpu.power.usage", "gpu.power.limit", "gpu.temperature",
        "gpu.memory.used", "gpu.memory.total", "gpu.ecc.uncorrected.volatile",
        "gpu.remapped_rows.failure", "gpu.sm.occupancy", "gpu.dram.active", "gpu.tensor.active",
        "gpu.fp32.active", "gpu.fp16.active"}) {
    b.metrics.push_back(MetricInfo{.key = key, .entity_kind = model::EntityKind::kGpu});
  }
  b.metrics.push_back(
      MetricInfo{.key = "gpu.process.memory.used", .entity_kind = model::EntityKind::kProcess});
  auto value = [&](const std::string& key, const std::string& entity, double v,
                   model::Labels labels = {}) {
    b.series.push_back(IngestSeries{key, entity, std::move(labels), v, v, v, v, 10});
  };
  for (int g = 0; g < kGpusPerHost; ++g) {
    const std::string uuid = "GPU-" + std::to_string(host) + "-" + std::to_string(g);
    const std::string pid = "pid/" + std::to_string(1000 + g) + "/1";
    b.entities.push_back(
        model::Entity{model::EntityKind::kGpu,
                      uuid,
                      "",
                      {{"gpu.index", std::to_string(g)}, {"gpu.model", "NVIDIA H100 80GB HBM3"}}});
    b.entities.push_back(model::Entity{
        model::EntityKind::kProcess, pid, "", {{"process.pid", std::to_string(1000 + g)}}});
    const bool idle = g >= 6;
    const bool hot = g == 2 && host % 10 == 0 && w >= 80;
    value("gpu.utilization", uuid, idle ? 0.0 : 0.95 + 0.01 * (w % 3));
    value("gpu.power.usage", uuid, idle ? 70 : 640 + (w % 7));
    value("gpu.power.limit", uuid, 700);
    value("gpu.temperature", uuid, hot ? 63 + 2.0 * (w - 79) : 62 + 0.1 * g);
    value("gpu.memory.used", uuid, 60e9);
    value("gpu.memory.total", uuid, 80e9);
    value("gpu.ecc.uncorrected.volatile", uuid, 0);
    value("gpu.remapped_rows.failure", uuid, 0);
    value("gpu.sm.occupancy", uuid, idle ? 0.01 : 0.52);
    value("gpu.dram.active", uuid, idle ? 0.0 : 0.55);
    const bool fp32 = g == kFp32Gpu;
    value("gpu.tensor.active", uuid, idle ? 0.0 : fp32 ? 0.02 : 0.62);
    value("gpu.fp32.active", uuid, idle ? 0.0 : fp32 ? 0.85 : 0.12);
    value("gpu.fp16.active", uuid, idle ? 0.0 : fp32 ? 0.0 : 0.06);
    value("gpu.process.memory.used", pid, 59e9, {{"gpu.uuid", uuid}});
  }
  return b;
}

// The long view's metrics only, for window `w` < 0 (before the 15 minutes of HostWindow).
IngestBatch LongWindow(int host, int w) {
  IngestBatch b;
  b.host = "node-" + std::to_string(host);
  b.agent_id = "agent-" + b.host;
  b.sequence = static_cast<uint64_t>(w + kLongOnlyWindows + 1);
  b.start = kT0 + seconds(10 * w);
  b.end = b.start + seconds(10);
  for (const char* key : {"gpu.utilization", "gpu.power.usage", "gpu.memory.used"}) {
    b.metrics.push_back(MetricInfo{.key = key, .entity_kind = model::EntityKind::kGpu});
  }
  for (int g = 0; g < kGpusPerHost; ++g) {
    const std::string uuid = "GPU-" + std::to_string(host) + "-" + std::to_string(g);
    b.entities.push_back(
        model::Entity{model::EntityKind::kGpu,
                      uuid,
                      "",
                      {{"gpu.index", std::to_string(g)}, {"gpu.model", "NVIDIA H100 80GB HBM3"}}});
    const bool idle = g >= 6;
    for (auto [key, v] : {std::pair{"gpu.utilization", idle ? 0.0 : 0.95},
                          std::pair{"gpu.power.usage", idle ? 70.0 : 640.0},
                          std::pair{"gpu.memory.used", 60e9}}) {
      b.series.push_back(IngestSeries{key, uuid, {}, v, v, v, v, 10});
    }
  }
  return b;
}

// python3 -> 20 Python sites -> cudaLaunchKernel -> 10 kernels each (SGEMMs, element-wise).
std::string GpuPprof() {
  using profiling::FrameKind;
  profiling::ProfileAggregator p(std::vector<profiling::ValueType>{
      {"gpu_time", "nanoseconds"}, {"launches", "count"}, {"pc_samples", "count"}});
  const uint32_t process =
      p.InternFrame({"python3", "/usr/bin/python3", 0, "", "", "", FrameKind::kProcess});
  const uint32_t launch =
      p.InternFrame({"cudaLaunchKernel", "", 0, "", "", "", FrameKind::kLaunch});
  for (int site = 0; site < 20; ++site) {
    const uint32_t py = p.InternFrame(
        {"forward", "model.py", site + 1, "", "", "", FrameKind::kPython});
    for (int k = 0; k < 10; ++k) {
      const std::string name = k < 6 ? "ampere_sgemm_128x64_nn_" + std::to_string(k)
                                     : "vectorized_elementwise_kernel_" + std::to_string(k);
      const int64_t v[] = {1'000'000 + 1000 * k, 10, 0};
      p.Add(std::vector<uint32_t>{process, py, launch,
                                  p.InternFrame({name, "", 0, "", "", "", FrameKind::kKernel})},
            v);
    }
  }
  return profiling::EncodePprof(p.profile()).value();
}

Fleet& TheFleet() {
  static Fleet* fleet = [] {
    auto* f = new Fleet;
    f->dir = (std::filesystem::temp_directory_path() / "warpscope-insights-XXXXXX").string();
    if (mkdtemp(f->dir.data()) == nullptr) abort();
    SqliteStorageOptions o;
    o.data_dir = f->dir;
    auto s = SqliteStorage::Open(o);
    if (!s) abort();
    f->storage = std::move(*s);
    for (int w = -kLongOnlyWindows; w < 0; ++w) {
      for (int h = 0; h < kHosts; ++h) {
        if (!f->storage->WriteBatch(LongWindow(h, w))) abort();
      }
    }
    for (int w = 0; w < kWindows; ++w) {
      for (int h = 0; h < kHosts; ++h) {
        if (!f->storage->WriteBatch(HostWindow(h, w))) abort();
      }
    }
    // The FP32 GPU's process: a GPU profile of a few hundred kernels per window.
    const std::string pprof = GpuPprof();
    for (int w = kWindows - kProfiledWindows; w < kWindows; ++w) {
      for (int h = 0; h < kHosts; ++h) {
        ProfileMeta m;
        m.host = "node-" + std::to_string(h);
        m.kind = "gpu";
        m.pid = 1000 + kFp32Gpu;
        m.start = kT0 + seconds(10 * w);
        m.end = m.start + seconds(10);
        if (!f->storage->WriteProfile(m, pprof)) abort();
      }
    }
    f->now = kT0 + seconds(10 * kWindows);
    if (!f->storage->Compact(f->now)) abort();  // the 1-minute rollups
    return f;
  }();
  return *fleet;
}

size_t InputsBytes(const InsightInputs& in) {
  size_t bytes = 0;
  for (const GpuInput& g : in.gpus) bytes += sizeof(g) + 13 * in.buckets * sizeof(double);
  for (const ProcessGpuInput& p : in.processes) bytes += sizeof(p) + in.buckets * sizeof(double);
  return bytes;
}

void BM_Evaluate(benchmark::State& state) {
  Fleet& fleet = TheFleet();
  EngineOptions options;
  if (state.range(0) == 1) options.full_read_every = base::Duration::zero();
  if (state.range(0) == 2) options.slow_every = base::Duration::zero();
  auto engine = InsightEngine::Create(*fleet.storage, options);
  if (!engine) abort();
  if (!(*engine)->Evaluate(fleet.now).ok()) abort();  // the first, full read
  // Until every FP32 GPU's process has its GPU profile digest (8 read per evaluation): the
  // steady state reads none (BM_GpuProfileReads is what an evaluation that reads adds).
  for (int i = 0; i < kHosts / 8 + 1; ++i) {
    if (!(*engine)->Evaluate(fleet.now).ok()) abort();
  }
  for (auto _ : state) {
    if (!(*engine)->Evaluate(fleet.now).ok()) abort();
  }
  state.counters["gpus"] = kHosts * kGpusPerHost;
  state.counters["findings"] = static_cast<double>((*engine)->Findings().size());
}
BENCHMARK(BM_Evaluate)->Arg(0)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Evaluate)->Name("BM_EvaluateFull")->Arg(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Evaluate)->Name("BM_EvaluateSlowRead")->Arg(2)->Unit(benchmark::kMillisecond);

void BM_ReadInputs(benchmark::State& state) {
  Fleet& fleet = TheFleet();
  InputsQuery q;
  q.end = fleet.now;
  size_t bytes = 0;
  for (auto _ : state) {
    auto in = ReadInsightInputs(*fleet.storage, q);
    if (!in) abort();
    bytes = InputsBytes(*in);
    benchmark::DoNotOptimize(in->gpus.data());
  }
  state.counters["inputs_bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_ReadInputs)->Unit(benchmark::kMillisecond);

void BM_Rules(benchmark::State& state) {
  Fleet& fleet = TheFleet();
  InputsQuery q;
  q.end = fleet.now;
  auto in = ReadInsightInputs(*fleet.storage, q);
  if (!in) abort();
  InsightConfig config;
  std::vector<std::unique_ptr<Rule>> rules = DefaultRules();
  FindingTracker tracker;
  for (auto _ : state) {
    for (const std::unique_ptr<Rule>& rule : rules) {
      const RuleInfo& info = rule->info();
      RuleContext ctx{*in, config, [&](std::string_view host, std::string_view entity) {
                        return tracker.Open(info.name, host, entity);
                      }};
      tracker.Apply(info, rule->Evaluate(ctx), fleet.now, 0);
    }
  }
  state.counters["findings"] = static_cast<double>(tracker.Findings().size());
}
BENCHMARK(BM_Rules)->Unit(benchmark::kMillisecond);

size_t LongViewBytes(const LongView& view) {
  size_t bytes = 0;
  for (const LongGpuInput& g : view.gpus) bytes += sizeof(g) + 3 * view.buckets * sizeof(double);
  return bytes;
}

void BM_ReadLongView(benchmark::State& state) {
  Fleet& fleet = TheFleet();
  LongViewQuery q;
  q.end = fleet.now - std::chrono::minutes(1);
  auto before = ReadLongView(*fleet.storage, q);
  if (!before) abort();
  q.end = fleet.now;
  size_t bytes = 0;
  for (auto _ : state) {
    auto view = ReadLongView(*fleet.storage, q, state.range(0) == 1 ? nullptr : &*before);
    if (!view) abort();
    bytes = LongViewBytes(*view);
    benchmark::DoNotOptimize(view->gpus.data());
  }
  state.counters["gpus"] = static_cast<double>(before->gpus.size());
  state.counters["long_view_bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_ReadLongView)->Arg(0)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReadLongView)->Name("BM_ReadLongViewFull")->Arg(1)->Unit(benchmark::kMillisecond);

void BM_GpuProfileReads(benchmark::State& state) {
  Fleet& fleet = TheFleet();
  std::vector<ProfileTarget> targets;
  for (int h = 0; h < 8; ++h) {
    targets.push_back({"node-" + std::to_string(h), "pid/" + std::to_string(1000 + kFp32Gpu) + "/1",
                       1000 + kFp32Gpu});
  }
  std::vector<GpuProfileDigest> out;
  for (auto _ : state) {
    GpuProfileCache cache;  // empty: every target is read
    if (!cache.Update(*fleet.storage, targets, fleet.now, out).ok() || out.size() != 8) abort();
  }
  state.counters["matmul_share"] =
      static_cast<double>(out[0].matmul_ns) / static_cast<double>(out[0].kernel_ns);
}
BENCHMARK(BM_GpuProfileReads)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace warpscope::server::insights

BENCHMARK_MAIN();

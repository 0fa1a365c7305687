// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/cpu_profiler/gpu_process_selection.h"

#include <gtest/gtest.h>

#include "agent/sources/cpu_profiler/cpu_profiler_source.h"
#include "agent/sources/cpu_profiler/testing/fake_perf_api.h"
#include "agent/sources/cpu_profiler/testing/record_writer.h"
#include "model/process.h"
#include "model/testing/collecting_sink.h"
#include "profiling/testing/fake_profile_exporter.h"

namespace warpscope::agent::cpu_profiler {
namespace {

using namespace std::chrono_literals;
using testing::FakePerfApi;
using testing::SampleBytes;

// A GPU process entity as the NVML source writes it (a local process: it has a start time).
model::Entity GpuProcess(int pid, uint64_t start_ticks = 1000) {
  model::ProcessInfo info;
  info.pid = pid;
  info.container_pid = pid;
  info.start_ticks = start_ticks;
  info.executable = "train";
  return model::MakeProcessEntity(info);
}

model::Entity Gpu(std::string uuid) { return {model::EntityKind::kGpu, std::move(uuid), "", {}}; }

// What NVML reports over four cycles: processes start and stop using the GPU.
const std::vector<std::vector<model::Entity>> kCycles = {
    {Gpu("GPU-a")},                                    // nothing on the GPU yet
    {Gpu("GPU-a"), GpuProcess(100)},                   // 100 starts
    {Gpu("GPU-a"), GpuProcess(100), GpuProcess(300)},  // 300 joins
    {Gpu("GPU-a"), GpuProcess(300)},                   // 100 stops (or exited)
};

TEST(GpuProcessSelectionTest, FollowsTheGpuProcessesCycleByCycle) {
  std::vector<std::optional<std::set<uint32_t>>> applied;
  GpuProcessSelection selection(
      {7}, [&](std::optional<std::set<uint32_t>> pids) { applied.push_back(std::move(pids)); });
  EXPECT_EQ(selection.selected(), (std::set<uint32_t>{7})) << "the listed pids from the start";
  for (const auto& cycle : kCycles) {
    selection.Update(cycle);
  }
  using S = std::set<uint32_t>;
  ASSERT_EQ(applied.size(), 3u) << "the first cycle changes nothing: only the listed pid";
  EXPECT_EQ(applied[0], (S{7, 100}));
  EXPECT_EQ(applied[1], (S{7, 100, 300}));
  EXPECT_EQ(applied[2], (S{7, 300}));
  EXPECT_EQ(selection.changes(), 3u);

  selection.Update(kCycles[3]);
  EXPECT_EQ(applied.size(), 3u) << "an unchanged selection is not applied again";
  selection.Update({});
  ASSERT_EQ(applied.size(), 4u);
  EXPECT_EQ(applied[3], (S{7})) << "the listed pids stay when no process uses a GPU";
}

TEST(GpuProcessSelectionTest, ProcessesWithoutALocalIdentityAreNotSelected) {
  std::vector<std::optional<std::set<uint32_t>>> applied;
  GpuProcessSelection selection(
      {}, [&](std::optional<std::set<uint32_t>> pids) { applied.push_back(std::move(pids)); });
  // A simulated or unresolved GPU process (no start time), another entity kind with a process-
  // like id, and a malformed id: none names a process of this machine.
  model::Entity container{model::EntityKind::kContainer, "pid/55/1000", "", {}};
  model::Entity malformed{model::EntityKind::kProcess, "pid/x/1", "", {}};
  selection.Update(std::vector<model::Entity>{GpuProcess(42, 0), container, malformed});
  EXPECT_TRUE(applied.empty());
  EXPECT_TRUE(selection.selected().empty()) << "no GPU process: nothing is sampled";
  selection.Update(std::vector<model::Entity>{GpuProcess(42, 0), GpuProcess(43)});
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(applied[0], (std::set<uint32_t>{43}));
}

// The pids of one window's profiles.
std::set<int32_t> WindowPids(profiling::FakeProfileExporter& exporter, size_t index) {
  std::set<int32_t> out;
  for (const profiling::WindowProfile& w : exporter.windows().at(index).get()) {
    out.insert(w.pid);
  }
  return out;
}

TEST(GpuProcessSelectionTest, TheCpuProfilerSamplesWhatTheSelectionHolds) {
  auto api_owned = std::make_unique<FakePerfApi>(std::vector<int>{0});
  FakePerfApi& api = *api_owned;
  auto exporter_owned = std::make_unique<profiling::FakeProfileExporter>();
  profiling::FakeProfileExporter& exporter = *exporter_owned;
  CpuProfilerSource::Exporters exporters;
  exporters.push_back(std::move(exporter_owned));
  base::FakeClock clock;
  CpuProfilerSource::Options options;
  options.window = 10s;
  options.host_id = "node1";
  options.sampler.pids = std::set<uint32_t>{7};  // as agent_main sets it
  CpuProfilerSource source(std::move(options), std::move(exporters), std::move(api_owned), nullptr,
                           clock, nullptr);
  GpuProcessSelection selection(
      {7}, [&](std::optional<std::set<uint32_t>> pids) { source.SetPidFilter(std::move(pids)); });
  ASSERT_TRUE(source.Start().ok());
  model::CollectingSink sink;
  source.Poll(clock.Now(), sink);  // opens the first window

  // Each cycle: the hook updates the filter, a window closes (so the sampler thread has taken
  // the new filter before the next samples arrive), then every process burns CPU.
  constexpr uint64_t kIp = 0xffffffff81001010;
  std::vector<std::set<int32_t>> sampled;
  for (size_t cycle = 0; cycle < kCycles.size(); ++cycle) {
    selection.Update(kCycles[cycle]);
    clock.Advance(10s);
    source.Poll(clock.Now(), sink);
    exporter.windows().back().get();
    for (uint32_t pid : {7u, 100u, 300u, 555u}) {
      api.Push(-1, 0, SampleBytes(pid, pid, cycle + 1, 0, {kIp}));
    }
    clock.Advance(10s);
    source.Poll(clock.Now(), sink);
    sampled.push_back(WindowPids(exporter, exporter.windows().size() - 1));
  }
  source.Stop();
  using S = std::set<int32_t>;
  EXPECT_EQ(sampled[0], (S{7}));
  EXPECT_EQ(sampled[1], (S{7, 100}));
  EXPECT_EQ(sampled[2], (S{7, 100, 300}));
  EXPECT_EQ(sampled[3], (S{7, 300})) << "a process that stopped using the GPU is not sampled";
}

}  // namespace
}  // namespace warpscope::agent::cpu_profiler

// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/cpu_profiler/cpu_profiler_source.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "agent/sources/cpu_profiler/testing/fake_perf_api.h"
#include "agent/sources/cpu_profiler/testing/record_writer.h"
#include "model/testing/collecting_sink.h"
#include "profiling/pprof.h"
#include "profiling/testing/fake_profile_exporter.h"

namespace warpscope::agent::cpu_profiler {
namespace {

using namespace std::chrono_literals;
using testing::CommBytes;
using testing::FakePerfApi;
using testing::SampleBytes;

struct Harness {
  explicit Harness(CpuProfilerSource::Options options = {}) {
    auto api_owned = std::make_unique<FakePerfApi>(std::vector<int>{0, 1});
    api = api_owned.get();
    auto exporter_owned = std::make_unique<profiling::FakeProfileExporter>();
    exporter = exporter_owned.get();
    CpuProfilerSource::Exporters exporters;
    exporters.push_back(std::move(exporter_owned));
    options.window = 10s;
    options.host_id = "node1";
    source = std::make_unique<CpuProfilerSource>(
        std::move(options), std::move(exporters), std::move(api_owned), nullptr, clock,
        [this](std::string_view reason) { errors.emplace_back(reason); });
  }
  base::FakeClock clock;
  FakePerfApi* api = nullptr;
  profiling::FakeProfileExporter* exporter = nullptr;
  std::vector<std::string> errors;
  std::unique_ptr<CpuProfilerSource> source;
};

constexpr uint64_t kIp = 0xffffffff81001010;

TEST(CpuProfilerSourceTest, SamplesEveryCpuAndExportsACpuProfilePerProcessAndWindow) {
  Harness h;
  ASSERT_TRUE(h.source->Start().ok());
  ASSERT_EQ(h.api->opened().size(), 2u);
  for (const auto& o : h.api->opened()) {
    EXPECT_EQ(o.pid, -1) << "every process";
    EXPECT_EQ(o.attr.sample_freq, 19u);
  }
  model::CollectingSink sink;
  h.source->Poll(h.clock.Now(), sink);  // opens the window
  h.api->Push(-1, 0, CommBytes(4242, 4243, "loader"));
  h.api->Push(-1, 0, SampleBytes(4242, 4243, 1, 0, {kIp}));
  h.api->Push(-1, 1, SampleBytes(4242, 4243, 2, 1, {kIp}));
  h.api->Push(-1, 1, SampleBytes(0, 0, 3, 1, {kIp}));  // idle: never profiled
  h.clock.Advance(10s);
  h.source->Poll(h.clock.Now(), sink);
  ASSERT_EQ(h.exporter->windows().size(), 1u);
  std::vector<profiling::WindowProfile> window = h.exporter->windows()[0].get();
  ASSERT_EQ(window.size(), 1u);
  EXPECT_EQ(window[0].kind, "cpu");
  EXPECT_EQ(window[0].pid, 4242);
  EXPECT_EQ(window[0].end_ns - window[0].start_ns, 10'000'000'000);
  auto p = profiling::DecodePprof(window[0].pprof_gz);
  ASSERT_TRUE(p.has_value());
  ASSERT_EQ(p->samples.size(), 1u);
  EXPECT_EQ(p->samples[0].values[0], 2);
  EXPECT_EQ(p->samples[0].values[1], 2 * 52631578);
  EXPECT_EQ(p->samples[0].labels,
            (std::vector<profiling::Label>{{"tid", "", 4243}, {"thread_name", "loader", 0}}));

  sink.Clear();
  h.source->Poll(h.clock.Now(), sink);
  EXPECT_EQ(sink.Find("profiler.cpu.samples", "node1"), 2.0);
  EXPECT_EQ(sink.Find("profiler.cpu.system_wide", "node1"), 1.0);
  EXPECT_EQ(sink.Find("profiler.cpu.events", "node1"), 2.0);
  h.source->Stop();
  EXPECT_EQ(h.exporter->windows().size(), 2u) << "a last window at Stop";
  EXPECT_EQ(h.exporter->stop_calls(), 1);
}

TEST(CpuProfilerSourceTest, SelectedPidsOnly) {
  CpuProfilerSource::Options options;
  options.sampler.pids = std::set<uint32_t>{7};
  Harness h(options);
  ASSERT_TRUE(h.source->Start().ok());
  model::CollectingSink sink;
  h.source->Poll(h.clock.Now(), sink);
  h.api->Push(-1, 0, SampleBytes(7, 7, 1, 0, {kIp}));
  h.api->Push(-1, 0, SampleBytes(8, 8, 1, 0, {kIp}));
  h.clock.Advance(10s);
  h.source->Poll(h.clock.Now(), sink);
  std::vector<profiling::WindowProfile> window = h.exporter->windows()[0].get();
  ASSERT_EQ(window.size(), 1u);
  EXPECT_EQ(window[0].pid, 7);
  EXPECT_EQ(h.source->sampler()->stats().filtered, 1u);

  h.source->SetPidFilter(std::nullopt);
  h.api->Push(-1, 1, SampleBytes(8, 8, 1, 0, {kIp}));
  h.clock.Advance(10s);
  h.source->Poll(h.clock.Now(), sink);
  window = h.exporter->windows()[1].get();
  ASSERT_EQ(window.size(), 1u);
  EXPECT_EQ(window[0].pid, 8);
}

// A fork record of a selected process: pid `child` forked by `parent`.
std::vector<uint8_t> ForkBytes(uint32_t child, uint32_t parent) {
  testing::RecordWriter w(PERF_RECORD_FORK);
  w.Put(child).Put(parent).Put(child).Put(parent).Put(uint64_t{0});
  return w.Done();
}

TEST(CpuProfilerSourceTest, FollowsTheChildrenOfSelectedProcesses) {
  CpuProfilerSource::Options options;
  options.sampler.pids = std::set<uint32_t>{7};
  options.sampler.follow_children = true;
  Harness h(options);
  ASSERT_TRUE(h.source->Start().ok());
  model::CollectingSink sink;
  h.source->Poll(h.clock.Now(), sink);
  h.api->Push(-1, 0, ForkBytes(9, 7));
  h.api->Push(-1, 0, ForkBytes(11, 8));  // forked by a process not selected
  h.api->Push(-1, 1, SampleBytes(9, 9, 1, 1, {kIp}));
  h.api->Push(-1, 1, SampleBytes(11, 11, 1, 1, {kIp}));
  h.clock.Advance(10s);
  h.source->Poll(h.clock.Now(), sink);
  std::vector<profiling::WindowProfile> window = h.exporter->windows()[0].get();
  ASSERT_EQ(window.size(), 1u);
  EXPECT_EQ(window[0].pid, 9);
  EXPECT_EQ(h.source->sampler()->stats().filtered, 1u);

  // The child stays selected in later windows, and its own children join.
  h.api->Push(-1, 0, ForkBytes(12, 9));
  h.api->Push(-1, 0, SampleBytes(12, 12, 2, 0, {kIp}));
  h.clock.Advance(10s);
  h.source->Poll(h.clock.Now(), sink);
  window = h.exporter->windows()[1].get();
  ASSERT_EQ(window.size(), 1u);
  EXPECT_EQ(window[0].pid, 12);
}

TEST(CpuProfilerSourceTest, ChildrenAreNotFollowedUnlessAsked) {
  CpuProfilerSource::Options options;
  options.sampler.pids = std::set<uint32_t>{7};
  Harness h(options);
  ASSERT_TRUE(h.source->Start().ok());
  model::CollectingSink sink;
  h.source->Poll(h.clock.Now(), sink);
  h.api->Push(-1, 0, ForkBytes(9, 7));
  h.api->Push(-1, 1, SampleBytes(9, 9, 1, 1, {kIp}));
  h.clock.Advance(10s);
  h.source->Poll(h.clock.Now(), sink);
  EXPECT_TRUE(h.exporter->windows()[0].get().empty());
  EXPECT_EQ(h.source->sampler()->stats().filtered, 1u);
}

TEST(CpuProfilerSourceTest, RefusedSystemWideSamplingFallsBackToPermittedProcesses) {
  CpuProfilerSource::Options options;
  const uint32_t self = static_cast<uint32_t>(getpid());
  options.sampler.pids = std::set<uint32_t>{self};
  Harness h(options);
  h.api->DenySystemWide();
  ASSERT_TRUE(h.source->Start().ok()) << "sampling goes on for what may be profiled";
  const CpuSampler::Stats stats = h.source->sampler()->stats();
  EXPECT_FALSE(stats.system_wide);
  ASSERT_GE(stats.events, 1u);
  for (const auto& o : h.api->opened()) {
    EXPECT_NE(o.pid, -1);
    EXPECT_EQ(o.cpu, -1);
    EXPECT_EQ(o.attr.inherit, 0u) << "the kernel cannot map an inherited per-thread ring";
  }
  model::CollectingSink sink;
  h.source->Poll(h.clock.Now(), sink);
  EXPECT_EQ(sink.Find("profiler.cpu.system_wide", "node1"), 0.0);
}

TEST(CpuProfilerSourceTest, PrivilegeMessageNamesTheSysctlAndTheCapabilities) {
  const std::string message =
      CpuSampler::PrivilegeMessage("/", base::PermissionDenied("perf_event_open: EACCES"));
  EXPECT_NE(message.find("kernel.perf_event_paranoid="), std::string::npos);
  EXPECT_NE(message.find("sysctl kernel.perf_event_paranoid=0"), std::string::npos);
  EXPECT_NE(message.find("CAP_PERFMON"), std::string::npos);
  EXPECT_NE(message.find("CAP_SYS_ADMIN"), std::string::npos);
  EXPECT_NE(message.find("EACCES"), std::string::npos);
}

TEST(CpuProfilerSourceTest, LostRecordsAreCountedAsDegraded) {
  Harness h;
  ASSERT_TRUE(h.source->Start().ok());
  model::CollectingSink sink;
  h.source->Poll(h.clock.Now(), sink);
  testing::RecordWriter lost(PERF_RECORD_LOST);
  lost.Put(uint64_t{1}).Put(uint64_t{3});
  h.api->Push(-1, 0, lost.Done());
  h.clock.Advance(10s);
  h.source->Poll(h.clock.Now(), sink);  // the window's build drains the ring first
  h.exporter->windows()[0].get();
  h.source->Poll(h.clock.Now(), sink);
  EXPECT_EQ(std::count(h.errors.begin(), h.errors.end(), "records_lost"), 3);
}

}  // namespace
}  // namespace warpscope::agent::cpu_profiler

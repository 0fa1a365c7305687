// SPDX-License-Identifier: Apache-2.0
// The sampler on a fake /proc (CpuSampler::Options::host_root): what it learns of a process at
// its first sample, and what it keeps of a process that exited before its window was built.
#include "agent/sources/cpu_profiler/cpu_sampler.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <thread>

#include "agent/sources/cpu_profiler/cpu_profiler_source.h"
#include "agent/sources/cpu_profiler/testing/fake_perf_api.h"
#include "agent/sources/cpu_profiler/testing/record_writer.h"
#include "base/file_util.h"
#include "base/testing/temp_dir.h"
#include "model/process.h"
#include "model/testing/collecting_sink.h"
#include "profiling/pprof.h"
#include "profiling/symbolizer.h"
#include "profiling/testing/fake_profile_exporter.h"

// A function of this test binary, named in the profile of a copy of the binary.
extern "C" __attribute__((noinline)) int WarpscopeLateSymbolTarget(int x) { return x * 3 + 1; }

namespace warpscope::agent::cpu_profiler {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using testing::FakePerfApi;
using testing::SampleBytes;
using testing::TaskBytes;

constexpr char kContainer[] = "4f1c2b7a9d8e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a";

// The source over a FakePerfApi with /proc under `root`, one window per Poll after 10 s.
// Names the processes it was told of; nullptr for the others.
class FakeProcessResolver final : public model::ProcessResolver {
 public:
  void Add(model::ProcessInfo info) { processes_[info.pid] = std::move(info); }
  const model::ProcessInfo* Resolve(int pid) override {
    ++resolved_;
    auto it = processes_.find(pid);
    return it == processes_.end() ? nullptr : &it->second;
  }
  int resolved() const { return resolved_; }

 private:
  std::map<int, model::ProcessInfo> processes_;
  std::atomic<int> resolved_{0};
};

struct Harness {
  explicit Harness(const std::string& root,
                   std::shared_ptr<model::ProcessResolver> identities = nullptr) {
    auto api_owned = std::make_unique<FakePerfApi>(std::vector<int>{0});
    api = api_owned.get();
    auto exporter_owned = std::make_unique<profiling::FakeProfileExporter>();
    exporter = exporter_owned.get();
    CpuProfilerSource::Exporters exporters;
    exporters.push_back(std::move(exporter_owned));
    CpuProfilerSource::Options options;
    options.window = 10s;
    options.host_id = "node1";
    options.sampler.host_root = root;
    options.sampler.identities = std::move(identities);
    source = std::make_unique<CpuProfilerSource>(
        std::move(options), std::move(exporters), std::move(api_owned), nullptr, clock,
        [this](std::string_view reason) { errors.emplace_back(reason); });
  }
  // Waits (bounded) until the sampler thread has handled `n` samples.
  bool WaitForSamples(uint64_t n) {
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (source->sampler()->stats().samples < n) {
      if (std::chrono::steady_clock::now() > deadline) {
        return false;
      }
      std::this_thread::yield();
    }
    return true;
  }
  profiling::Profile NextWindow(int32_t pid) {
    clock.Advance(10s);
    model::CollectingSink sink;
    source->Poll(clock.Now(), sink);
    for (const profiling::WindowProfile& w : exporter->windows().back().get()) {
      if (w.pid == pid) {
        auto p = profiling::DecodePprof(w.pprof_gz);
        EXPECT_TRUE(p.has_value());
        return p ? *p : profiling::Profile{};
      }
    }
    ADD_FAILURE() << "no profile of pid " << pid;
    return {};
  }
  base::FakeClock clock;
  FakePerfApi* api = nullptr;
  profiling::FakeProfileExporter* exporter = nullptr;
  std::vector<std::string> errors;
  std::unique_ptr<CpuProfilerSource> source;
};

void WriteProc(const std::string& root, uint32_t pid, const std::string& name,
               const std::string& text) {
  const std::string dir = fmt::format("{}/proc/{}", root, pid);
  fs::create_directories(dir);
  ASSERT_TRUE(base::WriteFile(dir + "/" + name, text).ok());
}

const profiling::Label* FindLabel(const profiling::Sample& s, std::string_view key) {
  for (const profiling::Label& l : s.labels) {
    if (l.key == key) {
      return &l;
    }
  }
  return nullptr;
}

TEST(CpuSamplerTest, AContainerProcessCarriesItsNamespacePidAndContainer) {
  base::TempDir root;
  WriteProc(root.path(), 4242, "maps", "");
  WriteProc(root.path(), 4242, "comm", "trainer\n");
  WriteProc(root.path(), 5000, "maps", "");
  WriteProc(root.path(), 5000, "status", "Name:\thost\nNSpid:\t5000\n");
  // What the agent's procfs resolver reads from /proc/4242/{status,cgroup}.
  auto identities = std::make_shared<FakeProcessResolver>();
  model::ProcessInfo trainer;
  trainer.pid = 4242;
  trainer.container_pid = 7;
  trainer.container_id = kContainer;
  trainer.pod_uid = "6b1f0c3e-1111-2222-3333-444455556666";
  trainer.pod_namespace = "ml";  // --kubernetes: named through the API server
  trainer.pod_name = "trainer-0";
  trainer.container_name = "trainer";
  identities->Add(trainer);
  Harness h(root.path(), identities);
  ASSERT_TRUE(h.source->Start().ok());
  model::CollectingSink sink;
  h.source->Poll(h.clock.Now(), sink);
  h.api->Push(-1, 0, SampleBytes(4242, 4242, 1, 0, {0xffffffff81001010}));
  h.api->Push(-1, 0, SampleBytes(5000, 5000, 2, 0, {0xffffffff81001010}));
  ASSERT_TRUE(h.WaitForSamples(2));

  profiling::Profile p = h.NextWindow(4242);
  ASSERT_EQ(p.samples.size(), 1u);
  const profiling::Label* ns_pid = FindLabel(p.samples[0], "ns_pid");
  ASSERT_NE(ns_pid, nullptr) << "the pid the process sees in its own namespace";
  EXPECT_EQ(ns_pid->num, 7);
  const profiling::Label* container = FindLabel(p.samples[0], "container_id");
  ASSERT_NE(container, nullptr);
  EXPECT_EQ(container->str, kContainer);
  const profiling::Label* pod = FindLabel(p.samples[0], "pod_uid");
  ASSERT_NE(pod, nullptr);
  EXPECT_EQ(pod->str, trainer.pod_uid);
  for (const auto& [key, value] : {std::pair{"namespace", "ml"}, std::pair{"pod", "trainer-0"},
                                   std::pair{"container", "trainer"}}) {
    const profiling::Label* label = FindLabel(p.samples[0], key);
    ASSERT_NE(label, nullptr) << key;
    EXPECT_EQ(label->str, value);
  }
  EXPECT_EQ(identities->resolved(), 2) << "once per process, at its first sample";

  // The host process is sampled at the same time; its window was built with the other one's.
  std::vector<profiling::WindowProfile> window = h.exporter->windows().back().get();
  ASSERT_EQ(window.size(), 2u);
  auto host = profiling::DecodePprof(window[1].pprof_gz);
  ASSERT_TRUE(host.has_value());
  ASSERT_EQ(host->samples.size(), 1u);
  EXPECT_EQ(FindLabel(host->samples[0], "ns_pid"), nullptr) << "same pid: no namespace of its own";
  EXPECT_EQ(FindLabel(host->samples[0], "container_id"), nullptr);
  h.source->Stop();
}

TEST(CpuSamplerTest, WithoutAResolverTheNamespacePidComesFromStatus) {
  base::TempDir root;
  WriteProc(root.path(), 4242, "maps", "");
  WriteProc(root.path(), 4242, "status", "Name:\ttrainer\nPid:\t4242\nNSpid:\t4242\t31\t7\n");
  Harness h(root.path());
  ASSERT_TRUE(h.source->Start().ok());
  model::CollectingSink sink;
  h.source->Poll(h.clock.Now(), sink);
  h.api->Push(-1, 0, SampleBytes(4242, 4242, 1, 0, {0xffffffff81001010}));
  ASSERT_TRUE(h.WaitForSamples(1));
  profiling::Profile p = h.NextWindow(4242);
  ASSERT_EQ(p.samples.size(), 1u);
  const profiling::Label* ns_pid = FindLabel(p.samples[0], "ns_pid");
  ASSERT_NE(ns_pid, nullptr);
  EXPECT_EQ(ns_pid->num, 7) << "the innermost of nested namespaces";
  EXPECT_EQ(FindLabel(p.samples[0], "container_id"), nullptr);
  h.source->Stop();
}

// The executable mappings of this test binary, as /proc/<pid>/maps lines naming `path`.
std::string OwnMapsAs(const std::string& path) {
  auto maps = base::ReadFile("/proc/self/maps");
  std::error_code ec;
  const std::string self = fs::read_symlink("/proc/self/exe", ec).string();
  std::string out;
  for (const profiling::MapEntry& m : profiling::ParseProcMaps(maps ? *maps : "")) {
    if (m.path == self) {
      out += fmt::format("{:x}-{:x} {}p {:08x} 08:01 {} {}\n", m.start, m.end,
                         m.executable ? "r-x" : "r--", m.file_offset, m.inode, path);
    }
  }
  return out;
}

TEST(CpuSamplerTest, AnExitedProcessKeepsItsSymbolsUntilItsWindowIsBuilt) {
  // A process whose binary is reachable only while it runs (its mount namespace, or a file
  // deleted after it exited) burns CPU for part of a window and exits before the window closes.
  base::TempDir root;
  constexpr uint32_t kPid = 4343;
  WriteProc(root.path(), kPid, "maps", OwnMapsAs("/opt/app/short_lived"));
  WriteProc(root.path(), kPid, "comm", "short_lived\n");
  fs::create_directories(root.path() + "/opt/app");
  fs::copy_file("/proc/self/exe", root.path() + "/opt/app/short_lived");
  Harness h(root.path());
  ASSERT_TRUE(h.source->Start().ok());
  model::CollectingSink sink;
  h.source->Poll(h.clock.Now(), sink);

  DwarfRegs regs{};
  regs[16] = reinterpret_cast<uint64_t>(&WarpscopeLateSymbolTarget) + 4;  // ip
  regs[7] = 0x7ffc00001000;                                               // sp
  regs[6] = 0;
  ASSERT_EQ(WarpscopeLateSymbolTarget(1), 4);
  h.api->Push(-1, 0, SampleBytes(kPid, kPid, 1, 0, {}, &regs));
  h.api->Push(-1, 0, TaskBytes(/*exit=*/true, kPid, kPid, 2));
  ASSERT_TRUE(h.WaitForSamples(1));
  // Gone: the process (its /proc entry) and the binary.
  fs::remove_all(root.path() + "/opt/app");
  fs::remove_all(fmt::format("{}/proc/{}", root.path(), kPid));

  profiling::Profile p = h.NextWindow(static_cast<int32_t>(kPid));
  ASSERT_EQ(p.samples.size(), 1u);
  std::vector<profiling::Frame> frames = profiling::StackFrames(p, p.samples[0]);
  ASSERT_FALSE(frames.empty());
  EXPECT_EQ(frames.back().function, "WarpscopeLateSymbolTarget")
      << "symbolized with the binary parsed while the process ran";
  EXPECT_EQ(frames.back().module, "/opt/app/short_lived");

  // Built, the window released it: the pid (reused by a process the sampler cannot read) no
  // longer resolves through the old binary.
  h.api->Push(-1, 0, SampleBytes(kPid, kPid, 3, 0, {}, &regs));
  ASSERT_TRUE(h.WaitForSamples(2));
  p = h.NextWindow(static_cast<int32_t>(kPid));
  ASSERT_EQ(p.samples.size(), 1u);
  frames = profiling::StackFrames(p, p.samples[0]);
  ASSERT_FALSE(frames.empty());
  EXPECT_NE(frames.back().function, "WarpscopeLateSymbolTarget");
  h.source->Stop();
}

TEST(CpuSamplerTest, AStackThatCannotBeUnwoundEndsInAMarkerCountedPerBinary) {
  base::TempDir root;
  constexpr uint32_t kPid = 4444;
  WriteProc(root.path(), kPid, "maps", OwnMapsAs("/opt/app/trainer"));
  fs::create_directories(root.path() + "/opt/app");
  fs::copy_file("/proc/self/exe", root.path() + "/opt/app/trainer");
  Harness h(root.path());
  ASSERT_TRUE(h.source->Start().ok());
  model::CollectingSink sink;
  h.source->Poll(h.clock.Now(), sink);
  DwarfRegs regs{};
  regs[16] = reinterpret_cast<uint64_t>(&WarpscopeLateSymbolTarget) + 4;
  regs[7] = 0x7ffc00001000;
  // No stack copy: the walk stops in the sampled function's binary.
  h.api->Push(-1, 0, SampleBytes(kPid, kPid, 1, 0, {}, &regs));
  h.api->Push(-1, 0, SampleBytes(kPid, kPid, 2, 0, {}, &regs));
  ASSERT_TRUE(h.WaitForSamples(2));
  profiling::Profile p = h.NextWindow(static_cast<int32_t>(kPid));
  ASSERT_EQ(p.samples.size(), 1u);
  std::vector<profiling::Frame> frames = profiling::StackFrames(p, p.samples[0]);
  ASSERT_GE(frames.size(), 3u);
  // pprof carries no frame kinds: the process frame, then the marker, by name.
  EXPECT_EQ(frames[0].function, "pid 4444");
  EXPECT_EQ(frames[1].function, "[unwinding stopped in trainer]");
  EXPECT_EQ(frames.back().function, "WarpscopeLateSymbolTarget");

  sink.Clear();
  h.source->Poll(h.clock.Now(), sink);
  EXPECT_EQ(sink.Find("profiler.cpu.stacks.truncated", "node1", {{"binary", "trainer"}}), 2.0)
      << "warpscope_cpu_profiler_truncated_stacks_total{binary=\"trainer\"}";
  EXPECT_EQ(std::count(h.errors.begin(), h.errors.end(), "stack_truncated"), 2);
  h.source->Stop();
}

}  // namespace
}  // namespace warpscope::agent::cpu_profiler

// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/cpu_profiler/cpu_window.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "agent/sources/cpu_profiler/testing/unwind_fixture.h"
#include "agent/sources/cpu_profiler/unwinder.h"
#include "profiling/pprof.h"

namespace warpscope::agent::cpu_profiler {
namespace {

using profiling::Frame;

constexpr const char* kKallsyms =
    "ffffffff81001000 T do_syscall_64\n"
    "ffffffff81003000 t __x64_sys_getppid\n";
constexpr uint64_t kSyscallIp = 0xffffffff81001010;
constexpr uint64_t kGetppidIp = 0xffffffff81003010;

// A real user stack of this process, unwound: UnwindFixtureInner <- Middle <- Outer <- ...
struct Fixture {
  ProcessTable table;
  Unwinder unwinder{{}};
  profiling::Symbolizer symbolizer{{}};
  KernelSymbols kernel = KernelSymbols::Parse(kKallsyms).value();
  NoPythonStacks python;
  SymbolSources sources{table, symbolizer, kernel, python};

  UnwoundSample Sample(uint32_t pid, uint32_t tid) {
    DwarfRegs regs{};
    std::vector<uint8_t> stack;
    std::thread([&] { UnwindFixtureOuter(&regs, &stack, 64 * 1024); }).join();
    const ProcessInfo& self = table.Get(static_cast<uint32_t>(getpid()));
    UnwindResult r = unwinder.Unwind(self, tid, regs, stack);
    UnwoundSample s;
    s.pid = pid;
    s.tid = tid;
    s.period_ns = 1000;
    s.user_pcs = r.pcs;
    s.kernel_ips = {kGetppidIp, kSyscallIp};
    return s;
  }
};

std::vector<std::string> Names(const profiling::Profile& p, const profiling::Sample& s) {
  std::vector<std::string> names;
  for (const Frame& f : profiling::StackFrames(p, s)) {
    names.push_back(f.function);
  }
  return names;
}

TEST(CpuWindowTest, BuildsOneCpuProfilePerProcessRootFirstWithKernelFramesAtTheLeaf) {
  Fixture fx;
  const uint32_t pid = static_cast<uint32_t>(getpid());
  fx.table.Get(pid).thread_names[pid] = "main-thread";
  CpuWindow window(profiling::ProfileFormats::All());
  UnwoundSample s = fx.Sample(pid, pid);
  window.Add(s);
  window.Add(s);
  ASSERT_EQ(window.pids(), std::set<uint32_t>{pid});
  auto profiles = window.Build(1000, 2000, fx.sources);
  EXPECT_TRUE(window.empty());
  ASSERT_EQ(profiles.size(), 1u);
  const profiling::WindowProfile& w = profiles[0];
  EXPECT_EQ(w.kind, "cpu");
  EXPECT_EQ(w.pid, static_cast<int32_t>(pid));
  EXPECT_EQ(w.executable, std::filesystem::read_symlink("/proc/self/exe").string());
  EXPECT_FALSE(w.folded.empty());
  auto p = profiling::DecodePprof(w.pprof_gz);
  ASSERT_TRUE(p.has_value()) << p.error().message();
  EXPECT_EQ(p->sample_types,
            (std::vector<profiling::ValueType>{{"samples", "count"}, {"cpu", "nanoseconds"}}));
  EXPECT_EQ(p->time_nanos, 1000);
  EXPECT_EQ(p->duration_nanos, 1000);
  ASSERT_EQ(p->samples.size(), 1u) << "equal stacks of one thread are one sample";
  EXPECT_EQ(p->samples[0].values, (std::vector<int64_t>{2, 2000}));
  std::vector<std::string> names = Names(*p, p->samples[0]);
  ASSERT_GE(names.size(), 6u);
  EXPECT_EQ(names[0], std::filesystem::path(w.executable).filename().string());
  const size_t n = names.size();
  EXPECT_EQ(names[n - 1], "__x64_sys_getppid");
  EXPECT_EQ(names[n - 2], "do_syscall_64");
  EXPECT_EQ(names[n - 3], "UnwindFixtureInner");
  EXPECT_EQ(names[n - 4], "UnwindFixtureMiddle");
  EXPECT_EQ(names[n - 5], "UnwindFixtureOuter");
  const std::vector<Frame> frames = profiling::StackFrames(*p, p->samples[0]);
  EXPECT_EQ(frames[n - 1].module, "[kernel.kallsyms]");
  EXPECT_NE(frames[n - 4].file.find("unwind_fixture.cc"), std::string::npos)
      << "file:line from DWARF";
  EXPECT_GT(frames[n - 4].line, 0);
  EXPECT_EQ(p->samples[0].labels,
            (std::vector<profiling::Label>{{"tid", "", static_cast<int64_t>(pid)},
                                           {"thread_name", "main-thread", 0}}));
}

TEST(CpuWindowTest, TruncatedStackStartsWithAMarkerNamingTheBinary) {
  Fixture fx;
  const uint32_t pid = static_cast<uint32_t>(getpid());
  UnwoundSample s = fx.Sample(pid, pid);
  s.user_pcs.resize(1);
  s.truncated = true;
  s.stopped_in = "/usr/lib/libfoo.so.1";
  CpuWindow window(profiling::ProfileFormats::All());
  window.Add(s);
  auto p = profiling::DecodePprof(window.Build(0, 1, fx.sources)[0].pprof_gz);
  ASSERT_TRUE(p.has_value());
  std::vector<std::string> names = Names(*p, p->samples[0]);
  ASSERT_EQ(names.size(), 5u);
  EXPECT_EQ(names[1], "[unwinding stopped in libfoo.so.1]");
  EXPECT_EQ(names[2], "UnwindFixtureInner");
}

TEST(CpuWindowTest, ExitedProcessIsSymbolizedWithItsTrackedMappings) {
  Fixture fx;
  const uint32_t self = static_cast<uint32_t>(getpid());
  UnwoundSample s = fx.Sample(self, self);
  // A process that no longer exists, whose mappings were tracked from mmap records: the same
  // files at the same addresses as this process.
  constexpr uint32_t kGone = 1 << 23;
  for (const profiling::MapEntry& m : fx.table.Get(self).maps) {
    MmapRecord r;
    r.pid = r.tid = kGone;
    r.start = m.start;
    r.length = m.end - m.start;
    r.file_offset = m.file_offset;
    r.path = m.path;
    fx.table.Apply(r);
  }
  fx.table.Apply(TaskRecord{true, kGone, 1, kGone, 1, 0});
  s.pid = kGone;
  CpuWindow window(profiling::ProfileFormats{.pprof = true});
  window.Add(s);
  auto profiles = window.Build(0, 1, fx.sources);
  ASSERT_EQ(profiles.size(), 1u);
  EXPECT_TRUE(profiles[0].folded.empty()) << "only the formats asked for";
  auto p = profiling::DecodePprof(profiles[0].pprof_gz);
  ASSERT_TRUE(p.has_value());
  std::vector<std::string> names = Names(*p, p->samples[0]);
  EXPECT_NE(std::find(names.begin(), names.end(), "UnwindFixtureMiddle"), names.end())
      << ::testing::PrintToString(names);
}

// Splices one Python frame above the native leaf, as the CPython reader will at eval frames.
class FakePython final : public PythonStackSource {
 public:
  std::vector<PythonStackFrame> ReadFrames(uint32_t, uint32_t) override { return {}; }
  std::vector<Frame> Splice(std::vector<Frame> native,
                            const std::vector<PythonStackFrame>& python) override {
    for (size_t i = 0; i < python.size(); ++i) {
      native.insert(native.begin() + 1 + static_cast<long>(i), python[i].frame);
    }
    return native;
  }
};

TEST(CpuWindowTest, PythonFramesGoThroughTheSpliceSeam) {
  Fixture fx;
  FakePython python;
  SymbolSources sources{fx.table, fx.symbolizer, fx.kernel, python};
  const uint32_t pid = static_cast<uint32_t>(getpid());
  UnwoundSample s = fx.Sample(pid, pid);
  Frame py;
  py.function = "train";
  py.file = "train.py";
  py.line = 3;
  py.kind = profiling::FrameKind::kPython;
  s.python = {{py, true}};
  CpuWindow window(profiling::ProfileFormats::All());
  window.Add(s);
  auto p = profiling::DecodePprof(window.Build(0, 1, sources)[0].pprof_gz);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(Names(*p, p->samples[0])[1], "train");
}

}  // namespace
}  // namespace warpscope::agent::cpu_profiler

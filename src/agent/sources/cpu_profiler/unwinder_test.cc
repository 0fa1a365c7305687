// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/cpu_profiler/unwinder.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <thread>

#include "agent/sources/cpu_profiler/process_table.h"
#include "agent/sources/cpu_profiler/testing/unwind_fixture.h"
#include "profiling/symbolizer.h"

namespace warpscope::agent::cpu_profiler {
namespace {

struct Captured {
  DwarfRegs regs{};
  std::vector<uint8_t> stack;
};

// Captures in a thread of its own: a short stack whose outermost frame (clone3) ends the CFI.
Captured CaptureInThread(uint64_t max_bytes) {
  Captured c;
  std::thread([&] { UnwindFixtureOuter(&c.regs, &c.stack, max_bytes); }).join();
  return c;
}

std::vector<std::string> Names(uint32_t pid, const std::vector<uint64_t>& pcs) {
  profiling::Symbolizer symbolizer({});
  std::vector<std::string> names;
  for (const auto& f : symbolizer.Symbolize(static_cast<pid_t>(pid), pcs)) {
    names.push_back(f.function);
  }
  return names;
}

TEST(UnwinderTest, UnwindsACapturedStackWithoutFramePointers) {
  Captured c = CaptureInThread(64 * 1024);
  ProcessTable table;
  const ProcessInfo& self = table.Get(static_cast<uint32_t>(getpid()));
  Unwinder unwinder({});
  UnwindResult r = unwinder.Unwind(self, static_cast<uint32_t>(gettid()), c.regs, c.stack);
  std::vector<std::string> names = Names(self.pid, r.pcs);
  ASSERT_GE(names.size(), 4u) << ::testing::PrintToString(names);
  EXPECT_EQ(names[0], "UnwindFixtureInner");
  EXPECT_EQ(names[1], "UnwindFixtureMiddle");
  EXPECT_EQ(names[2], "UnwindFixtureOuter");
  EXPECT_TRUE(r.complete) << "a thread's stack ends at clone's undefined return address: "
                          << ::testing::PrintToString(names);
  EXPECT_EQ(unwinder.stats().truncated, 0u);
}

TEST(UnwinderTest, ReusesTheProcessDwflAcrossSamples) {
  ProcessTable table;
  const ProcessInfo& self = table.Get(static_cast<uint32_t>(getpid()));
  Unwinder unwinder({});
  for (int i = 0; i < 3; ++i) {
    Captured c = CaptureInThread(64 * 1024);
    UnwindResult r = unwinder.Unwind(self, static_cast<uint32_t>(getpid()), c.regs, c.stack);
    EXPECT_GE(r.pcs.size(), 3u);
  }
  EXPECT_EQ(unwinder.stats().reports, 1u) << "the modules are reported once per maps generation";
}

TEST(UnwinderTest, ShortStackCopyEndsTruncatedInTheBinaryWhereItStopped) {
  Captured c = CaptureInThread(64 * 1024);
  c.stack.resize(8);  // far less than the fixture's frames hold
  ProcessTable table;
  const ProcessInfo& self = table.Get(static_cast<uint32_t>(getpid()));
  Unwinder unwinder({});
  UnwindResult r = unwinder.Unwind(self, static_cast<uint32_t>(getpid()), c.regs, c.stack);
  EXPECT_FALSE(r.complete);
  EXPECT_FALSE(r.stopped_in.empty());
  EXPECT_EQ(Names(self.pid, r.pcs)[0], "UnwindFixtureInner");
  EXPECT_EQ(unwinder.stats().truncated, 1u);
}

TEST(UnwinderTest, ProcessWithoutMappingsGivesTheSampledPcOnly) {
  ProcessInfo nothing;
  nothing.pid = 1 << 23;  // no such process, no maps
  DwarfRegs regs{};
  regs[16] = 0x401000;
  Unwinder unwinder({});
  UnwindResult r = unwinder.Unwind(nothing, nothing.pid, regs, {});
  EXPECT_EQ(r.pcs, std::vector<uint64_t>{0x401000});
  EXPECT_FALSE(r.complete);
}

// Through a copy of CPython's perf trampoline (no frame pointer, no CFI) named in a perf map.
struct TrampolineCapture {
  Captured c;
  profiling::PerfMapSymbol symbol;
};
TrampolineCapture CaptureThroughTrampolineInThread() {
  TrampolineCapture t;
  size_t size = 0;
  t.symbol.start = UnwindFixtureTrampoline(&size);
  t.symbol.size = size;
  t.symbol.name = "py::heavy:/app/train.py";
  std::thread([&] { UnwindFixtureThroughTrampoline(&t.c.regs, &t.c.stack, 64 * 1024); }).join();
  return t;
}

TEST(UnwinderTest, StepsOverCpythonsPerfTrampolineNamedInThePerfMap) {
  TrampolineCapture t = CaptureThroughTrampolineInThread();
  ASSERT_NE(t.symbol.start, 0u);
  ProcessTable table;  // seeded after the trampoline was mapped
  const ProcessInfo& self = table.Get(static_cast<uint32_t>(getpid()));
  Unwinder::Options options;
  int lookups = 0;
  options.jit = [&](uint32_t pid, uint64_t address) -> const profiling::PerfMapSymbol* {
    ++lookups;
    EXPECT_EQ(pid, self.pid);
    const bool inside = address >= t.symbol.start && address < t.symbol.start + t.symbol.size;
    return inside ? &t.symbol : nullptr;
  };
  Unwinder unwinder(options);
  UnwindResult r = unwinder.Unwind(self, static_cast<uint32_t>(gettid()), t.c.regs, t.c.stack);
  std::vector<std::string> names = Names(self.pid, r.pcs);
  ASSERT_GE(names.size(), 6u) << ::testing::PrintToString(names);
  EXPECT_EQ(names[0], "UnwindFixtureInner");
  EXPECT_EQ(names[1], "UnwindFixtureMiddle");
  EXPECT_EQ(names[2], "UnwindFixtureOuter");
  EXPECT_GE(r.pcs[3], t.symbol.start) << "the trampoline's frame (a return address minus one)";
  EXPECT_LT(r.pcs[3], t.symbol.start + t.symbol.size);
  EXPECT_EQ(names[4], "UnwindFixtureThroughTrampoline") << "its caller, not a frame-pointer guess";
  EXPECT_TRUE(r.complete) << "on to clone's undefined return address: "
                          << ::testing::PrintToString(names);
  EXPECT_EQ(unwinder.stats().trampoline_steps, 1u);
  EXPECT_GE(lookups, 1);

  // Without the perf map's name, the trampoline is code like any other without CFI.
  Unwinder plain({});
  UnwindResult without = plain.Unwind(self, static_cast<uint32_t>(gettid()), t.c.regs, t.c.stack);
  std::vector<std::string> plain_names = Names(self.pid, without.pcs);
  EXPECT_TRUE(plain_names.size() < 5 || plain_names[4] != "UnwindFixtureThroughTrampoline")
      << ::testing::PrintToString(plain_names);
  EXPECT_EQ(plain.stats().trampoline_steps, 0u);
}

TEST(UnwinderTest, ATrampolineStepThatWouldLeaveTheStackCopyEndsTheStack) {
  TrampolineCapture t = CaptureThroughTrampolineInThread();
  ASSERT_NE(t.symbol.start, 0u);
  ProcessTable table;
  const ProcessInfo& self = table.Get(static_cast<uint32_t>(getpid()));
  // Keep the frames up to the trampoline's, not the 16 bytes above it.
  Unwinder::Options options;
  options.jit = [&](uint32_t, uint64_t address) -> const profiling::PerfMapSymbol* {
    return address >= t.symbol.start && address < t.symbol.start + t.symbol.size ? &t.symbol
                                                                                 : nullptr;
  };
  Unwinder full(options);
  UnwindResult whole = full.Unwind(self, static_cast<uint32_t>(gettid()), t.c.regs, t.c.stack);
  ASSERT_GE(whole.pcs.size(), 5u);
  // The first frames only: cut the copy right where the trampoline's return address is read.
  std::vector<uint8_t> cut = t.c.stack;
  for (size_t n = 8; n < cut.size(); n += 8) {
    std::vector<uint8_t> part(cut.begin(), cut.begin() + static_cast<long>(n));
    Unwinder u(options);
    UnwindResult r = u.Unwind(self, static_cast<uint32_t>(gettid()), t.c.regs, part);
    if (r.pcs.size() >= 4 && u.stats().trampoline_steps == 0) {
      EXPECT_FALSE(r.complete) << "the step is refused, the stack ends truncated";
      EXPECT_EQ(r.pcs.size(), 4u) << "nothing past the trampoline";
      return;
    }
  }
  ADD_FAILURE() << "no stack copy length stops right at the trampoline";
}

TEST(UnwinderTest, UnwoundFramesGetFileAndLineFromTheSymbolizer) {
  Captured c = CaptureInThread(64 * 1024);
  ProcessTable table;
  const ProcessInfo& self = table.Get(static_cast<uint32_t>(getpid()));
  Unwinder unwinder({});
  UnwindResult r = unwinder.Unwind(self, static_cast<uint32_t>(getpid()), c.regs, c.stack);
  ASSERT_GE(r.pcs.size(), 3u);
  profiling::Symbolizer symbolizer({});
  auto frames = symbolizer.Symbolize(getpid(), std::span(r.pcs).subspan(1, 2));
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_NE(frames[0].file.find("unwind_fixture.cc"), std::string::npos)
      << frames[0].file << ": the fixture is built with -g";
  EXPECT_GT(frames[0].line, 0);
  EXPECT_NE(frames[1].line, frames[0].line);
  EXPECT_EQ(symbolizer.stats().dwarf_loads, 1u) << "one DWARF read for the binary";
}

}  // namespace
}  // namespace warpscope::agent::cpu_profiler

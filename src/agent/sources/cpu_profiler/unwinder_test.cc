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

TEST(UnwinderTest, GivesFileAndLineFromDwarf) {
  Captured c = CaptureInThread(64 * 1024);
  ProcessTable table;
  const ProcessInfo& self = table.Get(static_cast<uint32_t>(getpid()));
  Unwinder unwinder({});
  UnwindResult r = unwinder.Unwind(self, static_cast<uint32_t>(getpid()), c.regs, c.stack);
  ASSERT_GE(r.pcs.size(), 2u);
  auto line = unwinder.Line(self.pid, r.pcs[1]);
  ASSERT_TRUE(line.has_value()) << "the fixture is built with -g";
  EXPECT_NE(line->file.find("unwind_fixture.cc"), std::string::npos) << line->file;
  EXPECT_GT(line->line, 0);
  EXPECT_FALSE(unwinder.Line(12345678, r.pcs[1]).has_value());
}

}  // namespace
}  // namespace warpscope::agent::cpu_profiler

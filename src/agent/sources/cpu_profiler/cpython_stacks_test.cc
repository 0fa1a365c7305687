// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/cpu_profiler/cpython_stacks.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace warpscope::agent::cpu_profiler {
namespace {

using profiling::Frame;
using profiling::FrameKind;

Frame Native(std::string name) {
  Frame f;
  f.kind = FrameKind::kNative;
  f.function = std::move(name);
  f.module = "/usr/bin/python3.11";
  return f;
}

PythonStackFrame Py(std::string name, bool entry) {
  PythonStackFrame p;
  p.frame.kind = FrameKind::kPython;
  p.frame.function = std::move(name);
  p.frame.file = "/app/burn.py";
  p.frame.line = 7;
  p.eval_entry = entry;
  return p;
}

std::vector<std::string> Names(const std::vector<Frame>& frames) {
  std::vector<std::string> out;
  for (const Frame& f : frames) {
    out.push_back(f.function);
  }
  return out;
}

struct Fixture {
  uint64_t now = 1'000'000'000;
  CpythonStacks stacks{CpythonStacks::Options{.now_ns = [this] { return now; }}};
};

TEST(CpythonStacksTest, ANonPythonProcessIsReadOnceUntilTheRecheck) {
  Fixture fx;
  const auto pid = static_cast<uint32_t>(getpid());  // this test binary runs no interpreter
  EXPECT_TRUE(fx.stacks.ReadFrames(pid, pid).empty());
  EXPECT_EQ(fx.stacks.reader().stats().reads, 1u);
  for (int i = 0; i < 100; ++i) {
    fx.now += 50'000'000;
    EXPECT_TRUE(fx.stacks.ReadFrames(pid, pid).empty());
  }
  EXPECT_EQ(fx.stacks.reader().stats().reads, 1u) << "later samples cost a lookup only";
  fx.now += 10'000'000'000;
  EXPECT_TRUE(fx.stacks.ReadFrames(pid, pid).empty());
  EXPECT_EQ(fx.stacks.reader().stats().reads, 2u) << "rechecked: it may have loaded Python";
  fx.stacks.ForgetProcess(pid);  // exec
  EXPECT_TRUE(fx.stacks.ReadFrames(pid, pid).empty());
  EXPECT_EQ(fx.stacks.reader().stats().reads, 3u) << "an exec'd process is probed again at once";
  EXPECT_TRUE(fx.stacks.stats().unreadable.empty());
  EXPECT_EQ(fx.stacks.stats().stacks, 0u);
}

TEST(CpythonStacksTest, AProcessThatCannotBeReadIsCountedAndNotRetriedAtOnce) {
  Fixture fx;
  const uint32_t gone = 0x3ffffffe;  // above pid_max: no such process
  EXPECT_TRUE(fx.stacks.ReadFrames(gone, gone).empty());
  EXPECT_TRUE(fx.stacks.ReadFrames(gone, gone).empty());
  EXPECT_EQ(fx.stacks.reader().stats().reads, 1u);
  EXPECT_EQ(fx.stacks.stats().unreadable.at("no_access"), 1u);
}

TEST(CpythonStacksTest, SplicesEachPythonGroupAtItsEvalLoopFrame) {
  Fixture fx;
  Frame process;
  process.kind = FrameKind::kProcess;
  process.function = "python3.11";
  // Root first, as the CPU window hands it over.
  std::vector<Frame> native = {process,
                               Native("main"),
                               Native("Py_RunMain"),
                               Native("_PyEval_EvalFrameDefault"),
                               Native("PyObject_Vectorcall"),
                               Native("_PyEval_EvalFrameDefault"),
                               Native("math_sqrt")};
  // Innermost first, as the reader returns them.
  std::vector<PythonStackFrame> python = {Py("inner", false), Py("middle", true),
                                          Py("outer", false), Py("<module>", true)};
  std::vector<Frame> out = fx.stacks.Splice(native, python);
  EXPECT_EQ(Names(out),
            (std::vector<std::string>{"python3.11", "main", "Py_RunMain", "<module>", "outer",
                                      "PyObject_Vectorcall", "middle", "inner", "math_sqrt"}));
  EXPECT_EQ(out[3].kind, FrameKind::kPython);
  EXPECT_EQ(out[3].file, "/app/burn.py");
  EXPECT_EQ(out[3].line, 7);
  EXPECT_EQ(out[0].kind, FrameKind::kProcess);
  EXPECT_TRUE(fx.stacks.stats().splice_mismatches.empty());
}

TEST(CpythonStacksTest, CountsMismatchesAndUnplacedFrames) {
  Fixture fx;
  std::vector<Frame> one_eval = {Native("main"), Native("_PyEval_EvalFrameDefault")};
  std::vector<PythonStackFrame> two_groups = {Py("inner", true), Py("<module>", true)};
  std::vector<Frame> out = fx.stacks.Splice(one_eval, two_groups);
  EXPECT_EQ(Names(out), (std::vector<std::string>{"main", "<module>", "inner"}));
  EXPECT_EQ(fx.stacks.stats().splice_mismatches.at("mismatch"), 1u);

  std::vector<Frame> no_eval = {Native("main"), Native("leaf")};
  out = fx.stacks.Splice(no_eval, two_groups);
  EXPECT_EQ(out.size(), 4u);
  EXPECT_EQ(fx.stacks.stats().splice_mismatches.at("unplaced"), 1u);
}

}  // namespace
}  // namespace warpscope::agent::cpu_profiler

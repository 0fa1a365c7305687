// SPDX-License-Identifier: Apache-2.0
// The seam through which Python frames enter CPU samples. A PythonStackSource reads the
// interpreter frames of the sampled thread of another process when the sample is taken (the
// thread moves on right after), and at window time splices them into the sample's symbolized
// native stack at the interpreter's eval-loop frames. CpythonStacks (cpython_stacks.h, over the
// CPython frame reader of src/pyframes) implements it; NoPythonStacks (the default) adds nothing.
//
// Thread contract: every method runs on the CPU sampler's thread, never concurrently.
// ReadFrames runs once per sample of every profiled process: it must be cheap for processes
// that are not Python (decide once per process and remember).
#ifndef WARPSCOPE_AGENT_SOURCES_CPU_PROFILER_PYTHON_STACK_SOURCE_H_
#define WARPSCOPE_AGENT_SOURCES_CPU_PROFILER_PYTHON_STACK_SOURCE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "profiling/profile.h"

namespace warpscope::agent::cpu_profiler {

// One Python frame of a sample.
struct PythonStackFrame {
  profiling::Frame frame;  // kind kPython: function, file, line
  // The outermost Python frame of one native eval-loop call (the frames up to and including it,
  // innermost first, ran in one _PyEval_EvalFrameDefault call).
  bool eval_entry = false;
};

// Counters since the source was made (monotonic).
struct PythonStackStats {
  uint64_t stacks = 0;  // samples given Python frames
  // Reads of a thread whose Python frames could not be read, or only in part, by reason:
  // "no_access" (process gone or its memory not readable), "unsupported" (a CPython layout not
  // known), "torn" (the frame chain changed or broke during the read).
  std::map<std::string, uint64_t> unreadable;
  // Splices where the native eval-loop frames and the Python frames disagreed, by reason:
  // "mismatch" (counts differ: all Python frames at the outermost eval-loop frame), "unplaced"
  // (no eval-loop frame in the native stack: Python frames outermost).
  std::map<std::string, uint64_t> splice_mismatches;
};

class PythonStackSource {
 public:
  virtual ~PythonStackSource() = default;
  PythonStackSource(const PythonStackSource&) = delete;
  PythonStackSource& operator=(const PythonStackSource&) = delete;

  // The Python frames of thread `tid` of process `pid`, innermost first; empty when the process
  // runs no interpreter or its state cannot be read.
  virtual std::vector<PythonStackFrame> ReadFrames(uint32_t pid, uint32_t tid) = 0;

  // The stack of one sample, root first: `native` (the process frame, user frames; kernel
  // frames follow later) with `python` (as ReadFrames returned it, non-empty) spliced in.
  virtual std::vector<profiling::Frame> Splice(std::vector<profiling::Frame> native,
                                               const std::vector<PythonStackFrame>& python) = 0;

  // Drops what is cached about `pid` (it exec'd or exited).
  virtual void ForgetProcess(uint32_t pid) {}

  virtual PythonStackStats stats() const { return {}; }

 protected:
  PythonStackSource() = default;
};

// No Python frames: native stacks stay as they are.
class NoPythonStacks final : public PythonStackSource {
 public:
  NoPythonStacks() = default;
  std::vector<PythonStackFrame> ReadFrames(uint32_t, uint32_t) override { return {}; }
  std::vector<profiling::Frame> Splice(std::vector<profiling::Frame> native,
                                       const std::vector<PythonStackFrame>&) override {
    return native;
  }
};

}  // namespace warpscope::agent::cpu_profiler

#endif  // WARPSCOPE_AGENT_SOURCES_CPU_PROFILER_PYTHON_STACK_SOURCE_H_

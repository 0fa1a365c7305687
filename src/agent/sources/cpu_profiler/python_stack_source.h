// SPDX-License-Identifier: Apache-2.0
// The seam through which Python frames enter CPU samples. A PythonStackSource reads the
// interpreter frames of the sampled thread of another process when the sample is taken (the
// thread moves on right after), and at window time splices them into the sample's symbolized
// native stack at the interpreter's eval-loop frames. The CPython frame reader of src/pyframes
// implements it; NoPythonStacks (the default) adds nothing.
//
// Thread contract: both methods run on the CPU sampler's thread, never concurrently.
// ReadFrames runs once per sample of every profiled process: it must be cheap for processes
// that are not Python (decide once per process and remember).
#ifndef WARPSCOPE_AGENT_SOURCES_CPU_PROFILER_PYTHON_STACK_SOURCE_H_
#define WARPSCOPE_AGENT_SOURCES_CPU_PROFILER_PYTHON_STACK_SOURCE_H_

#include <cstdint>
#include <vector>

#include "profiling/profile.h"

namespace warpscope::agent::cpu_profiler {

class PythonStackSource {
 public:
  virtual ~PythonStackSource() = default;
  PythonStackSource(const PythonStackSource&) = delete;
  PythonStackSource& operator=(const PythonStackSource&) = delete;

  // The Python frames of thread `tid` of process `pid`, innermost first (kind kPython); empty
  // when the process runs no interpreter or its state cannot be read.
  virtual std::vector<profiling::Frame> ReadFrames(uint32_t pid, uint32_t tid) = 0;

  // The stack of one sample, root first: `native` (the process frame, user frames, kernel
  // frames) with `python` (as ReadFrames returned it, non-empty) spliced in.
  virtual std::vector<profiling::Frame> Splice(std::vector<profiling::Frame> native,
                                               const std::vector<profiling::Frame>& python) = 0;

  // Drops what is cached about `pid` (it exited and its last window was built).
  virtual void ForgetProcess(uint32_t pid) {}

 protected:
  PythonStackSource() = default;
};

// No Python frames: native stacks stay as they are.
class NoPythonStacks final : public PythonStackSource {
 public:
  NoPythonStacks() = default;
  std::vector<profiling::Frame> ReadFrames(uint32_t, uint32_t) override { return {}; }
  std::vector<profiling::Frame> Splice(std::vector<profiling::Frame> native,
                                       const std::vector<profiling::Frame>&) override {
    return native;
  }
};

}  // namespace warpscope::agent::cpu_profiler

#endif  // WARPSCOPE_AGENT_SOURCES_CPU_PROFILER_PYTHON_STACK_SOURCE_H_

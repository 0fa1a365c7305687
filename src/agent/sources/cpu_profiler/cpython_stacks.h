// SPDX-License-Identifier: Apache-2.0
// CpythonStacks: the CPU profiler's PythonStackSource over the CPython frame reader of
// src/pyframes. At sample time it reads the sampled thread's frames from the other process
// (pyframes::RemotePythonReader, process_vm_readv); at window time it splices them into the
// symbolized native stack in place of the eval-loop frames (pyframes::ClassifyNativeSymbol,
// pyframes::SpliceStacks).
//
// Cost for a process without Python: the first sample probes it (its maps, the ELF files not
// yet known to hold no interpreter); later samples are one hash lookup, without a system call,
// until `recheck_ns` has passed (it may load an interpreter), or at once after an exec.
//
// Thread contract: not thread-safe; the CPU sampler's thread only.
#ifndef WARPSCOPE_AGENT_SOURCES_CPU_PROFILER_CPYTHON_STACKS_H_
#define WARPSCOPE_AGENT_SOURCES_CPU_PROFILER_CPYTHON_STACKS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "agent/sources/cpu_profiler/python_stack_source.h"
#include "pyframes/remote_reader.h"
#include "pyframes/splice.h"

namespace warpscope::agent::cpu_profiler {

class CpythonStacks final : public PythonStackSource {
 public:
  struct Options {
    std::string host_root = "/";  // /proc is read under it
    size_t max_frames = 128;      // Python frames per sample
    size_t max_processes = 4096;  // interpreters and non-Python verdicts remembered
    // A process found without a readable interpreter is not read again for this long.
    uint64_t recheck_ns = 10'000'000'000;
    // Monotonic nanoseconds; steady_clock when empty (tests inject one).
    std::function<uint64_t()> now_ns;
  };

  explicit CpythonStacks(Options options);

  std::vector<PythonStackFrame> ReadFrames(uint32_t pid, uint32_t tid) override;
  std::vector<profiling::Frame> Splice(std::vector<profiling::Frame> native,
                                       const std::vector<PythonStackFrame>& python) override;
  void ForgetProcess(uint32_t pid) override;
  PythonStackStats stats() const override { return stats_; }

  const pyframes::RemotePythonReader& reader() const { return reader_; }

 private:
  Options options_;
  pyframes::RemotePythonReader reader_;
  std::unordered_map<uint32_t, uint64_t> skip_until_;  // pid -> not read before (monotonic ns)
  PythonStackStats stats_;
  // Scratch, reused across samples.
  std::vector<pyframes::PythonFrame> frames_;
  std::vector<pyframes::NativeKind> kinds_;
  std::vector<pyframes::SplicedFrame> merged_;
};

}  // namespace warpscope::agent::cpu_profiler

#endif  // WARPSCOPE_AGENT_SOURCES_CPU_PROFILER_CPYTHON_STACKS_H_

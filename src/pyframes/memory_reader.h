// SPDX-License-Identifier: Apache-2.0
// Reading another object's bytes without trusting the address: the frame reader reads every
// CPython structure through a MemoryReader, so one walker serves the launching thread of the
// injected library (in-process) and, later, a profiler reading other processes.
#ifndef WARPSCOPE_PYFRAMES_MEMORY_READER_H_
#define WARPSCOPE_PYFRAMES_MEMORY_READER_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace warpscope::pyframes {

// Copies `len` bytes at `addr` into `dst`; false (dst unspecified) when the range cannot be
// read. Implementations never allocate, lock or throw: Read runs on application threads inside
// CUDA calls. Thread-safety: per implementation (the ones here are safe to share).
class MemoryReader {
 public:
  virtual ~MemoryReader() = default;
  MemoryReader(const MemoryReader&) = delete;
  MemoryReader& operator=(const MemoryReader&) = delete;
  [[nodiscard]] virtual bool Read(uint64_t addr, void* dst, size_t len) = 0;

 protected:
  MemoryReader() = default;
};

// True when [addr, addr + len) is a plausible user-space range on x86-64/aarch64 (not in the
// first page, below 2^47, no wrap). Every reader checks it first.
bool PlausibleUserRange(uint64_t addr, size_t len);

// This process's memory by plain memcpy: a few ns per read. It cannot tell a mapped address
// from an unmapped one (a bad address faults), so it is for structures already validated: the
// library first walks with SelfVmReader and switches to this one once a walk type-checked
// (docs/design/python-frames.md "Safety").
class LocalMemoryReader final : public MemoryReader {
 public:
  LocalMemoryReader() = default;
  [[nodiscard]] bool Read(uint64_t addr, void* dst, size_t len) override;
};

// Another process's memory (or this one's: pid = getpid()) through process_vm_readv(2): an
// unmapped address fails with EFAULT instead of faulting. One syscall per read (~0.3-1 µs).
// Reading another process needs ptrace permission over it (same uid and ptrace_scope <= 1, or
// CAP_SYS_PTRACE); a refused read returns false.
class ProcessMemoryReader final : public MemoryReader {
 public:
  explicit ProcessMemoryReader(pid_t pid) : pid_(pid) {}
  [[nodiscard]] bool Read(uint64_t addr, void* dst, size_t len) override;
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_;
};

}  // namespace warpscope::pyframes

#endif  // WARPSCOPE_PYFRAMES_MEMORY_READER_H_

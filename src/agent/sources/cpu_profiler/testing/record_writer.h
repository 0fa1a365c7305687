// SPDX-License-Identifier: Apache-2.0
// Builds perf_event records byte for byte as the kernel writes them, for tests of the parser
// and of the sampler's pipeline (fed through FakePerfApi).
#ifndef WARPSCOPE_AGENT_SOURCES_CPU_PROFILER_TESTING_RECORD_WRITER_H_
#define WARPSCOPE_AGENT_SOURCES_CPU_PROFILER_TESTING_RECORD_WRITER_H_

#include <linux/perf_event.h>
#include <sys/mman.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "agent/sources/cpu_profiler/perf_records.h"

namespace warpscope::agent::cpu_profiler::testing {

class RecordWriter {
 public:
  RecordWriter(uint32_t type, uint16_t misc = 0) {
    perf_event_header h{type, misc, 0};
    Put(h);
  }
  template <typename T>
  RecordWriter& Put(const T& value) {
    Append(&value, sizeof(T));
    return *this;
  }
  RecordWriter& PutString(const std::string& s) {  // NUL-terminated, padded to 8 bytes
    Append(s.data(), s.size());
    do {
      bytes_.push_back(0);
    } while (bytes_.size() % 8 != 0);
    return *this;
  }
  RecordWriter& PutBytes(const std::vector<uint8_t>& b) {
    Append(b.data(), b.size());
    return *this;
  }
  std::vector<uint8_t> Done() {
    const uint16_t size = static_cast<uint16_t>(bytes_.size());
    std::memcpy(bytes_.data() + offsetof(perf_event_header, size), &size, sizeof(size));
    return bytes_;
  }

 private:
  // resize + memcpy rather than vector::insert, which GCC 12 at -O2 misreads as an overflow.
  void Append(const void* data, size_t n) {
    const size_t at = bytes_.size();
    bytes_.resize(at + n);
    if (n > 0) {
      std::memcpy(bytes_.data() + at, data, n);
    }
  }
  std::vector<uint8_t> bytes_;
};

// A sample with `kernel_ips` (leaf first), and user registers/stack when `regs` is given
// (DWARF numbering, as SampleRecord holds them).
inline std::vector<uint8_t> SampleBytes(uint32_t pid, uint32_t tid, uint64_t time_ns, uint32_t cpu,
                                        const std::vector<uint64_t>& kernel_ips,
                                        const DwarfRegs* regs = nullptr,
                                        const std::vector<uint8_t>& stack = {},
                                        uint64_t stack_capacity = 0, uint64_t period = 52631578) {
  RecordWriter w(PERF_RECORD_SAMPLE);
  w.Put(pid).Put(tid).Put(time_ns).Put(cpu).Put(uint32_t{0}).Put(period);
  uint64_t nr = kernel_ips.empty() ? 0 : kernel_ips.size() + 1;
  w.Put(nr);
  if (!kernel_ips.empty()) {
    w.Put(static_cast<uint64_t>(PERF_CONTEXT_KERNEL));
    for (uint64_t ip : kernel_ips) {
      w.Put(ip);
    }
  }
  if (regs == nullptr) {
    w.Put(uint64_t{PERF_SAMPLE_REGS_ABI_NONE});
  } else {
    w.Put(uint64_t{PERF_SAMPLE_REGS_ABI_64});
    // perf order of kUserRegsMask: ax bx cx dx si di bp sp ip r8..r15.
    const int dwarf_of_perf[] = {0, 3, 2, 1, 4, 5, 6, 7, 16, 8, 9, 10, 11, 12, 13, 14, 15};
    for (int d : dwarf_of_perf) {
      w.Put((*regs)[static_cast<size_t>(d)]);
    }
  }
  const uint64_t capacity = std::max<uint64_t>(stack_capacity, (stack.size() + 7) / 8 * 8);
  w.Put(capacity);
  if (capacity > 0) {
    std::vector<uint8_t> data = stack;
    data.resize(capacity, 0);
    w.PutBytes(data);
    w.Put(static_cast<uint64_t>(stack.size()));
  }
  return w.Done();
}

inline std::vector<uint8_t> Mmap2Bytes(uint32_t pid, uint64_t start, uint64_t len, uint64_t pgoff,
                                       const std::string& path, bool exec = true,
                                       uint64_t inode = 1) {
  RecordWriter w(PERF_RECORD_MMAP2);
  w.Put(pid).Put(pid).Put(start).Put(len).Put(pgoff);
  w.Put(uint32_t{8}).Put(uint32_t{1}).Put(inode).Put(uint64_t{0});
  w.Put(static_cast<uint32_t>(PROT_READ | (exec ? PROT_EXEC : 0))).Put(uint32_t{MAP_PRIVATE});
  w.PutString(path);
  return w.Done();
}

inline std::vector<uint8_t> CommBytes(uint32_t pid, uint32_t tid, const std::string& comm,
                                      bool exec = false) {
  RecordWriter w(PERF_RECORD_COMM, exec ? PERF_RECORD_MISC_COMM_EXEC : 0);
  w.Put(pid).Put(tid).PutString(comm);
  return w.Done();
}

inline std::vector<uint8_t> TaskBytes(bool exit, uint32_t pid, uint32_t tid, uint64_t time_ns = 0) {
  RecordWriter w(exit ? PERF_RECORD_EXIT : PERF_RECORD_FORK);
  w.Put(pid).Put(uint32_t{1}).Put(tid).Put(uint32_t{1}).Put(time_ns);
  return w.Done();
}

}  // namespace warpscope::agent::cpu_profiler::testing

#endif  // WARPSCOPE_AGENT_SOURCES_CPU_PROFILER_TESTING_RECORD_WRITER_H_

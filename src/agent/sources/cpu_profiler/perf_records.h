// SPDX-License-Identifier: Apache-2.0
// The perf_event records the CPU profiler reads from its ring buffers, parsed from their raw
// bytes (linux/perf_event.h, "struct perf_event_header" and the PERF_RECORD_* layouts) into
// plain structs. Pure functions over byte spans: the ring reader (perf_api.h) and the tests
// (canned records, testing/record_writer.h) feed them.
//
// Samples are parsed for exactly the sample_type the profiler asks for (event_config.h,
// kSampleType): TID | TIME | CPU | PERIOD | CALLCHAIN | REGS_USER | STACK_USER, in the kernel's
// order.
#ifndef WARPSCOPE_AGENT_SOURCES_CPU_PROFILER_PERF_RECORDS_H_
#define WARPSCOPE_AGENT_SOURCES_CPU_PROFILER_PERF_RECORDS_H_

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "base/status.h"

namespace warpscope::agent::cpu_profiler {

// The user registers a sample carries (x86-64), as perf's PERF_REG_X86_* numbers them.
enum class UserReg : uint8_t {
  kAx = 0,
  kBx = 1,
  kCx = 2,
  kDx = 3,
  kSi = 4,
  kDi = 5,
  kBp = 6,
  kSp = 7,
  kIp = 8,
  kR8 = 16,
  kR9,
  kR10,
  kR11,
  kR12,
  kR13,
  kR14,
  kR15,
};
// The REGS_USER mask the profiler asks for: the 17 general registers DWARF CFI may name
// (flags and segment registers are never needed to unwind).
inline constexpr uint64_t kUserRegsMask = 0x1ffull | (0xffull << 16);
inline constexpr int kUserRegCount = 17;

// The registers of one sample in DWARF numbering for x86-64 (rax rdx rcx rbx rsi rdi rbp rsp
// r8..r15 rip = 0..16), the order libdwfl's set_initial_registers takes.
using DwarfRegs = std::array<uint64_t, kUserRegCount>;

struct SampleRecord {
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint64_t time_ns = 0;  // CLOCK_MONOTONIC (attr.use_clockid)
  uint32_t cpu = 0;
  uint64_t period = 0;  // CPU time this sample stands for, ns (the cpu-clock event's period)
  std::vector<uint64_t> kernel_ips;  // leaf first, PERF_CONTEXT_* markers removed
  bool has_user_regs = false;        // false for a kernel thread (abi NONE)
  DwarfRegs regs{};
  std::vector<uint8_t> stack;  // the user stack from regs[rsp], dyn_size bytes
};

struct MmapRecord {
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint64_t start = 0;
  uint64_t length = 0;
  uint64_t file_offset = 0;
  uint64_t inode = 0;      // 0 for PERF_RECORD_MMAP (no inode in that layout)
  bool executable = true;  // PERF_RECORD_MMAP2 prot has PROT_EXEC; MMAP is sent for exec maps
  std::string path;
};

struct CommRecord {
  uint32_t pid = 0;
  uint32_t tid = 0;
  bool exec = false;  // PERF_RECORD_MISC_COMM_EXEC: the process replaced its image
  std::string comm;
};

struct TaskRecord {  // PERF_RECORD_FORK or PERF_RECORD_EXIT
  bool exit = false;
  uint32_t pid = 0;
  uint32_t ppid = 0;
  uint32_t tid = 0;
  uint32_t ptid = 0;
  uint64_t time_ns = 0;
};

struct LostRecord {
  uint64_t lost = 0;
};

// Records of other types are counted and skipped.
struct OtherRecord {
  uint32_t type = 0;
};

using Record =
    std::variant<SampleRecord, MmapRecord, CommRecord, TaskRecord, LostRecord, OtherRecord>;

// Parses one record: `bytes` starts with its perf_event_header and holds exactly header.size
// bytes. InvalidArgument (naming the record type and the field) for a record shorter than its
// layout says.
[[nodiscard]] base::Result<Record> ParseRecord(std::span<const uint8_t> bytes);

}  // namespace warpscope::agent::cpu_profiler

#endif  // WARPSCOPE_AGENT_SOURCES_CPU_PROFILER_PERF_RECORDS_H_

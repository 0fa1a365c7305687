// SPDX-License-Identifier: Apache-2.0
// The small seam between the CPU profiler and the perf_event syscalls: opening one sampling
// event (perf_event_open + its mmap'ed ring buffer) and draining its records. The Linux
// implementation is LinuxPerfEventApi(); tests use testing/fake_perf_api.h, which serves
// canned records, so the sampler's pipeline runs without a kernel.
//
// Also here: the event's perf_event_attr as a pure function (BuildSamplingAttr) and the parsing
// of /sys/devices/system/cpu/online.
//
// Thread contract: a PerfRing is used by one thread at a time (the sampler's reader thread).
#ifndef WARPSCOPE_AGENT_SOURCES_CPU_PROFILER_PERF_API_H_
#define WARPSCOPE_AGENT_SOURCES_CPU_PROFILER_PERF_API_H_

#include <linux/perf_event.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace warpscope::agent::cpu_profiler {

// What each sample carries (perf_records.h parses exactly this).
inline constexpr uint64_t kSampleType = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
                                        PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN |
                                        PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
// The kernel keeps a sample record under 64 KiB (perf_event_header.size is 16 bits): the stack
// copy must leave room for the rest of the record.
inline constexpr uint32_t kMaxStackBytes = 60 * 1024;
inline constexpr uint32_t kMinStackBytes = 512;

struct SamplingConfig {
  uint32_t frequency_hz = 19;
  uint32_t stack_bytes = 16 * 1024;  // multiple of 8, kMinStackBytes..kMaxStackBytes
  // Follow new threads and children. Only for per-CPU events: the kernel refuses to map the
  // ring of an inherited event with cpu -1.
  bool inherit = false;
};

// The attr of one sampling event: software CPU clock at `frequency_hz`, the sample layout
// above (kernel callchain only: the user part is unwound from the stack copy), mmap2, comm
// (with exec) and task records, CLOCK_MONOTONIC timestamps, a wakeup per sample. Pure.
perf_event_attr BuildSamplingAttr(const SamplingConfig& config);

// "0-3,5,7-8" -> {0,1,2,3,5,7,8}; InvalidArgument for malformed text.
[[nodiscard]] base::Result<std::vector<int>> ParseCpuList(std::string_view text);

class PerfRing {
 public:
  virtual ~PerfRing() = default;
  PerfRing(const PerfRing&) = delete;
  PerfRing& operator=(const PerfRing&) = delete;

  // The event's fd, to poll() for readability; -1 when there is none (fakes).
  virtual int fd() const = 0;
  // Calls `on_record` with each whole record in the ring (header included, contiguous even when
  // it wraps), in order, and frees their space. Returns the number of records.
  virtual size_t Drain(const std::function<void(std::span<const uint8_t>)>& on_record) = 0;

 protected:
  PerfRing() = default;
};

class PerfEventApi {
 public:
  virtual ~PerfEventApi() = default;
  PerfEventApi(const PerfEventApi&) = delete;
  PerfEventApi& operator=(const PerfEventApi&) = delete;

  // perf_event_open(attr, pid, cpu) and a ring of `ring_pages` (a power of two) data pages,
  // enabled. PermissionDenied (errno EACCES/EPERM, the message naming pid and cpu),
  // NotFound (ESRCH: the task is gone), Unsupported (ENOENT/EOPNOTSUPP) or Internal.
  [[nodiscard]] virtual base::Result<std::unique_ptr<PerfRing>> Open(const perf_event_attr& attr,
                                                                     int pid, int cpu,
                                                                     size_t ring_pages) = 0;
  // The online CPUs.
  [[nodiscard]] virtual base::Result<std::vector<int>> OnlineCpus() = 0;

 protected:
  PerfEventApi() = default;
};

// The kernel's: reads <host_root>/sys/devices/system/cpu/online.
std::unique_ptr<PerfEventApi> LinuxPerfEventApi(std::string host_root = "/");

}  // namespace warpscope::agent::cpu_profiler

#endif  // WARPSCOPE_AGENT_SOURCES_CPU_PROFILER_PERF_API_H_

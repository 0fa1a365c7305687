// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/cpu_profiler/perf_api.h"

#include <errno.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <charconv>
#include <cstring>
#include <ctime>

#include "agent/sources/cpu_profiler/perf_records.h"
#include "base/file_util.h"

namespace warpscope::agent::cpu_profiler {

perf_event_attr BuildSamplingAttr(const SamplingConfig& config) {
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof(attr));
  attr.size = sizeof(attr);
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_CPU_CLOCK;
  attr.freq = 1;
  attr.sample_freq = config.frequency_hz;
  attr.sample_type = kSampleType;
  attr.sample_regs_user = kUserRegsMask;
  attr.sample_stack_user = config.stack_bytes;
  attr.exclude_callchain_user = 1;  // user frames come from the stack copy
  attr.disabled = 1;                // enabled once its ring is mapped
  attr.inherit = config.inherit ? 1 : 0;
  attr.mmap = 1;
  attr.mmap2 = 1;
  attr.comm = 1;
  attr.comm_exec = 1;
  attr.task = 1;
  attr.use_clockid = 1;
  attr.clockid = CLOCK_MONOTONIC;
  attr.wakeup_events = 1;
  return attr;
}

base::Result<std::vector<int>> ParseCpuList(std::string_view text) {
  std::vector<int> cpus;
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) {
    text.remove_suffix(1);
  }
  if (text.empty()) {
    return base::Error(base::InvalidArgument("CPU list is empty"));
  }
  while (!text.empty()) {
    const size_t comma = text.find(',');
    std::string_view part = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    int lo = 0;
    int hi = 0;
    const size_t dash = part.find('-');
    std::string_view a = part.substr(0, dash);
    std::string_view b = dash == std::string_view::npos ? a : part.substr(dash + 1);
    auto r1 = std::from_chars(a.data(), a.data() + a.size(), lo);
    auto r2 = std::from_chars(b.data(), b.data() + b.size(), hi);
    if (a.empty() || b.empty() || r1.ec != std::errc() || r1.ptr != a.data() + a.size() ||
        r2.ec != std::errc() || r2.ptr != b.data() + b.size() || lo < 0 || hi < lo || hi > 65535) {
      return base::Error(base::InvalidArgument("CPU list part '{}' is malformed", part));
    }
    for (int cpu = lo; cpu <= hi; ++cpu) {
      cpus.push_back(cpu);
    }
  }
  return cpus;
}

namespace {

class LinuxRing final : public PerfRing {
 public:
  LinuxRing(int fd, void* base, size_t data_size, size_t page_size)
      : fd_(fd), base_(static_cast<uint8_t*>(base)), data_size_(data_size), page_(page_size) {}
  ~LinuxRing() override {
    munmap(base_, data_size_ + page_);
    close(fd_);
  }

  int fd() const override { return fd_; }

  size_t Drain(const std::function<void(std::span<const uint8_t>)>& on_record) override {
    auto* meta = reinterpret_cast<perf_event_mmap_page*>(base_);
    const uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
    uint64_t tail = meta->data_tail;
    const uint8_t* data = base_ + page_;
    size_t count = 0;
    while (tail + sizeof(perf_event_header) <= head) {
      perf_event_header header;
      CopyOut(data, tail, &header, sizeof(header));
      if (header.size < sizeof(header) || tail + header.size > head) {
        break;  // cannot happen with a sane kernel; stop rather than loop
      }
      const size_t offset = tail % data_size_;
      if (offset + header.size <= data_size_) {
        on_record({data + offset, header.size});
      } else {
        scratch_.resize(header.size);
        CopyOut(data, tail, scratch_.data(), header.size);
        on_record({scratch_.data(), header.size});
      }
      tail += header.size;
      ++count;
    }
    __atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
    return count;
  }

 private:
  void CopyOut(const uint8_t* data, uint64_t pos, void* out, size_t n) const {
    const size_t offset = pos % data_size_;
    const size_t first = std::min(n, data_size_ - offset);
    std::memcpy(out, data + offset, first);
    std::memcpy(static_cast<uint8_t*>(out) + first, data, n - first);
  }

  int fd_;
  uint8_t* base_;
  size_t data_size_;
  size_t page_;
  std::vector<uint8_t> scratch_;
};

class LinuxApi final : public PerfEventApi {
 public:
  explicit LinuxApi(std::string host_root) : host_root_(std::move(host_root)) {}

  base::Result<std::unique_ptr<PerfRing>> Open(const perf_event_attr& attr_in, int pid, int cpu,
                                               size_t ring_pages) override {
    perf_event_attr attr = attr_in;
    const long fd = syscall(SYS_perf_event_open, &attr, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0) {
      const int err = errno;
      const std::string what =
          fmt::format("perf_event_open(pid={}, cpu={}): {}", pid, cpu, std::strerror(err));
      switch (err) {
        case EACCES:
        case EPERM:
          return base::Error(base::PermissionDenied("{}", what));
        case ESRCH:
          return base::Error(base::NotFound("{}", what));
        case ENOENT:
        case EOPNOTSUPP:
        case ENODEV:
          return base::Error(base::Unsupported("{}", what));
        default:
          return base::Error(base::Internal("{}", what));
      }
    }
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const size_t data_size = ring_pages * page;
    void* base = mmap(nullptr, data_size + page, PROT_READ | PROT_WRITE, MAP_SHARED,
                      static_cast<int>(fd), 0);
    if (base == MAP_FAILED) {
      const int err = errno;
      close(static_cast<int>(fd));
      return base::Error(base::ErrStatus(
          err == EPERM ? base::StatusCode::kPermissionDenied : base::StatusCode::kInternal,
          "mmap of the perf ring (pid={}, cpu={}, {} KiB): {}; raise kernel.perf_event_mlock_kb "
          "or lower the ring size",
          pid, cpu, data_size / 1024, std::strerror(err)));
    }
    auto ring = std::make_unique<LinuxRing>(static_cast<int>(fd), base, data_size, page);
    if (ioctl(static_cast<int>(fd), PERF_EVENT_IOC_ENABLE, 0) != 0) {
      return base::Error(base::Internal("PERF_EVENT_IOC_ENABLE(pid={}, cpu={}): {}", pid, cpu,
                                        std::strerror(errno)));
    }
    return std::unique_ptr<PerfRing>(std::move(ring));
  }

  base::Result<std::vector<int>> OnlineCpus() override {
    const std::string path = host_root_ + "/sys/devices/system/cpu/online";
    auto text = base::ReadFile(path);
    if (!text) {
      return base::Error(text.error().WithContext(path));
    }
    return ParseCpuList(*text);
  }

 private:
  std::string host_root_;
};

}  // namespace

std::unique_ptr<PerfEventApi> LinuxPerfEventApi(std::string host_root) {
  return std::make_unique<LinuxApi>(std::move(host_root));
}

}  // namespace warpscope::agent::cpu_profiler

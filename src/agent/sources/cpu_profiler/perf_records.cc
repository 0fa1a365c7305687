// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/cpu_profiler/perf_records.h"

#include <linux/perf_event.h>
#include <sys/mman.h>

#include <bit>
#include <cstring>

namespace warpscope::agent::cpu_profiler {
namespace {

// Reads fields in order from a record's bytes; any read past the end sets `short_`.
class Cursor {
 public:
  explicit Cursor(std::span<const uint8_t> bytes) : bytes_(bytes) {}

  template <typename T>
  T Get() {
    T value{};
    if (pos_ + sizeof(T) > bytes_.size()) {
      short_ = true;
      pos_ = bytes_.size();
      return value;
    }
    std::memcpy(&value, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return value;
  }
  std::span<const uint8_t> Take(uint64_t n) {
    if (n > bytes_.size() - pos_) {
      short_ = true;
      pos_ = bytes_.size();
      return {};
    }
    std::span<const uint8_t> out = bytes_.subspan(pos_, n);
    pos_ += n;
    return out;
  }
  // A NUL-padded string up to the end of the record (filename, comm); sample_id_all trailers
  // are not asked for, so nothing follows it.
  std::string CString() {
    std::span<const uint8_t> rest = bytes_.subspan(pos_);
    size_t n = 0;
    while (n < rest.size() && rest[n] != 0) {
      ++n;
    }
    pos_ = bytes_.size();
    return std::string(reinterpret_cast<const char*>(rest.data()), n);
  }
  bool short_read() const { return short_; }

 private:
  std::span<const uint8_t> bytes_;
  size_t pos_ = 0;
  bool short_ = false;
};

// perf's register index -> DWARF x86-64 register number.
constexpr int DwarfNumber(int perf_reg) {
  switch (perf_reg) {
    case 0:
      return 0;  // ax
    case 3:
      return 1;  // dx
    case 2:
      return 2;  // cx
    case 1:
      return 3;  // bx
    case 4:
      return 4;  // si
    case 5:
      return 5;  // di
    case 6:
      return 6;  // bp
    case 7:
      return 7;  // sp
    case 8:
      return 16;  // ip
    default:
      return perf_reg >= 16 && perf_reg <= 23 ? perf_reg - 8 : -1;  // r8..r15
  }
}

base::Result<Record> Short(std::string_view what) {
  return base::Error(base::InvalidArgument("perf record {}: shorter than its layout", what));
}

base::Result<Record> ParseSample(Cursor& c) {
  SampleRecord s;
  s.pid = c.Get<uint32_t>();
  s.tid = c.Get<uint32_t>();
  s.time_ns = c.Get<uint64_t>();
  s.cpu = c.Get<uint32_t>();
  c.Get<uint32_t>();  // res
  s.period = c.Get<uint64_t>();
  const uint64_t nr = c.Get<uint64_t>();
  if (c.short_read() || nr > 4096) {
    return Short("SAMPLE (callchain)");
  }
  bool kernel_part = true;
  for (uint64_t i = 0; i < nr; ++i) {
    const uint64_t ip = c.Get<uint64_t>();
    if (ip >= PERF_CONTEXT_MAX) {  // a context marker: which part of the chain follows
      kernel_part = ip == PERF_CONTEXT_KERNEL;
      continue;
    }
    if (kernel_part) {
      s.kernel_ips.push_back(ip);
    }
  }
  const uint64_t abi = c.Get<uint64_t>();
  if (abi != PERF_SAMPLE_REGS_ABI_NONE) {
    s.has_user_regs = true;
    for (int bit = 0; bit < 64; ++bit) {
      if ((kUserRegsMask >> bit & 1) == 0) {
        continue;
      }
      const uint64_t value = c.Get<uint64_t>();
      const int dwarf = DwarfNumber(bit);
      if (dwarf >= 0) {
        s.regs[static_cast<size_t>(dwarf)] = value;
      }
    }
  }
  const uint64_t size = c.Get<uint64_t>();
  if (size > 0) {
    std::span<const uint8_t> data = c.Take(size);
    const uint64_t dyn_size = c.Get<uint64_t>();
    if (c.short_read()) {
      return Short("SAMPLE (stack)");
    }
    s.stack.assign(data.begin(), data.begin() + static_cast<long>(std::min(dyn_size, size)));
  }
  if (c.short_read()) {
    return Short("SAMPLE");
  }
  return Record(std::move(s));
}

}  // namespace

base::Result<Record> ParseRecord(std::span<const uint8_t> bytes) {
  Cursor c(bytes);
  const auto header = c.Get<perf_event_header>();
  if (c.short_read() || header.size != bytes.size()) {
    return base::Error(base::InvalidArgument("perf record: header size {} for {} bytes",
                                             header.size, bytes.size()));
  }
  switch (header.type) {
    case PERF_RECORD_SAMPLE:
      return ParseSample(c);
    case PERF_RECORD_MMAP:
    case PERF_RECORD_MMAP2: {
      const bool v2 = header.type == PERF_RECORD_MMAP2;
      MmapRecord m;
      m.pid = c.Get<uint32_t>();
      m.tid = c.Get<uint32_t>();
      m.start = c.Get<uint64_t>();
      m.length = c.Get<uint64_t>();
      m.file_offset = c.Get<uint64_t>();
      if (v2) {
        c.Get<uint32_t>();  // maj
        c.Get<uint32_t>();  // min
        m.inode = c.Get<uint64_t>();
        c.Get<uint64_t>();  // ino_generation
        const uint32_t prot = c.Get<uint32_t>();
        c.Get<uint32_t>();  // flags
        m.executable = (prot & PROT_EXEC) != 0;
      }
      if (c.short_read()) {
        return Short(v2 ? "MMAP2" : "MMAP");
      }
      m.path = c.CString();
      return Record(std::move(m));
    }
    case PERF_RECORD_COMM: {
      CommRecord r;
      r.pid = c.Get<uint32_t>();
      r.tid = c.Get<uint32_t>();
      r.exec = (header.misc & PERF_RECORD_MISC_COMM_EXEC) != 0;
      if (c.short_read()) {
        return Short("COMM");
      }
      r.comm = c.CString();
      return Record(std::move(r));
    }
    case PERF_RECORD_FORK:
    case PERF_RECORD_EXIT: {
      TaskRecord t;
      t.exit = header.type == PERF_RECORD_EXIT;
      t.pid = c.Get<uint32_t>();
      t.ppid = c.Get<uint32_t>();
      t.tid = c.Get<uint32_t>();
      t.ptid = c.Get<uint32_t>();
      t.time_ns = c.Get<uint64_t>();
      if (c.short_read()) {
        return Short(t.exit ? "EXIT" : "FORK");
      }
      return Record(t);
    }
    case PERF_RECORD_LOST: {
      c.Get<uint64_t>();  // id
      LostRecord l{c.Get<uint64_t>()};
      if (c.short_read()) {
        return Short("LOST");
      }
      return Record(l);
    }
    default:
      return Record(OtherRecord{header.type});
  }
}

}  // namespace warpscope::agent::cpu_profiler

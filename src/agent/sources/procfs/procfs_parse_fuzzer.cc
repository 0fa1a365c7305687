// SPDX-License-Identifier: Apache-2.0
// Fuzz target for the /proc, /sys and /etc parsers of procfs_parse.h (docs/design/fuzzing.md).
// Every input is given to every parser: the corpus holds real file samples of each kind, and a
// parser must survive any other file's bytes as well.
//
// Invariants, beyond "no crash, leak, overflow or exception":
//   - Views in the results (comm, device, interface, base name, ...) lie inside the input.
//   - /proc/stat: per-CPU numbers are in [0, kMaxCpus), the aggregate line has cpu == -1, and
//     true is only returned with an aggregate line.
//   - meminfo: every value present comes from a line of the input with that key, scaled by
//     1024 exactly when the unit is kB (so no silent wrap-around).
//   - loadavg: finite and non-negative.
//   - diskstats / net/dev: non-empty names without ' ', '\t' or '\n' (net/dev: no ':').
//   - cgroup: ids are either empty or well-formed (64 lowercase hex, pod UID, decimal job id).
//   - cmdline: at most max_bytes, no NUL, no trailing space, a prefix of the NUL-to-space input,
//     the whole input when it fits, and never cut inside a UTF-8 sequence (input that is not
//     UTF-8 may be cut shorter, down to nothing).
//   - passwd: user names are non-empty and hold no ':' or newline.
#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "agent/sources/procfs/procfs_parse.h"
#include "fuzz/fuzz_check.h"

namespace {

namespace procfs = ::warpscope::agent::procfs;
using warpscope::fuzz::IsWithin;
using warpscope::fuzz::Quote;

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsLowerHex(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f'); }

// The separators of the line-and-field formats (other control bytes may appear in names).
bool HasSeparator(std::string_view s) { return s.find_first_of(" \t\n") != s.npos; }

void CheckProcStat(std::string_view text) {
  auto st = procfs::ParseProcStat(text);
  if (!st) {
    return;
  }
  const size_t open = text.find('(');
  const size_t close = text.rfind(')');
  WARPSCOPE_FUZZ_CHECK(open != text.npos && close != text.npos && open < close,
                       "ParseProcStat accepted {} without '(' ... ')'", Quote(text));
  WARPSCOPE_FUZZ_CHECK(st->comm.data() == text.data() + open + 1 &&
                           st->comm.size() == close - open - 1,
                       "comm {} is not the text between the first '(' and the last ')' of {}",
                       Quote(st->comm), Quote(text));
}

void CheckCpuStat(std::string_view text) {
  procfs::CpuTimes total;
  std::vector<procfs::CpuTimes> per_cpu(3);  // stale content must be cleared
  bool ok = procfs::ParseCpuStat(text, total, per_cpu);
  WARPSCOPE_FUZZ_CHECK(total.cpu == -1, "aggregate line has cpu {}", total.cpu);
  for (const procfs::CpuTimes& cpu : per_cpu) {
    WARPSCOPE_FUZZ_CHECK(cpu.cpu >= 0 && cpu.cpu < procfs::kMaxCpus,
                         "cpu number {} out of [0, {}) in {}", cpu.cpu, procfs::kMaxCpus,
                         Quote(text));
  }
  if (ok) {
    WARPSCOPE_FUZZ_CHECK(text.find("cpu") != text.npos, "ParseCpuStat true without a cpu line");
  }
  for (size_t m = 0; m <= procfs::kCpuModeCount; ++m) {
    WARPSCOPE_FUZZ_CHECK(!procfs::CpuModeName(m).empty(), "empty name for mode {}", m);
  }
}

// True when some "key: N [unit]" line of `text` gives exactly `value`.
bool MeminfoLineGives(std::string_view text, std::string_view key, uint64_t value) {
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == text.npos ? text.size() : nl + 1);
    if (!line.starts_with(key) || line.size() <= key.size() || line[key.size()] != ':') {
      continue;
    }
    std::string_view rest = line.substr(key.size() + 1);
    size_t b = rest.find_first_not_of(" \t");
    if (b == rest.npos) {
      continue;
    }
    rest.remove_prefix(b);
    size_t e = rest.find_first_of(" \t");
    std::string_view number = rest.substr(0, e);
    std::string_view after = e == rest.npos ? std::string_view() : rest.substr(e);
    size_t u = after.find_first_not_of(" \t");
    std::string_view unit = u == after.npos ? std::string_view() : after.substr(u);
    unit = unit.substr(0, unit.find_first_of(" \t"));
    // Compared as value / scale == number, which cannot overflow.
    const uint64_t scale = unit == "kB" ? 1024 : 1;
    uint64_t written = 0;
    auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), written);
    if (ec == std::errc() && ptr == number.data() + number.size() && value % scale == 0 &&
        value / scale == written) {
      return true;
    }
  }
  return false;
}

void CheckMeminfo(std::string_view text) {
  auto info = procfs::ParseMeminfo(text);
  if (!info) {
    return;
  }
  const std::pair<std::string_view, const std::optional<uint64_t>*> fields[] = {
      {"MemTotal", &info->mem_total},   {"MemFree", &info->mem_free},
      {"MemAvailable", &info->mem_available}, {"Buffers", &info->buffers},
      {"Cached", &info->cached},        {"SwapTotal", &info->swap_total},
      {"SwapFree", &info->swap_free},
  };
  WARPSCOPE_FUZZ_CHECK(info->mem_total && info->mem_free, "MemTotal/MemFree missing but accepted");
  for (const auto& [key, value] : fields) {
    if (*value) {
      WARPSCOPE_FUZZ_CHECK(MeminfoLineGives(text, key, **value),
                           "{} = {} bytes matches no line of {}", key, **value, Quote(text));
    }
  }
}

void CheckLoadavg(std::string_view text) {
  auto load = procfs::ParseLoadavg(text);
  if (!load) {
    return;
  }
  for (double v : {load->load1, load->load5, load->load15}) {
    WARPSCOPE_FUZZ_CHECK(v >= 0 && v <= std::numeric_limits<double>::max(),
                         "load average {} from {}", v, Quote(text));
  }
}

void CheckDiskstats(std::string_view text) {
  std::vector<procfs::DiskStats> disks(2);
  (void)procfs::ParseDiskstats(text, disks);
  for (const procfs::DiskStats& d : disks) {
    WARPSCOPE_FUZZ_CHECK(!d.device.empty() && !HasSeparator(d.device) && IsWithin(d.device, text),
                         "bad device name {} from {}", Quote(d.device), Quote(text));
    if (procfs::LooksLikePartition(d.device)) {
      WARPSCOPE_FUZZ_CHECK(IsDigit(d.device.back()), "partition {} ends without a digit",
                           Quote(d.device));
    }
  }
}

void CheckNetDev(std::string_view text) {
  std::vector<procfs::NetDevStats> devs(2);
  (void)procfs::ParseNetDev(text, devs);
  static const std::vector<std::string> kPatterns = {"veth*", "lo"};
  for (const procfs::NetDevStats& d : devs) {
    WARPSCOPE_FUZZ_CHECK(!d.interface.empty() && d.interface.find(':') == d.interface.npos &&
                             d.interface.find('\n') == d.interface.npos &&
                             d.interface.front() != ' ' && d.interface.back() != ' ' &&
                             IsWithin(d.interface, text),
                         "bad interface name {} from {}", Quote(d.interface), Quote(text));
    bool excluded = procfs::MatchesAnyPattern(d.interface, kPatterns);
    WARPSCOPE_FUZZ_CHECK(excluded == (d.interface.starts_with("veth") || d.interface == "lo"),
                         "MatchesAnyPattern({}) = {}", Quote(d.interface), excluded);
  }
}

void CheckCgroupIds(const procfs::CgroupIds& ids, std::string_view text) {
  const std::string& c = ids.container_id;
  WARPSCOPE_FUZZ_CHECK(c.empty() || (c.size() == 64 && std::all_of(c.begin(), c.end(), IsLowerHex) &&
                                     text.find(c) != text.npos),
                       "container id {} from {}", Quote(c), Quote(text));
  const std::string& p = ids.pod_uid;
  bool pod_ok = p.empty() || (p.size() == 32 && std::all_of(p.begin(), p.end(), IsLowerHex));
  if (p.size() == 36) {
    pod_ok = true;
    for (size_t i = 0; i < p.size(); ++i) {
      bool dash = i == 8 || i == 13 || i == 18 || i == 23;
      pod_ok = pod_ok && (dash ? p[i] == '-' : IsLowerHex(p[i]));
    }
  }
  WARPSCOPE_FUZZ_CHECK(pod_ok, "pod uid {} from {}", Quote(p), Quote(text));
  const std::string& j = ids.slurm_job;
  WARPSCOPE_FUZZ_CHECK(j.empty() || (std::all_of(j.begin(), j.end(), IsDigit) &&
                                     text.find("job_" + j) != text.npos),
                       "slurm job {} from {}", Quote(j), Quote(text));
}

void CheckCmdline(std::string_view raw, size_t max_bytes) {
  const std::string out = procfs::JoinCmdline(raw, max_bytes);
  std::string spaced(raw);
  for (char& ch : spaced) {
    if (ch == '\0') {
      ch = ' ';
    }
  }
  std::string_view trimmed = spaced;
  while (!trimmed.empty() && trimmed.back() == ' ') {
    trimmed.remove_suffix(1);
  }
  WARPSCOPE_FUZZ_CHECK(out.size() <= max_bytes, "JoinCmdline(max_bytes={}) returned {} bytes",
                       max_bytes, out.size());
  WARPSCOPE_FUZZ_CHECK(out.find('\0') == out.npos && (out.empty() || out.back() != ' '),
                       "JoinCmdline output {} has a NUL or a trailing space", Quote(out));
  WARPSCOPE_FUZZ_CHECK(std::string_view(spaced).starts_with(out),
                       "JoinCmdline output {} is not a prefix of {}", Quote(out), Quote(spaced));
  if (trimmed.size() <= max_bytes) {
    WARPSCOPE_FUZZ_CHECK(out == trimmed, "JoinCmdline(max_bytes={}) cut {} to {}", max_bytes,
                         Quote(trimmed), Quote(out));
  } else {
    // What follows the output is a trimmed space or the first byte left out, which must not be
    // a UTF-8 continuation byte (10xxxxxx) - unless the cut backed up to the start, which
    // happens only when every byte up to the limit is one (the input is not UTF-8).
    WARPSCOPE_FUZZ_CHECK(out.empty() ||
                             (static_cast<unsigned char>(spaced[out.size()]) & 0xC0) != 0x80,
                         "JoinCmdline(max_bytes={}) split a UTF-8 sequence: {}", max_bytes,
                         Quote(out));
  }
}

void CheckPaths(std::string_view text) {
  std::string_view stripped = procfs::StripDeletedSuffix(text);
  WARPSCOPE_FUZZ_CHECK(stripped.data() == text.data() && stripped.size() <= text.size() &&
                           (stripped.size() == text.size() || text.ends_with(" (deleted)")),
                       "StripDeletedSuffix({}) = {}", Quote(text), Quote(stripped));
  std::string_view base = procfs::BaseName(text);
  WARPSCOPE_FUZZ_CHECK(IsWithin(base, text) && base.find('/') == base.npos &&
                           base.data() + base.size() == text.data() + text.size(),
                       "BaseName({}) = {}", Quote(text), Quote(base));
}

void CheckPasswd(std::string_view text) {
  for (const auto& [uid, name] : procfs::ParsePasswd(text)) {
    WARPSCOPE_FUZZ_CHECK(!name.empty() && name.find(':') == name.npos &&
                             name.find('\n') == name.npos,
                         "user name {} for uid {}", Quote(name), uid);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = warpscope::fuzz::AsText(data, size);
  CheckProcStat(text);
  CheckCpuStat(text);
  CheckMeminfo(text);
  CheckLoadavg(text);
  CheckDiskstats(text);
  CheckNetDev(text);
  (void)procfs::ParseProcStatus(text);
  CheckCgroupIds(procfs::ParseCgroupFile(text), text);
  CheckCgroupIds(procfs::ParseCgroupPath(text), text);
  CheckCmdline(text, 256);
  CheckCmdline(text, size > 0 ? data[0] : 0);
  CheckCmdline(text, std::numeric_limits<size_t>::max());
  CheckPaths(text);
  CheckPasswd(text);
  return 0;
}

// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/procfs/procfs_parse.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include "base/file_util.h"

namespace warpscope::agent::procfs {
namespace {

constexpr std::string_view kSpaces = " \t";

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsLowerHex(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f'); }

// Returns the next whitespace-separated token of `s` and advances `s` past it; "" at the end.
std::string_view NextToken(std::string_view& s) {
  size_t b = s.find_first_not_of(kSpaces);
  if (b == std::string_view::npos) {
    s = {};
    return {};
  }
  size_t e = s.find_first_of(kSpaces, b);
  if (e == std::string_view::npos) e = s.size();
  std::string_view token = s.substr(b, e - b);
  s.remove_prefix(e);
  return token;
}

// Returns the next line (without '\n') and advances `s`; check `s.empty()` before calling.
std::string_view NextLine(std::string_view& s) {
  size_t e = s.find('\n');
  std::string_view line = s.substr(0, e);
  s.remove_prefix(e == std::string_view::npos ? s.size() : e + 1);
  return line;
}

template <typename T>
bool ParseInt(std::string_view s, T& out) {
  if (s.empty()) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

// A finite, non-negative decimal number (from_chars alone would also take "nan", "inf", "-1").
bool ParseNonNegativeDouble(std::string_view s, double& out) {
  if (s.empty()) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && ptr == s.data() + s.size() && std::isfinite(out) && out >= 0;
}

bool IsHex64(std::string_view s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!IsLowerHex(c)) return false;
  }
  return true;
}

bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!IsDigit(c)) return false;
  }
  return true;
}

std::string_view StripSuffix(std::string_view s, std::string_view suffix) {
  return s.ends_with(suffix) ? s.substr(0, s.size() - suffix.size()) : s;
}

// A Kubernetes pod UID: an RFC 4122 UUID, or the 32-hex hash kubelet gives static pods.
bool IsPodUid(std::string_view s) {
  if (s.size() == 32) {
    for (char c : s) {
      if (!IsLowerHex(c)) return false;
    }
    return true;
  }
  if (s.size() != 36) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    bool dash_position = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash_position ? s[i] != '-' : !IsLowerHex(s[i])) return false;
  }
  return true;
}

// The container id a cgroup path component names, or "".
std::string_view ContainerIdInComponent(std::string_view c) {
  // containerd with the systemd driver on cgroup v1 writes "<slice>:cri-containerd:<id>".
  size_t colon = c.rfind(':');
  if (colon != std::string_view::npos) c.remove_prefix(colon + 1);
  c = StripSuffix(c, ".scope");
  // Runtime monitor processes live in their own scopes and are not the container.
  if (c.starts_with("crio-conmon-") || c.starts_with("libpod-conmon-")) return {};
  for (std::string_view prefix : {"docker-", "cri-containerd-", "crio-", "libpod-"}) {
    if (c.starts_with(prefix)) {
      c.remove_prefix(prefix.size());
      break;
    }
  }
  return IsHex64(c) ? c : std::string_view();
}

// The pod UID a kubepods path component names ("pod<uid>", "kubepods-<qos>-pod<uid>.slice").
std::string PodUidInComponent(std::string_view c) {
  c = c.substr(0, c.find(':'));  // "<pod slice>:cri-containerd:<id>"
  c = StripSuffix(c, ".slice");
  std::string_view rest;
  if (c.starts_with("pod")) {
    rest = c.substr(3);
  } else if (size_t pos = c.rfind("-pod"); pos != std::string_view::npos) {
    rest = c.substr(pos + 4);
  } else {
    return {};
  }
  // The systemd driver cannot use '-' inside a slice name, so kubelet writes '_' instead.
  std::string uid(rest);
  for (char& ch : uid) {
    if (ch == '_') ch = '-';
  }
  return IsPodUid(uid) ? uid : std::string();
}

}  // namespace

// ---- /proc/<pid>/stat -------------------------------------------------------------------------

std::optional<ProcStat> ParseProcStat(std::string_view text) {
  size_t open = text.find('(');
  size_t close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
    return std::nullopt;
  }
  ProcStat st;
  if (!ParseInt(base::TrimWhitespace(text.substr(0, open)), st.pid)) return std::nullopt;
  st.comm = text.substr(open + 1, close - open - 1);
  std::string_view rest = text.substr(close + 1);
  for (int field = 3; field <= 24; ++field) {
    std::string_view token = NextToken(rest);
    if (token.empty()) return std::nullopt;
    bool ok = true;
    switch (field) {
      case 3:
        st.state = token[0];
        break;
      case 4:
        ok = ParseInt(token, st.ppid);
        break;
      case 14:
        ok = ParseInt(token, st.utime_ticks);
        break;
      case 15:
        ok = ParseInt(token, st.stime_ticks);
        break;
      case 20:
        ok = ParseInt(token, st.num_threads);
        break;
      case 22:
        ok = ParseInt(token, st.start_ticks);
        break;
      case 23:
        ok = ParseInt(token, st.vsize_bytes);
        break;
      case 24:
        ok = ParseInt(token, st.rss_pages);
        break;
      default:
        break;
    }
    if (!ok) return std::nullopt;
  }
  return st;
}

// ---- /proc/stat -------------------------------------------------------------------------------

std::string_view CpuModeName(size_t mode) {
  static constexpr std::string_view kNames[kCpuModeCount] = {"user",   "nice", "system",  "idle",
                                                             "iowait", "irq",  "softirq", "steal"};
  return mode < kCpuModeCount ? kNames[mode] : std::string_view("unknown");
}

std::optional<int64_t> ParseBootTime(std::string_view text) {
  while (!text.empty()) {
    std::string_view line = NextLine(text);
    if (NextToken(line) != "btime") continue;
    int64_t seconds = 0;
    if (!ParseInt(NextToken(line), seconds) || seconds <= 0) return std::nullopt;
    return seconds;
  }
  return std::nullopt;
}

bool ParseCpuStat(std::string_view text, CpuTimes& total, std::vector<CpuTimes>& per_cpu) {
  per_cpu.clear();
  total = CpuTimes();
  bool have_total = false;
  bool ok = true;
  while (!text.empty()) {
    std::string_view line = NextLine(text);
    if (!line.starts_with("cpu")) continue;
    std::string_view name = NextToken(line);
    CpuTimes times;
    if (name.size() > 3) {
      if (!ParseInt(name.substr(3), times.cpu) || times.cpu < 0 || times.cpu >= kMaxCpus) {
        ok = false;
        continue;
      }
    }
    size_t columns = 0;
    for (; columns < kCpuModeCount; ++columns) {
      std::string_view token = NextToken(line);
      if (token.empty()) break;
      if (!ParseInt(token, times.ticks[columns])) {
        columns = 0;
        break;
      }
    }
    if (columns < 4) {
      ok = false;
      continue;
    }
    if (times.cpu < 0) {
      total = times;
      have_total = true;
    } else {
      per_cpu.push_back(times);
    }
  }
  return ok && have_total;
}

// ---- /proc/meminfo ----------------------------------------------------------------------------

namespace {
struct MeminfoField {
  std::string_view key;
  std::optional<uint64_t> MemInfo::*member;
};
constexpr MeminfoField kMeminfoFields[] = {
    {"MemTotal", &MemInfo::mem_total},
    {"MemFree", &MemInfo::mem_free},
    {"MemAvailable", &MemInfo::mem_available},
    {"Buffers", &MemInfo::buffers},
    {"Cached", &MemInfo::cached},
    {"SwapTotal", &MemInfo::swap_total},
    {"SwapFree", &MemInfo::swap_free},
};
}  // namespace

std::optional<MemInfo> ParseMeminfo(std::string_view text) {
  MemInfo info;
  while (!text.empty()) {
    std::string_view line = NextLine(text);
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view key = line.substr(0, colon);
    std::optional<uint64_t>* slot = nullptr;
    for (const MeminfoField& field : kMeminfoFields) {
      if (key == field.key) {
        slot = &(info.*field.member);
        break;
      }
    }
    if (slot == nullptr) continue;
    std::string_view rest = line.substr(colon + 1);
    std::string_view number = NextToken(rest);
    std::string_view unit = NextToken(rest);
    uint64_t value = 0;
    if (!ParseInt(number, value)) continue;
    // Every size line of meminfo is in "kB", which the kernel means as KiB.
    if (unit == "kB") {
      if (value > std::numeric_limits<uint64_t>::max() / 1024) continue;  // would wrap
      value *= 1024;
    }
    (*slot) = value;
  }
  if (!info.mem_total || !info.mem_free) return std::nullopt;
  return info;
}

// ---- /proc/loadavg ----------------------------------------------------------------------------

std::optional<LoadAvg> ParseLoadavg(std::string_view text) {
  LoadAvg load;
  if (!ParseNonNegativeDouble(NextToken(text), load.load1) ||
      !ParseNonNegativeDouble(NextToken(text), load.load5) ||
      !ParseNonNegativeDouble(NextToken(text), load.load15)) {
    return std::nullopt;
  }
  return load;
}

// ---- /proc/diskstats --------------------------------------------------------------------------

bool ParseDiskstats(std::string_view text, std::vector<DiskStats>& out) {
  out.clear();
  bool ok = true;
  while (!text.empty()) {
    std::string_view line = NextLine(text);
    if (base::TrimWhitespace(line).empty()) continue;
    std::string_view tokens[13];
    size_t n = 0;
    while (n < 13) {
      std::string_view token = NextToken(line);
      if (token.empty()) break;
      tokens[n++] = token;
    }
    // Fields 1-13 are needed; since Linux 2.6.25 every line has at least 14.
    DiskStats d;
    d.device = n > 2 ? tokens[2] : std::string_view();
    if (n < 13 || !ParseInt(tokens[3], d.reads_completed) || !ParseInt(tokens[5], d.sectors_read) ||
        !ParseInt(tokens[7], d.writes_completed) || !ParseInt(tokens[9], d.sectors_written) ||
        !ParseInt(tokens[12], d.io_time_ms)) {
      ok = false;
      continue;
    }
    out.push_back(d);
  }
  return ok;
}

// ---- /proc/net/dev ----------------------------------------------------------------------------

bool ParseNetDev(std::string_view text, std::vector<NetDevStats>& out) {
  out.clear();
  bool ok = true;
  while (!text.empty()) {
    std::string_view line = NextLine(text);
    if (base::TrimWhitespace(line).empty()) continue;
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
      if (line.find('|') == std::string_view::npos) ok = false;  // not a header line
      continue;
    }
    NetDevStats s;
    s.interface = base::TrimWhitespace(line.substr(0, colon));
    std::string_view rest = line.substr(colon + 1);
    uint64_t v[16];
    size_t n = 0;
    for (; n < 16; ++n) {
      if (!ParseInt(NextToken(rest), v[n])) break;
    }
    if (n < 16 || s.interface.empty()) {
      ok = false;
      continue;
    }
    s.rx_bytes = v[0];
    s.rx_packets = v[1];
    s.rx_errors = v[2];
    s.rx_dropped = v[3];
    s.tx_bytes = v[8];
    s.tx_packets = v[9];
    s.tx_errors = v[10];
    s.tx_dropped = v[11];
    out.push_back(s);
  }
  return ok;
}

// ---- /proc/<pid>/status -----------------------------------------------------------------------

ProcStatus ParseProcStatus(std::string_view text) {
  ProcStatus st;
  while (!text.empty()) {
    std::string_view line = NextLine(text);
    if (line.starts_with("Uid:")) {
      std::string_view rest = line.substr(4);
      uint32_t real = 0;
      uint32_t effective = 0;
      if (ParseInt(NextToken(rest), real)) {
        st.real_uid = real;
        if (ParseInt(NextToken(rest), effective)) st.effective_uid = effective;
      }
    } else if (line.starts_with("NSpid:")) {
      std::string_view rest = line.substr(6);
      for (std::string_view token = NextToken(rest); !token.empty(); token = NextToken(rest)) {
        int pid = 0;
        if (ParseInt(token, pid)) st.innermost_nspid = pid;
      }
    }
  }
  return st;
}

// ---- /proc/<pid>/cgroup -----------------------------------------------------------------------

CgroupIds ParseCgroupPath(std::string_view path) {
  CgroupIds ids;
  bool kubepods = path.find("kubepods") != std::string_view::npos;
  bool slurm = path.find("slurm") != std::string_view::npos;
  std::string_view rest = path;
  while (!rest.empty()) {
    size_t slash = rest.find('/');
    std::string_view c = rest.substr(0, slash);
    rest.remove_prefix(slash == std::string_view::npos ? rest.size() : slash + 1);
    if (c.empty()) continue;
    if (std::string_view id = ContainerIdInComponent(c); !id.empty()) {
      ids.container_id.assign(id);  // innermost wins
    }
    if (kubepods && ids.pod_uid.empty()) {
      ids.pod_uid = PodUidInComponent(c);
    }
    if (slurm && ids.slurm_job.empty() && c.starts_with("job_") && AllDigits(c.substr(4))) {
      ids.slurm_job.assign(c.substr(4));
    }
  }
  return ids;
}

CgroupIds ParseCgroupFile(std::string_view text) {
  CgroupIds ids;
  while (!text.empty()) {
    std::string_view line = NextLine(text);
    // "hierarchy-id:controllers:path"; the path itself may contain ':'.
    size_t first = line.find(':');
    if (first == std::string_view::npos) continue;
    size_t second = line.find(':', first + 1);
    if (second == std::string_view::npos) continue;
    CgroupIds found = ParseCgroupPath(line.substr(second + 1));
    if (ids.container_id.empty()) ids.container_id = std::move(found.container_id);
    if (ids.pod_uid.empty()) ids.pod_uid = std::move(found.pod_uid);
    if (ids.slurm_job.empty()) ids.slurm_job = std::move(found.slurm_job);
  }
  return ids;
}

// ---- cmdline, exe -----------------------------------------------------------------------------

std::string JoinCmdline(std::string_view raw, size_t max_bytes) {
  // One byte past the limit is enough to see whether the cut splits a UTF-8 sequence (and
  // max_bytes + 1 cannot wrap: it is only computed when max_bytes < raw.size()).
  std::string out(raw.substr(0, raw.size() > max_bytes ? max_bytes + 1 : raw.size()));
  for (char& c : out) {
    if (c == '\0') c = ' ';
  }
  if (out.size() > max_bytes) {
    size_t cut = max_bytes;
    // Back up to the lead byte of a UTF-8 sequence that would be split.
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;
    out.resize(cut);
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

std::string_view StripDeletedSuffix(std::string_view link_target) {
  return StripSuffix(link_target, " (deleted)");
}

std::string_view BaseName(std::string_view path) {
  size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// ---- /etc/passwd ------------------------------------------------------------------------------

std::unordered_map<uint32_t, std::string> ParsePasswd(std::string_view text) {
  std::unordered_map<uint32_t, std::string> users;
  while (!text.empty()) {
    std::string_view line = NextLine(text);
    if (line.empty() || line.front() == '#') continue;
    size_t c1 = line.find(':');
    if (c1 == std::string_view::npos || c1 == 0) continue;
    size_t c2 = line.find(':', c1 + 1);
    if (c2 == std::string_view::npos) continue;
    size_t c3 = line.find(':', c2 + 1);
    if (c3 == std::string_view::npos) continue;
    uint32_t uid = 0;
    if (!ParseInt(line.substr(c2 + 1, c3 - c2 - 1), uid)) continue;
    users.try_emplace(uid, line.substr(0, c1));
  }
  return users;
}

// ---- device filters ---------------------------------------------------------------------------

bool MatchesAnyPattern(std::string_view name, const std::vector<std::string>& patterns) {
  for (const std::string& p : patterns) {
    std::string_view pattern = p;
    if (pattern.ends_with('*')) {
      if (name.starts_with(pattern.substr(0, pattern.size() - 1))) return true;
    } else if (name == pattern) {
      return true;
    }
  }
  return false;
}

bool LooksLikePartition(std::string_view device) {
  if (device.empty() || !IsDigit(device.back())) return false;
  size_t digits = device.size();
  while (digits > 0 && IsDigit(device[digits - 1])) --digits;
  std::string_view stem = device.substr(0, digits);
  // nvme0n1p2, mmcblk0p1, nbd0p1, loop0p1: "p<N>" after a unit number.
  if (stem.size() >= 2 && stem.back() == 'p' && IsDigit(stem[stem.size() - 2])) return true;
  // sda1, hdb2, vdc3, xvda1: a letter-suffixed disk name followed by the partition number.
  for (std::string_view prefix : {"sd", "hd", "vd", "xvd"}) {
    if (stem.size() > prefix.size() && stem.starts_with(prefix)) {
      std::string_view letters = stem.substr(prefix.size());
      bool all_letters = true;
      for (char c : letters) {
        if (c < 'a' || c > 'z') all_letters = false;
      }
      if (all_letters) return true;
    }
  }
  return false;
}

}  // namespace warpscope::agent::procfs

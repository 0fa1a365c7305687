// SPDX-License-Identifier: Apache-2.0
#include "pyframes/remote_process.h"

#include <fcntl.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "pyframes/elf_lookup.h"

namespace warpscope::pyframes {
namespace {

constexpr size_t kMaxMapsBytes = 64 << 20;
constexpr size_t kMaxCandidates = 8;

bool ReadWholeFile(const std::string& path, size_t limit, std::string* out) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return false;
  }
  out->clear();
  char buf[16384];
  ssize_t got;
  while ((got = read(fd, buf, sizeof(buf))) > 0 && out->size() < limit) {
    out->append(buf, static_cast<size_t>(got));
  }
  close(fd);
  return got == 0 || out->size() >= limit;
}

bool Hex(std::string_view s, uint64_t* v) {
  const auto r = std::from_chars(s.data(), s.data() + s.size(), *v, 16);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

// Splits off the next space-separated field of `s`.
std::string_view Field(std::string_view* s) {
  while (!s->empty() && s->front() == ' ') {
    s->remove_prefix(1);
  }
  const size_t sp = s->find(' ');
  const std::string_view f = s->substr(0, sp);
  s->remove_prefix(sp == std::string_view::npos ? s->size() : sp);
  return f;
}

// libpython3.x.so* or python3.x: the files that may hold the interpreter (extension modules,
// "*.cpython-311-x86_64-linux-gnu.so", never do).
bool LooksLikePython(std::string_view path) {
  const size_t slash = path.rfind('/');
  const std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  return base.starts_with("libpython") || base.starts_with("python");
}

struct Candidate {
  std::string path;
  uint64_t dev = 0;
  uint64_t inode = 0;
};

// The symbols the probe looks for, in this order.
enum Sym { kRuntime, kCodeType, kUnicodeType, kVersion, kIsNone, kFrameGetCode, kSymCount };
const std::vector<std::string_view>& SymbolNames() {
  static const std::vector<std::string_view> names = {
      "_PyRuntime",     "PyCode_Type", "PyUnicode_Type", "Py_Version",
      "Py_IsNone",       // added in 3.10
      "PyFrame_GetCode"  // added in 3.9
  };
  return names;
}

}  // namespace

const char* RemoteProbeName(RemoteProbe p) {
  switch (p) {
    case RemoteProbe::kNoProcess:
      return "no such process";
    case RemoteProbe::kNotPython:
      return "not a CPython process";
    case RemoteProbe::kReady:
      return "ready";
    case RemoteProbe::kUnsupported:
      return "unsupported CPython";
  }
  return "?";
}

bool ParseMapsLine(std::string_view line, MapsEntry* out) {
  // start-end perms offset major:minor inode [path]
  const std::string_view range = Field(&line);
  const std::string_view perms = Field(&line);
  const std::string_view offset = Field(&line);
  const std::string_view dev = Field(&line);
  const std::string_view inode = Field(&line);
  const size_t dash = range.find('-');
  const size_t colon = dev.find(':');
  uint64_t major = 0;
  uint64_t minor = 0;
  if (dash == std::string_view::npos || colon == std::string_view::npos || perms.size() < 4 ||
      !Hex(range.substr(0, dash), &out->start) || !Hex(range.substr(dash + 1), &out->end) ||
      !Hex(offset, &out->offset) || !Hex(dev.substr(0, colon), &major) ||
      !Hex(dev.substr(colon + 1), &minor)) {
    return false;
  }
  const auto r = std::from_chars(inode.data(), inode.data() + inode.size(), out->inode);
  if (r.ec != std::errc()) {
    return false;
  }
  out->dev = major << 32 | minor;
  out->exec = perms[2] == 'x';
  while (!line.empty() && line.front() == ' ') {
    line.remove_prefix(1);
  }
  out->path = line;
  return true;
}

bool ReadStartTime(const std::string& proc_root, pid_t pid, uint64_t* out) {
  std::string stat;
  if (!ReadWholeFile(proc_root + "/" + std::to_string(pid) + "/stat", 4096, &stat)) {
    return false;
  }
  // The command name (field 2) is in parentheses and may hold spaces or ')': skip to the last.
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) {
    return false;
  }
  std::string_view rest = std::string_view(stat).substr(close + 1);
  for (int field = 3; field < 22; ++field) {
    if (Field(&rest).empty()) {
      return false;
    }
  }
  const std::string_view start = Field(&rest);
  return std::from_chars(start.data(), start.data() + start.size(), *out).ec == std::errc();
}

bool MappingStillThere(const std::string& proc_root, pid_t pid, uint64_t start, uint64_t dev,
                       uint64_t inode) {
  FILE* f = std::fopen((proc_root + "/" + std::to_string(pid) + "/maps").c_str(), "re");
  if (f == nullptr) {
    return false;
  }
  char* line = nullptr;
  size_t cap = 0;
  bool there = false;
  ssize_t len;
  while ((len = getline(&line, &cap, f)) > 0) {
    MapsEntry e;
    if (ParseMapsLine(std::string_view(line, static_cast<size_t>(len)), &e) && e.start >= start) {
      there = e.start == start && e.dev == dev && e.inode == inode;
      break;
    }
  }
  std::free(line);
  std::fclose(f);
  return there;
}

// One function on purpose: the probe is a short sequence of steps sharing the maps and the
// symbol values; each step's failure is a distinct answer.
RemoteProbe ProbeRemotePython(const std::string& proc_root, pid_t pid, MemoryReader& mem,
                              RemotePython* out, ProbeCost* cost, ProbeFileCache* files) {
  ProbeCost local_cost;
  ProbeCost& c = cost != nullptr ? *cost : local_cost;
  *out = RemotePython{};
  out->pid = pid;
  const std::string dir = proc_root + "/" + std::to_string(pid);
  std::string maps;
  if (!ReadStartTime(proc_root, pid, &out->start_time) ||
      !ReadWholeFile(dir + "/maps", kMaxMapsBytes, &maps)) {
    return RemoteProbe::kNoProcess;
  }
  char exe[4096];
  const ssize_t exe_len = readlink((dir + "/exe").c_str(), exe, sizeof(exe) - 1);
  const std::string_view exe_path(exe, exe_len > 0 ? static_cast<size_t>(exe_len) : 0);

  // Candidates: files named like python (libpython3.x.so, python3.x) first, then the main
  // executable (a program that links CPython statically).
  std::vector<Candidate> candidates;
  std::vector<MapsEntry> entries;
  Candidate exe_candidate;
  for (size_t at = 0; at < maps.size();) {
    const size_t nl = maps.find('\n', at);
    const std::string_view line(maps.data() + at,
                                (nl == std::string::npos ? maps.size() : nl) - at);
    at = nl == std::string::npos ? maps.size() : nl + 1;
    MapsEntry e;
    if (!ParseMapsLine(line, &e) || e.inode == 0 || e.path.empty() || e.path.front() != '/') {
      continue;
    }
    entries.push_back(e);
    const bool known = [&] {
      for (const Candidate& k : candidates) {
        if (k.inode == e.inode && k.dev == e.dev) {
          return true;
        }
      }
      return false;
    }();
    if (!known && LooksLikePython(e.path) && candidates.size() < kMaxCandidates) {
      candidates.push_back({std::string(e.path), e.dev, e.inode});
    } else if (e.path == exe_path && exe_candidate.path.empty()) {
      exe_candidate = {std::string(e.path), e.dev, e.inode};
    }
  }
  if (!exe_candidate.path.empty() && !LooksLikePython(exe_candidate.path)) {
    candidates.push_back(exe_candidate);
  }
  std::vector<uint64_t> sym;
  const Candidate* found = nullptr;
  std::string file;
  for (const Candidate& k : candidates) {
    if (files != nullptr && files->KnownWithoutPython(k.dev, k.inode)) {
      continue;
    }
    for (const std::string& p : {dir + "/root" + k.path, k.path}) {
      ++c.elf_files_read;
      if (LookupElfSymbols(p, SymbolNames(), LooksLikePython(k.path), &sym) == ElfError::kOk) {
        file = p;
        break;
      }
    }
    if (!file.empty() && sym[kRuntime] != 0 && sym[kCodeType] != 0 && sym[kUnicodeType] != 0) {
      found = &k;
      break;
    }
    if (!file.empty() && files != nullptr) {
      files->AddWithoutPython(k.dev, k.inode);  // read, and no interpreter in it
    }
    file.clear();
  }
  if (found == nullptr) {
    return RemoteProbe::kNotPython;
  }
  out->path = found->path;
  out->dev = found->dev;
  out->inode = found->inode;
  ElfInfo info;
  ++c.elf_files_read;
  if (ReadElfInfo(file, &info) != ElfError::kOk) {
    return RemoteProbe::kNotPython;
  }
  out->build_id = info.build_id;
  bool have_bias = false;
  for (const MapsEntry& e : entries) {
    if (e.inode == found->inode && e.dev == found->dev &&
        LoadBias(info, e.start, e.offset, &out->bias)) {
      have_bias = true;
      out->map_start = e.start;
      break;
    }
  }
  if (!have_bias) {
    return RemoteProbe::kNotPython;
  }
  out->runtime = out->bias + sym[kRuntime];
  out->interp.code_type = out->bias + sym[kCodeType];
  out->interp.unicode_type = out->bias + sym[kUnicodeType];
  out->major = 3;
  if (sym[kVersion] != 0) {  // Py_Version: PY_VERSION_HEX as data (3.11+)
    uint64_t hex = 0;
    ++c.memory_reads;
    if (!mem.Read(out->bias + sym[kVersion], &hex, sizeof(hex))) {
      out->error = LayoutError::kUnreadable;
      return RemoteProbe::kUnsupported;
    }
    out->major = static_cast<int>((hex >> 24) & 0xff);
    out->minor = static_cast<int>((hex >> 16) & 0xff);
  } else {
    out->minor = sym[kIsNone] != 0 ? 10 : sym[kFrameGetCode] != 0 ? 9 : 8;  // 8: or older
  }
  if (out->major == 3 && out->minor >= 13) {
    ++c.memory_reads;
    out->error =
        LayoutFromDebugOffsets(mem, out->runtime, out->major, out->minor, &out->interp.layout);
  } else {
    out->error = LayoutForVersion(out->major, out->minor, &out->interp.layout);
  }
  return out->error == LayoutError::kOk ? RemoteProbe::kReady : RemoteProbe::kUnsupported;
}

}  // namespace warpscope::pyframes

// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/cpu_profiler/perf_maps.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>

#include "base/file_util.h"

namespace warpscope::agent::cpu_profiler {
namespace {

using profiling::PerfMapSymbol;

bool ByStart(const PerfMapSymbol& a, const PerfMapSymbol& b) { return a.start < b.start; }

}  // namespace

PerfMaps::PerfMaps(Options options) : options_(std::move(options)) {
  while (!options_.host_root.empty() && options_.host_root.back() == '/') {
    options_.host_root.pop_back();
  }
}

PerfMaps::Map& PerfMaps::Get(uint32_t pid) {
  auto it = maps_.find(pid);
  if (it == maps_.end()) {
    if (maps_.size() >= options_.max_processes) {
      auto oldest = std::min_element(maps_.begin(), maps_.end(), [](const auto& a, const auto& b) {
        return a.second.last_use < b.second.last_use;
      });
      maps_.erase(oldest);
    }
    it = maps_.emplace(pid, Map{}).first;
    // The JIT names the file by its own pid: the innermost namespace's, NSpid's last field.
    uint32_t nspid = pid;
    const std::string proc = fmt::format("{}/proc/{}", options_.host_root, pid);
    if (auto status = base::ReadFile(proc + "/status", 1 << 16)) {
      for (std::string_view line : base::SplitString(*status, "\n")) {
        if (line.rfind("NSpid:", 0) == 0) {
          std::vector<std::string_view> ids = base::SplitString(line.substr(6), " \t");
          if (!ids.empty()) {
            std::from_chars(ids.back().data(), ids.back().data() + ids.back().size(), nspid);
          }
        }
      }
    }
    it->second.path = fmt::format("{}/root/tmp/perf-{}.map", proc, nspid);
  }
  it->second.last_use = ++clock_;
  return it->second;
}

void PerfMaps::Refresh(Map& map) {
  const int fd = open(map.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return;  // none, or gone with its process: what was read stays
  }
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    close(fd);
    return;
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (st.st_dev != map.dev || st.st_ino != map.inode || size < map.consumed) {
    Map fresh;
    fresh.path = std::move(map.path);
    fresh.dev = st.st_dev;
    fresh.inode = st.st_ino;
    fresh.checked_window = map.checked_window;
    fresh.last_use = map.last_use;
    map = std::move(fresh);
  }
  const uint64_t end = std::min(size, options_.max_bytes);
  if (size > end && !map.capped) {
    map.capped = true;
    ++stats_.capped_files;
  }
  if (end <= map.consumed) {
    close(fd);
    return;
  }
  std::string text(end - map.consumed, '\0');
  const ssize_t n = pread(fd, text.data(), text.size(), static_cast<off_t>(map.consumed));
  close(fd);
  if (n <= 0) {
    return;
  }
  text.resize(static_cast<size_t>(n));
  const size_t last_newline = text.rfind('\n');
  if (last_newline == std::string::npos) {
    return;  // a line being written: next window
  }
  text.resize(last_newline + 1);
  map.consumed += text.size();
  ++stats_.reads;
  std::vector<PerfMapSymbol> added = profiling::ParsePerfMap(text);  // sorted, stable
  const size_t room = options_.max_entries - std::min(options_.max_entries, map.symbols.size());
  if (added.size() > room) {
    stats_.dropped_symbols += added.size() - room;
    added.resize(room);
  }
  stats_.symbols += added.size();
  const size_t mid = map.symbols.size();
  map.symbols.insert(map.symbols.end(), std::make_move_iterator(added.begin()),
                     std::make_move_iterator(added.end()));
  // Stable: for equal starts the later line stays after, so lookups find the newest code.
  std::inplace_merge(map.symbols.begin(), map.symbols.begin() + static_cast<long>(mid),
                     map.symbols.end(), ByStart);
}

const PerfMapSymbol* PerfMaps::Find(uint32_t pid, uint64_t address) {
  Map& map = Get(pid);
  if (map.checked_window != window_) {
    map.checked_window = window_;
    Refresh(map);
  }
  auto it = std::upper_bound(map.symbols.begin(), map.symbols.end(), address,
                             [](uint64_t a, const PerfMapSymbol& s) { return a < s.start; });
  if (it == map.symbols.begin()) {
    return nullptr;
  }
  --it;
  return address - it->start < it->size ? &*it : nullptr;
}

}  // namespace warpscope::agent::cpu_profiler

// SPDX-License-Identifier: Apache-2.0
#include "profiling/symbolizer.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <charconv>

#include "base/file_util.h"

namespace warpscope::profiling {
namespace {

bool ParseHex(std::string_view text, uint64_t& out) {
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    text.remove_prefix(2);
  }
  if (text.empty()) {
    return false;
  }
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out, 16);
  return ec == std::errc() && ptr == text.data() + text.size();
}

// Splits off the next whitespace-separated field of `line`.
std::string_view NextField(std::string_view& line) {
  size_t begin = line.find_first_not_of(" \t");
  if (begin == std::string_view::npos) {
    line = {};
    return {};
  }
  line.remove_prefix(begin);
  size_t end = line.find_first_of(" \t");
  std::string_view field = line.substr(0, end);
  line.remove_prefix(end == std::string_view::npos ? line.size() : end);
  return field;
}

std::string_view Basename(std::string_view path) {
  size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

struct FileStamp {
  uint64_t dev = 0;
  uint64_t inode = 0;
  int64_t size = -1;
  int64_t mtime_ns = -1;
};

bool StatFile(const std::string& path, FileStamp& out) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return false;
  }
  out.dev = st.st_dev;
  out.inode = st.st_ino;
  out.size = st.st_size;
  out.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  return true;
}

}  // namespace

std::vector<MapEntry> ParseProcMaps(std::string_view text) {
  std::vector<MapEntry> out;
  for (std::string_view line : base::SplitString(text, "\n")) {
    std::string_view rest = line;
    std::string_view range = NextField(rest);
    std::string_view perms = NextField(rest);
    std::string_view offset = NextField(rest);
    std::string_view dev = NextField(rest);
    std::string_view inode = NextField(rest);
    size_t dash = range.find('-');
    MapEntry e;
    if (dash == std::string_view::npos || perms.size() < 4 || dev.empty() ||
        !ParseHex(range.substr(0, dash), e.start) || !ParseHex(range.substr(dash + 1), e.end) ||
        !ParseHex(offset, e.file_offset) || e.end <= e.start) {
      continue;
    }
    auto [ptr, ec] = std::from_chars(inode.data(), inode.data() + inode.size(), e.inode);
    if (ec != std::errc()) {
      continue;
    }
    e.executable = perms[2] == 'x';
    e.path = std::string(base::TrimWhitespace(rest));
    out.push_back(std::move(e));
  }
  std::sort(out.begin(), out.end(),
            [](const MapEntry& a, const MapEntry& b) { return a.start < b.start; });
  return out;
}

std::vector<PerfMapSymbol> ParsePerfMap(std::string_view text) {
  std::vector<PerfMapSymbol> out;
  for (std::string_view line : base::SplitString(text, "\n")) {
    std::string_view rest = line;
    PerfMapSymbol s;
    if (!ParseHex(NextField(rest), s.start) || !ParseHex(NextField(rest), s.size)) {
      continue;
    }
    std::string_view name = base::TrimWhitespace(rest);
    if (name.empty() || s.size == 0) {
      continue;
    }
    s.name = std::string(name);
    out.push_back(std::move(s));
  }
  std::stable_sort(out.begin(), out.end(), [](const PerfMapSymbol& a, const PerfMapSymbol& b) {
    return a.start < b.start;
  });
  return out;
}

Symbolizer::Symbolizer(Options options) : options_(std::move(options)) {
  while (options_.host_root.size() > 1 && options_.host_root.back() == '/') {
    options_.host_root.pop_back();
  }
  if (options_.host_root == "/") {
    options_.host_root.clear();
  }
  debug_root_ = options_.debug_root.empty() ? options_.host_root + "/usr/lib/debug"
                                            : options_.debug_root;
}

Symbolizer::~Symbolizer() = default;

std::string Symbolizer::ProcPath(pid_t pid, std::string_view rest) const {
  return fmt::format("{}/proc/{}/{}", options_.host_root, pid, rest);
}

Symbolizer::ProcessEntry& Symbolizer::Process(pid_t pid) {
  auto it = processes_.find(pid);
  if (it == processes_.end()) {
    if (processes_.size() >= options_.max_processes) {
      // Evict the least recently used process; rare (max_processes live injected processes).
      auto oldest = std::min_element(
          processes_.begin(), processes_.end(),
          [](const auto& a, const auto& b) { return a.second.last_use < b.second.last_use; });
      processes_.erase(oldest);
    }
    it = processes_.emplace(pid, ProcessEntry{}).first;
  }
  it->second.last_use = ++use_clock_;
  return it->second;
}

void Symbolizer::LoadMaps(pid_t pid, ProcessEntry& process) {
  ++stats_.maps_reads;
  auto text = base::ReadFile(ProcPath(pid, "maps"));
  if (!text && process.maps_loaded) {
    // The process exited: the maps it had still describe the addresses it sent before.
    return;
  }
  process.maps_loaded = true;
  process.maps = text ? ParseProcMaps(*text) : std::vector<MapEntry>{};
  process.elf.assign(process.maps.size(), MappedElf{});
}

void Symbolizer::RefreshPerfMap(pid_t pid, ProcessEntry& process) {
  if (process.perf_map_path.empty()) {
    if (!options_.perf_map_dir.empty()) {
      process.perf_map_path = fmt::format("{}/perf-{}.map", options_.perf_map_dir, pid);
    } else {
      // The JIT names the file by its own (namespace) pid: the last NSpid entry.
      pid_t nspid = pid;
      if (auto status = base::ReadFile(ProcPath(pid, "status"))) {
        for (std::string_view line : base::SplitString(*status, "\n")) {
          if (line.rfind("NSpid:", 0) == 0) {
            std::vector<std::string_view> ids = base::SplitString(line.substr(6), " \t");
            if (!ids.empty()) {
              std::from_chars(ids.back().data(), ids.back().data() + ids.back().size(), nspid);
            }
          }
        }
      }
      process.perf_map_path = ProcPath(pid, fmt::format("root/tmp/perf-{}.map", nspid));
    }
  }
  FileStamp stamp;
  if (!StatFile(process.perf_map_path, stamp)) {
    process.perf_map.clear();
    process.perf_map_size = -1;
    process.perf_map_mtime_ns = -1;
    return;
  }
  if (stamp.size == process.perf_map_size && stamp.mtime_ns == process.perf_map_mtime_ns) {
    return;
  }
  ++stats_.perf_map_reads;
  auto text = base::ReadFile(process.perf_map_path, 256u << 20);
  process.perf_map = text ? ParsePerfMap(*text) : std::vector<PerfMapSymbol>{};
  process.perf_map_size = stamp.size;
  process.perf_map_mtime_ns = stamp.mtime_ns;
}

Symbolizer::MappedElf Symbolizer::ElfFor(pid_t pid, const MapEntry& map) {
  // Open through the process's root first so files of another mount namespace (containers)
  // are the ones the process mapped; fall back to the host's view of the path.
  std::string path = map.path;
  constexpr std::string_view kDeleted = " (deleted)";
  if (path.size() > kDeleted.size() && path.ends_with(kDeleted)) {
    path.resize(path.size() - kDeleted.size());
  }
  std::string candidates[] = {ProcPath(pid, "root") + path, options_.host_root + path};
  for (const std::string& candidate : candidates) {
    FileStamp stamp;
    if (!StatFile(candidate, stamp)) {
      continue;
    }
    ElfKey key{stamp.dev, stamp.inode, stamp.size, stamp.mtime_ns};
    auto mapped = [&](std::shared_ptr<const ElfSymbols> symbols) {
      MappedElf out;
      out.path = candidate;
      out.dwarf_key = symbols != nullptr && !symbols->build_id().empty()
                          ? symbols->build_id()
                          : fmt::format("{}:{}:{}:{}", key.dev, key.inode, key.size, key.mtime_ns);
      out.symbols = std::move(symbols);
      out.tried = true;
      return out;
    };
    auto it = elf_cache_.find(key);
    if (it != elf_cache_.end()) {
      elf_lru_.splice(elf_lru_.begin(), elf_lru_, it->second.lru);
      return mapped(it->second.symbols);
    }
    ++stats_.elf_loads;
    std::shared_ptr<const ElfSymbols> symbols;
    auto loaded = ElfSymbols::Load(candidate);
    if (loaded) {
      auto shared = std::make_shared<ElfSymbols>(std::move(*loaded));
      const std::string& build_id = shared->build_id();
      auto same = build_id.empty() ? nullptr : by_build_id_[build_id].lock();
      if (same != nullptr) {
        symbols = same;  // the same file seen through another path or container
      } else {
        if (!shared->has_symtab() && build_id.size() > 2) {
          std::string debug = fmt::format("{}/.build-id/{}/{}.debug", debug_root_,
                                          build_id.substr(0, 2), build_id.substr(2));
          if (auto extra = ElfSymbols::Load(debug)) {
            shared->MergeSymbolsFrom(*extra);
          }
        }
        symbols = shared;
        if (!build_id.empty()) {
          by_build_id_[build_id] = symbols;
        }
      }
    } else {
      ++stats_.elf_failures;
    }
    elf_lru_.push_front(key);
    elf_cache_[key] = ElfEntry{symbols, elf_lru_.begin()};
    while (elf_cache_.size() > options_.max_elf_files && !elf_lru_.empty()) {
      elf_cache_.erase(elf_lru_.back());
      elf_lru_.pop_back();
    }
    return mapped(std::move(symbols));
  }
  ++stats_.elf_failures;
  MappedElf none;
  none.tried = true;
  return none;
}

DwarfLines* Symbolizer::DwarfFor(const MappedElf& elf, const std::string& module) {
  auto it = dwarf_cache_.find(elf.dwarf_key);
  if (it != dwarf_cache_.end()) {
    dwarf_lru_.splice(dwarf_lru_.begin(), dwarf_lru_, it->second.lru);
    return it->second.lines.get();
  }
  ++stats_.dwarf_loads;
  DwarfEntry entry;
  entry.module = module;
  DwarfLines::Options options;
  options.debug_root = debug_root_;
  options.max_cached_addresses = options_.max_addresses_per_file;
  auto opened = DwarfLines::Open(elf.path, module, options);
  if (opened) {
    entry.lines = std::move(*opened);
  } else if (opened.error().code() != base::StatusCode::kNotFound) {
    ++stats_.dwarf_failures;
    entry.error = opened.error().message();
  }
  dwarf_lru_.push_front(elf.dwarf_key);
  entry.lru = dwarf_lru_.begin();
  DwarfLines* out = entry.lines.get();
  dwarf_cache_.emplace(elf.dwarf_key, std::move(entry));
  while (dwarf_cache_.size() > options_.max_dwarf_files && !dwarf_lru_.empty()) {
    dwarf_cache_.erase(dwarf_lru_.back());
    dwarf_lru_.pop_back();
  }
  return out;
}

void Symbolizer::AddLines(const MappedElf& elf, const std::string& module, uint64_t vaddr,
                          NativeFrame& frame) {
  DwarfLines* dwarf = DwarfFor(elf, module);
  if (dwarf == nullptr) {
    return;
  }
  uint64_t misses = dwarf->lookups();
  const std::vector<SourceFrame>& lines = dwarf->Lookup(vaddr);
  stats_.line_lookups += dwarf->lookups() - misses;
  if (lines.empty()) {
    return;
  }
  // The last entry is the function the code was compiled into: the symbol table names it; the
  // DWARF's name only stands in where no symbol covers the address (a stripped static function).
  const SourceFrame& outer = lines.back();
  if (!frame.resolved && !outer.function.empty()) {
    frame.function = outer.function;
    frame.resolved = true;
  }
  frame.file = outer.file;
  frame.line = outer.line;
  frame.inlined.assign(lines.begin(), lines.end() - 1);
  if (!frame.file.empty()) {
    ++stats_.with_lines;
  }
}

std::map<std::string, std::string> Symbolizer::debug_info_errors() const {
  std::map<std::string, std::string> out;
  for (const auto& [key, entry] : dwarf_cache_) {
    if (!entry.error.empty()) {
      out[entry.module] = entry.error;
    } else if (entry.lines != nullptr && !entry.lines->lookup_error().empty()) {
      out[entry.module] = entry.lines->lookup_error();
    }
  }
  return out;
}

NativeFrame Symbolizer::Resolve(pid_t pid, ProcessEntry& process, uint64_t address, bool& reread) {
  NativeFrame frame;
  frame.address = address;
  auto find_map = [&]() -> long {
    auto it = std::upper_bound(process.maps.begin(), process.maps.end(), address,
                               [](uint64_t a, const MapEntry& m) { return a < m.start; });
    if (it == process.maps.begin() || address >= (it - 1)->end) {
      return -1;
    }
    return static_cast<long>(it - 1 - process.maps.begin());
  };
  long index = find_map();
  if (index < 0 && !reread && !process.maps_pinned) {
    reread = true;  // the process may have mapped a new library (dlopen) since we read maps
    LoadMaps(pid, process);
    index = find_map();
  }
  const MapEntry* map = index >= 0 ? &process.maps[static_cast<size_t>(index)] : nullptr;
  bool file_backed = map != nullptr && !map->path.empty() && map->path[0] == '/';
  // JIT code lives in anonymous memory or in files that are not ELF (memfd, /tmp images):
  // the process's perf map names it.
  auto from_perf_map = [&]() {
    if (!options_.perf_maps) {
      return false;
    }
    RefreshPerfMap(pid, process);
    auto it = std::upper_bound(process.perf_map.begin(), process.perf_map.end(), address,
                               [](uint64_t a, const PerfMapSymbol& s) { return a < s.start; });
    if (it == process.perf_map.begin() || address >= (it - 1)->start + (it - 1)->size) {
      return false;
    }
    frame.function = (it - 1)->name;
    frame.mangled = (it - 1)->name;
    frame.module = "[jit]";
    frame.module_offset = address - (it - 1)->start;
    frame.build_id.clear();
    frame.resolved = true;
    frame.jit = true;
    return true;
  };
  if (!file_backed) {
    if (from_perf_map()) {
      return frame;
    }
    if (map == nullptr) {
      frame.function = fmt::format("[unknown] 0x{:x}", address);
    } else {
      frame.module = map->path;
      frame.module_offset = address - map->start;
      frame.function = fmt::format("[unknown] {}+0x{:x}", map->path.empty() ? "[anon]" : map->path,
                                   frame.module_offset);
    }
    return frame;
  }
  size_t i = static_cast<size_t>(index);
  if (!process.elf[i].tried) {
    process.elf[i] = ElfFor(pid, *map);
  }
  const MappedElf& mapped = process.elf[i];
  const ElfSymbols* elf = mapped.symbols.get();
  uint64_t file_offset = address - map->start + map->file_offset;
  if (elf == nullptr && from_perf_map()) {
    return frame;
  }
  frame.module = map->path;
  frame.module_offset = file_offset;
  if (elf != nullptr) {
    frame.build_id = elf->build_id();
    if (auto vaddr = elf->FileOffsetToVaddr(file_offset)) {
      frame.module_offset = *vaddr;
      if (const ElfSymbols::Symbol* sym = elf->Find(*vaddr)) {
        frame.mangled = sym->name;
        frame.function = Demangle(sym->name);
        frame.resolved = true;
      }
      if (options_.source_lines) {
        AddLines(mapped, map->path, *vaddr, frame);
      }
      if (frame.resolved) {
        if (frame.mangled.empty()) {
          frame.mangled = frame.function;  // named by the DWARF only
        }
        return frame;
      }
    }
  }
  frame.function = fmt::format("[unknown] {}+0x{:x}", Basename(map->path), frame.module_offset);
  return frame;
}

std::vector<NativeFrame> Symbolizer::Symbolize(pid_t pid, std::span<const uint64_t> addresses) {
  std::vector<NativeFrame> out;
  out.reserve(addresses.size());
  ProcessEntry& process = Process(pid);
  bool reread = false;
  if (!process.maps_loaded) {
    LoadMaps(pid, process);
    reread = true;
  }
  for (uint64_t address : addresses) {
    ++stats_.addresses;
    out.push_back(Resolve(pid, process, address, reread));
    if (!out.back().resolved) {
      ++stats_.unresolved;
    }
  }
  return out;
}

void Symbolizer::SetProcessMaps(pid_t pid, std::vector<MapEntry> maps) {
  ProcessEntry& process = Process(pid);
  std::sort(maps.begin(), maps.end(),
            [](const MapEntry& a, const MapEntry& b) { return a.start < b.start; });
  if (process.maps_pinned && process.maps == maps) {
    return;  // keep the ELF files already resolved for these mappings
  }
  process.maps = std::move(maps);
  process.maps_loaded = true;
  process.maps_pinned = true;
  process.elf.assign(process.maps.size(), MappedElf{});
}

void Symbolizer::InvalidateProcess(pid_t pid) {
  auto it = processes_.find(pid);
  if (it != processes_.end()) {
    it->second.maps_loaded = false;
    it->second.maps_pinned = false;
    it->second.perf_map_size = -1;
  }
}

void Symbolizer::ForgetProcess(pid_t pid) { processes_.erase(pid); }

std::vector<Frame> ProfileFrames(const NativeFrame& n) {
  std::vector<Frame> chain;
  Frame f;
  f.function = n.function;
  f.system_name = n.mangled != n.function ? n.mangled : "";
  f.module = n.module;
  f.build_id = n.build_id;
  f.kind = FrameKind::kNative;
  f.file = n.file;
  f.line = n.line;
  chain.push_back(std::move(f));
  for (auto in = n.inlined.rbegin(); in != n.inlined.rend(); ++in) {
    Frame g;
    g.function = in->function.empty() ? "[inlined]" : in->function;
    g.file = in->file;
    g.line = in->line;
    g.module = n.module;
    g.build_id = n.build_id;
    g.kind = FrameKind::kNative;
    g.inlined = true;
    chain.push_back(std::move(g));
  }
  return chain;
}

}  // namespace warpscope::profiling

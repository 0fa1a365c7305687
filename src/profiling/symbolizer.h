// SPDX-License-Identifier: Apache-2.0
// Native symbolization for the CUDA kernel profiler, done in the agent so the profiled
// application never pays for it. An address of process `pid` is resolved through
// <host_root>/proc/<pid>/maps to the mapped file and file offset, then through that ELF file's
// PT_LOAD segments and symbol tables (.symtab, else .dynsym, plus a separate debug file found by
// build id under <debug_root>/.build-id/) to a demangled function name, and through the file's
// DWARF (dwarf_lines.h: in the file, or a debug file found by build id or .gnu_debuglink) to its
// source file and line and the functions inlined at the address. Addresses
// in anonymous memory, or in mapped files that are not readable ELF (memfd), are looked up in
// the process's perf map (/tmp/perf-<nspid>.map inside its mount namespace) for JIT code.
//
// Caches: parsed ELF files by (device, inode, size, mtime) and shared by build id; DWARF
// sessions by build id (else file identity), each with its resolved addresses; parsed maps
// and perf maps per pid. A pid's maps are re-read when an address falls outside every mapping
// (at most once per Symbolize call, so a burst of bad addresses costs one re-read; a re-read that
// fails because the process exited keeps the last maps) and when the perf map file changes size
// or mtime. Call ForgetProcess() when a process exits (pids are
// reused).
//
// Thread contract: not thread-safe; one instance belongs to one sequence (the agent's profile
// builder). Symbolize() does file I/O on cache misses only.
#ifndef WARPSCOPE_PROFILING_SYMBOLIZER_H_
#define WARPSCOPE_PROFILING_SYMBOLIZER_H_

#include <sys/types.h>

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "profiling/dwarf_lines.h"
#include "profiling/elf_symbols.h"
#include "profiling/profile.h"

namespace warpscope::profiling {

// One resolved (or not) native frame.
struct NativeFrame {
  uint64_t address = 0;        // as passed in
  std::string function;        // demangled; "[unknown] libfoo.so+0x1a2b" when unresolved
  std::string mangled;         // as in the symbol table; "" when unresolved
  std::string module;          // mapped file path ("/usr/lib/libcuda.so.1"), "[jit]", or ""
  uint64_t module_offset = 0;  // ELF virtual address when known, else file offset
  std::string build_id;        // hex, "" when unknown
  bool resolved = false;
  bool jit = false;  // from a perf map
  // From DWARF when the module has it: the source position of the address in `function`
  // ("" and 0 when unknown) and the functions inlined there, innermost first, each with its own
  // position. With inlined functions, `file`:`line` is the call site of the outermost one.
  std::string file;
  int64_t line = 0;
  std::vector<SourceFrame> inlined;
  bool operator==(const NativeFrame&) const = default;
};

// One line of /proc/<pid>/maps.
struct MapEntry {
  uint64_t start = 0;
  uint64_t end = 0;
  uint64_t file_offset = 0;
  bool executable = false;
  uint64_t inode = 0;
  std::string path;  // "" for anonymous mappings; "[heap]", "[vdso]" as the kernel writes them
  bool operator==(const MapEntry&) const = default;
};

// Parses the text of /proc/<pid>/maps; lines that do not parse are skipped.
std::vector<MapEntry> ParseProcMaps(std::string_view text);

// One line of a perf map: "START SIZE name" (hex, with or without 0x).
struct PerfMapSymbol {
  uint64_t start = 0;
  uint64_t size = 0;
  std::string name;
};
// Parses a perf map file's text, sorted by start; malformed lines are skipped.
std::vector<PerfMapSymbol> ParsePerfMap(std::string_view text);

// The profile frames of one symbolized address, root first: its function (kNative; with file
// and line when DWARF gave them) and the functions inlined there (Frame::inlined).
std::vector<Frame> ProfileFrames(const NativeFrame& n);

class Symbolizer {
 public:
  struct Options {
    std::string host_root = "/";  // like the agent's --host-root: "/host" in a container
    // Directory holding perf-<pid>.map files. Empty: "<host_root>/proc/<pid>/root/tmp" with
    // the process's innermost namespace pid, which is where a containerised JIT writes it.
    std::string perf_map_dir;
    size_t max_elf_files = 512;   // parsed ELF files kept (least recently used go first)
    size_t max_processes = 1024;  // processes whose maps are kept
    bool perf_maps = true;        // false: JIT addresses stay unresolved (the caller names them)
    bool source_lines = true;     // false: no DWARF is read (no file, line or inlined frames)
    // Separate debug files (build-id tree, debuglink copies). "": <host_root>/usr/lib/debug.
    std::string debug_root;
    size_t max_dwarf_files = 64;              // open DWARF sessions (least recently used go)
    size_t max_addresses_per_file = 1 << 16;  // resolved addresses cached per DWARF session
  };

  struct Stats {
    uint64_t addresses = 0;
    uint64_t unresolved = 0;
    uint64_t elf_loads = 0;     // ELF files parsed (cache misses)
    uint64_t elf_failures = 0;  // files that could not be opened or parsed
    uint64_t maps_reads = 0;    // /proc/<pid>/maps reads
    uint64_t perf_map_reads = 0;
    uint64_t dwarf_loads = 0;     // DWARF sessions opened (cache misses), with or without DWARF
    uint64_t dwarf_failures = 0;  // files whose DWARF is corrupt (see debug_info_errors())
    uint64_t line_lookups = 0;    // addresses read from DWARF (per-address cache misses)
    uint64_t with_lines = 0;      // frames given a file and line
  };

  explicit Symbolizer(Options options);
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  // Resolves `addresses` of process `pid` (each looked up as given: pass pc - 1 for return
  // addresses). Always returns one frame per address; an address that cannot be resolved
  // becomes "[unknown] <module basename>+0x<offset>" (or "[unknown] 0x<address>" outside every
  // mapping, e.g. after the process exited).
  std::vector<NativeFrame> Symbolize(pid_t pid, std::span<const uint64_t> addresses);

  // Drops the cached maps of `pid` (re-read on next use), e.g. after dlopen was reported.
  void InvalidateProcess(pid_t pid);
  // Uses `maps` for `pid` instead of reading /proc/<pid>/maps, until InvalidateProcess or
  // ForgetProcess: for a caller that tracks mappings itself (the CPU profiler follows mmap
  // records and symbolizes after the process may have exited).
  void SetProcessMaps(pid_t pid, std::vector<MapEntry> maps);
  // Drops everything about `pid`: it exited.
  void ForgetProcess(pid_t pid);

  const Stats& stats() const { return stats_; }
  // The modules (as mapped) whose DWARF could not be read, with the reason, for those still in
  // the cache: their frames keep the symbol names, without lines.
  std::map<std::string, std::string> debug_info_errors() const;

 private:
  struct ElfKey {
    uint64_t dev = 0;
    uint64_t inode = 0;
    int64_t size = 0;
    int64_t mtime_ns = 0;
    auto operator<=>(const ElfKey&) const = default;
  };
  struct ElfEntry {
    std::shared_ptr<const ElfSymbols> symbols;  // null: the file could not be read
    std::list<ElfKey>::iterator lru;
  };
  struct DwarfEntry {
    std::unique_ptr<DwarfLines> lines;  // null: no DWARF (or unreadable: `error`)
    std::string module;
    std::string error;
    std::list<std::string>::iterator lru;
  };
  // The ELF file behind one mapping, resolved lazily.
  struct MappedElf {
    std::shared_ptr<const ElfSymbols> symbols;  // null: not readable ELF
    std::string path;                           // as opened
    std::string dwarf_key;                      // build id, else the file's identity
    bool tried = false;
  };
  struct ProcessEntry {
    std::vector<MapEntry> maps;  // sorted by start
    bool maps_loaded = false;
    bool maps_pinned = false;  // set by SetProcessMaps: never re-read
    std::string perf_map_path;
    int64_t perf_map_size = -1;
    int64_t perf_map_mtime_ns = -1;
    std::vector<PerfMapSymbol> perf_map;
    std::vector<MappedElf> elf;  // index parallel to `maps`
    uint64_t last_use = 0;
  };

  ProcessEntry& Process(pid_t pid);
  void LoadMaps(pid_t pid, ProcessEntry& process);
  void RefreshPerfMap(pid_t pid, ProcessEntry& process);
  MappedElf ElfFor(pid_t pid, const MapEntry& map);
  DwarfLines* DwarfFor(const MappedElf& elf, const std::string& module);
  void AddLines(const MappedElf& elf, const std::string& module, uint64_t vaddr,
                NativeFrame& frame);
  std::string ProcPath(pid_t pid, std::string_view rest) const;
  NativeFrame Resolve(pid_t pid, ProcessEntry& process, uint64_t address, bool& reread);

  Options options_;
  Stats stats_;
  uint64_t use_clock_ = 0;
  std::unordered_map<pid_t, ProcessEntry> processes_;
  std::map<ElfKey, ElfEntry> elf_cache_;
  std::list<ElfKey> elf_lru_;  // most recently used first
  std::map<std::string, std::weak_ptr<const ElfSymbols>> by_build_id_;
  std::string debug_root_;
  std::unordered_map<std::string, DwarfEntry> dwarf_cache_;
  std::list<std::string> dwarf_lru_;  // most recently used first
};

}  // namespace warpscope::profiling

#endif  // WARPSCOPE_PROFILING_SYMBOLIZER_H_

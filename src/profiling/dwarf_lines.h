// SPDX-License-Identifier: Apache-2.0
// Source file, line and inlined functions of the addresses of one ELF file, from its DWARF
// through libdw (an offline libdwfl session, one per file). The DWARF is in the file itself or in
// a separate debug file, found (and checked against the file's GNU build id when it has one) at
//   <debug_root>/.build-id/xx/yyyy.debug                     (the build id)
//   <dir>/<debuglink>, <dir>/.debug/<debuglink>,             (.gnu_debuglink, <dir> the file's
//   <debug_root>/<logical dir>/<debuglink>                    directory as opened / as mapped)
// as GDB and elfutils look for them; never over the network (no debuginfod). Used by the
// agent-side symbolizer (symbolizer.h); never in the profiled application.
//
// Corrupt or truncated files give an error (Open) or lookups without lines, never a crash:
// libdw checks every offset it reads.
//
// Thread contract: not thread-safe; owned by the symbolizer.
#ifndef WARPSCOPE_PROFILING_DWARF_LINES_H_
#define WARPSCOPE_PROFILING_DWARF_LINES_H_

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/status.h"

namespace warpscope::profiling {

// One function at an address and where in it: the code of the address itself for the innermost
// one, the call site of the next inner one for the others.
struct SourceFrame {
  std::string function;  // demangled; "" when the DWARF does not name it
  std::string file;      // absolute (against the unit's compilation directory), normalised
  int64_t line = 0;      // 0: the compiler tied the code to no line
  bool operator==(const SourceFrame&) const = default;
};

class DwarfLines {
 public:
  struct Options {
    std::string debug_root = "/usr/lib/debug";  // where separate debug files live
    size_t max_cached_addresses = 1 << 16;      // per file; the cache is cleared past it
  };

  // Opens the DWARF of the ELF file at `path` (as this process reads it). `logical_path` is the
  // file's path as the profiled process sees it (for <debug_root>/<dir>/<debuglink>; "" = path).
  // NotFound when neither the file nor a debug file has DWARF (the common case: a stripped
  // library); InvalidArgument naming the file when the file or its DWARF is corrupt.
  [[nodiscard]] static base::Result<std::unique_ptr<DwarfLines>> Open(
      const std::string& path, const std::string& logical_path, const Options& options);

  ~DwarfLines();
  DwarfLines(const DwarfLines&) = delete;
  DwarfLines& operator=(const DwarfLines&) = delete;

  // The functions at link-time virtual address `vaddr`, innermost (inlined) first and the
  // function the code was compiled into last; empty when the DWARF has no line for it. Cached.
  const std::vector<SourceFrame>& Lookup(uint64_t vaddr);

  const std::string& debug_file() const { return debug_file_; }  // "" when in the file itself
  // The first error a lookup met (a corrupt unit); "" when none.
  const std::string& lookup_error() const { return lookup_error_; }
  uint64_t lookups() const { return lookups_; }  // cache misses

 private:
  struct Session;
  DwarfLines() = default;
  std::vector<SourceFrame> Read(uint64_t vaddr);

  std::unique_ptr<Session> session_;
  size_t max_cached_ = 0;
  std::string debug_file_;
  std::string lookup_error_;
  uint64_t lookups_ = 0;
  std::unordered_map<uint64_t, std::vector<SourceFrame>> cache_;
};

}  // namespace warpscope::profiling

#endif  // WARPSCOPE_PROFILING_DWARF_LINES_H_

// SPDX-License-Identifier: Apache-2.0
// File and line of an address of a binary, from its DWARF (or its separate debug file found by
// build id under /usr/lib/debug), through one offline libdwfl session per binary shared by every
// process that maps it: the DWARF of a binary (often compressed) is read once, not once per
// process. Binaries are keyed by build id (else path); at most `max_binaries` are kept open
// (least recently used go first), and binaries without line tables are remembered as such.
//
// Thread contract: not thread-safe; owned by the CPU sampler's thread.
#ifndef WARPSCOPE_AGENT_SOURCES_CPU_PROFILER_SOURCE_LINES_H_
#define WARPSCOPE_AGENT_SOURCES_CPU_PROFILER_SOURCE_LINES_H_

#include <cstdint>
#include <list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>

namespace warpscope::agent::cpu_profiler {

struct SourceLine {
  std::string file;
  int64_t line = 0;
  bool operator==(const SourceLine&) const = default;
};

class SourceLines {
 public:
  explicit SourceLines(size_t max_binaries = 64);
  ~SourceLines();
  SourceLines(const SourceLines&) = delete;
  SourceLines& operator=(const SourceLines&) = delete;

  // The line of link-time address `vaddr` of the binary `key` (build id or path), opened from
  // the first readable of `paths` on first use.
  std::optional<SourceLine> Find(const std::string& key, std::span<const std::string> paths,
                                 uint64_t vaddr);

  size_t opened() const { return opened_; }  // binaries whose DWARF was read

 private:
  struct Binary;
  size_t max_binaries_;
  size_t opened_ = 0;
  std::list<std::string> lru_;  // most recently used first
  std::unordered_map<std::string, std::unique_ptr<Binary>> binaries_;
};

}  // namespace warpscope::agent::cpu_profiler

#endif  // WARPSCOPE_AGENT_SOURCES_CPU_PROFILER_SOURCE_LINES_H_

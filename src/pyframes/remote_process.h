// SPDX-License-Identifier: Apache-2.0
// Finding the CPython interpreter of another process: the executable or libpython mapped in
// /proc/<pid>/maps that defines _PyRuntime, its version (Py_Version for 3.11+, the symbols
// each version added for 3.9/3.10), its load bias, the addresses of _PyRuntime, PyCode_Type
// and PyUnicode_Type, and its layout (tables for 3.9-3.12, the target's _Py_DebugOffsets for
// 3.13+). Agent side only (reads /proc and ELF files, allocates); docs/design/python-frames.md
// "Other processes".
#ifndef WARPSCOPE_PYFRAMES_REMOTE_PROCESS_H_
#define WARPSCOPE_PYFRAMES_REMOTE_PROCESS_H_

#include <sys/types.h>

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "pyframes/frame_reader.h"
#include "pyframes/layout.h"
#include "pyframes/memory_reader.h"

namespace warpscope::pyframes {

struct MapsEntry {
  uint64_t start = 0;
  uint64_t end = 0;
  uint64_t offset = 0;
  uint64_t dev = 0;  // major << 32 | minor, as in the maps line
  uint64_t inode = 0;
  bool exec = false;
  std::string_view path;  // into the parsed line; "" for anonymous mappings
};

// Parses one line of /proc/<pid>/maps; false when it is malformed.
bool ParseMapsLine(std::string_view line, MapsEntry* out);

// Field 22 of /proc/<pid>/stat: the process's start time in clock ticks after boot. With the
// pid it identifies a process (a reused pid has another start time). False when unreadable.
bool ReadStartTime(const std::string& proc_root, pid_t pid, uint64_t* out);

// True while /proc/<pid>/maps still maps the file (dev, inode) at `start` (an exec or a reload
// moves or removes it). Reads the maps up to that line.
bool MappingStillThere(const std::string& proc_root, pid_t pid, uint64_t start, uint64_t dev,
                       uint64_t inode);

// Where a process's interpreter is and what it is.
struct RemotePython {
  pid_t pid = 0;
  uint64_t start_time = 0;
  std::string path;  // the interpreter's file as the target maps it
  uint64_t dev = 0;
  uint64_t inode = 0;
  std::string build_id;
  uint64_t bias = 0;
  uint64_t map_start = 0;  // the mapping the bias was computed from (revalidation checks it)
  uint64_t runtime = 0;    // &_PyRuntime in the target
  int major = 0;
  int minor = 0;
  Interpreter interp;  // layout and the type objects' addresses in the target
  LayoutError error = LayoutError::kOk;
};

enum class RemoteProbe {
  kNoProcess,    // /proc/<pid> is gone or unreadable
  kNotPython,    // no mapped file defines _PyRuntime
  kReady,        // `out` is complete
  kUnsupported,  // an interpreter whose version or layout is not known: out->error, version
};
const char* RemoteProbeName(RemoteProbe p);

// What a probe cost, for the cache's statistics and the tests.
struct ProbeCost {
  uint32_t elf_files_read = 0;  // ELF files opened (symbol or header reads)
  uint32_t memory_reads = 0;    // reads of the target's memory
};

// Files (device, inode) already read and found without an interpreter: a later probe of any
// process mapping them skips them. Bounded (cleared when full). Not thread-safe.
class ProbeFileCache {
 public:
  static constexpr size_t kMaxFiles = 4096;
  bool KnownWithoutPython(uint64_t dev, uint64_t inode) const {
    return without_python_.contains({dev, inode});
  }
  void AddWithoutPython(uint64_t dev, uint64_t inode) {
    if (without_python_.size() >= kMaxFiles) {
      without_python_.clear();
    }
    without_python_.insert({dev, inode});
  }
  size_t size() const { return without_python_.size(); }

 private:
  std::set<std::pair<uint64_t, uint64_t>> without_python_;
};

// Probes process `pid` through `proc_root` (normally "/proc"; files are opened through
// <proc_root>/<pid>/root so that a container's paths resolve) and reads its memory with `mem`.
// `files` (optional) skips files known to hold no interpreter and learns new ones.
RemoteProbe ProbeRemotePython(const std::string& proc_root, pid_t pid, MemoryReader& mem,
                              RemotePython* out, ProbeCost* cost = nullptr,
                              ProbeFileCache* files = nullptr);

}  // namespace warpscope::pyframes

#endif  // WARPSCOPE_PYFRAMES_REMOTE_PROCESS_H_

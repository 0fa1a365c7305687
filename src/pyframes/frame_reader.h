// SPDX-License-Identifier: Apache-2.0
// Reads a thread's Python frames from the interpreter's memory, never calling the interpreter:
// thread state -> innermost frame -> previous frames, each frame's code object (qualified name,
// file name, first line, line table) and instruction offset -> line. Everything is read
// through a MemoryReader and checked: code objects must have ob_type == &PyCode_Type and
// strings ob_type == &PyUnicode_Type, so a wrong layout stops or skips instead of reporting
// garbage. No allocation, locks or exceptions: it runs on application threads inside CUDA
// calls. Design, sources of every offset and costs: docs/design/python-frames.md.
#ifndef WARPSCOPE_PYFRAMES_FRAME_READER_H_
#define WARPSCOPE_PYFRAMES_FRAME_READER_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "pyframes/layout.h"
#include "pyframes/memory_reader.h"

namespace warpscope::pyframes {

inline constexpr size_t kMaxString = 256;  // bytes kept of a name or file name (UTF-8 cut)

// One interpreter: its layout and the addresses of the type objects used to validate.
struct Interpreter {
  Layout layout;
  uint64_t code_type = 0;     // &PyCode_Type
  uint64_t unicode_type = 0;  // &PyUnicode_Type
};

// Receives frames innermost first; the views are valid only during the call. Return false to
// stop the walk.
class FrameSink {
 public:
  virtual ~FrameSink() = default;
  virtual bool OnFrame(std::string_view function, std::string_view file, uint32_t line) = 0;
  // The frames since the previous boundary (none when a frame could not be read) ran in one
  // native call of the interpreter's eval loop (_PyEval_EvalFrameDefault); the next frames run
  // in an outer one. 3.9/3.10: after every frame; 3.11: after a frame marked is_entry;
  // 3.12+: at an entry frame owned by the C stack. The splicer (splice.h) uses it.
  virtual void OnEvalBoundary() {}
};

// What a walk did.
struct WalkStats {
  uint32_t frames = 0;      // frames handed to the sink
  uint32_t skipped = 0;     // frames that could not be read (unreadable or failed a type check)
  uint32_t not_python = 0;  // the interpreter's own entry frames, code-less frames (not errors)
  uint32_t eval_boundaries = 0;  // OnEvalBoundary calls
  bool truncated = false;        // stopped at max_frames, the step limit or a cycle
  bool chain_broken = false;     // a frame itself (not its code) could not be read: walk ended
  // The first frame that had a code pointer failed the code type check: on a fresh layout, the
  // sign that the layout is wrong.
  bool first_code_invalid = false;
};

// Per-thread cache of decoded code objects, keyed by the code object's address and its name,
// file name and line table pointers (a freed and reused address with other contents misses),
// with the last few (instruction offset -> line) results of each. 2-way set associative (two
// code objects that hash alike both stay). Fixed size (~40 KiB), not thread-safe: one per
// walking thread.
class CodeCache {
 public:
  static constexpr size_t kEntries = 64;
  static constexpr size_t kSets = kEntries / 2;
  static constexpr size_t kLinesPerEntry = 4;

  struct Entry {
    uint64_t code = 0;
    uint64_t name = 0;
    uint64_t filename = 0;
    uint64_t linetable = 0;
    int32_t firstlineno = 0;
    int32_t firsttraceable = 0;
    uint16_t function_len = 0;
    uint16_t file_len = 0;
    uint8_t next_line = 0;
    bool valid = false;
    int64_t line_offset[kLinesPerEntry];
    int32_t line_value[kLinesPerEntry];
    char function[kMaxString];
    char file[kMaxString];
  };

  void Clear();
  uint64_t hits() const { return hits_; }
  uint64_t misses() const { return misses_; }
  uint64_t line_misses() const { return line_misses_; }

 private:
  friend class FrameWalker;
  Entry entries_[kEntries] = {};  // set s: entries 2s and 2s + 1
  uint8_t recent_[kSets] = {};    // the way of each set used last
  uint64_t hits_ = 0;
  uint64_t misses_ = 0;
  uint64_t line_misses_ = 0;
};

class FrameWalker {
 public:
  static constexpr size_t kMaxSteps = 4096;  // frames looked at per walk, skipped ones included

  // Walks the frames of the thread whose PyThreadState is at `tstate`.
  static WalkStats Walk(const Interpreter& interp, MemoryReader& mem, uint64_t tstate,
                        CodeCache& cache, size_t max_frames, FrameSink& sink);

  // Reads the str object at `addr` as UTF-8 into out[0, kMaxString); the byte count, or -1 when
  // it is not a readable compact str.
  static int ReadString(const Interpreter& interp, MemoryReader& mem, uint64_t addr,
                        char (&out)[kMaxString]);
};

}  // namespace warpscope::pyframes

#endif  // WARPSCOPE_PYFRAMES_FRAME_READER_H_

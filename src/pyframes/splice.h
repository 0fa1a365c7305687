// SPDX-License-Identifier: Apache-2.0
// Splicing a thread's Python frames into its native stack: each native call of CPython's eval
// loop (_PyEval_EvalFrameDefault) is replaced by the Python frames it was running, so a sample
// reads train.py:main -> model.forward -> torch ... -> libtorch_cpu.so:at::native::... Pure
// functions over indices: the caller keeps its own frame types. Which native frames are eval
// loops in each version, and how the Python frames are grouped: docs/design/python-frames.md
// "Splicing".
#ifndef WARPSCOPE_PYFRAMES_SPLICE_H_
#define WARPSCOPE_PYFRAMES_SPLICE_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace warpscope::pyframes {

enum class NativeKind : uint8_t {
  kOther = 0,
  kEvalLoop,        // one call of the eval loop: replaced by the Python frames it ran
  kEvalHelper,      // part of an eval-loop call (3.14's tail-called opcode handlers): dropped
                    // when Python frames were spliced
  kPerfTrampoline,  // "py::" entries of the -X perf trampoline (3.12+): dropped when Python
                    // frames were spliced, kept (they name the Python function) otherwise
};

// Classifies a native frame by its symbol name (plain, not demangled C; a ".cold" or ".part.N"
// suffix of an outlined piece counts as the function).
NativeKind ClassifyNativeSymbol(std::string_view symbol);

// One Python frame of another process's thread, as RemotePythonReader::ReadThread returns it.
struct PythonFrame {
  std::string function;  // co_qualname (3.11+) or co_name
  std::string file;      // co_filename
  uint32_t line = 0;     // 0 when the line table does not say
  // The outermost Python frame of one native eval-loop call: the frames up to and including it
  // (innermost first) ran in one _PyEval_EvalFrameDefault call.
  bool eval_entry = false;
  // A Python frame that could not be read (torn or corrupt): a placeholder that keeps the
  // eval-loop groups aligned; function "<unreadable>".
  bool unreadable = false;
};

struct SplicedFrame {
  bool python = false;  // index into the Python frames, else into the native ones
  uint32_t index = 0;
};

struct SpliceStats {
  uint32_t eval_frames = 0;      // native eval-loop frames
  uint32_t python_groups = 0;    // groups of Python frames (one per eval-loop call)
  bool mismatch = false;         // the counts disagreed: placed conservatively
  bool python_unplaced = false;  // Python frames but no eval-loop frame: put outermost
};

// Merges `native` (innermost first, kinds from ClassifyNativeSymbol) and the Python frames
// (innermost first, grouped by their eval_entry marks: a group ends at a frame marked entry;
// frames after the last mark form a last group) into `out`, innermost first.
//  - Counts agree: the i-th eval-loop frame (innermost first) becomes the i-th group.
//  - Counts disagree (a torn read, a truncated walk or stack): every Python frame goes in place
//    of the outermost eval-loop frame, the other eval-loop frames stay as native frames, and
//    stats.mismatch is set.
//  - No eval-loop frame (the native unwind stopped early): the Python frames go outermost.
//  - No Python frames: the native stack unchanged (trampoline frames kept).
// kEvalHelper and kPerfTrampoline frames are dropped whenever Python frames were placed.
SpliceStats SpliceStacks(std::span<const NativeKind> native, std::span<const PythonFrame> python,
                         std::vector<SplicedFrame>* out);

}  // namespace warpscope::pyframes

#endif  // WARPSCOPE_PYFRAMES_SPLICE_H_

// SPDX-License-Identifier: Apache-2.0
// The offsets of one CPython version's thread state, frames, code, bytes and str objects: from
// the tables of layout_tables.h (3.9-3.12) or from the _Py_DebugOffsets that 3.13+ publish at
// the start of _PyRuntime. Pure data once built; built once per interpreter (not on the read
// path).
#ifndef WARPSCOPE_PYFRAMES_LAYOUT_H_
#define WARPSCOPE_PYFRAMES_LAYOUT_H_

#include <cstdint>

#include "pyframes/layout_tables.h"
#include "pyframes/memory_reader.h"

namespace warpscope::pyframes {

inline constexpr uint32_t kNoField = WS_PY_NONE;

struct Layout {
  int major = 0;
  int minor = 0;
  uint8_t frames = WS_PY_FRAMES_OBJECT;  // WS_PY_FRAMES_*
  uint8_t lines = WS_PY_LINES_LNOTAB;    // WS_PY_LINES_*
  uint32_t tstate_frame = kNoField;
  uint32_t cframe_current_frame = kNoField;
  uint32_t frame_back = kNoField;
  uint32_t frame_code = kNoField;
  uint32_t frame_lasti = kNoField;
  uint32_t frame_instr = kNoField;
  uint32_t frame_owner = kNoField;
  uint32_t code_filename = kNoField;
  uint32_t code_name = kNoField;
  uint32_t code_qualname = kNoField;
  uint32_t code_firstlineno = kNoField;
  uint32_t code_linetable = kNoField;
  uint32_t code_adaptive = kNoField;
  uint32_t code_firsttraceable = kNoField;
  uint32_t bytes_size = kNoField;
  uint32_t bytes_data = kNoField;
  uint32_t unicode_length = kNoField;
  uint32_t unicode_state = kNoField;
  uint32_t unicode_ascii_size = kNoField;
  uint32_t unicode_utf8 = kNoField;
  uint32_t unicode_utf8_length = kNoField;
  uint32_t unicode_compact_size = kNoField;
  uint32_t frame_is_entry = kNoField;  // 3.11's is_entry (a bool)
  // Finding a thread's state in another process (remote_threads.h); kNoField where a version
  // lacks the field (native_thread_id before 3.11).
  uint32_t runtime_interpreters_head = kNoField;
  uint32_t interp_next = kNoField;
  uint32_t interp_threads_head = kNoField;
  uint32_t tstate_next = kNoField;
  uint32_t tstate_thread_id = kNoField;
  uint32_t tstate_native_thread_id = kNoField;
  // Low bits cleared from the frame's code pointer: 3.14's f_executable is a _PyStackRef whose
  // bit 0 tags a deferred/borrowed reference (Include/internal/pycore_stackref.h).
  uint64_t code_tag_mask = 0;
  // PyASCIIObject.state has a `ready` bit (3.9-3.11; PEP 623 removed it in 3.12).
  bool unicode_has_ready = false;
  // Frames whose owner is at least this are the interpreter's own entry frames, not Python
  // code: 3 = FRAME_OWNED_BY_CSTACK (3.12, 3.13) / FRAME_OWNED_BY_INTERPRETER (3.14); none in
  // 3.11 (0xff).
  uint8_t owner_not_python = 0xff;
  // Derived: how many bytes of a frame and of a code object one read fetches.
  uint32_t frame_read_size = 0;
  uint32_t code_read_size = 0;
};

enum class LayoutError {
  kOk = 0,
  kUnknownVersion,   // no table for this version
  kUnreadable,       // the debug offsets could not be read
  kBadCookie,        // _PyRuntime does not start with "xdebugpy"
  kVersionMismatch,  // the debug offsets describe another version than the one detected
  kFreeThreaded,     // a free-threaded (no-GIL) build: other object layouts
  kImplausible,      // an offset is out of range or a fixed ABI fact does not hold
};
const char* LayoutErrorName(LayoutError e);

// 3.9-3.12 from the tables.
[[nodiscard]] LayoutError LayoutForVersion(int major, int minor, Layout* out);

// 3.13 and 3.14 from the _Py_DebugOffsets at `runtime_addr` (the address of _PyRuntime); the
// struct's own layout differs between the two (docs/design/python-frames.md).
[[nodiscard]] LayoutError LayoutFromDebugOffsets(MemoryReader& mem, uint64_t runtime_addr,
                                                 int major, int minor, Layout* out);

// Fills the derived sizes and checks that every offset is plausible (kOk or kImplausible).
[[nodiscard]] LayoutError FinishLayout(Layout* out);

}  // namespace warpscope::pyframes

#endif  // WARPSCOPE_PYFRAMES_LAYOUT_H_

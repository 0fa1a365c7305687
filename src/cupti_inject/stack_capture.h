// SPDX-License-Identifier: Apache-2.0
// Native and Python stack capture for admitted kernel launches, on the launching thread.
//
// Native: raw return addresses, innermost first, symbolized later by the agent. Two unwinders
// (stack_capture_bench.cc measures them, docs/design/cuda-profiler.md has the figures):
//   kBacktrace     DWARF CFI through libgcc's _Unwind_Backtrace (what glibc's backtrace() does),
//                  correct through code built without frame pointers (libcupti, most Python
//                  wheels). Where it stops at a frame no unwind entry describes (code built
//                  without unwind tables), it resumes above that frame: a validated return
//                  address on the stack above it (code_ranges.h), then the callers' own unwind
//                  entries (cfi_step.h), and the frame-pointer chain's validated records where
//                  those end early. The default.
//   kFramePointer  walks the rbp chain within the thread's stack bounds: 50-200x cheaper but
//                  stops or skips frames at the first function without a frame pointer.
// Python: the frames of the thread's current Python frame chain, read from the interpreter's
// memory by src/pyframes whether or not the thread holds the GIL, without calling the
// interpreter (docs/design/python-frames.md).
#ifndef WARPSCOPE_CUPTI_INJECT_STACK_CAPTURE_H_
#define WARPSCOPE_CUPTI_INJECT_STACK_CAPTURE_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "cupti/wire.h"

namespace warpscope::cupti_inject {

namespace wire = ::warpscope::cupti::wire;

enum class Unwinder { kBacktrace, kFramePointer };

// Stack bounds of the calling thread for the frame-pointer walk (0,0 when unknown: the walk then
// returns no frames rather than risk following a bad pointer).
struct StackBounds {
  uintptr_t low = 0;
  uintptr_t high = 0;
};
StackBounds CurrentThreadStackBounds();

// Captures up to out.size() return addresses of the caller's stack (innermost first) and returns
// the number written. With skip_own_frames, the innermost frames that lie inside the DSO holding
// this code are left out (the callback and capture frames of libwarpscope_cupti.so).
size_t CaptureNative(Unwinder unwinder, const StackBounds& bounds, bool skip_own_frames,
                     std::span<uint64_t> out);

// The raw walkers, without the own-frame skipping (for tests and the benchmark). DwarfWalk is
// kBacktrace; *resumed tells whether it went on past a frame without unwind tables.
// BacktraceWalk is glibc's backtrace(), kept as the benchmark's reference.
size_t FramePointerWalk(const StackBounds& bounds, std::span<uint64_t> out);
size_t DwarfWalk(const StackBounds& bounds, std::span<uint64_t> out, bool* resumed);
size_t BacktraceWalk(std::span<uint64_t> out);

// Builds the table of code with unwind tables (code_ranges.h) and unwinds once, outside a
// callback. The flusher keeps the table current (RefreshCodeRanges).
void WarmUpUnwinder();

// Holds the Python frames of one capture: views point into `arena`.
struct PythonStack {
  static constexpr size_t kMaxFrames = 48;
  static constexpr size_t kArenaSize = 8192;
  wire::PythonFrameView frames[kMaxFrames];
  size_t count = 0;
  char arena[kArenaSize];
  size_t arena_used = 0;
};

// Fills `out` with the calling thread's Python frames (innermost first: function = qualified
// name, file, line; at most kMaxFrames, strings of at most 256 bytes) when a supported CPython
// (3.9-3.14) is loaded in the process and this thread has a Python thread state, with or
// without the GIL; otherwise leaves it empty. Never calls the interpreter: frames are read
// from memory, no allocation or lock on the way (the first probe of the process, at most once
// a second until an interpreter appears, takes a try-lock and calls dlsym). Frames that cannot
// be read are skipped and counted; a layout that is not recognised turns the walk off for the
// process with one notice (TakePythonNotice).
void CapturePython(PythonStack* out);

// True once a supported interpreter was found in the process.
bool PythonAvailable();

// Frames skipped so far because they could not be read (process-wide).
uint64_t PythonFramesSkipped();

// Turns the Python walk off for the process with one notice, "Python frames are off: CPython
// <major>.<minor>: <why> ...": what the probe does for an interpreter it does not support and a
// first walk for frames of the wrong layout. Any thread; no allocation; later calls do nothing.
void TurnPythonOff(int major, int minor, const char* why);

// The "Python frames are off" notice, once (nullptr otherwise). For the flusher.
const char* TakePythonNotice();

// Hash of a captured stack (never 0).
uint64_t HashStack(std::span<const uint64_t> native, const PythonStack* python);

}  // namespace warpscope::cupti_inject

#endif  // WARPSCOPE_CUPTI_INJECT_STACK_CAPTURE_H_

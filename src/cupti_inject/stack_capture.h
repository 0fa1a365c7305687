// SPDX-License-Identifier: Apache-2.0
// Native and Python stack capture for admitted kernel launches, on the launching thread.
//
// Native: raw return addresses, innermost first, symbolized later by the agent. Two unwinders
// (bench/stack_capture_bench.cc measures them, docs/design/cuda-profiler.md has the figures):
//   kBacktrace     glibc backtrace(): DWARF CFI through libgcc, works through code built without
//                  frame pointers (libcuda, libcupti, most Python wheels). The default.
//   kFramePointer  walks the rbp chain within the thread's stack bounds: ~5x cheaper but stops
//                  or skips frames at the first function without a frame pointer.
// Python: the frames of the thread's current Python frame chain, read through CPython's public
// C API (resolved with dlsym, never linked) only while the thread holds the GIL.
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
// the number written. With skip_own_frames, the innermost frames that lie inside the DSO holding this code are left
// out (the callback and capture frames of libwarpscope_cupti.so).
size_t CaptureNative(Unwinder unwinder, const StackBounds& bounds, bool skip_own_frames,
                     std::span<uint64_t> out);

// The raw walkers, without the own-frame skipping (for the benchmark).
size_t FramePointerWalk(const StackBounds& bounds, std::span<uint64_t> out);
size_t BacktraceWalk(std::span<uint64_t> out);

// Calls backtrace() once so that its lazy loading of libgcc_s happens outside a callback.
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

// Fills `out` with the calling thread's Python frames (innermost first) when libpython is loaded
// in the process, the interpreter is initialized and this thread holds the GIL; otherwise leaves
// it empty. Never raises a Python exception (a pending one is saved and restored).
void CapturePython(PythonStack* out);

// True once the CPython entry points were found in the process.
bool PythonAvailable();

// Hash of a captured stack (never 0).
uint64_t HashStack(std::span<const uint64_t> native, const PythonStack* python);

}  // namespace warpscope::cupti_inject

#endif  // WARPSCOPE_CUPTI_INJECT_STACK_CAPTURE_H_

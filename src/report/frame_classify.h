// SPDX-License-Identifier: Apache-2.0
// What each frame of a decoded profile stands for. The agent's profilers write frame kinds into
// their pprof (profiling/frame_kind.h); for any frame decoded without one, the offline report
// recovers it from what it holds (profiling::InferFrameKind) and where it sits, following how
// the agent's profilers build their stacks (docs/design/profile-command.md, "Frame kinds"):
//   - the root of every stack is the process;
//   - a name in brackets without a module ("[unsampled launch site]") is a marker, except the
//     CUDA profiler's "[sass] ..." (SASS), "[stall] ..." (stall reason), "[memcpy ...]" and
//     "[memset]" (memory) frames;
//   - a frame with a bracketed module other than "[jit]" ("[kernel.kallsyms]", "[nvidia]") is
//     an operating-system kernel frame;
//   - a frame without a module that names a source file is a Python frame;
//   - in a GPU profile, the last frame that is neither SASS nor stall is the kernel (or the
//     memory operation), and the frame right above a kernel is its launch API;
//   - everything else is native code.
// A frame whose kind is already known (not kUnknown) keeps it.
#ifndef WARPSCOPE_REPORT_FRAME_CLASSIFY_H_
#define WARPSCOPE_REPORT_FRAME_CLASSIFY_H_

#include <string_view>

#include "profiling/profile.h"

namespace warpscope::report {

// Sets the kind of every kUnknown frame of `profile`; `gpu` for a CUDA kernel profile (kind
// "gpu"), false for a CPU profile.
void ClassifyFrames(profiling::Profile& profile, bool gpu);

}  // namespace warpscope::report

#endif  // WARPSCOPE_REPORT_FRAME_CLASSIFY_H_

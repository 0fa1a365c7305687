// SPDX-License-Identifier: Apache-2.0
// Frame kinds by name, and the kind a frame's other fields imply: how a FrameKind travels in
// pprof (pprof.h) and how the kind of a frame written without one (older agents, other
// profilers' pprof) is inferred.
#ifndef WARPSCOPE_PROFILING_FRAME_KIND_H_
#define WARPSCOPE_PROFILING_FRAME_KIND_H_

#include <optional>
#include <string_view>

#include "profiling/profile.h"

namespace warpscope::profiling {

// "unknown", "process", "python", "native", "launch", "kernel", "sass", "stall", "memory",
// "marker", "os_kernel": the names of the merged-profile API and of the pprof convention.
std::string_view FrameKindName(FrameKind kind);
// The kind of one of those names; nullopt for any other string.
std::optional<FrameKind> ParseFrameKind(std::string_view name);

// The kind a frame's function, file and module imply (its `kind` field is not read), first rule
// that applies:
//   module "[kernel.kallsyms]", or a function named "[kernel] ..."      -> kOsKernel
//   no module and a file ending in ".py"                                -> kPython
//   any other module (an object file, "[jit]", "[vdso]")                -> kNative
//   a function named "[sass] ...", "[stall] ...", "[memcpy...", "[memset..." -> kSass, kStall,
//                                                                          kMemory
//   any other function named "[...]"                                    -> kMarker
//   otherwise                                                           -> kUnknown
// So a CPU profile of an older agent decodes its Python, native and kernel frames right; the
// process frame, launch APIs and GPU kernels stay kUnknown there.
FrameKind InferFrameKind(const Frame& frame);

}  // namespace warpscope::profiling

#endif  // WARPSCOPE_PROFILING_FRAME_KIND_H_

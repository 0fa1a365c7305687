// SPDX-License-Identifier: Apache-2.0
#include "report/frame_classify.h"

#include <string>
#include <vector>

namespace warpscope::report {
namespace {

using profiling::Frame;
using profiling::FrameKind;

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

bool Bracketed(std::string_view s) { return s.size() >= 2 && s.front() == '[' && s.back() == ']'; }

// The kind a frame has wherever it sits, or kUnknown when that depends on its place.
FrameKind IntrinsicKind(const Frame& f) {
  if (f.module.empty()) {
    if (StartsWith(f.function, "[sass] ")) return FrameKind::kSass;
    if (StartsWith(f.function, "[stall] ")) return FrameKind::kStall;
    if (StartsWith(f.function, "[memcpy") || f.function == "[memset]") return FrameKind::kMemory;
    if (Bracketed(f.function)) return FrameKind::kMarker;
    if (!f.file.empty()) return FrameKind::kPython;
    return FrameKind::kUnknown;
  }
  if (Bracketed(f.module) && f.module != "[jit]") return FrameKind::kOsKernel;
  return FrameKind::kNative;
}

}  // namespace

void ClassifyFrames(profiling::Profile& profile, bool gpu) {
  std::vector<FrameKind> kinds(profile.frames.size(), FrameKind::kUnknown);
  for (size_t i = 0; i < profile.frames.size(); ++i) {
    kinds[i] = profile.frames[i].kind != FrameKind::kUnknown ? profile.frames[i].kind
                                                             : IntrinsicKind(profile.frames[i]);
  }
  std::vector<FrameKind> placed(profile.frames.size(), FrameKind::kUnknown);
  for (const profiling::Sample& s : profile.samples) {
    if (s.stack.empty()) continue;
    placed[s.stack[0]] = FrameKind::kProcess;
    if (!gpu) continue;
    // The kernel: the last frame that is not a PC sample's SASS or stall frame.
    size_t k = s.stack.size();
    while (k > 1 && (kinds[s.stack[k - 1]] == FrameKind::kSass ||
                     kinds[s.stack[k - 1]] == FrameKind::kStall)) {
      --k;
    }
    if (k <= 1) continue;
    const uint32_t leaf = s.stack[k - 1];
    if (kinds[leaf] == FrameKind::kMemory || kinds[leaf] == FrameKind::kMarker) continue;
    placed[leaf] = FrameKind::kKernel;
    if (k >= 3 && kinds[s.stack[k - 2]] != FrameKind::kMarker) {
      placed[s.stack[k - 2]] = FrameKind::kLaunch;
    }
  }
  for (size_t i = 0; i < profile.frames.size(); ++i) {
    Frame& f = profile.frames[i];
    if (f.kind != FrameKind::kUnknown) continue;
    if (placed[i] != FrameKind::kUnknown) {
      f.kind = placed[i];
    } else if (kinds[i] != FrameKind::kUnknown) {
      f.kind = kinds[i];
    } else {
      f.kind = FrameKind::kNative;  // a native frame whose module is unknown
    }
  }
}

std::string_view FrameKindName(profiling::FrameKind kind) {
  switch (kind) {
    case FrameKind::kProcess:
      return "process";
    case FrameKind::kPython:
      return "python";
    case FrameKind::kNative:
      return "native";
    case FrameKind::kLaunch:
      return "launch";
    case FrameKind::kKernel:
      return "kernel";
    case FrameKind::kSass:
      return "sass";
    case FrameKind::kStall:
      return "stall";
    case FrameKind::kMemory:
      return "memory";
    case FrameKind::kMarker:
      return "marker";
    case FrameKind::kOsKernel:
      return "os_kernel";
    case FrameKind::kUnknown:
      break;
  }
  return "unknown";
}

}  // namespace warpscope::report

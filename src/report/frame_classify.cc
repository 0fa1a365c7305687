// SPDX-License-Identifier: Apache-2.0
#include "report/frame_classify.h"

#include <string>
#include <vector>

#include "profiling/frame_kind.h"

namespace warpscope::report {

using profiling::Frame;
using profiling::FrameKind;

void ClassifyFrames(profiling::Profile& profile, bool gpu) {
  std::vector<FrameKind> kinds(profile.frames.size(), FrameKind::kUnknown);
  for (size_t i = 0; i < profile.frames.size(); ++i) {
    kinds[i] = profile.frames[i].kind != FrameKind::kUnknown
                   ? profile.frames[i].kind
                   : profiling::InferFrameKind(profile.frames[i]);
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

}  // namespace warpscope::report

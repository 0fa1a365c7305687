// SPDX-License-Identifier: Apache-2.0
// pprof (gzip of a serialized perftools.profiles.Profile) to and from the profile model
// (profile.h): the one encoder and decoder of the agent's profilers and the server.
#ifndef WARPSCOPE_PROFILING_PPROF_H_
#define WARPSCOPE_PROFILING_PPROF_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "base/status.h"
#include "profiling/profile.h"

namespace warpscope::profiling {

struct DecodeOptions {
  // Refuse profiles that inflate to more than this (a gzip bomb guard).
  size_t max_uncompressed_bytes = 256u << 20;
  // Keep sample labels; false drops them (samples that differ only by labels stay apart).
  bool keep_labels = true;
};

// Decodes a pprof blob: gzip of a serialized perftools.profiles.Profile, or the serialized
// message itself. Inlined frames (several lines of one location) are expanded, outermost first,
// all but the outermost marked `inlined`;
// a location's mapping gives its frames' module and build id, and their kind when it is named
// "[warpscope:<kind>]" (see EncodePprof); other frames get the kind InferFrameKind
// (frame_kind.h) gives them. InvalidArgument (naming the broken
// part) for bad gzip, bad protobuf, string, function or location references that do not resolve,
// and samples whose value count differs from the number of sample types. Mapping and
// default_sample_type references that do not resolve are ignored (they only annotate).
[[nodiscard]] base::Result<Profile> DecodePprof(std::string_view data,
                                                const DecodeOptions& options = {});

// The profile as a gzipped pprof: one location per frame that is not inlined (in frame order, id
// frame index + 1), one per distinct run of a frame and the inlined frames after it in a stack
// (ids after the frames', lines innermost first, as pprof defines inlining), one function per
// (name, system name, file) and one mapping per (module, build id), each in first-use order with
// ids from 1; label keys and values enter the string table on first use.
// A frame's kind travels on its mapping: a frame whose kind InferFrameKind does not give points
// to a mapping named "[warpscope:<kind>]" (frame without module) or "[warpscope:<kind>]
// <module>"; other frames' mappings are named by their module, as any pprof writer's (readers
// such as go tool pprof and speedscope only show a mapping's name as a binary's).
// DecodePprof(EncodePprof(p)) == p, except that a frame of kind kUnknown comes back with the
// kind InferFrameKind gives it and that inlined frames come after the others in `frames` (the
// stacks are the same). InvalidArgument
// for a sample whose value count differs from the sample types or that names no frame.
[[nodiscard]] base::Result<std::string> EncodePprof(const Profile& profile);

}  // namespace warpscope::profiling

#endif  // WARPSCOPE_PROFILING_PPROF_H_

// SPDX-License-Identifier: Apache-2.0
// The profile model every profiler and the server share: pprof's (perftools.profiles) content
// with string and id references resolved, frames interned once per profile and stacks as frame
// indices. The agent's profilers build it (ProfileAggregator) and encode it (pprof.h); the
// server decodes what agents send into it, merges profiles and draws flame trees from it.
//
// Pure data and pure functions; no I/O. Not thread-safe: one owner at a time.
#ifndef WARPSCOPE_PROFILING_PROFILE_H_
#define WARPSCOPE_PROFILING_PROFILE_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"

namespace warpscope::profiling {

// One value column of a profile, e.g. {"cpu", "nanoseconds"}.
struct ValueType {
  std::string type;
  std::string unit;
  bool operator==(const ValueType&) const = default;
};

// What a frame stands for, for display (folded names, colours). pprof has no field for it:
// EncodePprof drops it and DecodePprof yields kUnknown.
enum class FrameKind : uint8_t {
  kUnknown,
  kProcess,  // the executable at the root of a process's stacks
  kPython,
  kNative,
  kLaunch,    // a CUDA launch API
  kKernel,    // a GPU kernel
  kSass,      // a SASS instruction of a PC sample
  kStall,     // a warp stall reason
  kMemory,    // a memory copy or memset
  kMarker,    // "[unsampled launch site]" and the like
  kOsKernel,  // a function of the operating-system kernel or a kernel module (/proc/kallsyms)
};

// One frame. `file` is "" and `line` 0 when unknown. A location without symbol information
// decodes to its address as the name ("0x4005d0"). An inlined frame is a function the compiler
// inlined into the frame before it in the stack (its caller, nearer the root): in pprof both are
// lines of one location.
struct Frame {
  std::string function;  // display name (demangled)
  std::string file;      // source file
  int64_t line = 0;
  std::string system_name;  // mangled name; "" when the same as `function`
  std::string module;       // the mapped object file of a native frame, "[jit]"; "" for none
  std::string build_id;     // of `module`, hex
  FrameKind kind = FrameKind::kUnknown;
  bool inlined = false;
  bool operator==(const Frame&) const = default;
  auto operator<=>(const Frame&) const = default;
};

// A sample label: numeric (`str` empty) or a string.
struct Label {
  std::string key;
  std::string str;
  int64_t num = 0;
  bool operator==(const Label&) const = default;
  auto operator<=>(const Label&) const = default;
};

struct Sample {
  std::vector<uint32_t> stack;  // indices into Profile::frames, root (outermost caller) first
  std::vector<int64_t> values;  // one per sample type
  std::vector<Label> labels;
  bool operator==(const Sample&) const = default;
};

struct Profile {
  std::vector<ValueType> sample_types;
  std::string default_sample_type;  // a sample type's `type`; "" means the first
  ValueType period_type;
  int64_t period = 0;
  int64_t time_nanos = 0;
  int64_t duration_nanos = 0;
  std::vector<Frame> frames;
  std::vector<Sample> samples;
  bool operator==(const Profile&) const = default;
};

// a + b modulo 2^64: values come from other programs, and a sum that overflows must not be
// undefined behaviour (the result is exact whenever the true sum fits).
inline int64_t WrappingAdd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}

// The frames of `sample` of `profile`, root first (a copy).
std::vector<Frame> StackFrames(const Profile& profile, const Sample& sample);

// Builds a Profile: frames are interned (equal frames share one index) and values added to a
// sample with the same stack and labels are summed into it.
class ProfileAggregator {
 public:
  explicit ProfileAggregator(std::vector<ValueType> sample_types);
  ProfileAggregator(const ProfileAggregator&) = delete;
  ProfileAggregator& operator=(const ProfileAggregator&) = delete;

  uint32_t InternFrame(const Frame& frame);
  // Adds `values` (one per sample type; missing ones count 0) to the sample with this root-first
  // stack and these labels, creating it on first use. Returns the sample's index.
  size_t Add(std::span<const uint32_t> stack, std::span<const int64_t> values,
             std::span<const Label> labels = {});

  const Profile& profile() const { return profile_; }
  // The header fields (period, times, default type) are the caller's to set.
  Profile& mutable_profile() { return profile_; }
  Profile Take() && { return std::move(profile_); }

 private:
  struct FrameHash {
    size_t operator()(const Frame& f) const;
  };
  Profile profile_;
  std::unordered_map<Frame, uint32_t, FrameHash> frame_ids_;
  std::unordered_map<std::string, size_t> sample_ids_;
  std::string key_;  // scratch for sample keys
};

// Merges profiles of the same sample types into one: frames are re-interned and values summed
// per identical stack and labels, in the order samples are first seen. period and period_type
// come from the first profile; time_nanos/duration_nanos span all of them. InvalidArgument when
// `profiles` is empty or when sample types differ (the message names both lists).
[[nodiscard]] base::Result<Profile> Merge(std::span<const Profile> profiles);

// The sample types of `profiles`, each once, in first-seen order: what profiles of different
// kinds (a CPU and a GPU profile of one process) are merged under.
std::vector<ValueType> UnionSampleTypes(std::span<const Profile> profiles);

// `profile` with the sample types `types`: each sample's values move to their type's position,
// types the profile lacks get 0 and types not in `types` are dropped. Then Merge can sum
// profiles of different kinds into one (each stack carrying zeros for the types it lacks).
Profile WidenSampleTypes(Profile profile, const std::vector<ValueType>& types);

// "[samples/count, cpu/nanoseconds]": for messages.
std::string SampleTypesString(const std::vector<ValueType>& types);

// The index of a sample type given as an index ("1") or a type name ("cpu"); InvalidArgument
// naming the available types otherwise.
[[nodiscard]] base::Result<size_t> FindSampleType(const std::vector<ValueType>& types,
                                                  std::string_view index_or_name);

}  // namespace warpscope::profiling

#endif  // WARPSCOPE_PROFILING_PROFILE_H_

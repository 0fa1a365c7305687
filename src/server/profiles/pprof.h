// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_SERVER_PROFILES_PPROF_H_
#define WARPSCOPE_SERVER_PROFILES_PPROF_H_

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace warpscope::server::profiles {

// One value column of a profile, e.g. {"cpu", "nanoseconds"}.
struct ValueType {
  std::string type;
  std::string unit;
  bool operator==(const ValueType&) const = default;
};

// One frame of a stack. `file` is "" and `line` 0 when the profile does not have them. A
// location without symbol information gets its address as the name ("0x4005d0").
struct Frame {
  std::string function;
  std::string file;
  int64_t line = 0;
  bool operator==(const Frame&) const = default;
  auto operator<=>(const Frame&) const = default;
};

struct Sample {
  std::vector<Frame> stack;     // root (outermost caller) first, leaf last
  std::vector<int64_t> values;  // one per sample type
  bool operator==(const Sample&) const = default;
};

// A pprof profile in a neutral form: strings resolved, inlined frames expanded, ids gone.
// Sample labels and mappings are not kept.
struct DecodedProfile {
  std::vector<ValueType> sample_types;
  std::vector<Sample> samples;
  ValueType period_type;
  int64_t period = 0;
  int64_t time_nanos = 0;
  int64_t duration_nanos = 0;
  bool operator==(const DecodedProfile&) const = default;
};

struct DecodeOptions {
  // Refuse profiles that inflate to more than this (a gzip bomb guard).
  size_t max_uncompressed_bytes = 256u << 20;
};

// Decodes a pprof blob: gzip of a serialized perftools.profiles.Profile, or the serialized
// message itself. InvalidArgument (naming the broken part) for bad gzip, bad protobuf, string
// or id references that do not resolve, and samples whose value count differs from the number
// of sample types.
[[nodiscard]] base::Result<DecodedProfile> DecodePprof(std::string_view data,
                                                       const DecodeOptions& options = {});

// Merges profiles of the same sample types into one: values are summed per identical stack
// (same frames, files and lines), in the order stacks are first seen. period and period_type
// come from the first profile; time_nanos/duration_nanos span all of them. InvalidArgument when
// `profiles` is empty or when sample types differ (the message names both lists).
[[nodiscard]] base::Result<DecodedProfile> Merge(std::span<const DecodedProfile> profiles);

// "samples/count, cpu/nanoseconds": for messages.
std::string SampleTypesString(const std::vector<ValueType>& types);

// The stacks as a call tree keyed by function name. Every vector has one entry per sample type.
// total = self + the children's totals; children are sorted by total[sort_value] descending
// (then by name).
struct FlameNode {
  std::string name;
  std::vector<int64_t> self;
  std::vector<int64_t> total;
  std::vector<FlameNode> children;
};

struct FlameTreeOptions {
  // At most this many nodes (root and "(other)" nodes included, minimum 2). Beyond it the
  // smallest subtrees (by total[sort_value]) under each kept node are folded into one
  // "(other)" child, so totals stay exact.
  size_t max_nodes = 20000;
  size_t sort_value = 0;  // index into sample_types; out of range means 0
};

// The tree of `profile`; the root is named "root" and has the profile's totals.
FlameNode FlameTree(const DecodedProfile& profile, const FlameTreeOptions& options = {});

// {"name", "self": [...], "total": [...], "children": [...]}.
nlohmann::json FlameNodeJson(const FlameNode& node);

// The index of a sample type given as an index ("1") or a type name ("cpu"); InvalidArgument
// naming the available types otherwise.
[[nodiscard]] base::Result<size_t> FindSampleType(const std::vector<ValueType>& types,
                                                  std::string_view index_or_name);

// The profile as a gzipped pprof: one location per distinct frame (inlining is not
// reconstructed), one function per (name, file). DecodePprof(EncodePprof(p)) == p.
[[nodiscard]] base::Result<std::string> EncodePprof(const DecodedProfile& profile);

}  // namespace warpscope::server::profiles

#endif  // WARPSCOPE_SERVER_PROFILES_PPROF_H_

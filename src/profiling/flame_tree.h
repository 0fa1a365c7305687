// SPDX-License-Identifier: Apache-2.0
// A profile's stacks as a call tree keyed by function name, bounded in size: what the web UI's
// flamegraph draws (the server's merged-profile API sends it as JSON).
#ifndef WARPSCOPE_PROFILING_FLAME_TREE_H_
#define WARPSCOPE_PROFILING_FLAME_TREE_H_

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "profiling/profile.h"

namespace warpscope::profiling {

// Every vector has one entry per sample type. total = self + the children's totals; children
// are sorted by total[sort_value] descending (then by name). `kind` is the kind of the node's
// frames: nodes are keyed by name, and when frames of several kinds share a name under one
// parent, the first known kind in sample order wins. The root is kUnknown; an "(other)" node
// has the kind of the subtrees it folds when they all have one kind, else kUnknown. `file` is
// the first file of the node's frames (in sample order); `line` is their line when they all
// have the same one, else 0; `inlined` is true when one of them was inlined into its caller.
struct FlameNode {
  std::string name;
  std::vector<int64_t> self;
  std::vector<int64_t> total;
  std::vector<FlameNode> children;
  FrameKind kind = FrameKind::kUnknown;
  std::string file;
  int64_t line = 0;
  bool inlined = false;
};

struct FlameTreeOptions {
  // At most this many nodes (root and "(other)" nodes included, minimum 2). Beyond it the
  // smallest subtrees (by total[sort_value]) under each kept node are folded into one
  // "(other)" child, so totals stay exact.
  size_t max_nodes = 20000;
  size_t sort_value = 0;  // index into sample_types; out of range means 0
};

// The tree of `profile`; the root is named "root" and has the profile's totals.
FlameNode FlameTree(const Profile& profile, const FlameTreeOptions& options = {});

// {"name", "kind", "self": [...], "total": [...], "children": [...]}; kind by FrameKindName;
// with "file" (and "line" when known, "inlined": true) for a node with a source file.
nlohmann::json FlameNodeJson(const FlameNode& node);

}  // namespace warpscope::profiling

#endif  // WARPSCOPE_PROFILING_FLAME_TREE_H_

// SPDX-License-Identifier: Apache-2.0
#include "profiling/flame_tree.h"

#include <algorithm>
#include <map>
#include <queue>

#include "profiling/frame_kind.h"

namespace warpscope::profiling {
namespace {

struct ArenaNode {
  std::string name;
  FrameKind kind = FrameKind::kUnknown;
  size_t parent = 0;
  std::vector<int64_t> self;
  std::vector<int64_t> total;
  std::map<std::string, size_t> children;
  std::string file;
  int64_t line = 0;
  bool mixed_lines = false;
  bool inlined = false;
};

// The first file of a node's frames, and its line while every frame has the same one.
void AddSource(ArenaNode& node, const Frame& frame) {
  node.inlined = node.inlined || frame.inlined;
  if (frame.file.empty()) return;
  if (node.file.empty()) {
    node.file = frame.file;
    node.line = frame.line;
  } else if (frame.file != node.file || frame.line != node.line) {
    node.mixed_lines = true;
  }
}

}  // namespace

FlameNode FlameTree(const Profile& profile, const FlameTreeOptions& options) {
  const size_t nvalues = profile.sample_types.size();
  const size_t key = options.sort_value < nvalues ? options.sort_value : 0;
  auto sort_key = [&](const std::vector<int64_t>& total) {
    return key < total.size() ? total[key] : 0;
  };
  std::vector<ArenaNode> arena;
  arena.push_back(ArenaNode{"root",
                            FrameKind::kUnknown,
                            0,
                            std::vector<int64_t>(nvalues),
                            std::vector<int64_t>(nvalues),
                            {}});
  for (const Sample& s : profile.samples) {
    size_t cur = 0;
    auto add = [&](size_t n, bool self) {
      for (size_t v = 0; v < nvalues && v < s.values.size(); ++v) {
        arena[n].total[v] = WrappingAdd(arena[n].total[v], s.values[v]);
        if (self) arena[n].self[v] = WrappingAdd(arena[n].self[v], s.values[v]);
      }
    };
    add(0, s.stack.empty());
    for (size_t d = 0; d < s.stack.size(); ++d) {
      const Frame& frame = profile.frames[s.stack[d]];
      const std::string& name = frame.function;
      auto it = arena[cur].children.find(name);
      size_t next;
      if (it == arena[cur].children.end()) {
        next = arena.size();
        arena[cur].children.emplace(name, next);
        arena.push_back(ArenaNode{name,
                                  frame.kind,
                                  cur,
                                  std::vector<int64_t>(nvalues),
                                  std::vector<int64_t>(nvalues),
                                  {}});
      } else {
        next = it->second;
        if (arena[next].kind == FrameKind::kUnknown) arena[next].kind = frame.kind;
      }
      AddSource(arena[next], frame);
      cur = next;
      add(cur, d + 1 == s.stack.size());
    }
  }

  // Keep the largest nodes first (a node is only reachable once its parent is kept); each kept
  // node with children left out costs one "(other)" node.
  const size_t max_nodes = std::max<size_t>(options.max_nodes, 2);
  std::vector<bool> kept(arena.size(), false);
  std::vector<size_t> left(arena.size(), 0);  // children not kept yet, for kept nodes
  kept[0] = true;
  left[0] = arena[0].children.size();
  size_t kept_count = 1;
  size_t pending = left[0] > 0 ? 1 : 0;
  auto cmp = [&](size_t a, size_t b) {
    return sort_key(arena[a].total) < sort_key(arena[b].total);
  };
  std::priority_queue<size_t, std::vector<size_t>, decltype(cmp)> frontier(cmp);
  for (const auto& [name, c] : arena[0].children) frontier.push(c);
  while (!frontier.empty()) {
    size_t n = frontier.top();
    size_t parent = arena[n].parent;
    size_t next_pending =
        pending - (left[parent] == 1 ? 1 : 0) + (arena[n].children.empty() ? 0 : 1);
    if (kept_count + 1 + next_pending > max_nodes) break;
    frontier.pop();
    kept[n] = true;
    ++kept_count;
    --left[parent];
    left[n] = arena[n].children.size();
    pending = next_pending;
    for (const auto& [name, c] : arena[n].children) frontier.push(c);
  }

  auto build = [&](auto&& self_fn, size_t n) -> FlameNode {
    const ArenaNode& a = arena[n];
    FlameNode node{a.name, a.self, a.total, {}, a.kind, a.file, a.mixed_lines ? 0 : a.line,
                   a.inlined};
    FlameNode other{"(other)", std::vector<int64_t>(nvalues), std::vector<int64_t>(nvalues), {}};
    bool folded = false;
    for (const auto& [name, c] : arena[n].children) {
      if (kept[c]) {
        node.children.push_back(self_fn(self_fn, c));
        continue;
      }
      // The kind of the folded subtrees' roots when they share one.
      other.kind = !folded || other.kind == arena[c].kind ? arena[c].kind : FrameKind::kUnknown;
      folded = true;
      for (size_t v = 0; v < nvalues; ++v) {
        other.self[v] = WrappingAdd(other.self[v], arena[c].total[v]);
        other.total[v] = WrappingAdd(other.total[v], arena[c].total[v]);
      }
    }
    if (folded) node.children.push_back(std::move(other));
    std::stable_sort(node.children.begin(), node.children.end(),
                     [&](const FlameNode& a, const FlameNode& b) {
                       int64_t ka = sort_key(a.total);
                       int64_t kb = sort_key(b.total);
                       return ka != kb ? ka > kb : a.name < b.name;
                     });
    return node;
  };
  return build(build, 0);
}

nlohmann::json FlameNodeJson(const FlameNode& node) {
  nlohmann::json children = nlohmann::json::array();
  for (const FlameNode& c : node.children) children.push_back(FlameNodeJson(c));
  nlohmann::json out = {{"name", node.name},
                        {"kind", FrameKindName(node.kind)},
                        {"self", node.self},
                        {"total", node.total},
                        {"children", children}};
  if (!node.file.empty()) {
    out["file"] = node.file;
    if (node.line > 0) out["line"] = node.line;
  }
  if (node.inlined) out["inlined"] = true;
  return out;
}

}  // namespace warpscope::profiling

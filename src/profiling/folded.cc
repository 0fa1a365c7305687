// SPDX-License-Identifier: Apache-2.0
#include "profiling/folded.h"

#include <fmt/format.h>

#include <iterator>
#include <map>
#include <string_view>
#include <vector>

namespace warpscope::profiling {
namespace {

std::string_view Basename(std::string_view path) {
  size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace

std::string FoldedName(const Frame& f) {
  std::string name;
  switch (f.kind) {
    case FrameKind::kPython:
      name = f.line > 0 ? fmt::format("{} ({}:{})", f.function, Basename(f.file), f.line)
                        : fmt::format("{} ({})", f.function, Basename(f.file));
      break;
    case FrameKind::kKernel:
      name = f.function + "_[k]";
      break;
    case FrameKind::kNative:
      name = f.module == "[jit]" ? f.function + "_[j]" : f.function;
      break;
    case FrameKind::kOsKernel:  // plain, as before the kind existed ("_[k]" is a GPU kernel)
      name = f.function;
      break;
    default:
      name = f.function;
  }
  for (char& c : name) {
    if (c == ';' || c == '\n' || c == '\r') {
      c = ' ';
    }
  }
  return name;
}

std::string FoldedStacks(const Profile& profile, size_t value) {
  if (value >= profile.sample_types.size()) {
    return "";
  }
  std::vector<std::string> names;
  names.reserve(profile.frames.size());
  for (const Frame& f : profile.frames) {
    names.push_back(FoldedName(f));
  }
  std::map<std::string, int64_t> lines;
  std::string line;
  for (const Sample& s : profile.samples) {
    if (value >= s.values.size() || s.values[value] <= 0) {
      continue;
    }
    line.clear();
    for (size_t i = 0; i < s.stack.size(); ++i) {
      if (i > 0) {
        line.push_back(';');
      }
      line += names[s.stack[i]];
    }
    lines[line] += s.values[value];
  }
  std::string out;
  for (const auto& [stack, v] : lines) {
    fmt::format_to(std::back_inserter(out), "{} {}\n", stack, v);
  }
  return out;
}

}  // namespace warpscope::profiling

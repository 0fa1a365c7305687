// SPDX-License-Identifier: Apache-2.0
#include "profiling/frame_kind.h"

#include <array>
#include <utility>

namespace warpscope::profiling {
namespace {

constexpr std::array<std::pair<FrameKind, std::string_view>, 11> kNames = {{
    {FrameKind::kUnknown, "unknown"},
    {FrameKind::kProcess, "process"},
    {FrameKind::kPython, "python"},
    {FrameKind::kNative, "native"},
    {FrameKind::kLaunch, "launch"},
    {FrameKind::kKernel, "kernel"},
    {FrameKind::kSass, "sass"},
    {FrameKind::kStall, "stall"},
    {FrameKind::kMemory, "memory"},
    {FrameKind::kMarker, "marker"},
    {FrameKind::kOsKernel, "os_kernel"},
}};

}  // namespace

std::string_view FrameKindName(FrameKind kind) {
  for (const auto& [k, name] : kNames) {
    if (k == kind) {
      return name;
    }
  }
  return "unknown";
}

std::optional<FrameKind> ParseFrameKind(std::string_view name) {
  for (const auto& [k, n] : kNames) {
    if (n == name) {
      return k;
    }
  }
  return std::nullopt;
}

FrameKind InferFrameKind(const Frame& frame) {
  const std::string_view fn = frame.function;
  if (frame.module == "[kernel.kallsyms]" || fn.starts_with("[kernel] ")) {
    return FrameKind::kOsKernel;
  }
  if (frame.module.empty() && frame.file.ends_with(".py")) {
    return FrameKind::kPython;
  }
  if (!frame.module.empty()) {
    return FrameKind::kNative;
  }
  if (fn.starts_with("[sass] ")) {
    return FrameKind::kSass;
  }
  if (fn.starts_with("[stall] ")) {
    return FrameKind::kStall;
  }
  if (fn.starts_with("[memcpy") || fn.starts_with("[memset")) {
    return FrameKind::kMemory;
  }
  if (fn.size() >= 2 && fn.front() == '[' && fn.back() == ']') {
    return FrameKind::kMarker;
  }
  return FrameKind::kUnknown;
}

}  // namespace warpscope::profiling

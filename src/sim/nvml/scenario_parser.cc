// SPDX-License-Identifier: Apache-2.0
// Error wording, suggestions, key paths and the readers of single values.
#include "sim/nvml/scenario_parser.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <iterator>
#include <vector>

namespace warpscope::sim {
namespace scenario_internal {
namespace {

constexpr std::string_view kKnownFunctions[] = {
#define WARPSCOPE_SIM_NAME(ret, name, params) #name,
    WARPSCOPE_NVML_FUNCTIONS(WARPSCOPE_SIM_NAME) WARPSCOPE_NVML_LEGACY_FUNCTIONS(WARPSCOPE_SIM_NAME)
#undef WARPSCOPE_SIM_NAME
};

}  // namespace

using base::Error;
using base::Result;
using base::Status;

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) {
    prev[j] = j;
  }
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string Join(std::string_view path, std::string_view key) {
  if (path.empty()) {
    return std::string(key);
  }
  return fmt::format("{}.{}", path, key);
}

std::string Index(std::string_view path, size_t i) { return fmt::format("{}[{}]", path, i); }

std::span<const std::string_view> KnownNvmlFunctions() { return kKnownFunctions; }

Status Parser::Err(const YAML::Node& node, std::string_view path, std::string_view message) const {
  std::string where = source_;
  try {
    if (node.IsDefined() && node.Mark().line >= 0) {
      where = fmt::format("{}:{}", source_, node.Mark().line + 1);
    }
  } catch (...) {
    // An invalid node has no position; report the file only.
  }
  std::string full_path(path);
  if (!device_note_.empty()) {
    full_path += device_note_;
  }
  if (full_path.empty()) {
    return base::InvalidArgument("{}: {}", where, message);
  }
  return base::InvalidArgument("{}: {}: {}", where, full_path, message);
}

Status Parser::CheckKeys(const YAML::Node& map, std::string_view path,
                         std::initializer_list<std::string_view> allowed) const {
  for (const auto& kv : map) {
    if (!kv.first.IsScalar()) {
      return Err(kv.first, path, "keys must be plain names");
    }
    const std::string& key = kv.first.Scalar();
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      return Err(kv.first, Join(path, key),
                 fmt::format("unknown key '{}'.{} Allowed here: {}", key, Suggest(key, allowed),
                             ListNames(allowed)));
    }
  }
  return base::OkStatus();
}

Result<std::string> Parser::Str(const YAML::Node& n, std::string_view path) const {
  if (!n.IsScalar()) {
    return Error(Err(n, path, "expected a single value, not a list or map"));
  }
  std::string v = n.Scalar();
  if (index_) {
    std::string idx = std::to_string(*index_);
    for (size_t pos = v.find("{i}"); pos != std::string::npos; pos = v.find("{i}", pos)) {
      v.replace(pos, 3, idx);
      pos += idx.size();
    }
  }
  return v;
}

Result<double> Parser::Quantity(const YAML::Node& n, std::string_view path, Unit unit) const {
  WARPSCOPE_ASSIGN_OR_RETURN(std::string text, Str(n, path));
  auto v = ParseQuantity(text, unit);
  if (!v) {
    return Error(Err(n, path, fmt::format("{}; expected {}", v.error().message(), UnitHint(unit))));
  }
  if (std::fabs(*v) > kMaxQuantity) {
    return Error(Err(n, path,
                     fmt::format("'{}' is too large; scenario values are limited to +-{:g} so "
                                 "that the simulated counters cannot overflow",
                                 text, kMaxQuantity)));
  }
  return *v;
}

Result<unsigned> Parser::UInt(const YAML::Node& n, std::string_view path, uint64_t min,
                              uint64_t max) const {
  WARPSCOPE_ASSIGN_OR_RETURN(std::string text, Str(n, path));
  auto v = ParseNumber(text);
  if (!v || *v != std::floor(*v)) {
    return Error(Err(n, path, fmt::format("'{}' is not a whole number", text)));
  }
  if (*v < static_cast<double>(min) || *v > static_cast<double>(max)) {
    return Error(Err(n, path, fmt::format("{} is out of range; use {}..{}", text, min, max)));
  }
  return static_cast<unsigned>(*v);
}

Result<uint64_t> Parser::Seed(const YAML::Node& n, std::string_view path) const {
  WARPSCOPE_ASSIGN_OR_RETURN(std::string text, Str(n, path));
  uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size()) {
    return Error(Err(n, path, fmt::format("'{}' is not a non-negative integer", text)));
  }
  return v;
}

Result<bool> Parser::Bool(const YAML::Node& n, std::string_view path) const {
  WARPSCOPE_ASSIGN_OR_RETURN(std::string text, Str(n, path));
  std::string v = Lower(text);
  if (v == "true" || v == "yes" || v == "on") {
    return true;
  }
  if (v == "false" || v == "no" || v == "off") {
    return false;
  }
  return Error(Err(n, path, fmt::format("'{}' is not a boolean; use true or false", text)));
}

Result<YAML::Node> Parser::Required(const YAML::Node& map, std::string_view path,
                                    std::string_view key, std::string_view example) const {
  YAML::Node n = map[std::string(key)];
  if (!Present(n)) {
    return Error(Err(map, Join(path, key), fmt::format("missing; add e.g. {}", example)));
  }
  return n;
}

Status Parser::OptionalUInt(const YAML::Node& map, std::string_view path, const char* key,
                            uint64_t min, uint64_t max, unsigned& out) const {
  if (Present(map[key])) {
    WARPSCOPE_ASSIGN_OR_RETURN(out, UInt(map[key], Join(path, key), min, max));
  }
  return base::OkStatus();
}

Status Parser::OptionalQuantity(const YAML::Node& map, std::string_view path, const char* key,
                                Unit unit, double& out) const {
  if (Present(map[key])) {
    WARPSCOPE_ASSIGN_OR_RETURN(out, Quantity(map[key], Join(path, key), unit));
  }
  return base::OkStatus();
}

}  // namespace scenario_internal

bool IsKnownNvmlFunction(std::string_view name) {
  const auto known = scenario_internal::KnownNvmlFunctions();
  return std::find(known.begin(), known.end(), name) != known.end();
}

}  // namespace warpscope::sim

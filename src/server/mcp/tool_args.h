// SPDX-License-Identifier: Apache-2.0
// The arguments of a tools/call, read with the checks every tool shares: types, bounds, times
// and ranges. Errors are InvalidArgument naming the argument, what was wrong and what to send.
#ifndef WARPSCOPE_SERVER_MCP_TOOL_ARGS_H_
#define WARPSCOPE_SERVER_MCP_TOOL_ARGS_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "base/time.h"
#include "model/labels.h"
#include "server/query/query_params.h"

namespace warpscope::server::mcp {

// The range a tool reads when not told: the last 15 minutes.
inline constexpr base::Duration kDefaultSpan = std::chrono::minutes(15);
// The longest range a tool reads.
inline constexpr base::Duration kMaxSpan = std::chrono::hours(24 * 31);
// Strings longer than this are refused (names, ids, durations).
inline constexpr size_t kMaxStringBytes = 512;

// A time argument: Unix milliseconds (a number, or a string of digits), RFC 3339 in UTC
// ("2026-12-05T10:00:00Z"), "now", or relative to now ("-15m", "now-1h", "+5m").
[[nodiscard]] base::Result<base::TimePoint> ParseToolTime(const nlohmann::json& value,
                                                          base::TimePoint now);

// "2026-12-05T10:00:00Z" (milliseconds when not whole seconds).
std::string FormatTime(base::TimePoint t);

class ToolArgs {
 public:
  // `args` must be an object (McpServer checks).
  explicit ToolArgs(const nlohmann::json& args) : args_(args) {}

  // InvalidArgument naming the first argument not in `known`, and listing those.
  [[nodiscard]] base::Status CheckKnown(std::initializer_list<std::string_view> known) const;
  // True when `name` is given (and not null).
  bool Has(std::string_view name) const { return Find(name) != nullptr; }
  // A string argument; nullopt when absent or null.
  [[nodiscard]] base::Result<std::optional<std::string>> String(std::string_view name) const;
  // A required string argument; `hint` says what to give.
  [[nodiscard]] base::Result<std::string> RequiredString(std::string_view name,
                                                         std::string_view hint) const;
  // A whole number of at least 1; `fallback` when absent; values above `max` are capped to it.
  [[nodiscard]] base::Result<size_t> Count(std::string_view name, size_t fallback,
                                           size_t max) const;
  // A positive whole number (a pid); nullopt when absent.
  [[nodiscard]] base::Result<std::optional<int64_t>> Id(std::string_view name) const;
  // A duration such as "30s" or "5m"; nullopt when absent.
  [[nodiscard]] base::Result<std::optional<base::Duration>> Duration(std::string_view name) const;
  // An object of string values (labels); empty when absent.
  [[nodiscard]] base::Result<model::Labels> StringMap(std::string_view name) const;
  // [start, end) from "start" and "end": end defaults to now, start to end - kDefaultSpan.
  // start must be before end, and the range at most kMaxSpan.
  [[nodiscard]] base::Result<TimeRange> Range(base::TimePoint now) const;

 private:
  const nlohmann::json* Find(std::string_view name) const;

  const nlohmann::json& args_;
};

}  // namespace warpscope::server::mcp

#endif  // WARPSCOPE_SERVER_MCP_TOOL_ARGS_H_

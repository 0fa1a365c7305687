// SPDX-License-Identifier: Apache-2.0
#include "server/mcp/tool_args.h"

#include <fmt/format.h>
#include <time.h>

#include <cmath>
#include <limits>

namespace warpscope::server::mcp {
namespace {

using nlohmann::json;

constexpr std::string_view kTimeHelp =
    "use Unix milliseconds (1764928800000), RFC 3339 in UTC (\"2026-12-05T10:00:00Z\"), \"now\" "
    "or a time relative to now (\"-15m\", \"-2h\")";

// Unix milliseconds up to the year 9999: larger numbers are not times.
constexpr double kMaxUnixMillis = 253402300799999.0;

base::Result<base::TimePoint> FromMillis(double ms, std::string_view shown) {
  if (!std::isfinite(ms) || ms < 0 || ms > kMaxUnixMillis) {
    return base::Error(base::InvalidArgument("bad time {}: {}", shown, kTimeHelp));
  }
  return base::FromUnixNanos(static_cast<int64_t>(std::llround(ms * 1e6)));
}

std::string TypeName(const json& v) {
  if (v.is_number_integer()) return "an integer";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_boolean()) return "a boolean";
  if (v.is_array()) return "an array";
  if (v.is_object()) return "an object";
  return "null";
}

}  // namespace

base::Result<base::TimePoint> ParseToolTime(const json& value, base::TimePoint now) {
  if (value.is_number()) {
    return FromMillis(value.get<double>(), value.dump());
  }
  if (!value.is_string()) {
    return base::Error(base::InvalidArgument("got {}: {}", TypeName(value), kTimeHelp));
  }
  const std::string& text = value.get_ref<const std::string&>();
  if (text.empty() || text.size() > 64) {
    return base::Error(base::InvalidArgument("bad time \"{}\": {}", text.substr(0, 64), kTimeHelp));
  }
  if (text.find_first_not_of("0123456789.") == std::string::npos) {
    char* end = nullptr;
    double ms = std::strtod(text.c_str(), &end);
    if (end != text.c_str() + text.size()) {
      return base::Error(base::InvalidArgument("bad time \"{}\": {}", text, kTimeHelp));
    }
    return FromMillis(ms, "\"" + text + "\"");
  }
  std::string full = (text[0] == '-' || text[0] == '+') ? "now" + text : text;
  base::Result<base::TimePoint> t = ParseTime(full, now);
  if (!t) {
    return base::Error(base::InvalidArgument("bad time \"{}\": {}", text, kTimeHelp));
  }
  return t;
}

std::string FormatTime(base::TimePoint t) {
  int64_t ms = base::ToUnixMillis(t);
  time_t secs = static_cast<time_t>(ms / 1000);
  int64_t frac = ms % 1000;
  if (frac < 0) {
    frac += 1000;
    --secs;
  }
  tm parts{};
  gmtime_r(&secs, &parts);
  char buf[32];
  strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &parts);
  return frac == 0 ? fmt::format("{}Z", buf) : fmt::format("{}.{:03}Z", buf, frac);
}

const json* ToolArgs::Find(std::string_view name) const {
  auto it = args_.find(std::string(name));
  if (it == args_.end() || it->is_null()) {
    return nullptr;
  }
  return &*it;
}

base::Status ToolArgs::CheckKnown(std::initializer_list<std::string_view> known) const {
  for (const auto& [key, value] : args_.items()) {
    bool found = false;
    for (std::string_view k : known) {
      found = found || k == key;
    }
    if (!found) {
      std::string names;
      for (std::string_view k : known) {
        names += names.empty() ? "" : ", ";
        names += k;
      }
      return base::InvalidArgument("unknown argument \"{}\": this tool takes {}", key.substr(0, 64),
                                   names);
    }
  }
  return base::OkStatus();
}

base::Result<std::optional<std::string>> ToolArgs::String(std::string_view name) const {
  const json* v = Find(name);
  if (v == nullptr) {
    return std::optional<std::string>();
  }
  if (!v->is_string()) {
    return base::Error(
        base::InvalidArgument("argument \"{}\" must be a string, got {}", name, TypeName(*v)));
  }
  const std::string& s = v->get_ref<const std::string&>();
  if (s.size() > kMaxStringBytes) {
    return base::Error(base::InvalidArgument("argument \"{}\" is {} bytes long; at most {}", name,
                                             s.size(), kMaxStringBytes));
  }
  return std::optional<std::string>(s);
}

base::Result<std::string> ToolArgs::RequiredString(std::string_view name,
                                                   std::string_view hint) const {
  WARPSCOPE_ASSIGN_OR_RETURN(std::optional<std::string> s, String(name));
  if (!s || s->empty()) {
    return base::Error(base::InvalidArgument("argument \"{}\" is required: {}", name, hint));
  }
  return *s;
}

base::Result<size_t> ToolArgs::Count(std::string_view name, size_t fallback, size_t max) const {
  const json* v = Find(name);
  if (v == nullptr) {
    return fallback;
  }
  if (!v->is_number_integer() || v->get<int64_t>() < 1) {
    return base::Error(
        base::InvalidArgument("argument \"{}\" must be a whole number from 1 to {}", name, max));
  }
  return std::min<size_t>(static_cast<size_t>(v->get<int64_t>()), max);
}

base::Result<std::optional<int64_t>> ToolArgs::Id(std::string_view name) const {
  const json* v = Find(name);
  if (v == nullptr) {
    return std::optional<int64_t>();
  }
  if (!v->is_number_integer() || v->get<int64_t>() < 1) {
    return base::Error(
        base::InvalidArgument("argument \"{}\" must be a positive whole number", name));
  }
  return std::optional<int64_t>(v->get<int64_t>());
}

base::Result<std::optional<base::Duration>> ToolArgs::Duration(std::string_view name) const {
  WARPSCOPE_ASSIGN_OR_RETURN(std::optional<std::string> s, String(name));
  if (!s) {
    return std::optional<base::Duration>();
  }
  base::Result<base::Duration> d = base::ParseDuration(*s);
  if (!d || d->count() <= 0) {
    return base::Error(base::InvalidArgument(
        "argument \"{}\": \"{}\" is not a positive duration; write 30s, 5m or 1h", name, *s));
  }
  return std::optional<base::Duration>(*d);
}

base::Result<model::Labels> ToolArgs::StringMap(std::string_view name) const {
  model::Labels out;
  const json* v = Find(name);
  if (v == nullptr) {
    return out;
  }
  if (!v->is_object() || v->size() > 32) {
    return base::Error(base::InvalidArgument(
        "argument \"{}\" must be an object of up to 32 string values, such as {{\"gpu.index\": "
        "\"0\"}}",
        name));
  }
  for (const auto& [key, value] : v->items()) {
    if (!value.is_string() || key.size() > kMaxStringBytes ||
        value.get_ref<const std::string&>().size() > kMaxStringBytes) {
      return base::Error(base::InvalidArgument(
          "argument \"{}\": the value of \"{}\" must be a short string", name, key.substr(0, 64)));
    }
    out.Set(key, value.get<std::string>());
  }
  return out;
}

base::Result<TimeRange> ToolArgs::Range(base::TimePoint now) const {
  TimeRange r;
  r.end = now;
  if (const json* e = Find("end")) {
    base::Result<base::TimePoint> t = ParseToolTime(*e, now);
    if (!t) return base::Error(t.error().WithContext("argument \"end\""));
    r.end = *t;
  }
  r.start = r.end - kDefaultSpan;
  if (const json* s = Find("start")) {
    base::Result<base::TimePoint> t = ParseToolTime(*s, now);
    if (!t) return base::Error(t.error().WithContext("argument \"start\""));
    r.start = *t;
  }
  if (r.start >= r.end) {
    return base::Error(base::InvalidArgument(
        "start ({}) must be before end ({}); omit both for the last 15 minutes",
        FormatTime(r.start), FormatTime(r.end)));
  }
  if (r.end - r.start > kMaxSpan) {
    return base::Error(base::InvalidArgument(
        "the range from {} to {} is longer than 31 days; ask for a shorter one",
        FormatTime(r.start), FormatTime(r.end)));
  }
  return r;
}

}  // namespace warpscope::server::mcp

// SPDX-License-Identifier: Apache-2.0
#include "server/query/query_params.h"

#include <time.h>

#include <algorithm>
#include <charconv>
#include <cmath>

namespace warpscope::server {
namespace {

// Times must fit base::TimePoint's int64 nanoseconds (±292 years around 1970).
constexpr int64_t kMaxUnixSeconds = 9'000'000'000;  // the year 2255
constexpr base::Duration kMaxTimeOffset = std::chrono::hours(24 * 365 * 100);

}  // namespace

std::optional<std::string_view> Param(const Params& params, std::string_view name) {
  auto it = params.find(std::string(name));
  if (it == params.end()) return std::nullopt;
  return std::string_view(it->second);
}

base::Result<base::TimePoint> ParseTime(std::string_view text, base::TimePoint now) {
  if (text.empty()) return base::Error(base::InvalidArgument("empty time"));
  if (text.rfind("now", 0) == 0) {
    std::string_view rest = text.substr(3);
    if (rest.empty()) return now;
    if (rest[0] != '-' && rest[0] != '+') {
      return base::Error(
          base::InvalidArgument("bad time '{}': write now, now-15m or now+1h", text));
    }
    auto d = base::ParseDuration(rest.substr(1));
    if (!d) return base::Error(d.error().WithContext(fmt::format("bad time '{}'", text)));
    // TimePoint arithmetic must not overflow: offsets beyond a century are no one's query.
    if (*d > kMaxTimeOffset) {
      return base::Error(
          base::InvalidArgument("bad time '{}': more than 100 years from now", text));
    }
    return rest[0] == '-' ? now - *d : now + *d;
  }
  bool numeric = text.find_first_not_of("0123456789.") == std::string_view::npos;
  if (numeric) {
    double seconds = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
    if (ec != std::errc() || ptr != text.data() + text.size() || !std::isfinite(seconds) ||
        seconds > static_cast<double>(kMaxUnixSeconds)) {
      return base::Error(base::InvalidArgument("bad time '{}': not a number of seconds", text));
    }
    return base::FromUnixNanos(static_cast<int64_t>(std::llround(seconds * 1e9)));
  }
  // RFC 3339 in UTC: YYYY-MM-DDTHH:MM:SS[.fff]Z
  tm parts{};
  const std::string s(text);
  const char* end = strptime(s.c_str(), "%Y-%m-%dT%H:%M:%S", &parts);
  if (end == nullptr) {
    return base::Error(base::InvalidArgument(
        "bad time '{}': use Unix seconds, RFC 3339 (2026-11-30T15:00:00Z) or now-1h", text));
  }
  int64_t nanos = 0;
  if (*end == '.') {
    ++end;
    int64_t scale = 100000000;
    while (*end >= '0' && *end <= '9') {
      nanos += (*end - '0') * scale;
      scale /= 10;
      ++end;
    }
  }
  if (std::string_view(end) != "Z") {
    return base::Error(base::InvalidArgument("bad time '{}': only UTC ('Z') is accepted", text));
  }
  int64_t secs = timegm(&parts);
  if (secs < -kMaxUnixSeconds || secs > kMaxUnixSeconds) {
    return base::Error(base::InvalidArgument("bad time '{}': the year is out of range", text));
  }
  return base::FromUnixNanos(secs * 1'000'000'000 + nanos);
}

base::Result<SeriesMatcher> ParseMatcher(const Params& params) {
  SeriesMatcher m;
  for (const auto& [name, value] : params) {
    if (name == "host") {
      m.host = value;
    } else if (name == "entity") {
      m.entity = value;
    } else if (name == "kind") {
      auto kind = ParseEntityKind(value);
      if (!kind) return base::Error(kind.error());
      m.entity_kind = *kind;
    } else if (name.rfind("label.", 0) == 0 && name.size() > 6) {
      m.labels.Set(name.substr(6), value);
    } else if (name.rfind("attr.", 0) == 0 && name.size() > 5) {
      m.entity_attributes.Set(name.substr(5), value);
    }
  }
  return m;
}

base::Result<TimeRange> ParseRange(const Params& params, base::TimePoint now,
                                   base::Duration default_span) {
  TimeRange r;
  r.end = now;
  if (auto e = Param(params, "end")) {
    auto t = ParseTime(*e, now);
    if (!t) return base::Error(t.error().WithContext("end"));
    r.end = *t;
  }
  r.start = r.end - default_span;
  if (auto s = Param(params, "start")) {
    auto t = ParseTime(*s, now);
    if (!t) return base::Error(t.error().WithContext("start"));
    r.start = *t;
  }
  if (r.start >= r.end) {
    return base::Error(base::InvalidArgument("start must be before end"));
  }
  return r;
}

base::Result<size_t> ParseCount(const Params& params, std::string_view name, size_t fallback,
                                size_t max) {
  auto v = Param(params, name);
  if (!v) return fallback;
  size_t n = 0;
  auto [ptr, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
  if (ec != std::errc() || ptr != v->data() + v->size() || n == 0 || n > max) {
    return base::Error(
        base::InvalidArgument("{}={}: expected a number from 1 to {}", name, *v, max));
  }
  return n;
}

base::Result<base::Duration> ParseStep(const Params& params, const TimeRange& range,
                                       size_t default_points) {
  if (auto s = Param(params, "step")) {
    auto step = base::ParseDuration(*s);
    if (!step || step->count() <= 0) {
      return base::Error(
          base::InvalidArgument("step: expected a positive duration such as 30s or 5m"));
    }
    return *step;
  }
  return std::max<base::Duration>(std::chrono::seconds(10),
                                  (range.end - range.start) / static_cast<int64_t>(default_points));
}

base::Result<RangeQuery> ParseRangeQuery(const Params& params, base::TimePoint now,
                                         std::string_view metric_hint) {
  RangeQuery q;
  auto metric = Param(params, "metric");
  if (!metric || metric->empty()) {
    return base::Error(base::InvalidArgument("metric= is required ({})", metric_hint));
  }
  q.metric = std::string(*metric);
  WARPSCOPE_ASSIGN_OR_RETURN(q.match, ParseMatcher(params));
  WARPSCOPE_ASSIGN_OR_RETURN(TimeRange range, ParseRange(params, now));
  q.start = range.start;
  q.end = range.end;
  WARPSCOPE_ASSIGN_OR_RETURN(q.step, ParseStep(params, range));
  if (auto a = Param(params, "agg")) {
    WARPSCOPE_ASSIGN_OR_RETURN(q.aggregation, ParseAggregation(*a));
  }
  return q;
}

}  // namespace warpscope::server

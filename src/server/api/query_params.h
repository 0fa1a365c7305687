// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_SERVER_API_QUERY_PARAMS_H_
#define WARPSCOPE_SERVER_API_QUERY_PARAMS_H_

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "base/time.h"
#include "model/entity.h"
#include "server/storage/storage.h"

namespace warpscope::server {

// Query-string parameters of one request: name -> value (the first of repeated names).
using Params = std::multimap<std::string, std::string>;

// A time in a query: Unix seconds ("1700000000", "1700000000.5"), RFC 3339 UTC
// ("2026-11-30T15:00:00Z", fractional seconds allowed), "now", or "now-15m" / "now+1h".
base::Result<base::TimePoint> ParseTime(std::string_view text, base::TimePoint now);

// The series selection shared by the query endpoints: host=, entity=, kind=, label.<key>=,
// attr.<key>= (entity attribute).
base::Result<SeriesMatcher> ParseMatcher(const Params& params);

// [start, end) from start= and end= (defaults: end = now, start = end - 1h); errors name the
// parameter. `max_range` bounds end - start.
struct TimeRange {
  base::TimePoint start;
  base::TimePoint end;
};
base::Result<TimeRange> ParseRange(const Params& params, base::TimePoint now,
                                   base::Duration default_span = std::chrono::hours(1));

// The value of `name`, if present.
std::optional<std::string_view> Param(const Params& params, std::string_view name);

// Unsigned integer parameter with bounds, e.g. limit=.
base::Result<size_t> ParseCount(const Params& params, std::string_view name, size_t fallback,
                                size_t max);

}  // namespace warpscope::server

#endif  // WARPSCOPE_SERVER_API_QUERY_PARAMS_H_

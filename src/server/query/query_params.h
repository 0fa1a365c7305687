// SPDX-License-Identifier: Apache-2.0
// The parameters of the query API as name -> value strings (times, ranges, series matchers,
// counts, steps): what the HTTP handlers parse their query strings with, and what other callers
// of server/query (the MCP tools) read the same values with.
#ifndef WARPSCOPE_SERVER_QUERY_QUERY_PARAMS_H_
#define WARPSCOPE_SERVER_QUERY_QUERY_PARAMS_H_

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

// step= of a range query: the given duration, or about `default_points` points across the range
// (at least 10 s).
base::Result<base::Duration> ParseStep(const Params& params, const TimeRange& range,
                                       size_t default_points = 300);

// The parameters of a range query (query_range, breakdown): metric= (required; `metric_hint`
// says what to give), the matchers, the time range, step= and agg=. Errors are InvalidArgument
// with the remedy.
base::Result<RangeQuery> ParseRangeQuery(const Params& params, base::TimePoint now,
                                         std::string_view metric_hint);

// Fills the parameters the event and profile queries share: host=, entity=, kind=, the time
// range (default: the last `span`) and limit= (default `limit`, at most `max_limit`).
template <typename Query>
base::Status FillScopedQuery(const Params& params, base::TimePoint now, base::Duration span,
                             size_t limit, size_t max_limit, Query& q) {
  if (auto h = Param(params, "host")) q.host = std::string(*h);
  if (auto e = Param(params, "entity")) q.entity = std::string(*e);
  if (auto k = Param(params, "kind")) q.kind = std::string(*k);
  WARPSCOPE_ASSIGN_OR_RETURN(TimeRange range, ParseRange(params, now, span));
  q.start = range.start;
  q.end = range.end;
  WARPSCOPE_ASSIGN_OR_RETURN(q.limit, ParseCount(params, "limit", limit, max_limit));
  return base::OkStatus();
}

}  // namespace warpscope::server

#endif  // WARPSCOPE_SERVER_QUERY_QUERY_PARAMS_H_

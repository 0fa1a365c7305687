// SPDX-License-Identifier: Apache-2.0
// Range queries as the query API answers them (docs/api.md): the series of a metric over time,
// the same summed per group (breakdown), and entities ranked by a metric with their sparklines
// (top). Each runs on a Storage and is thread-safe as the Storage is.
#ifndef WARPSCOPE_SERVER_QUERY_RANGE_H_
#define WARPSCOPE_SERVER_QUERY_RANGE_H_

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "server/storage/storage.h"

namespace warpscope::server::query {

// GET /api/v1/query_range's answer for `q`: the metric, the range, step, aggregation, the
// resolutions used and every series with its points. Errors are the storage's (InvalidArgument
// for a query over its limits, NotFound for an unknown metric).
[[nodiscard]] base::Result<nlohmann::json> RangeJson(Storage& storage, const RangeQuery& q);

// What a breakdown groups by when not told: the executable of per-process series.
inline constexpr std::string_view kDefaultBreakdownBy = "process.executable.name";

struct BreakdownGroup {
  std::string key;  // the value grouped by
  size_t entities = 0;
  size_t series = 0;
  double total = 0;           // the sum of the group's finite values, which orders the groups
  std::vector<Point> points;  // per bucket, the sum of its series
};

struct Breakdown {
  MetricInfo metric;
  std::vector<BreakdownGroup> groups;  // largest total first; equal totals by key
};

// The series of the range query `q` summed per group: by the entity attribute `by`, else the
// series label `by`, else the entity id; with by = "entity", by the entity id.
[[nodiscard]] base::Result<Breakdown> QueryBreakdown(Storage& storage, const RangeQuery& q,
                                                     std::string_view by);
// GET /api/v1/breakdown's answer.
nlohmann::json BreakdownJson(const Breakdown& breakdown, const RangeQuery& q, std::string_view by);

struct TopRow {
  TopEntry entry;
  // The entity's series over the range in about `sparkline_points` buckets (the mean of its
  // series per bucket), when asked for.
  std::optional<std::vector<Point>> sparkline;
};

// TopEntities for `q`, each entry with its sparkline when `sparkline_points` > 0.
[[nodiscard]] base::Result<std::vector<TopRow>> QueryTop(Storage& storage, const TopQuery& q,
                                                         size_t sparkline_points);
// GET /api/v1/top's answer.
nlohmann::json TopJson(std::string_view metric, const std::vector<TopRow>& rows);

}  // namespace warpscope::server::query

#endif  // WARPSCOPE_SERVER_QUERY_RANGE_H_

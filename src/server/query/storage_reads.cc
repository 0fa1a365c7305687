// SPDX-License-Identifier: Apache-2.0
#include "server/query/storage_reads.h"

#include <string>

namespace warpscope::server::query {

TopQuery RankQuery(std::string_view metric, model::EntityKind kind, base::TimePoint start,
                   base::TimePoint end, Aggregation aggregation, size_t limit) {
  TopQuery q;
  q.metric = std::string(metric);
  q.match.entity_kind = kind;
  q.start = start;
  q.end = end;
  q.aggregation = aggregation;
  q.limit = limit;
  return q;
}

base::Result<std::vector<TopEntry>> TopEntitiesIfKnown(Storage& storage, const TopQuery& q) {
  auto top = storage.TopEntities(q);
  if (!top && top.error().code() == base::StatusCode::kNotFound) {
    return std::vector<TopEntry>{};
  }
  return top;
}

base::Result<RangeResult> QueryRangeIfKnown(Storage& storage, const RangeQuery& q) {
  auto range = storage.QueryRange(q);
  if (!range && range.error().code() == base::StatusCode::kNotFound) {
    return RangeResult{};
  }
  return range;
}

}  // namespace warpscope::server::query

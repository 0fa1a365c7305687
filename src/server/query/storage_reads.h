// SPDX-License-Identifier: Apache-2.0
// The storage reads the query layer's own overviews (fleet, summary) make: a metric the server
// has never received is no data there, not an error. Private to src/server/query/.
#ifndef WARPSCOPE_SERVER_QUERY_STORAGE_READS_H_
#define WARPSCOPE_SERVER_QUERY_STORAGE_READS_H_

#include <cstddef>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "base/time.h"
#include "server/storage/storage.h"

namespace warpscope::server::query {

// Every entity of `kind` ranked by `metric` over [start, end), at most `limit` of them.
TopQuery RankQuery(std::string_view metric, model::EntityKind kind, base::TimePoint start,
                   base::TimePoint end, Aggregation aggregation, size_t limit);

// Storage::TopEntities, with no entries when the metric is unknown (NotFound).
[[nodiscard]] base::Result<std::vector<TopEntry>> TopEntitiesIfKnown(Storage& storage,
                                                                     const TopQuery& q);
// Storage::QueryRange, with no series when the metric is unknown (NotFound).
[[nodiscard]] base::Result<RangeResult> QueryRangeIfKnown(Storage& storage, const RangeQuery& q);

}  // namespace warpscope::server::query

#endif  // WARPSCOPE_SERVER_QUERY_STORAGE_READS_H_

// SPDX-License-Identifier: Apache-2.0
// What the clickhouse_storage*.cc files share: time conversions, names and small helpers.
#ifndef WARPSCOPE_SERVER_STORAGE_CLICKHOUSE_CLICKHOUSE_INTERNAL_H_
#define WARPSCOPE_SERVER_STORAGE_CLICKHOUSE_CLICKHOUSE_INTERNAL_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/time.h"
#include "model/entity.h"
#include "model/metric.h"
#include "server/storage/storage.h"

namespace warpscope::server::clickhouse_internal {

inline int64_t ToMs(base::TimePoint t) { return base::ToUnixMillis(t); }
inline base::TimePoint FromMs(int64_t ms) { return base::FromUnixNanos(ms * 1'000'000); }
inline int64_t DurationMs(base::Duration d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}
inline std::string_view MetricKindName(model::MetricKind kind) {
  return kind == model::MetricKind::kCounter ? "counter" : "gauge";
}
inline model::MetricKind ParseMetricKind(std::string_view name) {
  return name == "counter" ? model::MetricKind::kCounter : model::MetricKind::kGauge;
}
inline model::EntityKind EntityKindOrHost(std::string_view name) {
  auto kind = ParseEntityKind(name);
  return kind ? *kind : model::EntityKind::kHost;
}
int64_t ParseInt(std::string_view s);
uint64_t ParseUint(std::string_view s);
double ParseDouble(std::string_view s);

// A strictly increasing version for ReplacingMergeTree rows and marks: wall-clock nanoseconds,
// bumped past the previous value handed out by this process.
uint64_t NextVersion();

// The series' identity hashed (FNV-1a, 64 bits): the key of its rows in every table.
uint64_t SeriesId(std::string_view host, std::string_view entity, std::string_view labels);

// Windows written within this long of a series' last_seen still find the series in a query
// range, rate seeds included (as SqliteStorage's kLastSeenSlackMs).
inline constexpr int64_t kLastSeenSlackMs = 20 * 60'000;

}  // namespace warpscope::server::clickhouse_internal

#endif  // WARPSCOPE_SERVER_STORAGE_CLICKHOUSE_CLICKHOUSE_INTERNAL_H_

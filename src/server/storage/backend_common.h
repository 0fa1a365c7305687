// SPDX-License-Identifier: Apache-2.0
// What every storage backend's code shares: times as the milliseconds stored, and the names
// stored for metric and entity kinds. Private to src/server/storage/ and its backends.
#ifndef WARPSCOPE_SERVER_STORAGE_BACKEND_COMMON_H_
#define WARPSCOPE_SERVER_STORAGE_BACKEND_COMMON_H_

#include <chrono>
#include <cstdint>
#include <string_view>

#include "base/time.h"
#include "model/entity.h"
#include "model/metric.h"
#include "server/storage/storage.h"

namespace warpscope::server::backend_common {

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
// An entity kind read back; a name this build does not know is a host.
inline model::EntityKind EntityKindOrHost(std::string_view name) {
  auto kind = ParseEntityKind(name);
  return kind ? *kind : model::EntityKind::kHost;
}

}  // namespace warpscope::server::backend_common

#endif  // WARPSCOPE_SERVER_STORAGE_BACKEND_COMMON_H_

// SPDX-License-Identifier: Apache-2.0
// How the query API writes the storage's records as JSON (docs/api.md): times, labels, metric
// descriptions, numbers that may not be finite, and the records the list endpoints return.
// Pure functions; thread-safe.
#ifndef WARPSCOPE_SERVER_QUERY_JSON_FORMAT_H_
#define WARPSCOPE_SERVER_QUERY_JSON_FORMAT_H_

#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "base/time.h"
#include "model/labels.h"
#include "server/storage/storage.h"

namespace warpscope::server::query {

// Unix seconds: an integer when whole (most times are: windows and steps are whole seconds),
// which keeps range answers ~10 % smaller than writing every time as a double.
nlohmann::json Seconds(base::TimePoint t);

// NaN and infinities are not JSON; a value that is not finite is written as null.
nlohmann::json Number(double v);
// null when absent, else Number(*v).
nlohmann::json Number(const std::optional<double>& v);

nlohmann::json LabelsJson(const model::Labels& labels);
nlohmann::json MetricJson(const MetricInfo& m);
// One entry of GET /api/v1/entities, /events and /profiles.
nlohmann::json EntityJson(const EntityRecord& e);
nlohmann::json EventJson(const EventRecord& r);
nlohmann::json ProfileMetaJson(const ProfileMeta& m);

// A timeline of per-bucket figures as [[seconds, value], ...], the time always a double.
nlohmann::json TimelineJson(const std::vector<Point>& points);

}  // namespace warpscope::server::query

#endif  // WARPSCOPE_SERVER_QUERY_JSON_FORMAT_H_

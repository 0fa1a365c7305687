// SPDX-License-Identifier: Apache-2.0
#include "server/query/json_format.h"

#include <cmath>

namespace warpscope::server::query {

using nlohmann::json;

json Seconds(base::TimePoint t) {
  int64_t ns = base::ToUnixNanos(t);
  if (ns % 1'000'000'000 == 0) {
    return json(ns / 1'000'000'000);
  }
  return json(static_cast<double>(ns) / 1e9);
}

json Number(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

json Number(const std::optional<double>& v) { return v ? Number(*v) : json(nullptr); }

json LabelsJson(const model::Labels& labels) {
  json out = json::object();
  for (const auto& [k, v] : labels) {
    out[k] = v;
  }
  return out;
}

json MetricJson(const MetricInfo& m) {
  return {{"key", m.key},
          {"kind", m.kind == model::MetricKind::kCounter ? "counter" : "gauge"},
          {"unit", m.unit},
          {"help", m.help},
          {"prom_name", m.prom_name},
          {"prom_scale", m.prom_scale},
          {"otel_name", m.otel_name},
          {"entity_kind", model::EntityKindName(m.entity_kind)}};
}

json EntityJson(const EntityRecord& e) {
  return {{"host", e.host},
          {"kind", model::EntityKindName(e.entity.kind)},
          {"id", e.entity.id},
          {"parent", e.entity.parent},
          {"attributes", LabelsJson(e.entity.attributes)},
          {"first_seen", Seconds(e.first_seen)},
          {"last_seen", Seconds(e.last_seen)}};
}

json EventJson(const EventRecord& r) {
  return {{"host", r.host},
          {"entity", r.event.entity},
          {"time", Seconds(r.event.time)},
          {"kind", r.event.kind},
          {"code", r.event.code},
          {"message", r.event.message},
          {"attributes", LabelsJson(r.event.attributes)}};
}

json ProfileMetaJson(const ProfileMeta& m) {
  return {{"id", m.id},
          {"host", m.host},
          {"entity", m.entity},
          {"pid", m.pid},
          {"executable", m.executable},
          {"kind", m.kind},
          {"start", Seconds(m.start)},
          {"end", Seconds(m.end)},
          {"labels", LabelsJson(m.labels)},
          {"size_bytes", m.size_bytes}};
}

json TimelineJson(const std::vector<Point>& points) {
  json out = json::array();
  for (const Point& p : points) {
    out.push_back({static_cast<double>(base::ToUnixNanos(p.time)) / 1e9, Number(p.value)});
  }
  return out;
}

}  // namespace warpscope::server::query

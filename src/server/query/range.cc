// SPDX-License-Identifier: Apache-2.0
#include "server/query/range.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <set>
#include <utility>

#include "server/query/bucket_shares.h"
#include "server/query/bucket_sums.h"
#include "server/query/json_format.h"

namespace warpscope::server::query {

using nlohmann::json;

base::Result<json> RangeJson(Storage& storage, const RangeQuery& q) {
  WARPSCOPE_ASSIGN_OR_RETURN(RangeResult result, storage.QueryRange(q));
  json series = json::array();
  for (const auto& s : result.series) {
    json points = json::array();
    for (const auto& p : s.points) {
      points.push_back({Seconds(p.time), Number(p.value)});
    }
    series.push_back({{"host", s.series.host},
                      {"entity", s.series.entity},
                      {"kind", model::EntityKindName(s.series.entity_kind)},
                      {"labels", LabelsJson(s.series.labels)},
                      {"attributes", LabelsJson(s.series.entity_attributes)},
                      {"points", std::move(points)}});
  }
  json resolutions = json::array();
  for (Resolution r : result.resolutions) {
    resolutions.push_back(ResolutionName(r));
  }
  return json{{"metric", MetricJson(result.metric)},
              {"start", Seconds(q.start)},
              {"end", Seconds(q.end)},
              {"step", base::ToSeconds(q.step)},
              {"aggregation", AggregationName(q.aggregation)},
              {"resolutions", std::move(resolutions)},
              {"series", std::move(series)}};
}

base::Result<Breakdown> QueryBreakdown(Storage& storage, const RangeQuery& q, std::string_view by) {
  WARPSCOPE_ASSIGN_OR_RETURN(RangeResult result, storage.QueryRange(q));
  WARPSCOPE_ASSIGN_OR_RETURN(BucketShares shares, BucketShares::Read(storage, q, result));
  struct Group {
    BucketSums sums;
    std::set<std::string> entities;
    size_t series = 0;
    double total = 0;
  };
  std::map<std::string, Group> groups;
  for (const auto& s : result.series) {
    std::string_view key;
    if (by != "entity") {
      key = s.series.entity_attributes.Get(by);
      if (key.empty()) {
        key = s.series.labels.Get(by);
      }
    }
    if (key.empty()) {
      key = s.series.entity;
    }
    Group& g = groups[std::string(key)];
    g.entities.insert(s.series.entity);
    ++g.series;
    for (const auto& p : s.points) {
      // What ran at each moment: a process that ran for part of the bucket adds that part.
      const double share = shares.Share(s, p);
      g.sums.Add(p, share);
      if (std::isfinite(p.value)) {
        g.total += p.value * share;
      }
    }
  }
  Breakdown out;
  out.metric = std::move(result.metric);
  for (const auto& [key, g] : groups) {
    out.groups.push_back(
        BreakdownGroup{key, g.entities.size(), g.series, g.total, g.sums.Points(/*mean=*/false)});
  }
  std::stable_sort(
      out.groups.begin(), out.groups.end(),
      [](const BreakdownGroup& a, const BreakdownGroup& b) { return a.total > b.total; });
  return out;
}

json BreakdownJson(const Breakdown& breakdown, const RangeQuery& q, std::string_view by) {
  json groups = json::array();
  for (const BreakdownGroup& g : breakdown.groups) {
    groups.push_back({{"key", g.key},
                      {"entities", g.entities},
                      {"series", g.series},
                      {"points", TimelineJson(g.points)}});
  }
  return json{{"metric", MetricJson(breakdown.metric)},
              {"by", by},
              {"start", Seconds(q.start)},
              {"end", Seconds(q.end)},
              {"step", base::ToSeconds(q.step)},
              {"aggregation", AggregationName(q.aggregation)},
              {"groups", std::move(groups)}};
}

base::Result<std::vector<TopRow>> QueryTop(Storage& storage, const TopQuery& q,
                                           size_t sparkline_points) {
  WARPSCOPE_ASSIGN_OR_RETURN(std::vector<TopEntry> top, storage.TopEntities(q));
  std::vector<TopRow> rows;
  rows.reserve(top.size());
  for (TopEntry& e : top) {
    TopRow row;
    if (sparkline_points > 0) {
      // An entity with several series for the metric (per link, per mode) is shown as their
      // mean per bucket.
      RangeQuery rq;
      rq.metric = q.metric;
      rq.match = q.match;
      rq.match.host = e.host;
      rq.match.entity = e.entity;
      rq.start = q.start;
      rq.end = q.end;
      rq.step = std::max<base::Duration>(
          std::chrono::seconds(1), (q.end - q.start) / static_cast<int64_t>(sparkline_points));
      rq.aggregation = q.aggregation;
      WARPSCOPE_ASSIGN_OR_RETURN(RangeResult range, storage.QueryRange(rq));
      BucketSums sums;
      sums.AddSeries(range.series);
      row.sparkline = sums.Points(/*mean=*/true);
    }
    row.entry = std::move(e);
    rows.push_back(std::move(row));
  }
  return rows;
}

json TopJson(std::string_view metric, const std::vector<TopRow>& rows) {
  json entries = json::array();
  for (const TopRow& row : rows) {
    const TopEntry& e = row.entry;
    json entry = {{"host", e.host},
                  {"entity", e.entity},
                  {"kind", model::EntityKindName(e.entity_kind)},
                  {"attributes", LabelsJson(e.entity_attributes)},
                  {"value", Number(e.value)},
                  {"latest", Number(e.latest)},
                  {"latest_time", Seconds(e.latest_time)}};
    if (row.sparkline.has_value()) {
      entry["sparkline"] = TimelineJson(*row.sparkline);
    }
    entries.push_back(std::move(entry));
  }
  return json{{"metric", metric}, {"entries", std::move(entries)}};
}

}  // namespace warpscope::server::query

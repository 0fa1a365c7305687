// SPDX-License-Identifier: Apache-2.0
// top_entities and query_metric: the query layer's top and range queries for an agent.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "server/mcp/tools.h"
#include "server/query/json_format.h"
#include "server/query/range.h"

namespace warpscope::server::mcp {
namespace {

using nlohmann::json;

constexpr size_t kDefaultTop = 10;
constexpr size_t kMaxTop = 50;
constexpr size_t kDefaultSeries = 10;
constexpr size_t kMaxSeries = 50;
// Points per series: a step that gives more is refused with the step that would do.
constexpr size_t kMaxPoints = 500;
constexpr size_t kDefaultPoints = 60;
// Series read before the ones beyond max_series are dropped from the answer.
constexpr size_t kMaxSeriesRead = 1000;
constexpr size_t kMetricsListed = 40;

constexpr std::string_view kMetricHint =
    "a metric key such as gpu.utilization, gpu.memory.used, gpu.power.usage or "
    "gpu.process.memory.used";

json MetricSchema() {
  return json{{"type", "string"},
              {"description",
               "The metric key, e.g. gpu.utilization (0-1), gpu.memory.used (bytes), "
               "gpu.power.usage (W), gpu.temperature (C), gpu.process.memory.used (bytes)"}};
}

json KindSchema(std::string_view what) {
  return json{{"type", "string"},
              {"enum", json::array({"gpu", "process", "host", "mig", "executable", "container"})},
              {"description", what}};
}

json AggSchema() {
  return json{{"type", "string"},
              {"enum", json::array({"avg", "min", "max", "last", "rate"})},
              {"description",
               "How values are combined over time: avg (default), min, max, last, "
               "or rate (per second, for counters)"}};
}

// The metric keys the server knows, for an error about a metric without data.
std::string KnownMetrics(Storage& storage) {
  base::Result<std::vector<MetricInfo>> metrics = storage.ListMetrics();
  if (!metrics || metrics->empty()) {
    return "the server has no metrics yet: is an agent pushing to it?";
  }
  std::string out = "the server knows ";
  size_t n = 0;
  for (const MetricInfo& m : *metrics) {
    if (n == kMetricsListed) {
      out += fmt::format(" and {} more", metrics->size() - n);
      break;
    }
    out += n++ == 0 ? "" : ", ";
    out += m.key;
  }
  return out;
}

// "GPU-1 (gpu.index 1)" or "pid/42/1 (python, pid 42)": an entity with the attributes a reader
// recognises it by.
std::string EntityName(std::string_view entity, const model::Labels& attributes) {
  std::string extra;
  for (std::string_view key :
       {"gpu.index", "gpu.model", "process.executable.name", "process.pid"}) {
    std::string_view v = attributes.Get(key);
    if (v.empty()) continue;
    extra += extra.empty() ? "" : ", ";
    extra += fmt::format("{} {}", key, v);
  }
  return extra.empty() ? std::string(entity) : fmt::format("{} ({})", entity, extra);
}

base::Result<SeriesMatcher> ReadMatcher(const ToolArgs& args) {
  SeriesMatcher m;
  WARPSCOPE_ASSIGN_OR_RETURN(std::optional<std::string> host, args.String("host"));
  WARPSCOPE_ASSIGN_OR_RETURN(std::optional<std::string> entity, args.String("entity"));
  WARPSCOPE_ASSIGN_OR_RETURN(std::optional<std::string> kind, args.String("kind"));
  m.host = host.value_or("");
  m.entity = entity.value_or("");
  if (kind) {
    base::Result<model::EntityKind> k = ParseEntityKind(*kind);
    if (!k) return base::Error(k.error().WithContext("argument \"kind\""));
    m.entity_kind = *k;
  }
  return m;
}

base::Result<Aggregation> ReadAggregation(const ToolArgs& args) {
  WARPSCOPE_ASSIGN_OR_RETURN(std::optional<std::string> agg, args.String("agg"));
  if (!agg) return Aggregation::kAvg;
  base::Result<Aggregation> a = ParseAggregation(*agg);
  if (!a) return base::Error(a.error().WithContext("argument \"agg\""));
  return *a;
}

}  // namespace

json TopEntitiesSchema() {
  return json{
      {"type", "object"},
      {"properties",
       {{"metric", MetricSchema()},
        {"kind", KindSchema("Rank only entities of this kind (gpu, process, host, ...)")},
        {"host", {{"type", "string"}, {"description", "Only this host"}}},
        {"agg", AggSchema()},
        {"order",
         {{"type", "string"},
          {"enum", json::array({"desc", "asc"})},
          {"description", "desc (default): largest first; asc: smallest first"}}},
        {"limit", CountSchema("Entities to return", kDefaultTop, kMaxTop)},
        {"start", TimeArgumentSchema("Start of the range (default: 15 minutes before end)")},
        {"end", TimeArgumentSchema("End of the range (default: now)")}}},
      {"required", json::array({"metric"})},
      {"additionalProperties", false}};
}

base::Result<ToolResult> TopEntities(const ToolContext& ctx, const ToolArgs& args) {
  WARPSCOPE_RETURN_IF_ERROR(
      args.CheckKnown({"metric", "kind", "host", "agg", "order", "limit", "start", "end"}));
  TopQuery q;
  WARPSCOPE_ASSIGN_OR_RETURN(q.metric, args.RequiredString("metric", kMetricHint));
  WARPSCOPE_ASSIGN_OR_RETURN(q.match, ReadMatcher(args));
  WARPSCOPE_ASSIGN_OR_RETURN(q.aggregation, ReadAggregation(args));
  WARPSCOPE_ASSIGN_OR_RETURN(q.limit, args.Count("limit", kDefaultTop, kMaxTop));
  WARPSCOPE_ASSIGN_OR_RETURN(std::optional<std::string> order, args.String("order"));
  if (order && *order != "desc" && *order != "asc") {
    return base::Error(base::InvalidArgument("argument \"order\" must be \"desc\" or \"asc\""));
  }
  q.ascending = order && *order == "asc";
  WARPSCOPE_ASSIGN_OR_RETURN(TimeRange range, args.Range(ctx.now));
  q.start = range.start;
  q.end = range.end;
  base::Result<std::vector<query::TopRow>> top =
      query::QueryTop(ctx.storage, q, /*sparkline_points=*/0);
  if (!top && top.error().code() == base::StatusCode::kNotFound) {
    return base::Error(base::NotFound("{}; {}", top.error().message(), KnownMetrics(ctx.storage)));
  }
  if (!top) {
    return base::Error(top.error());
  }
  const std::vector<query::TopRow>& rows = *top;

  std::string agg(AggregationName(q.aggregation));
  ToolResult r;
  json entries = json::array();
  r.text = fmt::format("{} by {} ({}) from {} to {}", q.ascending ? "Bottom" : "Top", q.metric, agg,
                       FormatTime(q.start), FormatTime(q.end));
  for (size_t i = 0; i < rows.size(); ++i) {
    const TopEntry& e = rows[i].entry;
    r.text +=
        fmt::format("\n{}. {} {} on {}: {} (latest {})", i + 1,
                    model::EntityKindName(e.entity_kind), EntityName(e.entity, e.entity_attributes),
                    e.host, FormatNumber(e.value), FormatNumber(e.latest));
    entries.push_back(json{{"host", e.host},
                           {"entity", e.entity},
                           {"kind", model::EntityKindName(e.entity_kind)},
                           {"attributes", query::LabelsJson(e.entity_attributes)},
                           {"value", query::Number(e.value)},
                           {"latest", query::Number(e.latest)},
                           {"latest_time", FormatTime(e.latest_time)}});
  }
  if (rows.empty()) {
    r.text += "\nNo entity has data for it in this range: widen the range or drop filters.";
  }
  r.structured = json{{"metric", q.metric},
                      {"aggregation", agg},
                      {"order", q.ascending ? "asc" : "desc"},
                      {"start", FormatTime(q.start)},
                      {"end", FormatTime(q.end)},
                      {"entities", std::move(entries)}};
  return r;
}

json QueryMetricSchema() {
  return json{
      {"type", "object"},
      {"properties",
       {{"metric", MetricSchema()},
        {"host", {{"type", "string"}, {"description", "Only this host"}}},
        {"entity",
         {{"type", "string"},
          {"description", "Only this entity: a GPU UUID (GPU-...), a process id (pid/...)"}}},
        {"kind", KindSchema("Only entities of this kind")},
        {"labels",
         {{"type", "object"},
          {"additionalProperties", {{"type", "string"}}},
          {"description", "Only series with these labels, e.g. {\"gpu.uuid\": \"GPU-...\"}"}}},
        {"step",
         {{"type", "string"},
          {"description",
           fmt::format("Bucket width such as 30s or 5m (default: the range / {}, at least 10s; "
                       "at most {} points)",
                       kDefaultPoints, kMaxPoints)}}},
        {"agg", AggSchema()},
        {"max_series", CountSchema("Series to return", kDefaultSeries, kMaxSeries)},
        {"start", TimeArgumentSchema("Start of the range (default: 15 minutes before end)")},
        {"end", TimeArgumentSchema("End of the range (default: now)")}}},
      {"required", json::array({"metric"})},
      {"additionalProperties", false}};
}

base::Result<ToolResult> QueryMetric(const ToolContext& ctx, const ToolArgs& args) {
  WARPSCOPE_RETURN_IF_ERROR(args.CheckKnown(
      {"metric", "host", "entity", "kind", "labels", "step", "agg", "max_series", "start", "end"}));
  RangeQuery q;
  WARPSCOPE_ASSIGN_OR_RETURN(q.metric, args.RequiredString("metric", kMetricHint));
  WARPSCOPE_ASSIGN_OR_RETURN(q.match, ReadMatcher(args));
  WARPSCOPE_ASSIGN_OR_RETURN(q.match.labels, args.StringMap("labels"));
  WARPSCOPE_ASSIGN_OR_RETURN(q.aggregation, ReadAggregation(args));
  WARPSCOPE_ASSIGN_OR_RETURN(size_t max_series,
                             args.Count("max_series", kDefaultSeries, kMaxSeries));
  WARPSCOPE_ASSIGN_OR_RETURN(TimeRange range, args.Range(ctx.now));
  q.start = range.start;
  q.end = range.end;
  WARPSCOPE_ASSIGN_OR_RETURN(std::optional<base::Duration> step, args.Duration("step"));
  const base::Duration span = range.end - range.start;
  q.step = step ? *step
                : std::max<base::Duration>(std::chrono::seconds(10),
                                           span / static_cast<int64_t>(kDefaultPoints));
  // One more than the span / step buckets when the range is not aligned to the step.
  if (static_cast<size_t>(span / q.step) + 1 > kMaxPoints) {
    auto at_least = std::chrono::duration_cast<std::chrono::seconds>(
                        span / static_cast<int64_t>(kMaxPoints - 1)) +
                    std::chrono::seconds(1);
    return base::Error(base::InvalidArgument(
        "step {} gives more than {} points over this range; use a step of at least {}s or a "
        "shorter range",
        base::FormatDuration(q.step), kMaxPoints, at_least.count()));
  }
  q.max_series = kMaxSeriesRead;
  q.max_points = kMaxPoints + 1;
  base::Result<RangeResult> result = ctx.storage.QueryRange(q);
  if (!result && result.error().code() == base::StatusCode::kNotFound) {
    return base::Error(
        base::NotFound("{}; {}", result.error().message(), KnownMetrics(ctx.storage)));
  }
  if (!result) {
    return base::Error(result.error());
  }

  std::string agg(AggregationName(q.aggregation));
  ToolResult r;
  r.text = fmt::format("{} ({}, unit {}) from {} to {}, step {}: {} series", q.metric, agg,
                       result->metric.unit.empty() ? "-" : result->metric.unit, FormatTime(q.start),
                       FormatTime(q.end), base::FormatDuration(q.step), result->series.size());
  json series = json::array();
  for (size_t i = 0; i < result->series.size() && i < max_series; ++i) {
    const RangeSeries& s = result->series[i];
    json points = json::array();
    double lo = std::numeric_limits<double>::infinity(), hi = -lo, sum = 0;
    size_t finite = 0;
    for (const Point& p : s.points) {
      points.push_back(json::array({base::ToUnixMillis(p.time), query::Number(p.value)}));
      if (!std::isfinite(p.value)) continue;
      lo = std::min(lo, p.value);
      hi = std::max(hi, p.value);
      sum += p.value;
      ++finite;
    }
    std::string labels;
    for (const auto& [k, v] : s.series.labels) {
      labels += fmt::format("{}{}={}", labels.empty() ? " {" : ", ", k, v);
    }
    labels += labels.empty() ? "" : "}";
    r.text +=
        fmt::format("\n- {} on {}{}: ", EntityName(s.series.entity, s.series.entity_attributes),
                    s.series.host, labels);
    r.text += finite == 0 ? "no points"
                          : fmt::format("{} points, min {}, mean {}, max {}, latest {}", finite,
                                        FormatNumber(lo), FormatNumber(sum / finite),
                                        FormatNumber(hi), FormatNumber(s.points.back().value));
    series.push_back(json{{"host", s.series.host},
                          {"entity", s.series.entity},
                          {"kind", model::EntityKindName(s.series.entity_kind)},
                          {"labels", query::LabelsJson(s.series.labels)},
                          {"attributes", query::LabelsJson(s.series.entity_attributes)},
                          {"points", std::move(points)}});
  }
  size_t omitted = result->series.size() > max_series ? result->series.size() - max_series : 0;
  if (omitted > 0) {
    r.text += fmt::format(
        "\n({} more series not shown: narrow with host, entity, kind or labels, "
        "or raise max_series)",
        omitted);
  }
  if (result->series.empty()) {
    r.text += "\nNo series matched in this range: widen the range or drop filters.";
  }
  r.structured = json{{"metric", query::MetricJson(result->metric)},
                      {"aggregation", agg},
                      {"start", FormatTime(q.start)},
                      {"end", FormatTime(q.end)},
                      {"step_seconds", base::ToSeconds(q.step)},
                      {"series", std::move(series)},
                      {"series_omitted", omitted}};
  return r;
}

}  // namespace warpscope::server::mcp

// SPDX-License-Identifier: Apache-2.0
// ApiServer's query endpoints: each checks the token, parses its parameters, asks server/query
// (or the Storage, for plain lists) and writes the JSON answer.
#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <exception>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/logging.h"
#include "profiling/pprof.h"
#include "server/api/api_server.h"
#include "server/api/http_reply.h"
#include "server/query/batch.h"
#include "server/query/fleet.h"
#include "server/query/json_format.h"
#include "server/query/profiles.h"
#include "server/query/query_params.h"
#include "server/query/range.h"
#include "server/query/summary.h"

namespace warpscope::server {
namespace {

using api_internal::HttpStatusFor;
using api_internal::ParamsOf;
using api_internal::SendAnswer;
using api_internal::SendError;
using api_internal::SendJson;
using api_internal::SendStatus;
using nlohmann::json;

// POST /api/v1/query_batch: queries per request, and threads that run one request's queries.
constexpr size_t kMaxBatchQueries = 64;
constexpr size_t kBatchThreads = 4;

constexpr std::string_view kRangeMetricHint =
    "a metric key such as gpu.utilization; GET /api/v1/metrics lists them";
constexpr std::string_view kBreakdownMetricHint =
    "a per-process metric such as gpu.process.sm.utilization or gpu.process.memory.used";

// GET /api/v1/query_range's answer for `params`. Errors carry the status to send
// (InvalidArgument: 400).
base::Result<json> QueryRangeAnswer(Storage& storage, const Params& params, base::TimePoint now) {
  WARPSCOPE_ASSIGN_OR_RETURN(RangeQuery q, ParseRangeQuery(params, now, kRangeMetricHint));
  return query::RangeJson(storage, q);
}

// GET /api/v1/breakdown's answer for `params`: by= names the grouping (default: the
// executable).
base::Result<json> BreakdownAnswer(Storage& storage, const Params& params, base::TimePoint now) {
  WARPSCOPE_ASSIGN_OR_RETURN(RangeQuery q, ParseRangeQuery(params, now, kBreakdownMetricHint));
  std::string by(query::kDefaultBreakdownBy);
  if (auto b = Param(params, "by"); b && !b->empty()) {
    by = std::string(*b);
  }
  WARPSCOPE_ASSIGN_OR_RETURN(query::Breakdown breakdown, query::QueryBreakdown(storage, q, by));
  return query::BreakdownJson(breakdown, q, by);
}

// A list endpoint's answer, {key: [to_json(record), ...]}, or the storage's error.
template <typename Record, typename ToJson>
void SendList(httplib::Response& res, const base::Result<std::vector<Record>>& records,
              std::string_view key, ToJson to_json) {
  if (!records) {
    return SendStatus(res, records.error());
  }
  json out = json::array();
  for (const Record& r : *records) {
    out.push_back(to_json(r));
  }
  SendJson(res, 200, json{{key, std::move(out)}});
}

// One query of a POST /api/v1/query_batch body; `error` is set when the entry itself is malformed.
struct BatchQuery {
  std::string path;
  Params params;
  std::string error;
};

// One entry of the "queries" array as a BatchQuery (with its error when malformed).
BatchQuery ParseBatchEntry(const json& e, size_t i) {
  BatchQuery q;
  if (!e.is_object() || !e.contains("path") || !e["path"].is_string()) {
    q.error = fmt::format(
        "query {}: expected {{\"path\": \"query_range\"|\"breakdown\", \"params\": {{...}}}}", i);
    return q;
  }
  q.path = e["path"].get<std::string>();
  if (q.path != "query_range" && q.path != "breakdown") {
    q.error = fmt::format("query {}: unknown path \"{}\"; a batch takes query_range and breakdown",
                          i, q.path);
    return q;
  }
  if (!e.contains("params")) {
    return q;
  }
  if (!e["params"].is_object()) {
    q.error = fmt::format("query {}: params must be an object of name: value", i);
    return q;
  }
  for (const auto& [k, v] : e["params"].items()) {
    if (v.is_string()) {
      q.params.emplace(k, v.get<std::string>());
    } else if (v.is_number() || v.is_boolean()) {
      q.params.emplace(k, v.dump());
    } else if (!v.is_null()) {
      q.error = fmt::format("query {}: param {} must be a string or a number", i, k);
      break;
    }
  }
  return q;
}

// The body of POST /api/v1/query_batch: {"queries": [{"path": ..., "params": {...}}, ...]}.
// Errors (the body as a whole) are InvalidArgument with the remedy; a malformed entry is kept
// with its error so that the other queries are still answered.
base::Result<std::vector<BatchQuery>> ParseBatch(const std::string& body) {
  json doc = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    return base::Error(base::InvalidArgument(
        "query_batch: the body is not JSON; send {{\"queries\": [{{\"path\": \"query_range\", "
        "\"params\": {{...}}}}]}}"));
  }
  if (!doc.is_object() || !doc.contains("queries") || !doc["queries"].is_array()) {
    return base::Error(base::InvalidArgument(
        "query_batch: expected an object with a \"queries\" array of {{\"path\", \"params\"}}"));
  }
  const json& list = doc["queries"];
  if (list.size() > kMaxBatchQueries) {
    return base::Error(base::InvalidArgument(
        "query_batch: {} queries, at most {} per batch; split them into several batches",
        list.size(), kMaxBatchQueries));
  }
  std::vector<BatchQuery> out;
  out.reserve(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    out.push_back(ParseBatchEntry(list[i], i));
  }
  return out;
}

}  // namespace

bool ApiServer::StartQuery(const httplib::Request& req, httplib::Response& res) {
  if (!Authorized(req, res, /*ingest=*/false)) {
    return false;
  }
  ++queries_;
  return true;
}

void ApiServer::Metrics(const httplib::Request& req, httplib::Response& res) {
  if (!StartQuery(req, res)) {
    return;
  }
  SendList(res, storage_.ListMetrics(), "metrics", query::MetricJson);
}

void ApiServer::Entities(const httplib::Request& req, httplib::Response& res) {
  if (!StartQuery(req, res)) {
    return;
  }
  Params params = ParamsOf(req);
  EntityQuery q;
  if (auto k = Param(params, "kind")) {
    auto kind = ParseEntityKind(*k);
    if (!kind) {
      return SendError(res, 400, kind.error().message());
    }
    q.kind = *kind;
  }
  if (auto h = Param(params, "host")) {
    q.host = std::string(*h);
  }
  if (auto p = Param(params, "prefix")) {
    q.id_prefix = std::string(*p);
  }
  if (auto s = Param(params, "q")) {
    q.id_contains = std::string(*s);
  }
  for (const auto& [k, v] : params) {
    if (k.rfind("attr.", 0) == 0) {
      q.attributes.Set(k.substr(5), v);
    }
  }
  if (auto since = Param(params, "since")) {
    auto t = ParseTime(*since, clock_.Now());
    if (!t) {
      return SendError(res, 400, t.error().WithContext("since").message());
    }
    q.seen_since = *t;
  }
  auto limit = ParseCount(params, "limit", 1000, 100000);
  if (!limit) {
    return SendError(res, 400, limit.error().message());
  }
  q.limit = *limit;
  SendList(res, storage_.ListEntities(q), "entities", query::EntityJson);
}

void ApiServer::QueryRange(const httplib::Request& req, httplib::Response& res) {
  if (!StartQuery(req, res)) {
    return;
  }
  SendAnswer(res, QueryRangeAnswer(storage_, ParamsOf(req), clock_.Now()));
}

void ApiServer::Breakdown(const httplib::Request& req, httplib::Response& res) {
  if (!StartQuery(req, res)) {
    return;
  }
  SendAnswer(res, BreakdownAnswer(storage_, ParamsOf(req), clock_.Now()));
}

void ApiServer::Top(const httplib::Request& req, httplib::Response& res) {
  if (!StartQuery(req, res)) {
    return;
  }
  Params params = ParamsOf(req);
  TopQuery q;
  auto metric = Param(params, "metric");
  if (!metric || metric->empty()) {
    return SendError(res, 400, "metric= is required");
  }
  q.metric = std::string(*metric);
  auto match = ParseMatcher(params);
  if (!match) {
    return SendError(res, 400, match.error().message());
  }
  q.match = *match;
  auto range = ParseRange(params, clock_.Now());
  if (!range) {
    return SendError(res, 400, range.error().message());
  }
  q.start = range->start;
  q.end = range->end;
  if (auto a = Param(params, "agg")) {
    auto agg = ParseAggregation(*a);
    if (!agg) {
      return SendError(res, 400, agg.error().message());
    }
    q.aggregation = *agg;
  }
  auto limit = ParseCount(params, "limit", 10, 10000);
  if (!limit) {
    return SendError(res, 400, limit.error().message());
  }
  q.limit = *limit;
  if (auto o = Param(params, "order")) {
    if (*o != "asc" && *o != "desc") {
      return SendError(res, 400, "order= must be asc or desc");
    }
    q.ascending = *o == "asc";
  }
  // sparkline=0 asks for none, as leaving it out does (docs/api.md).
  const bool no_sparkline = Param(params, "sparkline") == std::optional<std::string_view>("0");
  auto sparkline_points = no_sparkline ? base::Result<size_t>(0)
                                       : ParseCount(params, "sparkline", 0, 500);
  if (!sparkline_points) {
    return SendError(res, 400, sparkline_points.error().message());
  }
  auto rows = query::QueryTop(storage_, q, *sparkline_points);
  if (!rows) {
    return SendStatus(res, rows.error());
  }
  SendJson(res, 200, query::TopJson(q.metric, *rows));
}

void ApiServer::Events(const httplib::Request& req, httplib::Response& res) {
  if (!StartQuery(req, res)) {
    return;
  }
  EventQuery q;
  if (base::Status st =
          FillScopedQuery(ParamsOf(req), clock_.Now(), std::chrono::hours(24), 1000, 100000, q);
      !st.ok()) {
    return SendError(res, 400, st.message());
  }
  SendList(res, storage_.QueryEvents(q), "events", query::EventJson);
}

void ApiServer::Summary(const httplib::Request& req, httplib::Response& res) {
  if (!StartQuery(req, res)) {
    return;
  }
  Params params = ParamsOf(req);
  auto host = Param(params, "host");
  if (!host || host->empty()) {
    return SendError(res, 400, "host= is required");
  }
  auto range = ParseRange(params, clock_.Now());
  if (!range) {
    return SendError(res, 400, range.error().message());
  }
  auto summary = query::SummarizeHost(storage_, *host, range->start, range->end);
  if (!summary) {
    return SendStatus(res, summary.error());
  }
  SendJson(res, 200, query::SummaryJson(*summary));
}

void ApiServer::Fleet(const httplib::Request& req, httplib::Response& res) {
  if (!StartQuery(req, res)) {
    return;
  }
  auto range = ParseRange(ParamsOf(req), clock_.Now());
  if (!range) {
    return SendError(res, 400, range.error().message());
  }
  auto fleet = query::QueryFleet(storage_, range->start, range->end);
  if (!fleet) {
    return SendStatus(res, fleet.error());
  }
  SendJson(res, 200, query::FleetJson(*fleet));
}

void ApiServer::QueryBatch(const httplib::Request& req, httplib::Response& res) {
  if (!Authorized(req, res, /*ingest=*/false)) {
    return;
  }
  auto queries = ParseBatch(req.body);
  if (!queries) {
    return SendError(res, 400, queries.error().message());
  }
  queries_ += queries->size();
  base::TimePoint now = clock_.Now();
  std::vector<json> results(queries->size());
  query::RunConcurrently(queries->size(), kBatchThreads, [&](size_t i) {
    const BatchQuery& q = (*queries)[i];
    if (!q.error.empty()) {
      results[i] = json{{"error", q.error}, {"status", 400}};
      return;
    }
    base::Result<json> answer = base::Error(base::Internal("query {}: internal error", i));
    try {
      answer = q.path == "breakdown" ? BreakdownAnswer(storage_, q.params, now)
                                     : QueryRangeAnswer(storage_, q.params, now);
    } catch (const std::exception& e) {
      WARPSCOPE_LOG_EVERY_N(ERROR, 100, "query_batch query {}: {}", i, e.what());
    }
    results[i] = answer ? std::move(*answer)
                        : json{{"error", answer.error().message()},
                               {"status", HttpStatusFor(answer.error())}};
  });
  SendJson(res, 200, json{{"results", std::move(results)}});
}

namespace {

// pid= of the profile endpoints: a positive process id, 0 when absent.
base::Result<int64_t> ParsePid(const Params& params) {
  auto p = Param(params, "pid");
  if (!p) {
    return int64_t{0};
  }
  int64_t pid = 0;
  const char* end = p->data() + p->size();
  auto [ptr, ec] = std::from_chars(p->data(), end, pid);
  if (ec != std::errc() || ptr != end || pid <= 0) {
    return base::Error(base::InvalidArgument(
        "pid={}: not a process id; give a positive number (as in GET /api/v1/profiles)", *p));
  }
  return pid;
}

// The most exclude_pid= values one request takes (a chart's "others" leaves out ten or so).
constexpr size_t kMaxExcludedPids = 256;

// exclude_pid= of the profile endpoints: every process but these (repeatable, or comma-separated:
// exclude_pid=1,2&exclude_pid=3). Not with pid=, which names one process already.
base::Status ParseExcludePids(const Params& params, ProfileQuery& query) {
  auto [begin, end] = params.equal_range("exclude_pid");
  for (auto it = begin; it != end; ++it) {
    std::string_view text = it->second;
    while (true) {
      const size_t comma = text.find(',');
      const std::string_view part = text.substr(0, comma);
      int64_t pid = 0;
      auto [ptr, ec] = std::from_chars(part.data(), part.data() + part.size(), pid);
      if (ec != std::errc() || ptr != part.data() + part.size() || pid <= 0) {
        return base::InvalidArgument(
            "exclude_pid={}: not a list of process ids; give positive numbers "
            "(exclude_pid=4242,4243)",
            it->second);
      }
      if (query.exclude_pids.size() == kMaxExcludedPids) {
        return base::InvalidArgument(
            "exclude_pid=: more than {} processes; leave fewer out, or name one with pid=",
            kMaxExcludedPids);
      }
      query.exclude_pids.push_back(pid);
      if (comma == std::string_view::npos) break;
      text.remove_prefix(comma + 1);
    }
  }
  if (!query.exclude_pids.empty() && query.pid != 0) {
    return base::InvalidArgument(
        "pid= and exclude_pid= together: pid= names one process; drop one of them");
  }
  return base::OkStatus();
}

// kind= of the merged profile: one kind, or several joined by '+' (a space once URL-decoded)
// or ',', e.g. kind=cpu+gpu, which merge one process's profiles (entity= or pid= required).
base::Status ParseMergeKinds(const Params& params, query::MergeRequest& request) {
  auto kind = Param(params, "kind");
  if (!kind) {
    return base::OkStatus();
  }
  std::vector<std::string> kinds;
  size_t begin = 0;
  const std::string_view text = *kind;
  while (begin <= text.size()) {
    size_t sep = text.find_first_of("+ ,", begin);
    if (sep == std::string_view::npos) {
      sep = text.size();
    }
    std::string part(text.substr(begin, sep - begin));
    if (part.empty() || std::find(kinds.begin(), kinds.end(), part) != kinds.end()) {
      return base::InvalidArgument(
          "kind={}: an empty or repeated kind; give one kind (kind=cpu) or several joined by "
          "'+' (kind=cpu+gpu)",
          text);
    }
    kinds.push_back(std::move(part));
    begin = sep + 1;
  }
  if (kinds.size() > 1 && request.query.entity.empty() && request.query.pid == 0) {
    return base::InvalidArgument(
        "kind={}: merging several kinds is for one process; add entity=ID or pid=N (GET "
        "/api/v1/profiles lists the window's processes)",
        text);
  }
  request.query.kind = kinds.size() == 1 ? kinds[0] : "";
  request.kinds = std::move(kinds);
  return base::OkStatus();
}

// Every label=KEY:VALUE of the merged profile (profile_labels.h): several AND, one key's OR.
base::Result<std::vector<query::LabelFilter>> ParseLabelFilters(const Params& params) {
  std::vector<query::LabelFilter> out;
  auto [begin, end] = params.equal_range("label");
  for (auto it = begin; it != end; ++it) {
    if (out.size() == query::kMaxLabelFilters) {
      return base::Error(base::InvalidArgument(
          "label=: more than {} filters; give fewer (label=nvtx:train_step* matches every "
          "range that starts so)",
          query::kMaxLabelFilters));
    }
    WARPSCOPE_ASSIGN_OR_RETURN(query::LabelFilter f, query::ParseLabelFilter(it->second));
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace

void ApiServer::Profiles(const httplib::Request& req, httplib::Response& res) {
  if (!StartQuery(req, res)) {
    return;
  }
  ProfileQuery q;
  Params params = ParamsOf(req);
  if (base::Status st =
          FillScopedQuery(params, clock_.Now(), std::chrono::hours(24), 100, 10000, q);
      !st.ok()) {
    return SendError(res, 400, st.message());
  }
  auto pid = ParsePid(params);
  if (!pid) {
    return SendError(res, 400, pid.error().message());
  }
  q.pid = *pid;
  if (base::Status st = ParseExcludePids(params, q); !st.ok()) {
    return SendError(res, 400, st.message());
  }
  SendList(res, storage_.ListProfiles(q), "profiles", query::ProfileMetaJson);
}

void ApiServer::ProfileData(const httplib::Request& req, httplib::Response& res) {
  if (!StartQuery(req, res)) {
    return;
  }
  int64_t id = 0;
  try {
    id = std::stoll(req.matches[1].str());
  } catch (...) {
    return SendError(res, 400, "bad profile id");
  }
  auto profile = storage_.ReadProfile(id);
  if (!profile) {
    return SendStatus(res, profile.error());
  }
  res.status = 200;
  res.set_header("Content-Disposition",
                 "attachment; filename=\"profile-" + std::to_string(id) + ".pb.gz\"");
  res.set_content(profile->data, "application/octet-stream");
}

void ApiServer::MergedProfile(const httplib::Request& req, httplib::Response& res) {
  if (!StartQuery(req, res)) {
    return;
  }
  Params params = ParamsOf(req);
  std::string format = "tree";
  if (auto f = Param(params, "format")) {
    format = std::string(*f);
  }
  if (format != "tree" && format != "pprof") {
    return SendError(res, 400, "format= must be tree or pprof");
  }
  query::MergeRequest request;
  if (base::Status st =
          FillScopedQuery(params, clock_.Now(), std::chrono::hours(1), 100, 1000, request.query);
      !st.ok()) {
    return SendError(res, 400, st.message());
  }
  auto pid = ParsePid(params);
  if (!pid) {
    return SendError(res, 400, pid.error().message());
  }
  request.query.pid = *pid;
  if (base::Status st = ParseExcludePids(params, request.query); !st.ok()) {
    return SendError(res, 400, st.message());
  }
  if (base::Status st = ParseMergeKinds(params, request); !st.ok()) {
    return SendError(res, 400, st.message());
  }
  if (auto t = Param(params, "thread")) {
    if (t->empty()) {
      return SendError(res, 400,
                       "thread= is empty: give a tid (thread=4242) or a thread name "
                       "(thread=DataLoader), as listed in the answer's threads");
    }
    request.thread = std::string(*t);
  }
  auto labels = ParseLabelFilters(params);
  if (!labels) {
    return SendError(res, 400, labels.error().message());
  }
  request.labels = std::move(*labels);
  auto label_values = ParseCount(params, "label_values", 20, 1000);
  if (!label_values) {
    return SendError(res, 400, label_values.error().message());
  }
  // The download keeps the labels (pprof -tagfocus); the tree sums by stack and lists them.
  request.keep_labels = format == "pprof";
  request.label_totals = format == "tree";
  auto merged = query::MergeStoredProfiles(storage_, request);
  if (!merged) {
    return SendStatus(res, merged.error());
  }
  if (merged->profiles == 0) {
    return SendError(res, 422,
                     "no stored profile in this window decodes as pprof: " + merged->first_error);
  }
  if (format == "pprof") {
    auto bytes = profiling::EncodePprof(merged->profile);
    if (!bytes) {
      return SendStatus(res, bytes.error());
    }
    res.status = 200;
    res.set_header("Content-Disposition", "attachment; filename=\"profile-merged.pb.gz\"");
    res.set_header("X-Warpscope-Label-Sets", std::to_string(merged->label_sets.kept));
    res.set_header("X-Warpscope-Label-Sets-Over-Cap", std::to_string(merged->label_sets.over_cap));
    res.set_content(*bytes, "application/octet-stream");
    return;
  }
  query::TreeJsonOptions tree_options;
  tree_options.max_label_values = *label_values;
  if (auto v = Param(params, "value")) {
    auto index = profiling::FindSampleType(merged->profile.sample_types, *v);
    if (!index) {
      return SendError(res, 400, index.error().message());
    }
    tree_options.tree.sort_value = *index;
  }
  SendJson(res, 200, query::MergedProfileTreeJson(*merged, tree_options));
}

}  // namespace warpscope::server

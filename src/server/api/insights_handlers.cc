// SPDX-License-Identifier: Apache-2.0
// ApiServer's insights endpoints: the findings of the server's insights engine, filtered, and
// one finding with its full evidence (docs/api.md, "Insights").
#include <httplib.h>

#include <nlohmann/json.hpp>
#include <string>

#include "server/api/api_server.h"
#include "server/api/http_reply.h"
#include "server/insights/insight_engine.h"
#include "server/query/query_params.h"

namespace warpscope::server {
namespace {

using api_internal::ParamsOf;
using api_internal::SendError;
using api_internal::SendJson;
using nlohmann::json;

constexpr size_t kDefaultLimit = 500;
constexpr size_t kMaxLimit = 5000;

constexpr std::string_view kInsightsOff =
    "insights are off on this server: start it without --insights-interval=0s (docs/insights.md)";

// FindingQuery from host=, entity=, rule=, severity=, state=, start=, end=, limit=. Without
// start=/end= every kept finding matches.
base::Result<insights::FindingQuery> ParseFindingQuery(const Params& params, base::TimePoint now) {
  insights::FindingQuery q;
  if (auto v = Param(params, "host")) q.host = std::string(*v);
  if (auto v = Param(params, "entity")) q.entity = std::string(*v);
  if (auto v = Param(params, "rule")) q.rule = std::string(*v);
  if (auto v = Param(params, "severity")) {
    WARPSCOPE_ASSIGN_OR_RETURN(q.severity, insights::ParseSeverity(*v));
  }
  if (auto v = Param(params, "state")) {
    WARPSCOPE_ASSIGN_OR_RETURN(q.state, insights::ParseFindingState(*v));
  }
  if (Param(params, "start") || Param(params, "end")) {
    WARPSCOPE_ASSIGN_OR_RETURN(TimeRange range, ParseRange(params, now));
    q.start = range.start;
    q.end = range.end;
  }
  WARPSCOPE_ASSIGN_OR_RETURN(q.limit, ParseCount(params, "limit", kDefaultLimit, kMaxLimit));
  return q;
}

// The list keeps a finding's figures but not its series: GET /api/v1/insights/{id} has those.
json ListedFinding(const insights::Finding& f) {
  json j = insights::FindingJson(f);
  j["evidence"].erase("series");
  return j;
}

}  // namespace

void ApiServer::Insights(const httplib::Request& req, httplib::Response& res) {
  if (!StartQuery(req, res)) return;
  if (!options_.insight_engine) return SendError(res, 404, kInsightsOff);
  base::Result<insights::FindingQuery> q = ParseFindingQuery(ParamsOf(req), clock_.Now());
  if (!q) return SendError(res, 400, q.error().message());
  // Rules that match no known rule name are the caller's typo, not an empty answer.
  std::vector<insights::RuleInfo> rules = options_.insight_engine->Rules();
  json rule_list = json::array();
  bool known_rule = q->rule.empty();
  for (const insights::RuleInfo& r : rules) {
    known_rule = known_rule || r.name == q->rule;
    rule_list.push_back(
        {{"name", r.name}, {"title", r.title}, {"severity", insights::SeverityName(r.severity)}});
  }
  if (!known_rule) {
    return SendError(res, 400,
                     fmt::format("unknown rule \"{}\": the answer's \"rules\" lists them (GET "
                                 "/api/v1/insights)",
                                 q->rule));
  }
  json list = json::array();
  size_t firing = 0, pending = 0;
  double gpu_hours = 0, cost = 0;
  for (const insights::Finding& f : options_.insight_engine->Findings(*q)) {
    firing += f.state == insights::FindingState::kFiring;
    pending += f.state == insights::FindingState::kPending;
    gpu_hours += f.waste.gpu_hours;
    cost += f.waste.cost;
    list.push_back(ListedFinding(f));
  }
  SendJson(res, 200,
           {{"insights", std::move(list)},
            {"totals",
             {{"firing", firing}, {"pending", pending}, {"gpu_hours", gpu_hours}, {"cost", cost}}},
            {"rules", std::move(rule_list)}});
}

void ApiServer::InsightById(const httplib::Request& req, httplib::Response& res) {
  if (!StartQuery(req, res)) return;
  if (!options_.insight_engine) return SendError(res, 404, kInsightsOff);
  std::string id = req.matches[1].str();
  std::optional<insights::Finding> f = options_.insight_engine->FindingById(id);
  if (!f) {
    return SendError(res, 404,
                     fmt::format("no finding {}: it was resolved and forgotten, or the id is "
                                 "wrong; GET /api/v1/insights lists them",
                                 id));
  }
  SendJson(res, 200, insights::FindingJson(*f));
}

}  // namespace warpscope::server

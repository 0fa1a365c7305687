// SPDX-License-Identifier: Apache-2.0
// ApiServer's request-trace endpoints (docs/api.md, "Request traces"): OTLP/HTTP trace ingest
// into the trace store, and the queries over it: the models seen, the latency breakdown by
// phase, the slowest or latest requests, one trace's waterfall. Every request names its serving
// process and the GPU profile window of the same process and time.
#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "base/logging.h"
#include "server/api/api_server.h"
#include "server/api/http_reply.h"
#include "server/ingest/otlp_traces.h"
#include "server/ingest/request_body.h"
#include "server/query/json_format.h"
#include "server/query/query_params.h"
#include "server/traces/trace_breakdown.h"
#include "server/traces/trace_store.h"

namespace warpscope::server {
namespace {

using api_internal::ParamsOf;
using api_internal::SendError;
using api_internal::SendJson;
using api_internal::SendStatus;
using nlohmann::json;

constexpr size_t kDefaultRequests = 50;
constexpr size_t kMaxRequests = 1000;
// The breakdown reads at most this many requests (the latest); more are reported as truncated.
constexpr size_t kDefaultBreakdownRequests = 20000;
constexpr size_t kMaxBreakdownRequests = 200000;

std::string UrlEncode(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

json Seconds(int64_t ns) { return query::Number(static_cast<double>(ns) / 1e9); }

// The serving process a span came from, and where its GPU profile of [start, end) is.
json OriginJson(const traces::SpanOrigin& o, int64_t start_ns, int64_t end_ns) {
  json entity{{"host", o.host}, {"service", o.service}};
  std::string profile = fmt::format("/api/v1/profiles/merged?host={}&kind=gpu", UrlEncode(o.host));
  if (o.pid > 0) {
    entity["kind"] = "process";
    entity["pid"] = o.pid;
    // The process entity's id is "pid/<pid>/<start time>": this prefix finds it.
    entity["entity_prefix"] = fmt::format("pid/{}/", o.pid);
    profile += fmt::format("&pid={}", o.pid);
  } else {
    entity["kind"] = "host";
  }
  // Whole seconds around the window, so that the profile windows it overlaps are all found.
  profile += fmt::format("&start={}&end={}", start_ns / 1'000'000'000,
                         (end_ns + 999'999'999) / 1'000'000'000);
  return json{{"entity", std::move(entity)}, {"profile", std::move(profile)}};
}

json Optional(const std::optional<int64_t>& v) { return v ? json(*v) : json(nullptr); }

json StatsJson(const traces::LatencyStats& s) {
  return json{{"count", s.count},
              {"mean", query::Number(s.mean)},
              {"p50", query::Number(s.p50)},
              {"p95", query::Number(s.p95)},
              {"p99", query::Number(s.p99)},
              {"max", query::Number(s.max)}};
}

json RequestJson(const traces::RequestTrace& t, bool full) {
  const traces::TraceSpan& r = t.request;
  std::optional<int64_t> ttft = t.Ttft();
  json j{{"trace_id", r.trace_id},
         {"span_id", r.span_id},
         {"request_id", r.request_id},
         {"name", r.name},
         {"model", r.model},
         {"start", Seconds(r.start_ns)},
         {"end", Seconds(r.end_ns)},
         {"duration", Seconds(t.Duration())},
         {"ttft", ttft ? Seconds(*ttft) : json(nullptr)},
         {"prompt_tokens", Optional(r.prompt_tokens)},
         {"completion_tokens", Optional(r.completion_tokens)},
         {"cached_tokens", Optional(r.cached_tokens)},
         {"error", r.error}};
  j.update(OriginJson(r.origin, r.start_ns, r.end_ns));
  json phases = json::array();
  for (const traces::TraceSpan& p : t.phases) {
    json pj{{"phase", p.phase},
            {"offset", Seconds(p.start_ns - r.start_ns)},
            {"duration", Seconds(p.end_ns - p.start_ns)}};
    if (full) {
      pj["name"] = p.name;
      pj["span_id"] = p.span_id;
      pj["start"] = Seconds(p.start_ns);
      pj["attributes"] = query::LabelsJson(p.attributes);
    }
    phases.push_back(std::move(pj));
  }
  j["phases"] = std::move(phases);
  if (full) j["attributes"] = query::LabelsJson(r.attributes);
  return j;
}

}  // namespace

void ApiServer::OtlpTraces(const httplib::Request& req, httplib::Response& res) {
  if (!Authorized(req, res, /*ingest=*/true)) return;
  if (options_.trace_store == nullptr) {
    return SendError(res, 503, "request traces are not kept by this server");
  }
  const std::optional<BodyEncoding> encoding = OtlpBodyEncoding(req, res);
  if (!encoding) return;
  const bool is_json = *encoding == BodyEncoding::kJson;
  OtlpTraceOptions decode_options;
  if (!req.remote_addr.empty()) decode_options.default_host = req.remote_addr;
  auto decoded = is_json ? DecodeOtlpTracesJson(req.body, decode_options)
                         : DecodeOtlpTracesProto(req.body, decode_options);
  if (!decoded) return Reject(res, 400, decoded.error().message());
  if (base::Status st = StoreOtlpTraces(*decoded); !st.ok()) {
    return SendError(res, api_internal::HttpStatusFor(st), st.message());
  }
  res.status = 200;
  res.set_content(EncodeOtlpTracesResponse(*decoded, is_json),
                  is_json ? "application/json" : "application/x-protobuf");
}

base::Status ApiServer::StoreOtlpTraces(const DecodedOtlpTraces& decoded) {
  if (options_.trace_store == nullptr) {
    return base::Unavailable("request traces are not kept by this server");
  }
  trace_spans_ignored_ += decoded.ignored_spans;
  trace_spans_rejected_ += decoded.rejected_spans;
  if (decoded.rejected_spans > 0) {
    WARPSCOPE_LOG_EVERY_N(WARNING, 100, "OTLP traces: {} spans left out: {}",
                          decoded.rejected_spans, decoded.first_rejection);
  }
  auto written = options_.trace_store->Write(decoded.spans, clock_.Now());
  if (!written) {
    if (api_internal::HttpStatusFor(written.error()) < 500) ++rejected_;
    return written.error();
  }
  ++trace_requests_;
  return base::OkStatus();
}

bool ApiServer::StartTraceQuery(const httplib::Request& req, httplib::Response& res) {
  if (!StartQuery(req, res)) return false;
  if (options_.trace_store == nullptr) {
    SendError(res, 404, "request traces are not kept by this server");
    return false;
  }
  return true;
}

void ApiServer::TraceModels(const httplib::Request& req, httplib::Response& res) {
  if (!StartTraceQuery(req, res)) return;
  auto range = ParseRange(ParamsOf(req), clock_.Now());
  if (!range) return SendStatus(res, range.error());
  auto models = options_.trace_store->Models(range->start, range->end);
  if (!models) return SendStatus(res, models.error());
  json out = json::array();
  for (const traces::ModelSummary& m : *models) {
    json processes = json::array();
    for (const traces::SpanOrigin& o : m.processes) {
      processes.push_back(
          OriginJson(o, base::ToUnixNanos(range->start), base::ToUnixNanos(range->end)));
    }
    out.push_back(json{{"model", m.model},
                       {"requests", m.requests},
                       {"errors", m.errors},
                       {"processes", std::move(processes)}});
  }
  SendJson(res, 200,
           json{{"start", query::Seconds(range->start)},
                {"end", query::Seconds(range->end)},
                {"models", std::move(out)}});
}

base::Result<traces::RequestQuery> ApiServer::ParseTraceQuery(const httplib::Request& req,
                                                              size_t limit, size_t max_limit,
                                                              bool model_required) {
  Params params = ParamsOf(req);
  traces::RequestQuery q;
  if (auto m = Param(params, "model")) q.model = std::string(*m);
  if (model_required && q.model.empty()) {
    return base::Error(
        base::InvalidArgument("model= is required (e.g. ?model=meta-llama/Llama-3.1-8B-Instruct); "
                              "GET /api/v1/traces/models lists them"));
  }
  if (auto h = Param(params, "host")) q.host = std::string(*h);
  WARPSCOPE_ASSIGN_OR_RETURN(TimeRange range, ParseRange(params, clock_.Now()));
  q.start = range.start;
  q.end = range.end;
  WARPSCOPE_ASSIGN_OR_RETURN(q.limit, ParseCount(params, "limit", limit, max_limit));
  std::string order = std::string(Param(params, "order").value_or("recent"));
  if (order == "slowest") {
    q.order = traces::RequestQuery::Order::kSlowest;
  } else if (order != "recent") {
    return base::Error(
        base::InvalidArgument("order={}: give slowest or recent (the default)", order));
  }
  return q;
}

void ApiServer::TraceBreakdown(const httplib::Request& req, httplib::Response& res) {
  if (!StartTraceQuery(req, res)) return;
  auto q = ParseTraceQuery(req, kDefaultBreakdownRequests, kMaxBreakdownRequests, true);
  if (!q) return SendStatus(res, q.error());
  q->order = traces::RequestQuery::Order::kRecent;
  auto requests = options_.trace_store->Requests(*q);
  if (!requests) return SendStatus(res, requests.error());
  traces::Breakdown b = traces::ComputeBreakdown(*requests);
  json phases = json::array();
  for (const traces::PhaseStats& p : b.phases) {
    json pj = StatsJson(p.latency);
    pj["phase"] = p.phase;
    phases.push_back(std::move(pj));
  }
  json ttft = StatsJson(b.ttft);
  ttft["cache_hit"] = StatsJson(b.ttft_cache_hit);
  ttft["cache_miss"] = StatsJson(b.ttft_cache_miss);
  ttft["cache_unknown"] = b.ttft_cache_unknown;
  std::map<std::string, json> processes;
  for (const traces::RequestTrace& t : *requests) {
    const traces::SpanOrigin& o = t.request.origin;
    processes.try_emplace(fmt::format("{}\n{}", o.host, o.pid),
                          OriginJson(o, base::ToUnixNanos(q->start), base::ToUnixNanos(q->end)));
  }
  json process_list = json::array();
  for (auto& [key, p] : processes) process_list.push_back(std::move(p));
  SendJson(res, 200,
           json{{"model", q->model},
                {"start", query::Seconds(q->start)},
                {"end", query::Seconds(q->end)},
                {"requests", b.requests},
                {"errors", b.errors},
                {"truncated", requests->size() >= q->limit},
                {"phases", std::move(phases)},
                {"ttft", std::move(ttft)},
                {"e2e", StatsJson(b.e2e)},
                {"processes", std::move(process_list)}});
}

void ApiServer::TraceRequests(const httplib::Request& req, httplib::Response& res) {
  if (!StartTraceQuery(req, res)) return;
  auto q = ParseTraceQuery(req, kDefaultRequests, kMaxRequests, false);
  if (!q) return SendStatus(res, q.error());
  auto requests = options_.trace_store->Requests(*q);
  if (!requests) return SendStatus(res, requests.error());
  json out = json::array();
  for (const traces::RequestTrace& t : *requests) out.push_back(RequestJson(t, false));
  SendJson(res, 200,
           json{{"start", query::Seconds(q->start)},
                {"end", query::Seconds(q->end)},
                {"requests", std::move(out)}});
}

void ApiServer::TraceById(const httplib::Request& req, httplib::Response& res) {
  if (!StartTraceQuery(req, res)) return;
  std::string id = req.matches.size() > 1 ? std::string(req.matches[1]) : "";
  std::transform(id.begin(), id.end(), id.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (id.size() != 32 || id.find_first_not_of("0123456789abcdef") != std::string::npos) {
    return SendError(res, 400, fmt::format("'{}' is not a trace id: give its 32 hex digits", id));
  }
  auto trace = options_.trace_store->Trace(id);
  if (!trace) return SendStatus(res, trace.error());
  if (trace->empty()) {
    return SendError(res, 404,
                     fmt::format("no request of trace {} is kept (older than --trace-retention, "
                                 "sampled out, or not an inference request)",
                                 id));
  }
  json out = json::array();
  for (const traces::RequestTrace& t : *trace) out.push_back(RequestJson(t, true));
  SendJson(res, 200, json{{"trace_id", id}, {"requests", std::move(out)}});
}

}  // namespace warpscope::server

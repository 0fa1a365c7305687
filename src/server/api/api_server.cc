// SPDX-License-Identifier: Apache-2.0
#include "server/api/api_server.h"

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/listen_address.h"
#include "base/logging.h"
#include "profiling/flame_tree.h"
#include "profiling/pprof.h"
#include "server/api/query_params.h"
#include "server/ingest/native_batch.h"
#include "server/ingest/otlp_metrics.h"
#include "server/ingest/remote_write.h"
#include "server/ui/ui_handler.h"
#include "web/assets.h"
#include "warpscope/v1/batch.pb.h"

namespace warpscope::server {
namespace {

using nlohmann::json;

// POST /api/v1/query_batch: queries per request, and threads that run one request's queries.
constexpr size_t kMaxBatchQueries = 64;
constexpr size_t kBatchThreads = 4;

// Unix seconds: an integer when whole (most times are: windows and steps are whole seconds),
// which keeps range answers ~10 % smaller than writing every time as a double.
json Seconds(base::TimePoint t) {
  int64_t ns = base::ToUnixNanos(t);
  if (ns % 1'000'000'000 == 0) return json(ns / 1'000'000'000);
  return json(static_cast<double>(ns) / 1e9);
}

json LabelsJson(const model::Labels& labels) {
  json out = json::object();
  for (const auto& [k, v] : labels) out[k] = v;
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

// NaN and infinities are not JSON; a value that is not finite is sent as null.
json Number(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

void SendJson(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

void SendError(httplib::Response& res, int status, std::string_view message) {
  SendJson(res, status, json{{"error", message}});
}

int HttpStatusFor(const base::Status& s) {
  switch (s.code()) {
    case base::StatusCode::kInvalidArgument:
      return 400;
    case base::StatusCode::kNotFound:
      return 404;
    case base::StatusCode::kPermissionDenied:
      return 403;
    case base::StatusCode::kResourceExhausted:
      return 413;
    case base::StatusCode::kUnavailable:
      return 503;
    default:
      return 500;
  }
}

Params ParamsOf(const httplib::Request& req) {
  Params p;
  for (const auto& [k, v] : req.params) p.emplace(k, v);
  return p;
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

// Fills the parameters the event and profile queries share: host=, entity=, kind=, the time
// range (default: the last `span`) and limit= (default `limit`, at most `max_limit`).
template <typename Query>
base::Status FillScopedQuery(const Params& params, base::TimePoint now, base::Duration span,
                             size_t limit, size_t max_limit, Query& q) {
  if (auto h = Param(params, "host")) q.host = std::string(*h);
  if (auto e = Param(params, "entity")) q.entity = std::string(*e);
  if (auto k = Param(params, "kind")) q.kind = std::string(*k);
  WARPSCOPE_ASSIGN_OR_RETURN(TimeRange range, ParseRange(params, now, span));
  q.start = range.start;
  q.end = range.end;
  WARPSCOPE_ASSIGN_OR_RETURN(q.limit, ParseCount(params, "limit", limit, max_limit));
  return base::OkStatus();
}

// step= of a range query: the given duration, or about 300 points across the range (>= 10 s).
base::Result<base::Duration> ParseStep(const Params& params, const TimeRange& range,
                                       size_t default_points = 300) {
  if (auto s = Param(params, "step")) {
    auto step = base::ParseDuration(*s);
    if (!step || step->count() <= 0) {
      return base::Error(
          base::InvalidArgument("step: expected a positive duration such as 30s or 5m"));
    }
    return *step;
  }
  return std::max<base::Duration>(std::chrono::seconds(10),
                                  (range.end - range.start) / static_cast<int64_t>(default_points));
}

// The parameters of a range query (query_range, breakdown): metric= (required; `metric_hint`
// says what to give), the matchers, the time range, step= and agg=. Errors are InvalidArgument
// with the remedy.
base::Result<RangeQuery> ParseRangeQuery(const Params& params, base::TimePoint now,
                                         std::string_view metric_hint) {
  RangeQuery q;
  auto metric = Param(params, "metric");
  if (!metric || metric->empty()) {
    return base::Error(base::InvalidArgument("metric= is required ({})", metric_hint));
  }
  q.metric = std::string(*metric);
  WARPSCOPE_ASSIGN_OR_RETURN(q.match, ParseMatcher(params));
  WARPSCOPE_ASSIGN_OR_RETURN(TimeRange range, ParseRange(params, now));
  q.start = range.start;
  q.end = range.end;
  WARPSCOPE_ASSIGN_OR_RETURN(q.step, ParseStep(params, range));
  if (auto a = Param(params, "agg")) {
    WARPSCOPE_ASSIGN_OR_RETURN(q.aggregation, ParseAggregation(*a));
  }
  return q;
}

// Per-bucket sums or means of several series (bucket start in ns -> value).
struct BucketSums {
  std::map<int64_t, std::pair<double, size_t>> buckets;  // sum, count
  void Add(const Point& p) {
    auto& b = buckets[base::ToUnixNanos(p.time)];
    b.first += p.value;
    ++b.second;
  }
  json Points(bool mean) const {
    json out = json::array();
    for (const auto& [t, b] : buckets) {
      double v = mean ? b.first / static_cast<double>(b.second) : b.first;
      out.push_back({static_cast<double>(t) / 1e9, Number(v)});
    }
    return out;
  }
};

// GET /api/v1/query_range's answer for `params`. Errors carry the status to send
// (InvalidArgument: 400).
base::Result<json> QueryRangeJson(Storage& storage, const Params& params, base::TimePoint now) {
  WARPSCOPE_ASSIGN_OR_RETURN(
      RangeQuery q,
      ParseRangeQuery(params, now,
                      "a metric key such as gpu.utilization; GET /api/v1/metrics lists them"));
  WARPSCOPE_ASSIGN_OR_RETURN(auto result, storage.QueryRange(q));
  json series = json::array();
  for (const auto& s : result.series) {
    json points = json::array();
    for (const auto& p : s.points) points.push_back({Seconds(p.time), Number(p.value)});
    series.push_back({{"host", s.series.host},
                      {"entity", s.series.entity},
                      {"kind", model::EntityKindName(s.series.entity_kind)},
                      {"labels", LabelsJson(s.series.labels)},
                      {"attributes", LabelsJson(s.series.entity_attributes)},
                      {"points", std::move(points)}});
  }
  json resolutions = json::array();
  for (Resolution r : result.resolutions) resolutions.push_back(ResolutionName(r));
  return json{{"metric", MetricJson(result.metric)},
              {"start", Seconds(q.start)},
              {"end", Seconds(q.end)},
              {"step", base::ToSeconds(q.step)},
              {"aggregation", AggregationName(q.aggregation)},
              {"resolutions", std::move(resolutions)},
              {"series", std::move(series)}};
}

// GET /api/v1/breakdown's answer for `params`: the series of a range query summed per group
// (by=: an entity attribute, else a label, else the entity id; by=entity: the entity id).
base::Result<json> BreakdownJson(Storage& storage, const Params& params, base::TimePoint now) {
  WARPSCOPE_ASSIGN_OR_RETURN(
      RangeQuery q,
      ParseRangeQuery(
          params, now,
          "a per-process metric such as gpu.process.sm.utilization or gpu.process.memory.used"));
  std::string by = "process.executable.name";
  if (auto b = Param(params, "by"); b && !b->empty()) {
    by = std::string(*b);
  }
  WARPSCOPE_ASSIGN_OR_RETURN(auto result, storage.QueryRange(q));
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
      g.sums.Add(p);
      if (std::isfinite(p.value)) {
        g.total += p.value;
      }
    }
  }
  std::vector<std::pair<std::string, const Group*>> ordered;
  for (const auto& [k, g] : groups) ordered.emplace_back(k, &g);
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const auto& a, const auto& b) { return a.second->total > b.second->total; });
  json out = json::array();
  for (const auto& [key, g] : ordered) {
    out.push_back({{"key", key},
                   {"entities", g->entities.size()},
                   {"series", g->series},
                   {"points", g->sums.Points(/*mean=*/false)}});
  }
  return json{{"metric", MetricJson(result.metric)},
              {"by", by},
              {"start", Seconds(q.start)},
              {"end", Seconds(q.end)},
              {"step", base::ToSeconds(q.step)},
              {"aggregation", AggregationName(q.aggregation)},
              {"groups", std::move(out)}};
}

// One query of a POST /api/v1/query_batch body; `error` is set when the entry itself is malformed.
struct BatchQuery {
  std::string path;
  Params params;
  std::string error;
};

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
  std::vector<BatchQuery> out(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    const json& e = list[i];
    BatchQuery& q = out[i];
    if (!e.is_object() || !e.contains("path") || !e["path"].is_string()) {
      q.error = fmt::format("query {}: expected {{\"path\": \"query_range\"|\"breakdown\", "
                            "\"params\": {{...}}}}", i);
      continue;
    }
    q.path = e["path"].get<std::string>();
    if (q.path != "query_range" && q.path != "breakdown") {
      q.error = fmt::format("query {}: unknown path \"{}\"; a batch takes query_range and breakdown",
                            i, q.path);
      continue;
    }
    if (!e.contains("params")) {
      continue;
    }
    if (!e["params"].is_object()) {
      q.error = fmt::format("query {}: params must be an object of name: value", i);
      continue;
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
  }
  return out;
}

}  // namespace

ApiServer::ApiServer(Options options, Storage& storage, const base::Clock& clock)
    : options_(std::move(options)), storage_(storage), clock_(clock) {}

ApiServer::~ApiServer() { Stop(); }

ApiServer::Stats ApiServer::stats() const {
  Stats s;
  s.batches = batches_.load();
  s.duplicate_batches = duplicate_batches_.load();
  s.series_windows = series_windows_.load();
  s.dropped_series = dropped_series_.load();
  s.rejected = rejected_.load();
  s.unauthorized = unauthorized_.load();
  s.profiles = profiles_.load();
  s.queries = queries_.load();
  s.otlp_requests = otlp_requests_.load();
  s.remote_write_requests = remote_write_requests_.load();
  s.skipped_points = skipped_points_.load();
  return s;
}

bool ApiServer::Authorized(const httplib::Request& req, httplib::Response& res, bool ingest) {
  if (options_.auth_token.empty() || (!ingest && !options_.auth_read)) return true;
  std::string header = req.get_header_value("Authorization");
  constexpr std::string_view kBearer = "Bearer ";
  if (header.rfind(kBearer, 0) == 0 &&
      ConstantTimeEquals(std::string_view(header).substr(kBearer.size()), options_.auth_token)) {
    return true;
  }
  ++unauthorized_;
  res.set_header("WWW-Authenticate", "Bearer");
  SendError(res, 401,
            header.empty() ? "missing bearer token: send 'Authorization: Bearer <token>' (the "
                             "agent's --auth-token-file)"
                           : "invalid bearer token: use the token from the server's "
                             "--auth-token-file");
  return false;
}

void ApiServer::InstallRoutes() {
  auto bind = [this](Handler h) {
    return [this, h](const httplib::Request& req, httplib::Response& res) {
      try {
        (this->*h)(req, res);
      } catch (const std::exception& e) {
        WARPSCOPE_LOG_EVERY_N(ERROR, 100, "{} {}: {}", req.method, req.path, e.what());
        SendError(res, 500, "internal error");
      } catch (...) {
        SendError(res, 500, "internal error");
      }
    };
  };
  // cpp-httplib answers "Accept-Encoding: br" with brotli at its slowest setting: hundreds of
  // milliseconds for a 100 KB JSON answer, seconds when a browser loads a dozen charts at once.
  // gzip is 30x faster and nearly as small, so brotli is taken out of every offer. (The request
  // object is httplib's own non-const local; the handler only sees it through a const ref.)
  http_->set_pre_routing_handler([](const httplib::Request& req, httplib::Response&) {
    auto& headers = const_cast<httplib::Request&>(req).headers;
    auto range = headers.equal_range("Accept-Encoding");
    for (auto it = range.first; it != range.second; ++it) {
      it->second = it->second.find("gzip") != std::string::npos ? "gzip" : "identity";
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  http_->Post("/api/v1/ingest/batch", bind(&ApiServer::IngestBatch));
  http_->Post("/api/v1/ingest/profile", bind(&ApiServer::IngestProfile));
  http_->Post("/v1/metrics", bind(&ApiServer::OtlpMetrics));
  http_->Post("/api/v1/otlp/v1/metrics", bind(&ApiServer::OtlpMetrics));
  http_->Post("/api/v1/write", bind(&ApiServer::RemoteWrite));
  http_->Get("/api/v1/metrics", bind(&ApiServer::Metrics));
  http_->Get("/api/v1/entities", bind(&ApiServer::Entities));
  http_->Get("/api/v1/query_range", bind(&ApiServer::QueryRange));
  http_->Get("/api/v1/top", bind(&ApiServer::Top));
  http_->Get("/api/v1/events", bind(&ApiServer::Events));
  http_->Get("/api/v1/summary", bind(&ApiServer::Summary));
  http_->Get("/api/v1/fleet", bind(&ApiServer::Fleet));
  http_->Get("/api/v1/breakdown", bind(&ApiServer::Breakdown));
  http_->Post("/api/v1/query_batch", bind(&ApiServer::QueryBatch));
  http_->Get("/api/v1/profiles", bind(&ApiServer::Profiles));
  http_->Get("/api/v1/profiles/merged", bind(&ApiServer::MergedProfile));
  http_->Get(R"(/api/v1/profiles/(\d+))", bind(&ApiServer::ProfileData));
  http_->Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    SendJson(res, 200, json{{"status", "ok"}});
  });
  http_->Get("/readyz", bind(&ApiServer::Ready));
  http_->Get("/metrics", bind(&ApiServer::SelfMetrics));
  // Last: every other GET is the web UI (its files, or index.html for the app's own paths).
  if (options_.serve_ui) {
    http_->Get(R"(/.*)", bind(&ApiServer::Ui));
  }
  // Bodies httplib refuses itself (too large) or paths without a route get a JSON error too.
  http_->set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    if (res.status == 413) {
      SendError(res, 413, "request body too large: split the batch or raise --max-body-bytes");
    } else if (res.status == 404) {
      SendError(res, 404, "no such endpoint: " + req.path + " (see docs/api.md)");
    } else {
      SendError(res, res.status, "request failed with HTTP " + std::to_string(res.status));
    }
  });
}

base::Result<int> ApiServer::Start() {
  WARPSCOPE_ASSIGN_OR_RETURN(base::ListenAddress addr,
                             base::ParseListenAddress(options_.listen_address));
  if (!options_.tls_cert_file.empty()) {
    auto tls = std::make_unique<httplib::SSLServer>(options_.tls_cert_file.c_str(),
                                                    options_.tls_key_file.c_str());
    if (!tls->is_valid()) {
      return base::Error(base::InvalidArgument(
          "cannot load --tls-cert {} / --tls-key {}: check that both are readable PEM files and "
          "that the key matches the certificate",
          options_.tls_cert_file, options_.tls_key_file));
    }
    http_ = std::move(tls);
  } else {
    http_ = std::make_unique<httplib::Server>();
  }
  http_->set_payload_max_length(options_.max_body_bytes);
  http_->new_task_queue = [n = options_.worker_threads] { return new httplib::ThreadPool(n); };
  // A second server on the same port must fail loudly, not share the port.
  http_->set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  InstallRoutes();
  int bound = addr.port == 0 ? http_->bind_to_any_port(addr.host)
                             : (http_->bind_to_port(addr.host, addr.port) ? addr.port : -1);
  if (bound < 0) {
    http_.reset();
    return base::Error(base::Unavailable(
        "cannot listen on {}: the port is in use or the address is not local; stop the other "
        "process or pass --listen-address",
        options_.listen_address));
  }
  port_ = bound;
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "api-http");
    http_->listen_after_bind();
  });
  // httplib marks itself running only once its accept loop starts, and a stop() before that is
  // lost (the loop would then never end): return only once it is serving. httplib 0.11 has no
  // readiness notification, hence the bounded poll.
  for (int i = 0; i < 10000 && !http_->is_running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return port_;
}

void ApiServer::Stop() {
  if (http_) http_->stop();
  if (thread_.joinable()) thread_.join();
  http_.reset();
}

void ApiServer::IngestBatch(const httplib::Request& req, httplib::Response& res) {
  if (!Authorized(req, res, /*ingest=*/true)) return;
  std::string type = req.get_header_value("Content-Type");
  bool is_json = type.rfind("application/json", 0) == 0;
  if (!is_json && type.rfind("application/x-protobuf", 0) != 0) {
    ++rejected_;
    SendError(
        res, 415,
        "Content-Type must be application/x-protobuf or application/json, got '" + type + "'");
    return;
  }
  auto decoded = is_json ? DecodeNativeBatchJson(req.body) : DecodeNativeBatchProto(req.body);
  if (!decoded) {
    ++rejected_;
    SendError(res, 400, decoded.error().message());
    return;
  }
  if (decoded->rejected_series > 0) {
    WARPSCOPE_LOG_EVERY_N(WARNING, 100, "batch from {}: {} series left out: {}",
                          decoded->batch.agent_id, decoded->rejected_series,
                          decoded->first_rejection);
  }
  const server::IngestBatch* batch = &decoded->batch;
  auto written = storage_.WriteBatch(*batch);
  if (!written) {
    int status = HttpStatusFor(written.error());
    if (status < 500) ++rejected_;
    SendError(res, status, written.error().message());
    return;
  }
  if (written->duplicate) {
    ++duplicate_batches_;
  } else {
    ++batches_;
  }
  series_windows_ += written->stored;
  dropped_series_ += written->dropped_series;
  warpscope::v1::BatchResponse reply;
  reply.set_accepted_sequence(batch->sequence);
  reply.set_duplicate(written->duplicate);
  reply.set_dropped_series(written->dropped_series);
  if (is_json || req.get_header_value("Accept").find("application/json") != std::string::npos) {
    SendJson(res, 200,
             json{{"accepted_sequence", batch->sequence},
                  {"duplicate", written->duplicate},
                  {"dropped_series", written->dropped_series}});
  } else {
    res.status = 200;
    res.set_content(reply.SerializeAsString(), "application/x-protobuf");
  }
}

void ApiServer::IngestProfile(const httplib::Request& req, httplib::Response& res) {
  if (!Authorized(req, res, /*ingest=*/true)) return;
  Params params = ParamsOf(req);
  ProfileMeta meta;
  auto host = Param(params, "host");
  auto kind = Param(params, "kind");
  if (!host || host->empty() || !kind || kind->empty()) {
    ++rejected_;
    SendError(res, 400, "host= and kind= are required (e.g. ?host=node1&kind=cpu)");
    return;
  }
  // pprof is gzip-compressed protobuf; accept uncompressed protobuf too.
  if (req.body.empty()) {
    ++rejected_;
    SendError(res, 400, "empty profile body: send a pprof file (.pb.gz)");
    return;
  }
  meta.host = std::string(*host);
  meta.kind = std::string(*kind);
  if (auto e = Param(params, "entity")) meta.entity = std::string(*e);
  if (auto x = Param(params, "executable")) meta.executable = std::string(*x);
  if (auto p = Param(params, "pid")) {
    try {
      meta.pid = std::stoll(std::string(*p));
    } catch (...) {
      ++rejected_;
      SendError(res, 400, "pid= must be a number");
      return;
    }
  }
  auto range = ParseRange(params, clock_.Now(), std::chrono::minutes(1));
  if (!range) {
    ++rejected_;
    SendError(res, 400, range.error().message());
    return;
  }
  meta.start = range->start;
  meta.end = range->end;
  for (const auto& [k, v] : params) {
    if (k.rfind("label.", 0) == 0) meta.labels.Set(k.substr(6), v);
  }
  auto id = storage_.WriteProfile(meta, req.body);
  if (!id) {
    int status = HttpStatusFor(id.error());
    if (status < 500) ++rejected_;
    SendError(res, status, id.error().message());
    return;
  }
  ++profiles_;
  SendJson(res, 200, json{{"id", *id}});
}

base::Status ApiServer::StoreBatches(const std::vector<server::IngestBatch>& batches) {
  for (const server::IngestBatch& batch : batches) {
    auto written = storage_.WriteBatch(batch);
    if (!written) {
      return written.error();
    }
    if (written->duplicate) {
      ++duplicate_batches_;
    }
    series_windows_ += written->stored;
    dropped_series_ += written->dropped_series;
  }
  return base::OkStatus();
}

void ApiServer::OtlpMetrics(const httplib::Request& req, httplib::Response& res) {
  if (!Authorized(req, res, /*ingest=*/true)) return;
  std::string type = req.get_header_value("Content-Type");
  bool is_json = type.rfind("application/json", 0) == 0;
  if (!is_json && type.rfind("application/x-protobuf", 0) != 0) {
    ++rejected_;
    SendError(res, 415,
              "Content-Type must be application/x-protobuf or application/json (OTLP/HTTP), got '" +
                  type + "'");
    return;
  }
  // httplib has inflated gzip bodies; check the limit on what was inflated.
  if (req.body.size() > options_.max_body_bytes) {
    ++rejected_;
    SendError(res, 413,
              fmt::format("request body too large: {} bytes after decompression, the limit is {}; "
                          "export smaller batches or raise --max-body-bytes",
                          req.body.size(), options_.max_body_bytes));
    return;
  }
  auto decoded = is_json ? DecodeOtlpMetricsJson(req.body) : DecodeOtlpMetricsProto(req.body);
  if (!decoded) {
    ++rejected_;
    SendError(res, 400, decoded.error().message());
    return;
  }
  if (decoded->rejected_points > 0) {
    skipped_points_ += decoded->rejected_points;
    WARPSCOPE_LOG_EVERY_N(WARNING, 100, "OTLP metrics: {} data points left out: {}",
                          decoded->rejected_points, decoded->first_rejection);
  }
  if (base::Status stored = StoreBatches(decoded->batches); !stored.ok()) {
    int status = HttpStatusFor(stored);
    if (status < 500) ++rejected_;
    SendError(res, status, stored.message());
    return;
  }
  ++otlp_requests_;
  res.status = 200;
  res.set_content(EncodeOtlpMetricsResponse(*decoded, is_json),
                  is_json ? "application/json" : "application/x-protobuf");
}

void ApiServer::RemoteWrite(const httplib::Request& req, httplib::Response& res) {
  if (!Authorized(req, res, /*ingest=*/true)) return;
  std::string type = req.get_header_value("Content-Type");
  if (type.rfind("application/x-protobuf", 0) != 0 ||
      (type.find("proto=") != std::string::npos &&
       type.find("proto=prometheus.WriteRequest") == std::string::npos)) {
    ++rejected_;
    SendError(res, 415,
              "Content-Type must be application/x-protobuf with a prometheus.WriteRequest (remote "
              "write 1.0), got '" +
                  type + "'; remote write 2.0 is not supported");
    return;
  }
  if (base::Status v =
          CheckRemoteWriteVersion(req.get_header_value("X-Prometheus-Remote-Write-Version"));
      !v.ok()) {
    ++rejected_;
    SendError(res, 400, v.message());
    return;
  }
  RemoteWriteOptions options;
  options.default_host = options_.remote_write_default_host;
  options.max_uncompressed_bytes = options_.max_body_bytes;
  std::string encoding = req.get_header_value("Content-Encoding");
  base::Result<DecodedRemoteWrite> decoded;
  if (encoding.empty() || encoding == "snappy") {
    decoded = DecodeRemoteWrite(req.body, options);
  } else if (encoding == "identity") {
    decoded = DecodeRemoteWriteProto(req.body, options);
  } else {
    ++rejected_;
    SendError(res, 415,
              "Content-Encoding must be snappy (remote write 1.0), got '" + encoding + "'");
    return;
  }
  if (!decoded) {
    ++rejected_;
    SendError(res, HttpStatusFor(decoded.error()), decoded.error().message());
    return;
  }
  uint64_t skipped = decoded->stale_markers + decoded->rejected_samples;
  skipped_points_ += skipped;
  if (decoded->rejected_samples > 0) {
    WARPSCOPE_LOG_EVERY_N(WARNING, 100, "remote write: {} samples left out: {}",
                          decoded->rejected_samples, decoded->first_rejection);
  }
  if (base::Status stored = StoreBatches(decoded->batches); !stored.ok()) {
    int status = HttpStatusFor(stored);
    if (status < 500) ++rejected_;
    SendError(res, status, stored.message());
    return;
  }
  ++remote_write_requests_;
  res.status = 204;
}

void ApiServer::Metrics(const httplib::Request& req, httplib::Response& res) {
  if (!Authorized(req, res, false)) return;
  ++queries_;
  auto metrics = storage_.ListMetrics();
  if (!metrics) return SendError(res, HttpStatusFor(metrics.error()), metrics.error().message());
  json out = json::array();
  for (const auto& m : *metrics) out.push_back(MetricJson(m));
  SendJson(res, 200, json{{"metrics", out}});
}

void ApiServer::Entities(const httplib::Request& req, httplib::Response& res) {
  if (!Authorized(req, res, false)) return;
  ++queries_;
  Params params = ParamsOf(req);
  EntityQuery q;
  if (auto k = Param(params, "kind")) {
    auto kind = ParseEntityKind(*k);
    if (!kind) return SendError(res, 400, kind.error().message());
    q.kind = *kind;
  }
  if (auto h = Param(params, "host")) q.host = std::string(*h);
  if (auto p = Param(params, "prefix")) q.id_prefix = std::string(*p);
  if (auto s = Param(params, "q")) q.id_contains = std::string(*s);
  for (const auto& [k, v] : params) {
    if (k.rfind("attr.", 0) == 0) q.attributes.Set(k.substr(5), v);
  }
  if (auto since = Param(params, "since")) {
    auto t = ParseTime(*since, clock_.Now());
    if (!t) return SendError(res, 400, t.error().WithContext("since").message());
    q.seen_since = *t;
  }
  auto limit = ParseCount(params, "limit", 1000, 100000);
  if (!limit) return SendError(res, 400, limit.error().message());
  q.limit = *limit;
  auto entities = storage_.ListEntities(q);
  if (!entities) return SendError(res, HttpStatusFor(entities.error()), entities.error().message());
  json out = json::array();
  for (const auto& e : *entities) {
    out.push_back({{"host", e.host},
                   {"kind", model::EntityKindName(e.entity.kind)},
                   {"id", e.entity.id},
                   {"parent", e.entity.parent},
                   {"attributes", LabelsJson(e.entity.attributes)},
                   {"first_seen", Seconds(e.first_seen)},
                   {"last_seen", Seconds(e.last_seen)}});
  }
  SendJson(res, 200, json{{"entities", out}});
}

void ApiServer::QueryRange(const httplib::Request& req, httplib::Response& res) {
  if (!Authorized(req, res, false)) return;
  ++queries_;
  auto answer = QueryRangeJson(storage_, ParamsOf(req), clock_.Now());
  if (!answer) return SendError(res, HttpStatusFor(answer.error()), answer.error().message());
  SendJson(res, 200, *answer);
}

void ApiServer::Top(const httplib::Request& req, httplib::Response& res) {
  if (!Authorized(req, res, false)) return;
  ++queries_;
  Params params = ParamsOf(req);
  TopQuery q;
  auto metric = Param(params, "metric");
  if (!metric || metric->empty()) return SendError(res, 400, "metric= is required");
  q.metric = std::string(*metric);
  auto match = ParseMatcher(params);
  if (!match) return SendError(res, 400, match.error().message());
  q.match = *match;
  auto range = ParseRange(params, clock_.Now());
  if (!range) return SendError(res, 400, range.error().message());
  q.start = range->start;
  q.end = range->end;
  if (auto a = Param(params, "agg")) {
    auto agg = ParseAggregation(*a);
    if (!agg) return SendError(res, 400, agg.error().message());
    q.aggregation = *agg;
  }
  auto limit = ParseCount(params, "limit", 10, 10000);
  if (!limit) return SendError(res, 400, limit.error().message());
  q.limit = *limit;
  if (auto o = Param(params, "order")) {
    if (*o != "asc" && *o != "desc") return SendError(res, 400, "order= must be asc or desc");
    q.ascending = *o == "asc";
  }
  auto sparkline_points = ParseCount(params, "sparkline", 0, 500);
  if (!sparkline_points) {
    return SendError(res, 400, sparkline_points.error().message());
  }
  auto top = storage_.TopEntities(q);
  if (!top) {
    return SendError(res, HttpStatusFor(top.error()), top.error().message());
  }
  json out = json::array();
  for (const auto& e : *top) {
    json entry = {{"host", e.host},
                  {"entity", e.entity},
                  {"kind", model::EntityKindName(e.entity_kind)},
                  {"attributes", LabelsJson(e.entity_attributes)},
                  {"value", Number(e.value)},
                  {"latest", Number(e.latest)},
                  {"latest_time", Seconds(e.latest_time)}};
    if (*sparkline_points > 0) {
      // The entity's series over the range in about `sparkline` buckets; an entity with several
      // series for the metric (per link, per mode) is shown as their mean per bucket.
      RangeQuery rq;
      rq.metric = q.metric;
      rq.match = q.match;
      rq.match.host = e.host;
      rq.match.entity = e.entity;
      rq.start = q.start;
      rq.end = q.end;
      rq.step = std::max<base::Duration>(
          std::chrono::seconds(1), (q.end - q.start) / static_cast<int64_t>(*sparkline_points));
      rq.aggregation = q.aggregation;
      auto range = storage_.QueryRange(rq);
      if (!range) {
        return SendError(res, HttpStatusFor(range.error()), range.error().message());
      }
      BucketSums sums;
      for (const auto& series : range->series) {
        for (const auto& p : series.points) {
          sums.Add(p);
        }
      }
      entry["sparkline"] = sums.Points(/*mean=*/true);
    }
    out.push_back(std::move(entry));
  }
  SendJson(res, 200, json{{"metric", q.metric}, {"entries", out}});
}

void ApiServer::Events(const httplib::Request& req, httplib::Response& res) {
  if (!Authorized(req, res, false)) return;
  ++queries_;
  Params params = ParamsOf(req);
  EventQuery q;
  if (base::Status st =
          FillScopedQuery(params, clock_.Now(), std::chrono::hours(24), 1000, 100000, q);
      !st.ok()) {
    return SendError(res, 400, st.message());
  }
  auto events = storage_.QueryEvents(q);
  if (!events) return SendError(res, HttpStatusFor(events.error()), events.error().message());
  json out = json::array();
  for (const auto& r : *events) {
    out.push_back({{"host", r.host},
                   {"entity", r.event.entity},
                   {"time", Seconds(r.event.time)},
                   {"kind", r.event.kind},
                   {"code", r.event.code},
                   {"message", r.event.message},
                   {"attributes", LabelsJson(r.event.attributes)}});
  }
  SendJson(res, 200, json{{"events", out}});
}

void ApiServer::Summary(const httplib::Request& req, httplib::Response& res) {
  if (!Authorized(req, res, false)) return;
  ++queries_;
  Params params = ParamsOf(req);
  auto host = Param(params, "host");
  if (!host || host->empty()) return SendError(res, 400, "host= is required");
  auto range = ParseRange(params, clock_.Now());
  if (!range) return SendError(res, 400, range.error().message());

  // avg, max and latest of one metric for every entity of `kind` on the host. A metric the
  // server has never seen (e.g. GPM metrics from pre-Hopper GPUs) is simply absent.
  auto summarize = [&](std::string_view metric, model::EntityKind kind, model::Labels labels,
                       json& per_entity, json& attributes) -> base::Status {
    for (Aggregation agg : {Aggregation::kAvg, Aggregation::kMax}) {
      TopQuery q;
      q.metric = std::string(metric);
      q.match.host = std::string(*host);
      q.match.entity_kind = kind;
      q.match.labels = labels;
      q.start = range->start;
      q.end = range->end;
      q.aggregation = agg;
      q.limit = 10000;
      auto top = storage_.TopEntities(q);
      if (!top) {
        if (top.error().code() == base::StatusCode::kNotFound) return base::OkStatus();
        return top.error();
      }
      for (const auto& e : *top) {
        json& m = per_entity[e.entity]["metrics"][std::string(metric)];
        m[agg == Aggregation::kAvg ? "avg" : "max"] = Number(e.value);
        m["latest"] = Number(e.latest);
        attributes[e.entity] = LabelsJson(e.entity_attributes);
      }
    }
    return base::OkStatus();
  };

  static constexpr std::string_view kGpuMetrics[] = {
      "gpu.utilization", "gpu.sm.active",   "gpu.sm.occupancy",      "gpu.tensor.active",
      "gpu.dram.active", "gpu.memory.used", "gpu.memory.total",      "gpu.power.usage",
      "gpu.power.limit", "gpu.temperature", "gpu.memory.temperature"};
  static constexpr std::string_view kHostMetrics[] = {"host.memory.used", "host.memory.total",
                                                      "host.memory.utilization", "host.load.1m",
                                                      "host.process.count"};
  json gpus = json::object(), gpu_attrs = json::object();
  for (std::string_view m : kGpuMetrics) {
    base::Status st = summarize(m, model::EntityKind::kGpu, {}, gpus, gpu_attrs);
    if (!st.ok()) return SendError(res, HttpStatusFor(st), st.message());
  }
  json hosts = json::object(), host_attrs = json::object();
  for (std::string_view m : kHostMetrics) {
    base::Status st = summarize(m, model::EntityKind::kHost, {}, hosts, host_attrs);
    if (!st.ok()) return SendError(res, HttpStatusFor(st), st.message());
  }
  base::Status st = summarize("host.cpu.utilization", model::EntityKind::kHost,
                              model::Labels{{"mode", "idle"}}, hosts, host_attrs);
  if (!st.ok()) return SendError(res, HttpStatusFor(st), st.message());

  json gpu_list = json::array();
  for (auto& [id, body] : gpus.items()) {
    gpu_list.push_back(
        {{"entity", id}, {"attributes", gpu_attrs[id]}, {"metrics", body["metrics"]}});
  }
  json host_metrics = hosts.contains(*host) ? hosts[std::string(*host)]["metrics"] : json::object();
  if (host_metrics.contains("host.cpu.utilization")) {
    // Stored per mode; the summary reports the idle share as the complement: busy.
    json idle = host_metrics["host.cpu.utilization"];
    host_metrics.erase("host.cpu.utilization");
    json busy = json::object();
    if (idle.contains("avg") && idle["avg"].is_number())
      busy["avg"] = 1.0 - idle["avg"].get<double>();
    if (idle.contains("latest") && idle["latest"].is_number()) {
      busy["latest"] = 1.0 - idle["latest"].get<double>();
    }
    host_metrics["host.cpu.busy"] = busy;
  }
  SendJson(res, 200,
           json{{"host", *host},
                {"start", Seconds(range->start)},
                {"end", Seconds(range->end)},
                {"host_metrics", host_metrics},
                {"gpus", gpu_list}});
}

void ApiServer::Fleet(const httplib::Request& req, httplib::Response& res) {
  if (!Authorized(req, res, false)) {
    return;
  }
  ++queries_;
  Params params = ParamsOf(req);
  auto range = ParseRange(params, clock_.Now());
  if (!range) {
    return SendError(res, 400, range.error().message());
  }

  struct HostFigures {
    json attributes = json::object();
    json last_seen = 0;
    std::set<std::string> gpus;
    double utilization_sum = 0;
    size_t utilization_n = 0;
    std::optional<double> power, power_limit, memory_used, memory_total, temperature_max;
    size_t gpu_processes = 0;
    size_t degraded_gpus = 0;
    size_t events = 0;
    size_t xid_events = 0;
  };
  std::map<std::string, HostFigures> hosts;

  EntityQuery eq;
  eq.kind = model::EntityKind::kHost;
  eq.seen_since = range->start;
  eq.limit = 100000;
  auto host_list = storage_.ListEntities(eq);
  if (!host_list) {
    return SendError(res, HttpStatusFor(host_list.error()), host_list.error().message());
  }
  for (const auto& h : *host_list) {
    HostFigures& f = hosts[h.host];
    f.attributes = LabelsJson(h.entity.attributes);
    f.last_seen = Seconds(h.last_seen);
  }

  // Every entity of `kind` ranked by `metric`; a metric never received is no entries.
  auto all = [&](std::string_view metric, model::EntityKind kind,
                 Aggregation agg) -> base::Result<std::vector<TopEntry>> {
    TopQuery q;
    q.metric = std::string(metric);
    q.match.entity_kind = kind;
    q.start = range->start;
    q.end = range->end;
    q.aggregation = agg;
    q.limit = 1000000;
    auto top = storage_.TopEntities(q);
    if (!top && top.error().code() == base::StatusCode::kNotFound) {
      return std::vector<TopEntry>{};
    }
    return top;
  };
  auto add = [](std::optional<double>& into, double v) {
    if (std::isfinite(v)) {
      into = into.value_or(0) + v;
    }
  };
  struct GpuMetric {
    std::string_view key;
    Aggregation agg;
    void (*apply)(HostFigures&, const TopEntry&, decltype(add)&);
  };
  const GpuMetric gpu_metrics[] = {
      {"gpu.utilization", Aggregation::kAvg,
       [](HostFigures& f, const TopEntry& e, decltype(add)&) {
         if (std::isfinite(e.value)) {
           f.utilization_sum += e.value;
           ++f.utilization_n;
         }
       }},
      {"gpu.power.usage", Aggregation::kAvg,
       [](HostFigures& f, const TopEntry& e, decltype(add)& a) { a(f.power, e.latest); }},
      {"gpu.power.limit", Aggregation::kAvg,
       [](HostFigures& f, const TopEntry& e, decltype(add)& a) { a(f.power_limit, e.latest); }},
      {"gpu.memory.used", Aggregation::kAvg,
       [](HostFigures& f, const TopEntry& e, decltype(add)& a) { a(f.memory_used, e.latest); }},
      {"gpu.memory.total", Aggregation::kAvg,
       [](HostFigures& f, const TopEntry& e, decltype(add)& a) { a(f.memory_total, e.latest); }},
      {"gpu.temperature", Aggregation::kMax,
       [](HostFigures& f, const TopEntry& e, decltype(add)&) {
         if (std::isfinite(e.value)) {
           f.temperature_max = std::max(f.temperature_max.value_or(e.value), e.value);
         }
       }},
      {"gpu.degraded", Aggregation::kAvg,
       [](HostFigures& f, const TopEntry& e, decltype(add)&) {
         if (e.latest > 0) {
           ++f.degraded_gpus;
         }
       }},
  };
  for (const GpuMetric& m : gpu_metrics) {
    auto entries = all(m.key, model::EntityKind::kGpu, m.agg);
    if (!entries) {
      return SendError(res, HttpStatusFor(entries.error()), entries.error().message());
    }
    for (const TopEntry& e : *entries) {
      HostFigures& f = hosts[e.host];
      f.gpus.insert(e.entity);
      m.apply(f, e, add);
    }
  }
  auto processes = all("gpu.process.memory.used", model::EntityKind::kProcess, Aggregation::kAvg);
  if (!processes) {
    return SendError(res, HttpStatusFor(processes.error()), processes.error().message());
  }
  for (const TopEntry& e : *processes) {
    ++hosts[e.host].gpu_processes;
  }

  EventQuery evq;
  evq.start = range->start;
  evq.end = range->end;
  evq.limit = 100000;
  auto events = storage_.QueryEvents(evq);
  if (!events) {
    return SendError(res, HttpStatusFor(events.error()), events.error().message());
  }
  for (const EventRecord& r : *events) {
    HostFigures& f = hosts[r.host];
    ++f.events;
    if (r.event.kind == "xid") {
      ++f.xid_events;
    }
  }

  auto opt = [](const std::optional<double>& v) { return v ? Number(*v) : json(nullptr); };
  json host_list_json = json::array();
  size_t total_gpus = 0, total_processes = 0, total_events = 0, hosts_with_problems = 0;
  size_t total_degraded = 0;
  double util_sum = 0;
  size_t util_n = 0;
  std::optional<double> power, power_limit, memory_used, memory_total, temperature_max;
  for (const auto& [name, f] : hosts) {
    json utilization = f.utilization_n > 0
                           ? Number(f.utilization_sum / static_cast<double>(f.utilization_n))
                           : json(nullptr);
    host_list_json.push_back({{"host", name},
                              {"attributes", f.attributes},
                              {"last_seen", f.last_seen},
                              {"gpus", f.gpus.size()},
                              {"gpu_utilization", utilization},
                              {"power_watts", opt(f.power)},
                              {"power_limit_watts", opt(f.power_limit)},
                              {"memory_used_bytes", opt(f.memory_used)},
                              {"memory_total_bytes", opt(f.memory_total)},
                              {"temperature_max", opt(f.temperature_max)},
                              {"gpu_processes", f.gpu_processes},
                              {"degraded_gpus", f.degraded_gpus},
                              {"events", f.events},
                              {"xid_events", f.xid_events}});
    total_gpus += f.gpus.size();
    total_processes += f.gpu_processes;
    total_events += f.events;
    total_degraded += f.degraded_gpus;
    if (f.events > 0 || f.degraded_gpus > 0) {
      ++hosts_with_problems;
    }
    util_sum += f.utilization_sum;
    util_n += f.utilization_n;
    for (auto [from, into] : {std::pair{&f.power, &power}, std::pair{&f.power_limit, &power_limit},
                              std::pair{&f.memory_used, &memory_used},
                              std::pair{&f.memory_total, &memory_total}}) {
      if (*from) {
        add(*into, **from);
      }
    }
    if (f.temperature_max) {
      temperature_max = std::max(temperature_max.value_or(*f.temperature_max), *f.temperature_max);
    }
  }

  // Fleet-wide timelines: mean GPU utilization and total GPU power per step (about 120 steps).
  auto timeline = [&](std::string_view metric, bool mean) -> base::Result<json> {
    RangeQuery q;
    q.metric = std::string(metric);
    q.match.entity_kind = model::EntityKind::kGpu;
    q.start = range->start;
    q.end = range->end;
    q.step = std::max<base::Duration>(std::chrono::seconds(10), (q.end - q.start) / 120);
    q.max_series = 100000;
    auto result = storage_.QueryRange(q);
    if (!result) {
      if (result.error().code() == base::StatusCode::kNotFound) {
        return json::array();
      }
      return base::Error(result.error());
    }
    BucketSums sums;
    for (const auto& series : result->series) {
      for (const auto& p : series.points) {
        sums.Add(p);
      }
    }
    return sums.Points(mean);
  };
  auto utilization_line = timeline("gpu.utilization", /*mean=*/true);
  if (!utilization_line) {
    return SendError(res, HttpStatusFor(utilization_line.error()),
                     utilization_line.error().message());
  }
  auto power_line = timeline("gpu.power.usage", /*mean=*/false);
  if (!power_line) {
    return SendError(res, HttpStatusFor(power_line.error()), power_line.error().message());
  }

  SendJson(res, 200,
           json{{"start", Seconds(range->start)},
                {"end", Seconds(range->end)},
                {"totals",
                 {{"hosts", hosts.size()},
                  {"hosts_with_problems", hosts_with_problems},
                  {"gpus", total_gpus},
                  {"degraded_gpus", total_degraded},
                  {"gpu_utilization",
                   util_n > 0 ? Number(util_sum / static_cast<double>(util_n)) : json(nullptr)},
                  {"power_watts", opt(power)},
                  {"power_limit_watts", opt(power_limit)},
                  {"memory_used_bytes", opt(memory_used)},
                  {"memory_total_bytes", opt(memory_total)},
                  {"temperature_max", opt(temperature_max)},
                  {"gpu_processes", total_processes},
                  {"events", total_events}}},
                {"hosts", host_list_json},
                {"utilization", *utilization_line},
                {"power", *power_line}});
}

void ApiServer::Breakdown(const httplib::Request& req, httplib::Response& res) {
  if (!Authorized(req, res, false)) {
    return;
  }
  ++queries_;
  auto answer = BreakdownJson(storage_, ParamsOf(req), clock_.Now());
  if (!answer) {
    return SendError(res, HttpStatusFor(answer.error()), answer.error().message());
  }
  SendJson(res, 200, *answer);
}

void ApiServer::QueryBatch(const httplib::Request& req, httplib::Response& res) {
  if (!Authorized(req, res, false)) {
    return;
  }
  auto queries = ParseBatch(req.body);
  if (!queries) {
    return SendError(res, 400, queries.error().message());
  }
  queries_ += queries->size();
  base::TimePoint now = clock_.Now();
  std::vector<json> results(queries->size());
  auto run_one = [&](size_t i) {
    const BatchQuery& q = (*queries)[i];
    if (!q.error.empty()) {
      results[i] = json{{"error", q.error}, {"status", 400}};
      return;
    }
    base::Result<json> answer = base::Error(base::Internal("query {}: internal error", i));
    try {
      answer = q.path == "breakdown" ? BreakdownJson(storage_, q.params, now)
                                     : QueryRangeJson(storage_, q.params, now);
    } catch (const std::exception& e) {
      WARPSCOPE_LOG_EVERY_N(ERROR, 100, "query_batch query {}: {}", i, e.what());
    }
    results[i] = answer ? std::move(*answer)
                        : json{{"error", answer.error().message()},
                               {"status", HttpStatusFor(answer.error())}};
  };
  // A few queries at once: the storage reads are thread-safe, and the caller's answer waits for
  // the slowest query rather than the sum of them.
  size_t workers = std::min<size_t>(kBatchThreads, queries->size());
  std::atomic<size_t> next{0};
  auto drain = [&] {
    for (size_t i = next++; i < queries->size(); i = next++) run_one(i);
  };
  std::vector<std::thread> threads;
  for (size_t t = 1; t < workers; ++t) threads.emplace_back(drain);
  drain();
  for (auto& t : threads) t.join();
  SendJson(res, 200, json{{"results", std::move(results)}});
}

void ApiServer::Ui(const httplib::Request& req, httplib::Response& res) {
  ui::UiResponse r = ui::ServeUi(web::Assets(), req.path, req.get_header_value("If-None-Match"));
  if (r.status == 404) {
    return SendError(res, 404, "no such endpoint: " + req.path + " (see docs/api.md)");
  }
  for (const auto& [k, v] : r.headers) res.set_header(k.c_str(), v);
  res.status = r.status;
  if (r.status == 200) {
    res.set_content(r.body.data(), r.body.size(), r.content_type.c_str());
  }
}

void ApiServer::Profiles(const httplib::Request& req, httplib::Response& res) {
  if (!Authorized(req, res, false)) return;
  ++queries_;
  Params params = ParamsOf(req);
  ProfileQuery q;
  if (base::Status st =
          FillScopedQuery(params, clock_.Now(), std::chrono::hours(24), 100, 10000, q);
      !st.ok()) {
    return SendError(res, 400, st.message());
  }
  auto list = storage_.ListProfiles(q);
  if (!list) return SendError(res, HttpStatusFor(list.error()), list.error().message());
  json out = json::array();
  for (const auto& m : *list) {
    out.push_back({{"id", m.id},
                   {"host", m.host},
                   {"entity", m.entity},
                   {"pid", m.pid},
                   {"executable", m.executable},
                   {"kind", m.kind},
                   {"start", Seconds(m.start)},
                   {"end", Seconds(m.end)},
                   {"labels", LabelsJson(m.labels)},
                   {"size_bytes", m.size_bytes}});
  }
  SendJson(res, 200, json{{"profiles", out}});
}

void ApiServer::ProfileData(const httplib::Request& req, httplib::Response& res) {
  if (!Authorized(req, res, false)) return;
  ++queries_;
  int64_t id = 0;
  try {
    id = std::stoll(req.matches[1].str());
  } catch (...) {
    return SendError(res, 400, "bad profile id");
  }
  auto profile = storage_.ReadProfile(id);
  if (!profile) return SendError(res, HttpStatusFor(profile.error()), profile.error().message());
  res.status = 200;
  res.set_header("Content-Disposition",
                 "attachment; filename=\"profile-" + std::to_string(id) + ".pb.gz\"");
  res.set_content(profile->data, "application/octet-stream");
}

void ApiServer::MergedProfile(const httplib::Request& req, httplib::Response& res) {
  if (!Authorized(req, res, false)) return;
  ++queries_;
  Params params = ParamsOf(req);
  std::string format = "tree";
  if (auto f = Param(params, "format")) format = std::string(*f);
  if (format != "tree" && format != "pprof") {
    return SendError(res, 400, "format= must be tree or pprof");
  }
  ProfileQuery q;
  if (base::Status st = FillScopedQuery(params, clock_.Now(), std::chrono::hours(1), 100, 1000, q);
      !st.ok()) {
    return SendError(res, 400, st.message());
  }
  auto list = storage_.ListProfiles(q);
  if (!list) return SendError(res, HttpStatusFor(list.error()), list.error().message());
  if (list->empty()) {
    return SendError(res, 404,
                     "no profile for this window: run the CPU or CUDA profiler, see docs "
                     "(docs/api.md, POST /api/v1/ingest/profile)");
  }
  // A stored profile that does not decode is left out (and counted) rather than failing the
  // whole window.
  std::vector<profiling::Profile> decoded;
  size_t skipped = 0;
  std::string first_error;
  for (const ProfileMeta& m : *list) {
    auto blob = storage_.ReadProfile(m.id);
    if (!blob) return SendError(res, HttpStatusFor(blob.error()), blob.error().message());
    // Labels are not kept: the tree and the merged download sum samples by stack.
    auto p = profiling::DecodePprof(blob->data, {.keep_labels = false});
    if (!p) {
      ++skipped;
      if (first_error.empty()) {
        first_error = fmt::format("profile {}: {}", m.id, p.error().message());
      }
      WARPSCOPE_LOG_EVERY_N(WARNING, 100, "merged profile: profile {} left out: {}", m.id,
                            p.error().message());
      continue;
    }
    decoded.push_back(std::move(*p));
  }
  if (decoded.empty()) {
    return SendError(res, 422, "no stored profile in this window decodes as pprof: " + first_error);
  }
  auto merged = profiling::Merge(decoded);
  if (!merged) return SendError(res, HttpStatusFor(merged.error()), merged.error().message());
  if (format == "pprof") {
    auto bytes = profiling::EncodePprof(*merged);
    if (!bytes) return SendError(res, HttpStatusFor(bytes.error()), bytes.error().message());
    res.status = 200;
    res.set_header("Content-Disposition", "attachment; filename=\"profile-merged.pb.gz\"");
    res.set_content(*bytes, "application/octet-stream");
    return;
  }
  profiling::FlameTreeOptions tree_options;
  if (auto v = Param(params, "value")) {
    auto index = profiling::FindSampleType(merged->sample_types, *v);
    if (!index) return SendError(res, 400, index.error().message());
    tree_options.sort_value = *index;
  }
  json types = json::array();
  for (const auto& t : merged->sample_types) types.push_back({{"type", t.type}, {"unit", t.unit}});
  SendJson(res, 200,
           json{{"sample_types", types},
                {"value", tree_options.sort_value},
                {"profiles", decoded.size()},
                {"skipped_profiles", skipped},
                {"root", profiling::FlameNodeJson(profiling::FlameTree(*merged, tree_options))}});
}

void ApiServer::Ready(const httplib::Request&, httplib::Response& res) {
  auto metrics = storage_.ListMetrics();
  if (!metrics) return SendError(res, 503, "storage not ready: " + metrics.error().message());
  SendJson(res, 200, json{{"status", "ready"}});
}

void ApiServer::SelfMetrics(const httplib::Request&, httplib::Response& res) {
  Stats s = stats();
  std::string out;
  auto counter = [&out](std::string_view name, std::string_view help, uint64_t v) {
    out += fmt::format("# HELP {} {}\n# TYPE {} counter\n{} {}\n", name, help, name, name, v);
  };
  counter("warpscope_server_batches_total", "Agent batches stored.", s.batches);
  counter("warpscope_server_duplicate_batches_total",
          "Agent batches received again after being stored (retries), not stored twice.",
          s.duplicate_batches);
  counter("warpscope_server_series_windows_total", "Series windows stored.", s.series_windows);
  counter("warpscope_server_dropped_series_total",
          "New series refused by the per-host cardinality cap.", s.dropped_series);
  counter("warpscope_server_rejected_requests_total", "Ingest requests answered with a 4xx.",
          s.rejected);
  counter("warpscope_server_unauthorized_requests_total", "Requests answered with 401.",
          s.unauthorized);
  counter("warpscope_server_profiles_total", "Profiles stored.", s.profiles);
  counter("warpscope_server_queries_total", "Query API requests.", s.queries);
  counter("warpscope_server_otlp_requests_total", "OTLP/HTTP metrics requests stored.",
          s.otlp_requests);
  counter("warpscope_server_remote_write_requests_total",
          "Prometheus remote write requests stored.", s.remote_write_requests);
  counter("warpscope_server_skipped_points_total",
          "OTLP data points and remote write samples left out (NaN, stale marker, no value).",
          s.skipped_points);
  res.status = 200;
  res.set_content(out, "text/plain; version=0.0.4; charset=utf-8");
}

}  // namespace warpscope::server

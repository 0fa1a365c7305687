// SPDX-License-Identifier: Apache-2.0
// ApiServer's training endpoints: the distributed training jobs with steps in a range, and one
// job's analysis (server/training/job_analysis.h) with its ranks' processes, GPUs, NCCL
// collectives and findings (docs/api.md, "Training jobs").
#include <httplib.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "server/api/api_server.h"
#include "server/api/http_reply.h"
#include "server/insights/insight_engine.h"
#include "server/query/query_params.h"
#include "server/training/job_analysis.h"

namespace warpscope::server {
namespace {

using api_internal::ParamsOf;
using api_internal::SendError;
using api_internal::SendJson;
using api_internal::SendStatus;
using nlohmann::json;

constexpr size_t kDefaultJobs = 100;
constexpr size_t kMaxJobs = 1000;
constexpr size_t kDefaultSteps = 200;
constexpr size_t kMaxSteps = 5000;
constexpr size_t kMaxStepRecords = 200000;

json Num(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

// [start, end) from start=/end= (from=/to= are the same), by default the last hour.
base::Result<TimeRange> RangeOf(const Params& params, base::TimePoint now) {
  Params p = params;
  for (const auto& [alias, name] : {std::pair{"from", "start"}, std::pair{"to", "end"}}) {
    auto v = Param(params, alias);
    if (v && !Param(params, name)) p.emplace(name, std::string(*v));
  }
  return ParseRange(p, now);
}

base::Result<training::JobAnalysis> Analyze(Storage& storage, const std::string& job,
                                            TimeRange range, size_t max_steps) {
  StepQuery q{.job = job, .start = range.start, .end = range.end, .limit = kMaxStepRecords};
  WARPSCOPE_ASSIGN_OR_RETURN(std::vector<StoredStep> steps, storage.QuerySteps(q));
  training::AnalysisOptions options;
  options.max_steps = max_steps;
  return training::AnalyzeJob(job, steps, options);
}

json StragglerBrief(const training::JobAnalysis& a) {
  if (!a.straggler) return nullptr;
  return {
      {"rank", a.straggler->rank}, {"host", a.straggler->host}, {"entity", a.straggler->entity}};
}

// The open (firing or pending) findings whose job.id is `job`.
std::vector<insights::Finding> JobFindings(const insights::InsightEngine* engine,
                                           std::string_view job) {
  std::vector<insights::Finding> out;
  if (!engine) return out;
  for (insights::Finding& f : engine->Findings()) {
    if (f.state == insights::FindingState::kResolved) continue;
    if (f.attributes.Get(model::attr::kJobId) == job) out.push_back(std::move(f));
  }
  return out;
}

// The process entities' pid and the GPUs they use (their gpu.process.memory.used series'
// gpu.uuid labels), by (host, entity).
struct ProcessInfo {
  std::string pid;
  std::set<std::string> gpus;
};
using ProcessMap = std::map<std::pair<std::string, std::string>, ProcessInfo>;

base::Result<ProcessMap> Processes(Storage& storage, const training::JobAnalysis& a,
                                   TimeRange range) {
  ProcessMap out;
  for (const training::RankSummary& r : a.ranks) {
    EntityQuery q;
    q.kind = model::EntityKind::kProcess;
    q.host = r.host;
    q.id_prefix = r.entity;
    q.limit = 10;
    WARPSCOPE_ASSIGN_OR_RETURN(std::vector<EntityRecord> found, storage.ListEntities(q));
    ProcessInfo& info = out[{r.host, r.entity}];
    for (const EntityRecord& e : found) {
      if (e.entity.id == r.entity)
        info.pid = std::string(e.entity.attributes.Get(model::attr::kPid));
    }
  }
  for (const std::string& host : a.hosts) {
    RangeQuery q;
    q.metric = "gpu.process.memory.used";
    q.match.host = host;
    q.match.entity_kind = model::EntityKind::kProcess;
    q.start = range.start;
    q.end = range.end;
    q.step = std::max<base::Duration>(range.end - range.start, std::chrono::seconds(1));
    q.aggregation = Aggregation::kLast;
    base::Result<RangeResult> r = storage.QueryRange(q);
    if (!r) {
      if (r.error().code() == base::StatusCode::kNotFound) continue;  // never received
      return base::Error(r.error());
    }
    for (const RangeSeries& s : r->series) {
      auto it = out.find({s.series.host, s.series.entity});
      std::string_view gpu = s.series.labels.Get(model::attr::kGpuUuid);
      if (it != out.end() && !gpu.empty()) it->second.gpus.insert(std::string(gpu));
    }
  }
  return out;
}

// Each NCCL counter's increase over the range per (collective, comm, comm_name) and rank
// process. The counters are totals since the agent first heard of the process: the increase is
// the sum of the rises between the buckets' last values, from the bucket before the range (0
// when the series has none: it began in the range), a fall counting as a reset to 0.
struct CollectiveCell {
  std::string rank;
  std::string host;
  double count = 0;
  double gpu_time_s = 0;
  double bus_bytes = 0;
};
using CollectiveKey = std::tuple<std::string, std::string, std::string>;

double CounterIncrease(const std::vector<Point>& points, base::TimePoint start,
                       base::Duration step) {
  double increase = 0;
  double previous = 0;
  for (const Point& p : points) {
    if (p.time + step <= start) {
      previous = p.value;  // the baseline: a bucket that ended before the range
      continue;
    }
    increase += p.value >= previous ? p.value - previous : p.value;
    previous = p.value;
  }
  return increase;
}

base::Result<json> Collectives(Storage& storage, const training::JobAnalysis& a, TimeRange range) {
  std::set<std::pair<std::string, std::string>> ranks;
  for (const training::RankSummary& r : a.ranks) ranks.insert({r.host, r.entity});
  const base::Duration step =
      std::max<base::Duration>(std::chrono::minutes(1), (range.end - range.start) / 1000);
  std::map<CollectiveKey, std::map<std::pair<std::string, std::string>, CollectiveCell>> cells;
  const std::pair<std::string_view, double CollectiveCell::*> metrics[] = {
      {"nccl.collectives", &CollectiveCell::count},
      {"nccl.collective.gpu_time", &CollectiveCell::gpu_time_s},
      {"nccl.collective.bus_bytes", &CollectiveCell::bus_bytes}};
  for (const auto& [metric, field] : metrics) {
    for (const std::string& host : a.hosts) {
      RangeQuery q;
      q.metric = std::string(metric);
      q.match.host = host;
      q.match.entity_kind = model::EntityKind::kProcess;
      q.start = range.start - step;
      q.end = range.end;
      q.step = step;
      q.aggregation = Aggregation::kLast;
      base::Result<RangeResult> r = storage.QueryRange(q);
      if (!r) {
        if (r.error().code() == base::StatusCode::kNotFound) continue;
        return base::Error(r.error());
      }
      for (const RangeSeries& s : r->series) {
        if (!ranks.contains({s.series.host, s.series.entity})) continue;
        const model::Labels& l = s.series.labels;
        CollectiveCell& c =
            cells[{std::string(l.Get("collective")), std::string(l.Get("comm")),
                   std::string(l.Get("comm_name"))}][{s.series.host, s.series.entity}];
        c.rank = std::string(l.Get("rank"));
        c.host = s.series.host;
        c.*field += CounterIncrease(s.points, range.start, step);
      }
    }
  }
  json out = json::array();
  for (const auto& [key, per_process] : cells) {
    json per_rank = json::array();
    for (const auto& [process, c] : per_process) {
      json rank = nullptr;
      if (!c.rank.empty()) {
        int64_t n = 0;
        auto [end, ec] = std::from_chars(c.rank.data(), c.rank.data() + c.rank.size(), n);
        rank = ec == std::errc() && end == c.rank.data() + c.rank.size() ? json(n) : json(c.rank);
      }
      per_rank.push_back(
          {{"rank", rank},
           {"host", c.host},
           {"count", std::llround(c.count)},
           {"gpu_time_s", c.gpu_time_s},
           {"mean_time_s", c.count > 0 ? Num(c.gpu_time_s / c.count) : json(nullptr)},
           {"bus_bandwidth_bytes_per_second",
            c.gpu_time_s > 0 ? Num(c.bus_bytes / c.gpu_time_s) : json(nullptr)}});
    }
    out.push_back({{"collective", std::get<0>(key)},
                   {"comm", std::get<1>(key)},
                   {"comm_name", std::get<2>(key)},
                   {"per_rank", std::move(per_rank)}});
  }
  return out;
}

json RankJson(const training::RankSummary& r, const ProcessMap& processes) {
  json gpus = json::array();
  json pid = nullptr;
  if (auto it = processes.find({r.host, r.entity}); it != processes.end()) {
    for (const std::string& g : it->second.gpus) gpus.push_back(g);
    int64_t n = 0;
    const std::string& p = it->second.pid;
    auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), n);
    if (!p.empty() && ec == std::errc() && end == p.data() + p.size()) pid = n;
  }
  return {{"rank", r.rank},
          {"host", r.host},
          {"entity", r.entity},
          {"pid", pid},
          {"gpus", std::move(gpus)},
          {"steps", r.steps},
          {"step_time_mean_s", Num(r.step_time_mean_s)},
          {"step_time_p50_s", Num(r.step_time_p50_s)},
          {"compute_share", Num(r.compute_share)},
          {"comm_share", Num(r.comm_share)},
          {"overlap_share", Num(r.overlap_share)},
          {"idle_share", Num(r.idle_share)},
          {"nccl_time_mean_s", Num(r.nccl_time_mean_s)},
          {"last_collective_offset_mean_s", Num(r.last_collective_offset_mean_s)},
          {"late_fraction", Num(r.late_fraction)},
          {"compute_excess_s", Num(r.compute_excess_s)},
          {"straggler", r.straggler},
          {"slow_interconnect", r.slow_interconnect}};
}

json StepsJson(const training::JobAnalysis& a) {
  json steps = json::array();
  for (const training::StepRow& row : a.steps) {
    json durations = json::array();
    for (double d : row.duration_s) durations.push_back(Num(d));
    steps.push_back({{"step", row.step},
                     {"start", base::ToUnixMillis(row.start)},
                     {"duration_s", std::move(durations)},
                     {"max_s", Num(row.max_s)},
                     {"last_rank", row.last_rank ? json(*row.last_rank) : json(nullptr)}});
  }
  return steps;
}

json AnalysisJson(const training::JobAnalysis& a, TimeRange range, const ProcessMap& processes) {
  json ranks = json::array();
  for (const training::RankSummary& r : a.ranks) ranks.push_back(RankJson(r, processes));
  json straggler = nullptr;
  if (a.straggler) {
    const training::Straggler& s = *a.straggler;
    straggler = {{"rank", s.rank},
                 {"host", s.host},
                 {"entity", s.entity},
                 {"reason", s.reason},
                 {"late_fraction", Num(s.late_fraction)},
                 {"lag_s", Num(s.lag_s)},
                 {"step_share", Num(s.step_share)},
                 {"gpu_hours_lost", Num(s.gpu_hours_lost)}};
  }
  json slow_steps = json::array();
  for (const training::SlowStep& s : a.slow_steps) {
    slow_steps.push_back({{"step", s.step},
                          {"start", base::ToUnixMillis(s.start)},
                          {"duration_s", Num(s.duration_s)},
                          {"trailing_median_s", Num(s.trailing_median_s)},
                          {"stall", s.stall}});
  }
  return {{"job", a.job},
          {"world_size", a.world_size},
          {"hosts", a.hosts},
          {"from", base::ToUnixMillis(range.start)},
          {"to", base::ToUnixMillis(range.end)},
          {"complete_steps", a.complete_steps},
          {"step_time_p50_s", Num(a.step_time_p50_s)},
          {"compute_share", Num(a.compute_share)},
          {"comm_share", Num(a.comm_share)},
          {"overlap_share", Num(a.overlap_share)},
          {"idle_share", Num(a.idle_share)},
          {"gpu_hours", Num(a.gpu_hours)},
          {"ranks", std::move(ranks)},
          {"steps", StepsJson(a)},
          {"straggler", std::move(straggler)},
          {"slow_interconnect_ranks", a.slow_interconnect_ranks},
          {"slow_steps", std::move(slow_steps)}};
}

}  // namespace

void ApiServer::Jobs(const httplib::Request& req, httplib::Response& res) {
  if (!StartQuery(req, res)) return;
  const Params params = ParamsOf(req);
  base::Result<TimeRange> range = RangeOf(params, clock_.Now());
  if (!range) return SendError(res, 400, range.error().message());
  base::Result<size_t> limit = ParseCount(params, "limit", kDefaultJobs, kMaxJobs);
  if (!limit) return SendError(res, 400, limit.error().message());
  base::Result<std::vector<JobRecord>> jobs =
      storage_.ListJobs({.start = range->start, .end = range->end, .limit = *limit});
  json list = json::array();
  if (!jobs && jobs.error().code() != base::StatusCode::kUnsupported) {
    return SendStatus(res, jobs.error());
  }
  // The open findings counted per job once, not read again for every job listed.
  std::map<std::string, size_t, std::less<>> findings_by_job;
  if (options_.insight_engine) {
    for (const insights::Finding& f : options_.insight_engine->Findings()) {
      std::string_view job = f.attributes.Get(model::attr::kJobId);
      if (f.state != insights::FindingState::kResolved && !job.empty()) {
        ++findings_by_job[std::string(job)];
      }
    }
  }
  for (const JobRecord& j : jobs ? *jobs : std::vector<JobRecord>{}) {
    base::Result<training::JobAnalysis> a = Analyze(storage_, j.job, *range, 0);
    if (!a) return SendStatus(res, a.error());
    list.push_back({{"job", j.job},
                    {"world_size", j.world_size},
                    {"ranks", j.ranks},
                    {"steps", j.steps},
                    {"first_step", j.first_step},
                    {"last_step", j.last_step},
                    {"first", base::ToUnixMillis(j.first)},
                    {"last", base::ToUnixMillis(j.last)},
                    {"hosts", j.hosts},
                    {"step_time_p50_s", Num(a->step_time_p50_s)},
                    {"comm_share", Num(a->comm_share)},
                    {"straggler", StragglerBrief(*a)},
                    {"findings", findings_by_job.contains(j.job) ? findings_by_job.at(j.job) : 0}});
  }
  SendJson(res, 200, {{"jobs", std::move(list)}});
}

void ApiServer::JobById(const httplib::Request& req, httplib::Response& res) {
  if (!StartQuery(req, res)) return;
  // The server decodes the path before routing: "job%2F7" is "job/7" here.
  const std::string job = req.matches[1].str();
  const Params params = ParamsOf(req);
  base::Result<TimeRange> range = RangeOf(params, clock_.Now());
  if (!range) return SendError(res, 400, range.error().message());
  base::Result<size_t> max_steps = ParseCount(params, "steps", kDefaultSteps, kMaxSteps);
  if (!max_steps) return SendError(res, 400, max_steps.error().message());
  base::Result<training::JobAnalysis> a = Analyze(storage_, job, *range, *max_steps);
  if (!a && a.error().code() != base::StatusCode::kUnsupported) {
    return SendStatus(res, a.error());
  }
  if (!a || a->ranks.empty()) {
    return SendError(res, 404,
                     fmt::format("no training job \"{}\" has steps in the range; GET "
                                 "/api/v1/jobs lists the jobs (widen start=/end=)",
                                 job));
  }
  base::Result<ProcessMap> processes = Processes(storage_, *a, *range);
  if (!processes) return SendStatus(res, processes.error());
  base::Result<json> collectives = Collectives(storage_, *a, *range);
  if (!collectives) return SendStatus(res, collectives.error());
  json body = AnalysisJson(*a, *range, *processes);
  body["collectives"] = std::move(*collectives);
  json findings = json::array();
  for (const insights::Finding& f : JobFindings(options_.insight_engine, job)) {
    findings.push_back(insights::FindingJson(f));
  }
  body["findings"] = std::move(findings);
  SendJson(res, 200, body);
}

}  // namespace warpscope::server

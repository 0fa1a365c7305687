// SPDX-License-Identifier: Apache-2.0
#include "server/insights/insight_inputs.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <utility>

namespace warpscope::server::insights {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// Bounds on what one evaluation reads, so a fleet larger than expected makes the evaluation
// slower, never unbounded.
constexpr size_t kMaxSeries = 100000;
constexpr size_t kMaxEntities = 200000;
constexpr size_t kMaxEvents = 10000;

// The series of `metric` for every entity of `kind`, by (host, entity); NotFound (a metric never
// received) reads as no series.
base::Result<RangeResult> ReadMetric(Storage& storage, std::string_view host,
                                     base::TimePoint from, base::TimePoint end, base::Duration step,
                                     size_t buckets, std::string_view metric,
                                     model::EntityKind kind, Aggregation aggregation,
                                     std::string_view mode = "") {
  RangeQuery q;
  q.metric = std::string(metric);
  q.match.host = std::string(host);
  q.match.entity_kind = kind;
  if (!mode.empty()) q.match.labels.Set("mode", mode);
  q.start = from;
  q.end = end;
  q.step = step;
  q.aggregation = aggregation;
  q.max_series = kMaxSeries;
  q.max_points = buckets + 1;
  base::Result<RangeResult> r = storage.QueryRange(q);
  if (!r && r.error().code() == base::StatusCode::kNotFound) return RangeResult{};
  return r;
}

base::Result<RangeResult> ReadMetric(Storage& storage, const InsightInputs& in,
                                     base::TimePoint from, const InputsQuery& query,
                                     std::string_view metric, model::EntityKind kind,
                                     Aggregation aggregation, std::string_view mode = "") {
  return ReadMetric(storage, query.host, from, in.end(), in.step, in.buckets, metric, kind,
                    aggregation, mode);
}

// The GPU metrics every GpuInput carries, with the member each fills and how windows combine.
struct GpuMetric {
  std::string_view key;
  Series GpuInput::*member;
  Aggregation aggregation;
  bool slow = false;  // read every InputsQuery::slow_every only
};
constexpr GpuMetric kGpuMetrics[] = {
    {"gpu.utilization", &GpuInput::utilization, Aggregation::kAvg},
    {"gpu.power.usage", &GpuInput::power, Aggregation::kAvg},
    {"gpu.power.limit", &GpuInput::power_limit, Aggregation::kAvg, true},
    {"gpu.temperature", &GpuInput::temperature, Aggregation::kAvg},
    {"gpu.memory.used", &GpuInput::memory_used, Aggregation::kAvg},
    {"gpu.memory.total", &GpuInput::memory_total, Aggregation::kAvg, true},
    {"gpu.ecc.uncorrected.volatile", &GpuInput::ecc_uncorrected, Aggregation::kLast},
    {"gpu.remapped_rows.failure", &GpuInput::remapping_failed, Aggregation::kMax},
    {"gpu.sm.occupancy", &GpuInput::sm_occupancy, Aggregation::kAvg, true},
    {"gpu.dram.active", &GpuInput::dram_active, Aggregation::kAvg, true},
    {"gpu.tensor.active", &GpuInput::tensor_active, Aggregation::kAvg, true},
    {"gpu.fp32.active", &GpuInput::fp32_active, Aggregation::kAvg, true},
    {"gpu.fp16.active", &GpuInput::fp16_active, Aggregation::kAvg, true},
    {"gpu.clock.sm", &GpuInput::sm_clock, Aggregation::kAvg},
};

}  // namespace

size_t InsightInputs::BucketAt(base::TimePoint t) const {
  if (t <= start) return 0;
  size_t i = static_cast<size_t>((t - start + step - base::Duration(1)) / step);
  return std::min(i, buckets);
}

namespace {

// `old`'s values moved to the buckets of `in` (which starts `shift` buckets later); buckets from
// `fresh` on are left NaN for the new read to fill.
Series Shifted(const Series& old, size_t shift, size_t buckets, size_t fresh) {
  Series s(buckets, kNaN);
  for (size_t i = 0; i < std::min(buckets, fresh); ++i) {
    if (i + shift < old.size()) s[i] = old[i + shift];
  }
  return s;
}

// Writes `points` into `s` (buckets of `step` from `start`), at buckets >= `fresh` only.
void Fill(Series& s, base::TimePoint start, base::Duration step, const std::vector<Point>& points,
          size_t fresh) {
  for (const Point& p : points) {
    if (p.time < start) continue;
    size_t i = static_cast<size_t>((p.time - start) / step);
    if (i >= fresh && i < s.size()) s[i] = p.value;
  }
}

void Fill(Series& s, const InsightInputs& in, const std::vector<Point>& points, size_t fresh) {
  Fill(s, in.start, in.step, points, fresh);
}

bool AllNaN(const GpuInput& g) {
  for (const GpuMetric& m : kGpuMetrics) {
    for (double v : g.*m.member) {
      if (!std::isnan(v)) return false;
    }
  }
  return true;
}

}  // namespace

namespace {

// What a read keeps of the previous snapshot: its buckets before `fresh`, moved `shift`
// buckets earlier; everything from `read_from` on is read from storage.
struct ReadPlan {
  const InsightInputs* previous = nullptr;  // null: a full read
  size_t shift = 0;
  size_t fresh = 0;
  base::TimePoint read_from;
  // The slow GPU metrics': kept before `slow_fresh`, read from `slow_read_from`, or not read at
  // all this time (`slow_skip`: everything kept, the new buckets NaN).
  size_t slow_fresh = 0;
  base::TimePoint slow_read_from;
  bool slow_skip = false;
};

bool NoData(const Series& s) {
  return std::all_of(s.begin(), s.end(), [](double v) { return std::isnan(v); });
}

base::Status ReadGpus(Storage& storage, const InputsQuery& query, const ReadPlan& plan,
                      const std::map<std::string, std::string, std::less<>>& cluster_of,
                      InsightInputs& in) {
  std::map<std::pair<std::string, std::string>, GpuInput> gpus;
  if (plan.previous) {
    for (const GpuInput& old : plan.previous->gpus) {
      GpuInput& g = gpus[{old.host, old.uuid}];
      g.host = old.host;
      g.uuid = old.uuid;
      g.attributes = old.attributes;
      for (const GpuMetric& m : kGpuMetrics) {
        g.*m.member =
            Shifted(old.*m.member, plan.shift, in.buckets, m.slow ? plan.slow_fresh : plan.fresh);
      }
    }
  }
  for (const GpuMetric& m : kGpuMetrics) {
    if (m.slow && plan.slow_skip) continue;
    const size_t fresh = m.slow ? plan.slow_fresh : plan.fresh;
    WARPSCOPE_ASSIGN_OR_RETURN(
        RangeResult r, ReadMetric(storage, in, m.slow ? plan.slow_read_from : plan.read_from,
                                  query, m.key, model::EntityKind::kGpu, m.aggregation));
    // A GPU metric has one series per GPU; should one ever carry labels (per link, per
    // instance), the unlabelled one is the device's. Series come ordered by labels, so an
    // unlabelled series is seen before labelled ones of its GPU.
    std::set<std::pair<std::string, std::string>> filled;
    for (const RangeSeries& rs : r.series) {
      std::pair<std::string, std::string> key{rs.series.host, rs.series.entity};
      if (!filled.insert(key).second) continue;
      GpuInput& g = gpus[key];
      if (g.uuid.empty()) {
        g.host = rs.series.host;
        g.uuid = rs.series.entity;
        for (const GpuMetric& each : kGpuMetrics) (g.*each.member).assign(in.buckets, kNaN);
      }
      g.attributes = rs.series.entity_attributes;
      Fill(g.*m.member, in, rs.points, fresh);
    }
  }
  for (auto& [key, g] : gpus) {
    if (AllNaN(g)) continue;  // gone for the whole lookback
    auto it = cluster_of.find(g.host);
    g.cluster = it != cluster_of.end() ? it->second : "";
    in.gpus.push_back(std::move(g));
  }
  return base::OkStatus();
}

// Every process with GPU memory in the lookback, per GPU, with its CPU use.
// The CUDA runtime series of a process (see ProcessGpuInput), each the rate of a counter
// summed over the process's devices (and copy kinds).
struct ProcessCudaMetric {
  std::string_view key;
  std::string_view direction;  // the `direction` label; "" for any
  Series ProcessGpuInput::*member;
};
constexpr ProcessCudaMetric kProcessCudaMetrics[] = {
    {"cuda.kernel.time", "", &ProcessGpuInput::cuda_kernel_time},
    {"cuda.memcpy.time", "H2D", &ProcessGpuInput::cuda_h2d_time},
    {"cuda.memory.allocations", "", &ProcessGpuInput::cuda_allocations},
    {"cuda.memory.releases", "", &ProcessGpuInput::cuda_releases},
};
constexpr Series ProcessGpuInput::*kProcessCudaSeries[] = {
    &ProcessGpuInput::cuda_kernel_time, &ProcessGpuInput::cuda_h2d_time,
    &ProcessGpuInput::cuda_allocations, &ProcessGpuInput::cuda_releases};

// Adds `points` into `s` at buckets >= `fresh` (NaN + v = v), so that series of several devices
// sum.
void AddFill(Series& s, const InsightInputs& in, const std::vector<Point>& points, size_t fresh) {
  for (const Point& p : points) {
    if (p.time < in.start) continue;
    size_t i = static_cast<size_t>((p.time - in.start) / in.step);
    if (i < fresh || i >= s.size()) continue;
    s[i] = std::isnan(s[i]) ? p.value : s[i] + p.value;
  }
}

base::Status ReadProcessCuda(
    Storage& storage, const InputsQuery& query, const ReadPlan& plan, InsightInputs& in,
    const std::map<std::pair<std::string, std::string>, std::vector<ProcessGpuInput*>>& by_entity) {
  for (const ProcessCudaMetric& m : kProcessCudaMetrics) {
    RangeQuery q;
    q.metric = std::string(m.key);
    q.match.host = query.host;
    q.match.entity_kind = model::EntityKind::kProcess;
    if (!m.direction.empty()) q.match.labels.Set("direction", m.direction);
    q.start = plan.read_from;
    q.end = in.end();
    q.step = in.step;
    q.aggregation = Aggregation::kRate;
    q.max_series = kMaxSeries;
    q.max_points = in.buckets + 1;
    base::Result<RangeResult> r = storage.QueryRange(q);
    if (!r && r.error().code() == base::StatusCode::kNotFound) continue;  // never received
    if (!r) return r.error();
    for (const RangeSeries& rs : r->series) {
      auto it = by_entity.find({rs.series.host, rs.series.entity});
      if (it == by_entity.end()) continue;
      for (ProcessGpuInput* p : it->second) AddFill(p->*m.member, in, rs.points, plan.fresh);
    }
  }
  return base::OkStatus();
}

base::Status ReadProcesses(Storage& storage, const InputsQuery& query, const ReadPlan& plan,
                           InsightInputs& in) {
  EntityQuery procs;
  procs.kind = model::EntityKind::kProcess;
  procs.host = query.host;
  procs.seen_since = in.start;
  procs.limit = kMaxEntities;
  WARPSCOPE_ASSIGN_OR_RETURN(std::vector<EntityRecord> records, storage.ListEntities(procs));
  std::map<std::pair<std::string, std::string>, base::TimePoint> first_seen;
  for (const EntityRecord& p : records) first_seen[{p.host, p.entity.id}] = p.first_seen;

  std::map<std::tuple<std::string, std::string, std::string>, ProcessGpuInput> processes;
  if (plan.previous) {
    for (const ProcessGpuInput& old : plan.previous->processes) {
      ProcessGpuInput& p = processes[{old.host, old.entity, old.gpu}];
      p = old;
      p.memory_used = Shifted(old.memory_used, plan.shift, in.buckets, plan.fresh);
      p.cpu_utilization = Shifted(old.cpu_utilization, plan.shift, in.buckets, plan.fresh);
      for (Series ProcessGpuInput::*m : kProcessCudaSeries) {
        p.*m = Shifted(old.*m, plan.shift, in.buckets, plan.fresh);
      }
    }
  }
  WARPSCOPE_ASSIGN_OR_RETURN(
      RangeResult memory, ReadMetric(storage, in, plan.read_from, query, "gpu.process.memory.used",
                                     model::EntityKind::kProcess, Aggregation::kAvg));
  for (const RangeSeries& rs : memory.series) {
    std::string gpu(rs.series.labels.Get("gpu.uuid"));
    ProcessGpuInput& p = processes[{rs.series.host, rs.series.entity, gpu}];
    if (p.entity.empty()) {
      p.host = rs.series.host;
      p.entity = rs.series.entity;
      p.gpu = gpu;
      p.memory_used.assign(in.buckets, kNaN);
      p.cpu_utilization.assign(in.buckets, kNaN);
      for (Series ProcessGpuInput::*m : kProcessCudaSeries) (p.*m).assign(in.buckets, kNaN);
    }
    p.attributes = rs.series.entity_attributes;
    Fill(p.memory_used, in, rs.points, plan.fresh);
  }
  // CPU use of those processes (the agent reports every GPU process besides its top ones).
  std::map<std::pair<std::string, std::string>, std::vector<ProcessGpuInput*>> by_entity;
  for (auto& [key, p] : processes) by_entity[{p.host, p.entity}].push_back(&p);
  WARPSCOPE_ASSIGN_OR_RETURN(
      RangeResult cpu, ReadMetric(storage, in, plan.read_from, query, "process.cpu.utilization",
                                  model::EntityKind::kProcess, Aggregation::kAvg));
  for (const RangeSeries& rs : cpu.series) {
    auto it = by_entity.find({rs.series.host, rs.series.entity});
    if (it == by_entity.end()) continue;
    for (ProcessGpuInput* p : it->second) Fill(p->cpu_utilization, in, rs.points, plan.fresh);
  }
  WARPSCOPE_RETURN_IF_ERROR(ReadProcessCuda(storage, query, plan, in, by_entity));
  for (auto& [key, p] : processes) {
    if (NoData(p.memory_used)) continue;
    auto it = first_seen.find({p.host, p.entity});
    p.first_seen = it != first_seen.end() ? it->second : in.start;
    in.processes.push_back(std::move(p));
  }
  return base::OkStatus();
}

// Each host's CPU: idle and iowait shares and its logical CPU count.
base::Status ReadHosts(Storage& storage, const InputsQuery& query, const ReadPlan& plan,
                       const std::map<std::string, std::string, std::less<>>& cluster_of,
                       InsightInputs& in) {
  std::map<std::string, HostInput> hosts;
  if (plan.previous) {
    for (const HostInput& old : plan.previous->hosts) {
      HostInput& h = hosts[old.host];
      h.host = old.host;
      h.cpu_idle = Shifted(old.cpu_idle, plan.shift, in.buckets, plan.fresh);
      h.cpu_iowait = Shifted(old.cpu_iowait, plan.shift, in.buckets, plan.fresh);
      h.logical_cpus = Shifted(old.logical_cpus, plan.shift, in.buckets, plan.fresh);
    }
  }
  struct HostMetric {
    std::string_view key;
    std::string_view mode;  // the `mode` label; "" for none
    Series HostInput::*member;
  };
  constexpr HostMetric kHostMetrics[] = {
      {"host.cpu.utilization", "idle", &HostInput::cpu_idle},
      {"host.cpu.utilization", "iowait", &HostInput::cpu_iowait},
      {"host.cpu.logical_count", "", &HostInput::logical_cpus},
  };
  for (const HostMetric& m : kHostMetrics) {
    InputsQuery q = query;
    WARPSCOPE_ASSIGN_OR_RETURN(
        RangeResult r, ReadMetric(storage, in, plan.read_from, q, m.key, model::EntityKind::kHost,
                                  Aggregation::kAvg, m.mode));
    for (const RangeSeries& rs : r.series) {
      HostInput& h = hosts[rs.series.host];
      if (h.host.empty()) {
        h.host = rs.series.host;
        for (Series* s : {&h.cpu_idle, &h.cpu_iowait, &h.logical_cpus}) {
          s->assign(in.buckets, kNaN);
        }
      }
      Fill(h.*m.member, in, rs.points, plan.fresh);
    }
  }
  for (auto& [name, h] : hosts) {
    if (NoData(h.cpu_idle) && NoData(h.logical_cpus)) continue;
    auto it = cluster_of.find(h.host);
    h.cluster = it != cluster_of.end() ? it->second : "";
    in.hosts.push_back(std::move(h));
  }
  return base::OkStatus();
}

// The inference metrics each InferenceInput carries: the member each fills and the label its
// series must have ("" for none).
struct InferenceMetric {
  std::string_view key;
  std::string_view label;
  std::string_view value;
  Series InferenceInput::*member;
};
constexpr InferenceMetric kInferenceMetrics[] = {
    {"inference.batch.efficiency", "", "", &InferenceInput::batch_efficiency},
    {"inference.requests.running", "", "", &InferenceInput::requests_running},
    {"inference.requests.waiting", "", "", &InferenceInput::requests_waiting},
    {"inference.request.rate", "", "", &InferenceInput::request_rate},
    {"inference.token.rate", "token_type", "input", &InferenceInput::input_token_rate},
    {"inference.token.rate", "token_type", "output", &InferenceInput::output_token_rate},
    {"inference.kv_cache.usage", "", "", &InferenceInput::kv_cache_usage},
    {"inference.time_to_first_token", "quantile", "0.95", &InferenceInput::ttft_p95},
    {"inference.queue_time", "quantile", "0.95", &InferenceInput::queue_time_p95},
};

// Writes `points` into `s` at buckets >= `fresh`, keeping the higher value where the bucket has
// one already (batch efficiency's two bases: the limit the engine is closest to).
void MaxFill(Series& s, const InsightInputs& in, const std::vector<Point>& points, size_t fresh) {
  for (const Point& p : points) {
    if (p.time < in.start) continue;
    size_t i = static_cast<size_t>((p.time - in.start) / in.step);
    if (i < fresh || i >= s.size()) continue;
    s[i] = std::isnan(s[i]) ? p.value : std::max(s[i], p.value);
  }
}

// Each serving process's models: the inference metrics of its series, by `model` label.
base::Status ReadInference(Storage& storage, const InputsQuery& query, const ReadPlan& plan,
                           InsightInputs& in) {
  std::map<std::tuple<std::string, std::string, std::string>, InferenceInput> served;
  if (plan.previous) {
    for (const InferenceInput& old : plan.previous->inference) {
      InferenceInput& s = served[{old.host, old.entity, old.model}];
      s = old;
      for (const InferenceMetric& m : kInferenceMetrics) {
        s.*m.member = Shifted(old.*m.member, plan.shift, in.buckets, plan.fresh);
      }
    }
  }
  for (const InferenceMetric& m : kInferenceMetrics) {
    RangeQuery q;
    q.metric = std::string(m.key);
    q.match.host = query.host;
    q.match.entity_kind = model::EntityKind::kProcess;
    if (!m.label.empty()) q.match.labels.Set(m.label, m.value);
    q.start = plan.read_from;
    q.end = in.end();
    q.step = in.step;
    q.aggregation = Aggregation::kAvg;
    q.max_series = kMaxSeries;
    q.max_points = in.buckets + 1;
    base::Result<RangeResult> r = storage.QueryRange(q);
    if (!r && r.error().code() == base::StatusCode::kNotFound) continue;  // never received
    if (!r) return r.error();
    for (const RangeSeries& rs : r->series) {
      std::string model_name(rs.series.labels.Get("model"));
      InferenceInput& s = served[{rs.series.host, rs.series.entity, model_name}];
      if (s.entity.empty()) {
        s.host = rs.series.host;
        s.entity = rs.series.entity;
        s.model = std::move(model_name);
        for (const InferenceMetric& each : kInferenceMetrics) {
          (s.*each.member).assign(in.buckets, kNaN);
        }
      }
      s.attributes = rs.series.entity_attributes;
      MaxFill(s.*m.member, in, rs.points, plan.fresh);
    }
  }
  for (auto& [key, s] : served) {
    bool any = false;
    for (const InferenceMetric& m : kInferenceMetrics) any = any || !NoData(s.*m.member);
    if (any) in.inference.push_back(std::move(s));
  }
  return base::OkStatus();
}

// An event of a MIG instance (an XID the driver attributes to GPU instance 9) belongs to its
// GPU for the rules, which judge whole GPUs: its entity becomes the GPU's, and the instance is
// kept in the event's attributes (mig.gpu_instance_id, mig.compute_instance_id, mig.profile,
// mig.entity).
base::Status AttachMigEventsToTheirGpu(Storage& storage, const InputsQuery& query,
                                       std::vector<EventRecord>& events) {
  if (events.empty()) return base::OkStatus();
  EntityQuery migs;
  migs.kind = model::EntityKind::kMigInstance;
  migs.host = query.host;
  migs.limit = kMaxEntities;
  WARPSCOPE_ASSIGN_OR_RETURN(std::vector<EntityRecord> records, storage.ListEntities(migs));
  std::map<std::pair<std::string_view, std::string_view>, const model::Entity*> by_id;
  for (const EntityRecord& r : records) {
    if (!r.entity.parent.empty()) by_id[{r.host, r.entity.id}] = &r.entity;
  }
  for (EventRecord& e : events) {
    auto it = by_id.find({e.host, e.event.entity});
    if (it == by_id.end()) continue;
    const model::Entity& mig = *it->second;
    for (std::string_view key : {model::attr::kMigGpuInstanceId,
                                 model::attr::kMigComputeInstanceId, model::attr::kMigProfile}) {
      std::string_view v = mig.attributes.Get(key);
      if (!v.empty()) e.event.attributes.Set(key, v);
    }
    e.event.attributes.Set("mig.entity", mig.id);
    e.event.entity = mig.parent;
  }
  return base::OkStatus();
}

}  // namespace

base::Result<InsightInputs> ReadInsightInputs(Storage& storage, const InputsQuery& query,
                                              const InsightInputs* previous) {
  if (query.step <= base::Duration::zero() || query.lookback < query.step) {
    return base::Error(base::InvalidArgument(
        "insights: the step must be positive and the lookback at least one step"));
  }
  InsightInputs in;
  in.step = query.step;
  const int64_t step_ns = query.step.count();
  const int64_t from = base::ToUnixNanos(query.end - query.lookback);
  in.start = base::FromUnixNanos(from - ((from % step_ns) + step_ns) % step_ns);
  in.buckets =
      static_cast<size_t>((query.end - in.start + query.step - base::Duration(1)) / query.step);
  in.host_all = query.host.empty();

  // What can be kept of the previous snapshot: its buckets before the re-read margin before
  // its end, shifted to this one's start.
  ReadPlan plan;
  if (previous && previous->step == in.step && previous->start <= in.start &&
      in.start < previous->end() && previous->host_all == in.host_all) {
    plan.shift = static_cast<size_t>((in.start - previous->start) / in.step);
    const base::TimePoint reread = std::max(in.start, previous->end() - query.reread);
    plan.fresh = static_cast<size_t>((reread - in.start) / in.step);
    if (plan.fresh > 0) plan.previous = previous;
  }
  plan.read_from = in.BucketStart(plan.fresh);
  plan.slow_fresh = plan.fresh;
  in.slow_end = in.end();
  if (plan.previous) {
    if (previous->slow_end + query.slow_every > in.end()) {
      plan.slow_skip = true;
      plan.slow_fresh = in.buckets;
      in.slow_end = previous->slow_end;
    } else {
      const base::TimePoint reread =
          std::clamp(previous->slow_end - query.reread, in.start, in.BucketStart(plan.fresh));
      plan.slow_fresh = static_cast<size_t>((reread - in.start) / in.step);
    }
  }
  plan.slow_read_from = in.BucketStart(plan.slow_fresh);

  // Host tags: the cluster a GPU belongs to, for per-cluster baselines.
  EntityQuery hosts;
  hosts.kind = model::EntityKind::kHost;
  hosts.host = query.host;
  hosts.limit = kMaxEntities;
  WARPSCOPE_ASSIGN_OR_RETURN(std::vector<EntityRecord> host_records, storage.ListEntities(hosts));
  std::map<std::string, std::string, std::less<>> cluster_of;
  for (const EntityRecord& h : host_records) {
    cluster_of[h.host] = std::string(h.entity.attributes.Get("cluster"));
  }
  WARPSCOPE_RETURN_IF_ERROR(ReadGpus(storage, query, plan, cluster_of, in));
  WARPSCOPE_RETURN_IF_ERROR(ReadProcesses(storage, query, plan, in));
  WARPSCOPE_RETURN_IF_ERROR(ReadHosts(storage, query, plan, cluster_of, in));
  WARPSCOPE_RETURN_IF_ERROR(ReadInference(storage, query, plan, in));

  EventQuery events;
  events.host = query.host;
  events.start = in.start;
  events.end = in.end();
  events.limit = kMaxEvents;
  WARPSCOPE_ASSIGN_OR_RETURN(in.events, storage.QueryEvents(events));
  WARPSCOPE_RETURN_IF_ERROR(AttachMigEventsToTheirGpu(storage, query, in.events));
  std::stable_sort(in.events.begin(), in.events.end(),
                   [](const auto& a, const auto& b) { return a.event.time < b.event.time; });
  return in;
}

base::Result<LongView> ReadLongView(Storage& storage, const LongViewQuery& query,
                                    const LongView* previous) {
  if (query.step <= base::Duration::zero() || query.lookback < query.step) {
    return base::Error(base::InvalidArgument(
        "insights: the long view's step must be positive and its lookback at least one step"));
  }
  LongView view;
  view.step = query.step;
  view.host_all = query.host.empty();
  const int64_t step_ns = query.step.count();
  const int64_t end = base::ToUnixNanos(query.end);
  const int64_t aligned_end = end - ((end % step_ns) + step_ns) % step_ns;
  view.buckets = static_cast<size_t>(std::max<int64_t>(1, query.lookback.count() / step_ns));
  view.start = base::FromUnixNanos(aligned_end - step_ns * static_cast<int64_t>(view.buckets));

  size_t shift = 0;
  size_t fresh = 0;
  if (previous && previous->step == view.step && previous->start <= view.start &&
      view.start < previous->end() && previous->host_all == view.host_all) {
    shift = static_cast<size_t>((view.start - previous->start) / view.step);
    const base::TimePoint reread = std::max(view.start, previous->end() - query.reread);
    fresh = static_cast<size_t>((reread - view.start) / view.step);
  }
  std::map<std::pair<std::string, std::string>, LongGpuInput> gpus;
  constexpr std::pair<std::string_view, Series LongGpuInput::*> kLongMetrics[] = {
      {"gpu.utilization", &LongGpuInput::utilization},
      {"gpu.power.usage", &LongGpuInput::power},
      {"gpu.memory.used", &LongGpuInput::memory_used},
  };
  if (fresh > 0) {
    for (const LongGpuInput& old : previous->gpus) {
      LongGpuInput& g = gpus[{old.host, old.uuid}];
      g.host = old.host;
      g.uuid = old.uuid;
      for (const auto& [key, member] : kLongMetrics) {
        g.*member = Shifted(old.*member, shift, view.buckets, fresh);
      }
    }
  }
  for (const auto& [key, member] : kLongMetrics) {
    WARPSCOPE_ASSIGN_OR_RETURN(
        RangeResult r,
        ReadMetric(storage, query.host, view.BucketStart(fresh), view.end(), view.step,
                   view.buckets, key, model::EntityKind::kGpu, Aggregation::kAvg));
    std::set<std::pair<std::string, std::string>> filled;
    for (const RangeSeries& rs : r.series) {
      std::pair<std::string, std::string> id{rs.series.host, rs.series.entity};
      if (!filled.insert(id).second) continue;  // the unlabelled series first, as above
      LongGpuInput& g = gpus[id];
      if (g.uuid.empty()) {
        g.host = rs.series.host;
        g.uuid = rs.series.entity;
        for (const auto& [each, m] : kLongMetrics) (g.*m).assign(view.buckets, kNaN);
      }
      Fill(g.*member, view.start, view.step, rs.points, fresh);
    }
  }
  for (auto& [id, g] : gpus) {
    if (NoData(g.utilization) && NoData(g.power) && NoData(g.memory_used)) continue;
    view.gpus.push_back(std::move(g));
  }
  return view;
}

}  // namespace warpscope::server::insights

// SPDX-License-Identifier: Apache-2.0
#include "server/ingest/otlp_metrics.h"

#include <fmt/format.h>
#include <google/protobuf/util/json_util.h>

#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "model/entity.h"
#include "opentelemetry/proto/collector/metrics/v1/metrics_service.pb.h"
#include "server/ingest/content_sequence.h"
#include "server/ingest/otlp_attributes.h"
#include "server/ingest/request_body.h"

namespace warpscope::server {
namespace {

using base::Error;
using base::InvalidArgument;
using base::Result;

namespace collector = ::opentelemetry::proto::collector::metrics::v1;
namespace common = ::opentelemetry::proto::common::v1;
namespace metrics = ::opentelemetry::proto::metrics::v1;
namespace attr = model::attr;

using ingest_internal::ContentSequence;
using ingest_internal::ToLabels;
using KeyValues = google::protobuf::RepeatedPtrField<common::KeyValue>;

// Start times further than this before a point's time are not used for its window (a delta
// point whose interval began long ago would otherwise place the window hours back).
constexpr uint64_t kMaxWindowNanos = 3600ull * 1'000'000'000ull;
constexpr BodyMessage kRequestBody{
    .what = "OTLP metrics",
    .size_note = "",
    .protobuf = "protobuf opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest "
                "(or a string in it is not valid UTF-8); send OTLP/HTTP protobuf, or JSON with "
                "Content-Type: application/json",
    .json = "OTLP/JSON for ExportMetricsServiceRequest"};
bool HasPrefix(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// Where one data point belongs: its entity and the labels left for the series.
struct Placement {
  model::Entity entity;  // kind, id, parent and the attributes this point carries
  model::Labels labels;
};

// GPU identity attributes as our OTLP exporter writes them (exporters/otlp), mapped back to
// the data model's keys. An empty target drops the attribute.
std::optional<std::string_view> GpuIdentityKey(std::string_view key) {
  if (key == "hw.name" || key == "hw.model") {
    return attr::kGpuModel;
  }
  if (key == "hw.serial_number") {
    return attr::kGpuSerial;
  }
  if (key == "hw.driver_version") {
    return attr::kDriverVersion;
  }
  if (key == "hw.id" || key == "hw.type" || key == "hw.vendor" || key == "hw.parent") {
    return std::string_view();
  }
  if (key == "hw.firmware_version") {
    return key;
  }
  if (HasPrefix(key, "gpu.") || HasPrefix(key, "mig.")) {
    return key;
  }
  return std::nullopt;  // a dimension of the series (hw.gpu.task, direction, ...)
}

bool IsProcessKey(std::string_view key) {
  return HasPrefix(key, "process.") || HasPrefix(key, "container.") || HasPrefix(key, "k8s.") ||
         HasPrefix(key, "slurm.");
}

Placement Place(const model::Labels& attrs, const std::string& host) {
  Placement p;
  std::string_view hw_id = attrs.Get("hw.id");
  std::string_view pid = attrs.Get(attr::kPid);
  if (attrs.Get("hw.type") == "gpu" && !hw_id.empty()) {
    std::string_view parent = attrs.Get("hw.parent");
    p.entity.kind = parent.empty() ? model::EntityKind::kGpu : model::EntityKind::kMigInstance;
    p.entity.id = std::string(hw_id);
    p.entity.parent = std::string(parent);
    for (const auto& [k, v] : attrs) {
      std::optional<std::string_view> key = GpuIdentityKey(k);
      if (!key) {
        p.labels.Set(k, v);
      } else if (!key->empty() && !p.entity.attributes.Has(*key)) {
        p.entity.attributes.Set(*key, v);
      }
    }
    if (p.entity.kind == model::EntityKind::kGpu && HasPrefix(hw_id, "GPU-") &&
        !p.entity.attributes.Has(attr::kGpuUuid)) {
      p.entity.attributes.Set(attr::kGpuUuid, hw_id);
    }
    return p;
  }
  if (!pid.empty()) {
    p.entity.kind = model::EntityKind::kProcess;
    p.entity.id = fmt::format("pid/{}", pid);
    for (const auto& [k, v] : attrs) {
      if (IsProcessKey(k)) {
        p.entity.attributes.Set(k, v);
      } else {
        p.labels.Set(k, v);
      }
    }
    return p;
  }
  p.entity.kind = model::EntityKind::kHost;
  p.entity.id = host;
  p.labels = attrs;
  return p;
}

// The series of one (resource, point time) group, before it becomes an IngestBatch.
struct Group {
  std::optional<uint64_t> start_nanos;  // earliest usable start time of its points
  std::vector<model::Entity> entities;
  std::unordered_map<std::string, size_t> entity_index;
  std::vector<MetricInfo> metrics;
  std::unordered_set<std::string> metric_keys;
  std::vector<IngestSeries> series;
  std::set<std::string> series_keys;
};

// Converts one ResourceMetrics. Counts rejected points in `out`.
class ResourceConverter {
 public:
  ResourceConverter(std::string where, DecodedOtlpMetrics& out)
      : where_(std::move(where)), out_(out) {}

  base::Status Init(const metrics::ResourceMetrics& rm) {
    resource_attrs_ = ToLabels(rm.resource().attributes());
    host_ = std::string(resource_attrs_.Get(attr::kHostName));
    if (host_.empty()) {
      std::string keys;
      for (const auto& [k, v] : resource_attrs_) {
        keys += keys.empty() ? k : ", " + k;
      }
      return InvalidArgument(
          "{}: the resource has no host.name attribute (it has: {}); set host.name on the "
          "resource, e.g. OTEL_RESOURCE_ATTRIBUTES=host.name=$(hostname) or the Collector's "
          "resourcedetection processor",
          where_, keys.empty() ? "no attributes" : keys);
    }
    std::string_view instance = resource_attrs_.Get("service.instance.id");
    if (!instance.empty()) {
      agent_id_ = fmt::format("otlp/{}", instance);
    } else if (std::string_view service = resource_attrs_.Get("service.name"); !service.empty()) {
      agent_id_ = fmt::format("otlp/{}/{}", host_, service);
    } else {
      agent_id_ = fmt::format("otlp/{}", host_);
    }
    return base::OkStatus();
  }

  void AddMetric(const metrics::Metric& m) {
    const std::string what = fmt::format("{}: metric \"{}\"", where_, m.name());
    switch (m.data_case()) {
      case metrics::Metric::kGauge:
        for (const metrics::NumberDataPoint& p : m.gauge().data_points()) {
          AddNumber(m, m.name(), model::MetricKind::kGauge, m.description(), p, true, what);
        }
        return;
      case metrics::Metric::kSum: {
        const metrics::Sum& sum = m.sum();
        bool cumulative =
            sum.aggregation_temporality() == metrics::AGGREGATION_TEMPORALITY_CUMULATIVE;
        model::MetricKind kind = cumulative && sum.is_monotonic() ? model::MetricKind::kCounter
                                                                  : model::MetricKind::kGauge;
        std::string help = m.description();
        if (!cumulative && sum.is_monotonic()) {
          help = Annotate(help, "increase per export interval (OTLP delta sum)");
        }
        for (const metrics::NumberDataPoint& p : sum.data_points()) {
          AddNumber(m, m.name(), kind, help, p, !cumulative, what);
        }
        return;
      }
      case metrics::Metric::kHistogram: {
        bool delta =
            m.histogram().aggregation_temporality() == metrics::AGGREGATION_TEMPORALITY_DELTA;
        for (const metrics::HistogramDataPoint& p : m.histogram().data_points()) {
          AddCountAndSum(m, delta, p.attributes(), p.start_time_unix_nano(), p.time_unix_nano(),
                         p.flags(), p.count(), p.has_sum() ? std::optional(p.sum()) : std::nullopt,
                         what);
        }
        return;
      }
      case metrics::Metric::kExponentialHistogram: {
        bool delta = m.exponential_histogram().aggregation_temporality() ==
                     metrics::AGGREGATION_TEMPORALITY_DELTA;
        for (const metrics::ExponentialHistogramDataPoint& p :
             m.exponential_histogram().data_points()) {
          AddCountAndSum(m, delta, p.attributes(), p.start_time_unix_nano(), p.time_unix_nano(),
                         p.flags(), p.count(), p.has_sum() ? std::optional(p.sum()) : std::nullopt,
                         what);
        }
        return;
      }
      case metrics::Metric::kSummary:
        for (const metrics::SummaryDataPoint& p : m.summary().data_points()) {
          AddSummary(m, p, what);
        }
        return;
      case metrics::Metric::DATA_NOT_SET:
        return;  // nothing to store
    }
  }

  // Moves the finished batches into `out_`.
  void Finish() {
    for (auto& [time, g] : groups_) {
      IngestBatch b;
      b.agent_id = agent_id_;
      b.host = host_;
      b.end = base::FromUnixNanos(static_cast<int64_t>(time));
      b.start = g.start_nanos ? base::FromUnixNanos(static_cast<int64_t>(*g.start_nanos)) : b.end;
      b.entities.push_back(model::Entity{model::EntityKind::kHost, host_, "", resource_attrs_});
      for (model::Entity& e : g.entities) {
        if (e.id != host_) {
          b.entities.push_back(std::move(e));
        }
      }
      b.metrics = std::move(g.metrics);
      b.series = std::move(g.series);
      b.sequence = ContentSequence(b);
      out_.batches.push_back(std::move(b));
    }
    groups_.clear();
  }

 private:
  static std::string Annotate(const std::string& help, std::string_view note) {
    return help.empty() ? fmt::format("({})", note) : fmt::format("{} ({})", help, note);
  }

  void Reject(const std::string& what, std::string_view why) {
    if (out_.rejected_points == 0) {
      out_.first_rejection = fmt::format("{}: {}", what, why);
    }
    ++out_.rejected_points;
  }

  // Checks what every point needs; on failure counts the rejection and returns nullopt.
  std::optional<uint64_t> PointTime(uint64_t time, uint32_t flags, const std::string& what) {
    if (time == 0) {
      Reject(what, "a data point has no time_unix_nano");
      return std::nullopt;
    }
    if (time > static_cast<uint64_t>(INT64_MAX)) {
      Reject(what, "a data point's time_unix_nano is out of range");
      return std::nullopt;
    }
    if ((flags & metrics::DATA_POINT_FLAGS_NO_RECORDED_VALUE_MASK) != 0) {
      Reject(what, "a data point has no recorded value (flags)");
      return std::nullopt;
    }
    return time;
  }

  // Adds one series to the group of `time`. `use_start`: the point's start time bounds the
  // window (gauges and delta points).
  void AddSeries(const std::string& what, uint64_t time, uint64_t start, bool use_start,
                 MetricInfo info, const Placement& place, double value, uint32_t count = 1) {
    if (!std::isfinite(value)) {
      Reject(what, "a data point's value is not a finite number");
      return;
    }
    Group& g = groups_[time];
    std::string key = fmt::format("{}\x1f{}", info.key, place.entity.id);
    for (const auto& [k, v] : place.labels) {
      key += fmt::format("\x1f{}\x1e{}", k, v);
    }
    if (!g.series_keys.insert(std::move(key)).second) {
      Reject(what, "the same series appears twice with the same time_unix_nano");
      return;
    }
    if (use_start && start != 0 && start <= time && time - start <= kMaxWindowNanos) {
      g.start_nanos = g.start_nanos ? std::min(*g.start_nanos, start) : start;
    }
    auto [it, inserted] = g.entity_index.try_emplace(place.entity.id, g.entities.size());
    if (inserted) {
      g.entities.push_back(place.entity);
    } else {
      model::Entity& e = g.entities[it->second];
      for (const auto& [k, v] : place.entity.attributes) {
        if (!e.attributes.Has(k)) {
          e.attributes.Set(k, v);
        }
      }
    }
    IngestSeries s;
    s.metric = info.key;
    s.entity = place.entity.id;
    s.labels = place.labels;
    s.avg = s.min = s.max = s.last = value;
    s.count = count;
    g.series.push_back(std::move(s));
    if (g.metric_keys.insert(info.key).second) {
      info.entity_kind = g.entities[it->second].kind;
      g.metrics.push_back(std::move(info));
    }
  }

  static MetricInfo Info(std::string key, model::MetricKind kind, std::string unit,
                         std::string help, const std::string& otel_name) {
    MetricInfo info;
    info.key = std::move(key);
    info.kind = kind;
    info.unit = std::move(unit);
    info.help = std::move(help);
    info.otel_name = otel_name;
    return info;
  }

  void AddNumber(const metrics::Metric& m, const std::string& key, model::MetricKind kind,
                 const std::string& help, const metrics::NumberDataPoint& p, bool use_start,
                 const std::string& what) {
    if (key.empty()) {
      Reject(what, "the metric has no name");
      return;
    }
    auto time = PointTime(p.time_unix_nano(), p.flags(), what);
    if (!time) {
      return;
    }
    double value = 0;
    if (p.value_case() == metrics::NumberDataPoint::kAsDouble) {
      value = p.as_double();
    } else if (p.value_case() == metrics::NumberDataPoint::kAsInt) {
      value = static_cast<double>(p.as_int());
    } else {
      Reject(what, "a data point has neither as_double nor as_int");
      return;
    }
    AddSeries(what, *time, p.start_time_unix_nano(), use_start,
              Info(key, kind, m.unit(), help, m.name()), Place(ToLabels(p.attributes()), host_),
              value);
  }

  void AddCountAndSum(const metrics::Metric& m, bool delta, const KeyValues& attributes,
                      uint64_t start, uint64_t time_nanos, uint32_t flags, uint64_t count,
                      std::optional<double> sum, const std::string& what) {
    if (m.name().empty()) {
      Reject(what, "the metric has no name");
      return;
    }
    auto time = PointTime(time_nanos, flags, what);
    if (!time) {
      return;
    }
    model::MetricKind kind = delta ? model::MetricKind::kGauge : model::MetricKind::kCounter;
    std::string_view per = delta ? ", per export interval" : "";
    Placement place = Place(ToLabels(attributes), host_);
    AddSeries(
        what, *time, start, delta,
        Info(m.name() + ".count", kind, "1",
             Annotate(m.description(), fmt::format("number of observations{}", per)), m.name()),
        place, static_cast<double>(count));
    if (sum) {
      AddSeries(
          what, *time, start, delta,
          Info(m.name() + ".sum", kind, m.unit(),
               Annotate(m.description(), fmt::format("sum of observations{}", per)), m.name()),
          place, *sum);
    }
  }

  void AddSummary(const metrics::Metric& m, const metrics::SummaryDataPoint& p,
                  const std::string& what) {
    if (m.name().empty()) {
      Reject(what, "the metric has no name");
      return;
    }
    auto time = PointTime(p.time_unix_nano(), p.flags(), what);
    if (!time) {
      return;
    }
    Placement place = Place(ToLabels(p.attributes()), host_);
    AddSeries(what, *time, 0, false,
              Info(m.name() + ".count", model::MetricKind::kCounter, "1",
                   Annotate(m.description(), "number of observations"), m.name()),
              place, static_cast<double>(p.count()));
    AddSeries(what, *time, 0, false,
              Info(m.name() + ".sum", model::MetricKind::kCounter, m.unit(),
                   Annotate(m.description(), "sum of observations"), m.name()),
              place, p.sum());
    for (const auto& q : p.quantile_values()) {
      if (!std::isfinite(q.quantile())) {
        Reject(what, "a quantile is not a finite number");
        continue;
      }
      Placement qp = place;
      qp.labels.Set("quantile", fmt::format("{}", q.quantile()));
      AddSeries(what, *time, 0, false,
                Info(m.name(), model::MetricKind::kGauge, m.unit(), m.description(), m.name()), qp,
                q.value());
    }
  }

  std::string where_;
  DecodedOtlpMetrics& out_;
  model::Labels resource_attrs_;
  std::string host_;
  std::string agent_id_;
  std::map<uint64_t, Group> groups_;  // by point time
};

Result<DecodedOtlpMetrics> Convert(const collector::ExportMetricsServiceRequest& req) {
  DecodedOtlpMetrics out;
  for (int r = 0; r < req.resource_metrics_size(); ++r) {
    const metrics::ResourceMetrics& rm = req.resource_metrics(r);
    ResourceConverter conv(fmt::format("resource_metrics[{}]", r), out);
    if (base::Status s = conv.Init(rm); !s.ok()) {
      return Error(std::move(s));
    }
    for (const metrics::ScopeMetrics& sm : rm.scope_metrics()) {
      for (const metrics::Metric& m : sm.metrics()) {
        conv.AddMetric(m);
      }
    }
    conv.Finish();
  }
  return out;
}

}  // namespace

Result<DecodedOtlpMetrics> DecodeOtlpMetricsProto(std::string_view bytes) {
  collector::ExportMetricsServiceRequest req;
  WARPSCOPE_RETURN_IF_ERROR(ParseProtobufBody(bytes, req, kRequestBody));
  return Convert(req);
}

Result<DecodedOtlpMetrics> DecodeOtlpMetricsJson(std::string_view json) {
  collector::ExportMetricsServiceRequest req;
  WARPSCOPE_RETURN_IF_ERROR(ParseJsonBody(json, req, kRequestBody));
  return Convert(req);
}

std::string EncodeOtlpMetricsResponse(const DecodedOtlpMetrics& decoded, bool as_json) {
  collector::ExportMetricsServiceResponse resp;
  if (decoded.rejected_points > 0) {
    auto* partial = resp.mutable_partial_success();
    partial->set_rejected_data_points(static_cast<int64_t>(decoded.rejected_points));
    partial->set_error_message(decoded.first_rejection);
  }
  if (!as_json) {
    return resp.SerializeAsString();
  }
  std::string out;
  google::protobuf::util::JsonPrintOptions options;
  options.always_print_enums_as_ints = true;
  if (!google::protobuf::util::MessageToJsonString(resp, &out, options).ok()) {
    return "{}";
  }
  return out;
}

}  // namespace warpscope::server

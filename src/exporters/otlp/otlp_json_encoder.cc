// SPDX-License-Identifier: Apache-2.0
#include "exporters/otlp/otlp_json_encoder.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>
#include <random>
#include <string_view>

#include "model/entity.h"

namespace warpscope::exporters {

namespace {

using nlohmann::json;
namespace attr = model::attr;

// Ordered attribute list with first-wins keys.
class Attributes {
 public:
  void Add(std::string_view key, json value) {
    if (key.empty()) {
      return;
    }
    for (const auto& k : keys_) {
      if (k == key) {
        return;
      }
    }
    keys_.emplace_back(key);
    list_.push_back(json{{"key", key}, {"value", std::move(value)}});
  }
  void AddString(std::string_view key, std::string_view value) {
    if (!value.empty()) {
      Add(key, json{{"stringValue", value}});
    }
  }
  // An int64 attribute (as a decimal string, the OTLP JSON mapping); a string when `value` is
  // not a number.
  void AddInt(std::string_view key, std::string_view value) {
    int64_t v = 0;
    auto r = std::from_chars(value.data(), value.data() + value.size(), v);
    if (!value.empty() && r.ec == std::errc() && r.ptr == value.data() + value.size()) {
      Add(key, json{{"intValue", std::to_string(v)}});
    } else {
      AddString(key, value);
    }
  }
  json& list() { return list_; }

 private:
  std::vector<std::string> keys_;
  json list_ = json::array();
};

json DoubleValue(double v) {
  // Proto3 JSON spells non-finite doubles as strings; nlohmann would write null.
  if (std::isnan(v)) {
    return "NaN";
  }
  if (std::isinf(v)) {
    return v > 0 ? "Infinity" : "-Infinity";
  }
  return v;
}

std::string Nanos(base::TimePoint t) { return std::to_string(base::ToUnixNanos(t)); }

std::string RandomUuid() {
  std::random_device rd;
  std::mt19937_64 gen((static_cast<uint64_t>(rd()) << 32) ^ rd());
  uint64_t hi = gen();
  uint64_t lo = gen();
  hi = (hi & 0xffffffffffff0fffULL) | 0x0000000000004000ULL;  // version 4
  lo = (lo & 0x3fffffffffffffffULL) | 0x8000000000000000ULL;  // RFC 4122 variant
  return fmt::format("{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", hi >> 32, (hi >> 16) & 0xffff,
                     hi & 0xffff, lo >> 48, lo & 0xffffffffffffULL);
}

void AddGpuIdentity(const model::Entity& gpu, Attributes& a) {
  std::string_view uuid = gpu.attributes.Get(attr::kGpuUuid);
  a.AddString("hw.id", uuid.empty() ? std::string_view(gpu.id) : uuid);
  a.AddString("hw.name", gpu.attributes.Get(attr::kGpuModel));
  a.AddString("hw.vendor", "NVIDIA");
  a.AddString("hw.type", "gpu");
  a.AddString("hw.serial_number", gpu.attributes.Get(attr::kGpuSerial));
  a.AddString("hw.driver_version", gpu.attributes.Get(attr::kDriverVersion));
}

// The entity's attributes in OpenTelemetry form.
void AddEntityAttributes(const model::Frame& frame, const model::Entity& e, Attributes& a) {
  switch (e.kind) {
    case model::EntityKind::kHost:
      return;  // the resource describes the host
    case model::EntityKind::kCluster:
      return;  // findings only: never a series
    case model::EntityKind::kGpu:
      AddGpuIdentity(e, a);
      for (const auto& [k, v] : e.attributes) {
        if (k != attr::kGpuUuid && k != attr::kGpuModel && k != attr::kGpuSerial &&
            k != attr::kDriverVersion && k != attr::kHostName) {
          a.AddString(k, v);
        }
      }
      return;
    case model::EntityKind::kMigInstance: {
      a.AddString("hw.id", e.id);
      a.AddString("hw.parent", e.parent);
      a.AddString("hw.vendor", "NVIDIA");
      a.AddString("hw.type", "gpu");
      if (const model::Entity* gpu = frame.FindEntity(e.parent)) {
        a.AddString("hw.name", gpu->attributes.Get(attr::kGpuModel));
        a.AddString(attr::kGpuIndex, gpu->attributes.Get(attr::kGpuIndex));
        a.AddString(attr::kGpuUuid, gpu->attributes.Get(attr::kGpuUuid));
      }
      for (const auto& [k, v] : e.attributes) {
        a.AddString(k, v);
      }
      return;
    }
    case model::EntityKind::kProcess:
    case model::EntityKind::kExecutable:
    case model::EntityKind::kContainer:
      for (const auto& [k, v] : e.attributes) {
        if (k == attr::kPid || k == attr::kNsPid) {
          a.AddInt(k, v);
        } else {
          a.AddString(k, v);
        }
      }
      return;
  }
}

// "k=v;k=v" from MetricDesc::otel_attrs.
void AddFixedAttributes(std::string_view spec, Attributes& a) {
  while (!spec.empty()) {
    size_t semi = spec.find(';');
    std::string_view kv = spec.substr(0, semi);
    spec.remove_prefix(semi == std::string_view::npos ? spec.size() : semi + 1);
    size_t eq = kv.find('=');
    if (eq != std::string_view::npos) {
      a.AddString(kv.substr(0, eq), kv.substr(eq + 1));
    }
  }
}

}  // namespace

OtlpJsonEncoder::OtlpJsonEncoder(Options options) : options_(std::move(options)) {
  if (options_.service_instance_id.empty()) {
    options_.service_instance_id = RandomUuid();
  }
}

std::string OtlpJsonEncoder::Encode(const model::Frame& frame) {
  ++encode_count_;
  const std::string start = Nanos(frame.start);
  const std::string end = Nanos(frame.end);
  const bool has_start = base::ToUnixNanos(frame.start) > 0;

  // Resource.
  Attributes resource;
  std::string host = options_.host_name;
  if (host.empty()) {
    for (const auto& e : frame.entities) {
      if (e.kind == model::EntityKind::kHost) {
        std::string_view h = e.attributes.Get(attr::kHostName);
        host = h.empty() ? e.id : std::string(h);
        break;
      }
    }
  }
  resource.AddString("host.name", host);
  resource.AddString("host.id", options_.host_id);
  resource.AddString("service.name", options_.service_name);
  resource.AddString("service.version", options_.service_version);
  resource.AddString("service.instance.id", options_.service_instance_id);
  for (const auto& [k, v] : options_.resource_attributes) {
    resource.AddString(k, v);
  }

  // Entity attributes, computed once per entity.
  std::unordered_map<std::string_view, json> entity_attrs;
  entity_attrs.reserve(frame.entities.size());

  std::vector<json> metrics;
  std::unordered_map<std::string, size_t> metric_index;
  auto metric_for = [&](const model::MetricDesc& d, std::string_view suffix) -> json& {
    std::string name(d.otel_name.empty() ? d.key : d.otel_name);
    name.append(suffix);
    std::string key = name;
    key.push_back(d.kind == model::MetricKind::kCounter && suffix.empty() ? 'c' : 'g');
    auto [it, inserted] = metric_index.try_emplace(key, metrics.size());
    if (inserted) {
      json m;
      m["name"] = name;
      std::string description(d.help);
      if (suffix == ".min") {
        description += " Minimum over the export window.";
      } else if (suffix == ".max") {
        description += " Maximum over the export window.";
      }
      m["description"] = description;
      m["unit"] = d.unit;
      if (d.kind == model::MetricKind::kCounter && suffix.empty()) {
        m["sum"] = {
            {"dataPoints", json::array()}, {"aggregationTemporality", 2}, {"isMonotonic", true}};
      } else {
        m["gauge"] = {{"dataPoints", json::array()}};
      }
      metrics.push_back(std::move(m));
    }
    json& m = metrics[it->second];
    return m.contains("sum") ? m["sum"]["dataPoints"] : m["gauge"]["dataPoints"];
  };

  std::string series_key;
  for (const auto& point : frame.series) {
    if (point.metric == nullptr) {
      continue;
    }
    const model::MetricDesc& d = *point.metric;
    auto eit = entity_attrs.find(point.entity);
    if (eit == entity_attrs.end()) {
      Attributes a;
      if (const model::Entity* e = frame.FindEntity(point.entity)) {
        AddEntityAttributes(frame, *e, a);
      }
      eit = entity_attrs.emplace(point.entity, std::move(a.list())).first;
    }
    Attributes attrs;
    for (const auto& kv : eit->second) {
      attrs.Add(kv["key"].get<std::string>(), kv["value"]);
    }
    AddFixedAttributes(d.otel_attrs, attrs);
    for (const auto& [k, v] : point.labels) {
      attrs.AddString(k, v);
    }

    json p;
    p["attributes"] = attrs.list();
    p["timeUnixNano"] = end;
    if (d.kind == model::MetricKind::kCounter) {
      series_key.assign(d.key);
      series_key.push_back('\x1f');
      series_key.append(point.entity);
      for (const auto& [k, v] : point.labels) {
        series_key.push_back('\x1f');
        series_key.append(k);
        series_key.push_back('=');
        series_key.append(v);
      }
      const int64_t first =
          has_start ? base::ToUnixNanos(frame.start) : base::ToUnixNanos(frame.end);
      auto [it, inserted] = counter_start_.try_emplace(series_key, first, encode_count_);
      it->second.second = encode_count_;
      p["startTimeUnixNano"] = std::to_string(it->second.first);
      p["asDouble"] = DoubleValue(point.last);
      metric_for(d, "").push_back(std::move(p));
      continue;
    }
    if (has_start) {
      p["startTimeUnixNano"] = start;
    }
    const bool spread = options_.min_max && point.count > 1;
    json lo;
    json hi;
    if (spread) {
      lo = p;
      lo["asDouble"] = DoubleValue(point.min);
      hi = p;
      hi["asDouble"] = DoubleValue(point.max);
    }
    p["asDouble"] = DoubleValue(point.avg);
    // Each metric_for() call may move earlier metrics; use its result before the next call.
    metric_for(d, "").push_back(std::move(p));
    if (spread) {
      metric_for(d, ".min").push_back(std::move(lo));
      metric_for(d, ".max").push_back(std::move(hi));
    }
  }

  // Counter series absent from this frame lose their start time: when they come back they are
  // new series (a process restarted, a GPU reappeared) and may have been reset.
  for (auto it = counter_start_.begin(); it != counter_start_.end();) {
    if (it->second.second != encode_count_) {
      it = counter_start_.erase(it);
    } else {
      ++it;
    }
  }

  json scope_metrics = json::array();
  scope_metrics.push_back(
      {{"scope", {{"name", "warpscope"}, {"version", options_.service_version}}},
       {"metrics", std::move(metrics)}});
  json body;
  body["resourceMetrics"] =
      json::array({json{{"resource", {{"attributes", std::move(resource.list())}}},
                        {"scopeMetrics", std::move(scope_metrics)}}});
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace warpscope::exporters

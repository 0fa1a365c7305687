// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_MODEL_METRIC_H_
#define WARPSCOPE_MODEL_METRIC_H_

#include <string_view>

#include "model/entity.h"

namespace warpscope::model {

enum class MetricKind : uint8_t {
  kGauge,    // a level; windows keep avg/min/max/last
  kCounter,  // monotonically increasing total; windows keep the last value
};

// Static description of one metric, in one place for every dialect it is exported in. Values are
// always recorded in `unit` (base units: ratio 0..1, bytes, watts, joules, celsius, hertz,
// seconds); exporters scale them. Instances live in static tables (catalogs) and are referenced
// by pointer, so a MetricDesc* is a stable identity.
struct MetricDesc {
  std::string_view key;        // canonical dotted name, unique: "gpu.utilization"
  EntityKind entity;           // the kind of entity its series describe
  MetricKind kind;
  std::string_view unit;       // UCUM-style, as OTLP wants: "1", "By", "W", "J", "Cel", "Hz", "s"
  std::string_view help;       // one sentence for # HELP and the docs
  // Prometheus: family name and multiplier from `unit` to the family's unit. DCGM names when
  // dcgm-exporter has the metric (e.g. DCGM_FI_DEV_FB_USED, MiB, scale 1/2^20), otherwise a
  // warpscope_ name in base units.
  std::string_view prom_name;
  double prom_scale = 1.0;
  // OpenTelemetry: metric name (semantic conventions where they exist) and fixed attributes
  // added to every point, "k=v;k=v" (e.g. "hw.gpu.task=general").
  std::string_view otel_name;
  std::string_view otel_attrs = {};
  // Extra per-series label keys this metric uses beyond its entity (documentation only).
  std::string_view labels = {};
};

}  // namespace warpscope::model

#endif  // WARPSCOPE_MODEL_METRIC_H_

// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_EXPORTERS_OTLP_OTLP_JSON_ENCODER_H_
#define WARPSCOPE_EXPORTERS_OTLP_OTLP_JSON_ENCODER_H_

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "model/frame.h"

namespace warpscope::exporters {

// Encodes frames as OTLP/HTTP JSON ExportMetricsServiceRequest bodies (docs/design/exporters.md).
//
// - One ResourceMetrics for the agent: host.name, host.id (when known), service.name,
//   service.version, service.instance.id and the user's tags. One ScopeMetrics "warpscope".
// - One Metric per (otel_name, kind); MetricDescs without an otel_name use their key.
// - Gauges: `gauge`, asDouble = the window average, startTimeUnixNano = window start,
//   timeUnixNano = window end. When a series had more than one sample in the window, the
//   window's min and max are also sent as gauges `<name>.min` and `<name>.max`, so a spike
//   shorter than the export interval is not averaged away.
// - Counters: cumulative monotonic `sum` (aggregationTemporality 2), value = last; the start
//   time is when this encoder first saw the series (window start of that frame) and stays fixed
//   while the series is present in consecutive frames.
// - Point attributes: the entity's attributes in OpenTelemetry form (GPUs: hw.id = UUID,
//   hw.name, hw.vendor = NVIDIA, hw.type = gpu, gpu.index, ...), then the metric's otel_attrs,
//   then the series labels; the first occurrence of a key wins.
// - Events (XID, GPU lost) are not encoded: OTLP metrics have no event type; they travel with
//   the frame to the server exporter.
// - JSON mapping: lowerCamelCase keys, 64-bit integers as decimal strings, enums as integers,
//   NaN/Infinity as the strings "NaN", "Infinity", "-Infinity".
//
// Not thread-safe (it keeps per-series start times): one encoder per sending thread.
class OtlpJsonEncoder {
 public:
  struct Options {
    std::string service_name = "warpscope-agent";
    std::string service_version = "0.1.0";
    std::string service_instance_id;  // empty: a random UUID chosen at construction
    std::string host_name;            // empty: the frame's host entity
    std::string host_id;              // e.g. /etc/machine-id; omitted when empty
    // Extra resource attributes (from --tags), in order.
    std::vector<std::pair<std::string, std::string>> resource_attributes;
    bool min_max = true;  // emit <name>.min / <name>.max gauges (see above)
  };

  explicit OtlpJsonEncoder(Options options);

  // Returns the JSON body for `frame`.
  std::string Encode(const model::Frame& frame);

  const std::string& service_instance_id() const { return options_.service_instance_id; }
  size_t tracked_counter_series() const { return counter_start_.size(); }

 private:
  Options options_;
  // Counter series key -> (start time in ns, sequence of the frame that last contained it).
  std::unordered_map<std::string, std::pair<int64_t, uint64_t>> counter_start_;
  uint64_t encode_count_ = 0;
};

}  // namespace warpscope::exporters

#endif  // WARPSCOPE_EXPORTERS_OTLP_OTLP_JSON_ENCODER_H_

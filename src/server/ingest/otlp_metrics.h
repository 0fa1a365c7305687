// SPDX-License-Identifier: Apache-2.0
// Decoding of OTLP/HTTP metrics export requests (POST /v1/metrics, protobuf or JSON) into the
// storage's IngestBatch. The mapping is described in docs/design/ingest.md.
#ifndef WARPSCOPE_SERVER_INGEST_OTLP_METRICS_H_
#define WARPSCOPE_SERVER_INGEST_OTLP_METRICS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "server/storage/storage.h"

namespace warpscope::server {

struct DecodedOtlpMetrics {
  // One batch per (resource, distinct point time), in request order.
  std::vector<IngestBatch> batches;
  // Data points left out (counted, not fatal): no value, NaN or infinite value, no time, an
  // empty metric name, a series repeated within one batch. Reported back to the sender as
  // partial_success.rejected_data_points, with `first_rejection` as the error_message.
  uint64_t rejected_points = 0;
  std::string first_rejection;
};

// Decodes a serialized opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest.
//
// Mapping (details and the reasons in docs/design/ingest.md):
//   - Each ResourceMetrics is one host: `host.name` is required. The resource's attributes
//     become the host entity's attributes. agent_id = "otlp/" + service.instance.id, or
//     "otlp/" + host.name + "/" + service.name when there is no instance id ("otlp/" + host.name
//     without a service.name either).
//   - The points of one resource are grouped by time_unix_nano; each group is one IngestBatch
//     whose window ends at that time and starts at the earliest start_time_unix_nano of its
//     gauge and delta points (when set, not after the end and at most one hour before it), else
//     at the end (a zero-length window). Cumulative start times are the counters' reset times,
//     not windows, and are not used.
//   - sequence = a 63-bit hash of the batch's content, so a retried identical request is a
//     duplicate for the storage (its key is agent_id, sequence, window start).
//   - Entities from point attributes: `hw.type`="gpu" with `hw.id` is a GPU (a MIG instance when
//     `hw.parent` is set too), `process.pid` a process ("pid/<pid>"), otherwise the host.
//     Entity-describing attributes (hw.*, gpu.*, mig.* / process.*, container.*, k8s.*,
//     slurm.*) become entity attributes, the rest series labels.
//   - gauge -> gauge (avg=min=max=last=value, count 1); monotonic cumulative sum -> counter;
//     other sums -> gauge; histogram and exponential histogram -> "<name>.count" and
//     "<name>.sum" (counters when cumulative, gauges when delta); summary -> "<name>.count",
//     "<name>.sum" counters and a "<name>" gauge per quantile (label "quantile").
//
// Errors (InvalidArgument, the message names the resource/metric and the remedy, for an HTTP
// 400 body): bytes that are not the message; a resource without a non-empty host.name.
// Thread-safe; pure.
[[nodiscard]] base::Result<DecodedOtlpMetrics> DecodeOtlpMetricsProto(std::string_view bytes);

// The same from the OTLP/JSON encoding (Content-Type: application/json): lowerCamelCase keys,
// 64-bit integers as strings or numbers, enums as integers (names are accepted too), unknown
// fields ignored.
[[nodiscard]] base::Result<DecodedOtlpMetrics> DecodeOtlpMetricsJson(std::string_view json);

// The ExportMetricsServiceResponse for a decoded request: empty when nothing was rejected,
// otherwise partial_success with the rejected count and the first reason. Serialized as
// protobuf, or as OTLP/JSON when `as_json`.
[[nodiscard]] std::string EncodeOtlpMetricsResponse(const DecodedOtlpMetrics& decoded,
                                                    bool as_json);

}  // namespace warpscope::server

#endif  // WARPSCOPE_SERVER_INGEST_OTLP_METRICS_H_

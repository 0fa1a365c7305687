// SPDX-License-Identifier: Apache-2.0
// The protocol names and the OTLP/JSON -> protobuf conversion the http/protobuf and gRPC
// transports share.
#include <google/protobuf/util/json_util.h>

#include "exporters/otlp/otlp_transport.h"
#include "opentelemetry/proto/collector/metrics/v1/metrics_service.pb.h"

namespace warpscope::exporters {

base::Result<OtlpProtocol> ParseOtlpProtocol(std::string_view name) {
  if (name == "http/json") return OtlpProtocol::kHttpJson;
  if (name == "http/protobuf") return OtlpProtocol::kHttpProtobuf;
  if (name == "grpc") return OtlpProtocol::kGrpc;
  return base::Error(base::InvalidArgument(
      "--otlp-protocol={}: use grpc, http/protobuf or http/json (OTEL_EXPORTER_OTLP_PROTOCOL's "
      "names)",
      name));
}

std::string_view OtlpProtocolName(OtlpProtocol protocol) {
  switch (protocol) {
    case OtlpProtocol::kHttpJson:
      return "http/json";
    case OtlpProtocol::kHttpProtobuf:
      return "http/protobuf";
    case OtlpProtocol::kGrpc:
      return "grpc";
  }
  return "?";
}

base::Result<std::string> OtlpJsonToProtobuf(std::string_view json) {
  opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceRequest request;
  google::protobuf::util::JsonParseOptions options;
  // Fields the subset in proto/ does not declare would be lost (otlp_exporter_test checks that
  // the encoder writes none).
  options.ignore_unknown_fields = true;
  auto status = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), &request, options);
  if (!status.ok()) {
    return base::Error(base::InvalidArgument("OTLP/JSON request does not convert to protobuf: {}",
                                             std::string(status.message())));
  }
  return request.SerializeAsString();
}

}  // namespace warpscope::exporters

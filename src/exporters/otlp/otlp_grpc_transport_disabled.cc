// SPDX-License-Identifier: Apache-2.0
// MakeOtlpGrpcTransport in a build without gRPC (-DWARPSCOPE_OTLP_GRPC=OFF).
#include "exporters/otlp/otlp_transport.h"

namespace warpscope::exporters {

base::Result<std::unique_ptr<OtlpTransport>> MakeOtlpGrpcTransport(
    const OtlpTransportOptions& options) {
  return base::Error(base::Unsupported(
      "--otlp-protocol=grpc: this warpscope was built without OTLP/gRPC "
      "(-DWARPSCOPE_OTLP_GRPC=OFF); use --otlp-protocol=http/protobuf"));
}

}  // namespace warpscope::exporters

// SPDX-License-Identifier: Apache-2.0
// OtlpGrpcServer in a build without gRPC (-DWARPSCOPE_OTLP_GRPC=OFF): Start says so.
#include "server/otlp_grpc/otlp_grpc_server.h"

namespace warpscope::server {

class OtlpGrpcServer::Impl {};

base::Result<std::unique_ptr<OtlpGrpcServer>> OtlpGrpcServer::Start(Options options,
                                                                     OtlpIngest& ingest) {
  return base::Error(base::Unsupported(
      "--otlp-grpc-listen-address={}: this warpscope was built without OTLP/gRPC "
      "(-DWARPSCOPE_OTLP_GRPC=OFF); send OTLP/HTTP to the API port's /v1/metrics instead",
      options.listen_address));
}

OtlpGrpcServer::OtlpGrpcServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
OtlpGrpcServer::~OtlpGrpcServer() = default;
void OtlpGrpcServer::Stop() {}
int OtlpGrpcServer::port() const { return 0; }
OtlpGrpcServer::Stats OtlpGrpcServer::stats() const { return {}; }

}  // namespace warpscope::server

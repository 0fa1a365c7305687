// SPDX-License-Identifier: Apache-2.0
// What an OTLP front end needs from the server once it has a decoded request: the token check and
// the store, with the same counting as OTLP/HTTP. ApiServer implements it; the OTLP/gRPC receiver
// (server/otlp_grpc) calls it, so both transports share the checks, the storage writes and the
// self-metrics.
#ifndef WARPSCOPE_SERVER_INGEST_OTLP_INGEST_H_
#define WARPSCOPE_SERVER_INGEST_OTLP_INGEST_H_

#include <string_view>

#include "base/status.h"
#include "server/ingest/otlp_metrics.h"
#include "server/ingest/otlp_traces.h"

namespace warpscope::server {

// Thread-safe: request threads of every front end call it at once.
class OtlpIngest {
 public:
  virtual ~OtlpIngest() = default;
  OtlpIngest(const OtlpIngest&) = delete;
  OtlpIngest& operator=(const OtlpIngest&) = delete;

  // Whether `authorization` (the request's "Authorization" header or gRPC "authorization"
  // metadata, "Bearer <token>") lets it ingest: always when no token is configured. A refusal is
  // counted as unauthorized; its error (PermissionDenied) says whether the token was missing or
  // wrong, and the remedy.
  [[nodiscard]] virtual base::Status AuthorizeIngest(std::string_view authorization) = 0;
  // Stores the batches of a decoded OTLP metrics request in order and counts them (points left
  // out, the request). Errors are the storage's: Unavailable (retry), ResourceExhausted, ...
  [[nodiscard]] virtual base::Status StoreOtlpMetrics(const DecodedOtlpMetrics& decoded) = 0;
  // Stores the spans of a decoded OTLP traces request. Unavailable when the server keeps no
  // request traces.
  [[nodiscard]] virtual base::Status StoreOtlpTraces(const DecodedOtlpTraces& decoded) = 0;
  // Counts a request refused for its content (bad data, over the size limit).
  virtual void CountRejected() = 0;

 protected:
  OtlpIngest() = default;
};

}  // namespace warpscope::server

#endif  // WARPSCOPE_SERVER_INGEST_OTLP_INGEST_H_

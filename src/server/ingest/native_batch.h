// SPDX-License-Identifier: Apache-2.0
// Decoding of the native agent -> server batch (proto/warpscope/v1/batch.proto) into the
// storage's IngestBatch, with validation. Used by POST /api/v1/ingest/batch.
#ifndef WARPSCOPE_SERVER_INGEST_NATIVE_BATCH_H_
#define WARPSCOPE_SERVER_INGEST_NATIVE_BATCH_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"
#include "server/storage/storage.h"

namespace warpscope::server {

// The only Batch.version this server reads.
inline constexpr uint32_t kNativeBatchVersion = 1;

// The most training steps one batch may carry. A host of 8 ranks at 20 steps/s fills the
// default 1-minute export window with 9,600; at about 100 bytes a step the cap is ~10 MB, a third
// of the default 32 MiB body limit. It bounds the rows one batch adds to training_steps.
inline constexpr size_t kMaxStepsPerBatch = 100'000;

struct DecodedBatch {
  IngestBatch batch;
  // Series left out because a value was NaN or infinite (counted, not fatal), and why the first
  // one was, for a rate-limited log line.
  uint64_t rejected_series = 0;
  std::string first_rejection;
};

// Decodes a serialized warpscope.v1.Batch (Content-Type: application/x-protobuf).
//
// Errors (InvalidArgument, the message says what is wrong and where, for an HTTP 400 body):
// bytes that are not a Batch; version other than kNativeBatchVersion; empty agent_id or host;
// window end before start; an entity without id or kind; a metric without key or kind, or with
// an unknown entity kind; a series whose metric index is out of range, whose entity is neither
// the host nor among the batch's entities, or with an empty label key. A series with a NaN or
// infinite value is not an error: it is left out and counted in rejected_series. A series count
// of 0 becomes 1 and an event without entity belongs to the host. Training steps: more than
// kMaxStepsPerBatch; a step with an empty job, an entity that is neither the host nor one of the
// batch's entities, an end before its start, a negative step number, or a source other than
// "nvtx" or "collectives" (each error names the step's index and job).
// Thread-safe; pure.
[[nodiscard]] base::Result<DecodedBatch> DecodeNativeBatchProto(std::string_view bytes);

// The same from the batch's protobuf JSON mapping (Content-Type: application/json): lowerCamel
// or original field names, enums as names or numbers, 64-bit integers as strings or numbers.
// Unknown fields are ignored so that newer agents can add fields.
[[nodiscard]] base::Result<DecodedBatch> DecodeNativeBatchJson(std::string_view json);

}  // namespace warpscope::server

#endif  // WARPSCOPE_SERVER_INGEST_NATIVE_BATCH_H_

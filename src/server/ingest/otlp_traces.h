// SPDX-License-Identifier: Apache-2.0
// Decoding of OTLP/HTTP trace export requests (POST /v1/traces, protobuf or JSON) into the
// request and phase spans of inference servers that the trace store keeps. Which spans those
// are, and where each field comes from: docs/design/inference.md ("Request traces").
#ifndef WARPSCOPE_SERVER_INGEST_OTLP_TRACES_H_
#define WARPSCOPE_SERVER_INGEST_OTLP_TRACES_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "server/traces/trace_span.h"

namespace warpscope::server {

struct OtlpTraceOptions {
  // The host of spans whose resource has no host.name (the handler passes the sender's
  // address): vLLM's default OpenTelemetry resource names no host.
  std::string default_host = "unknown";
};

struct DecodedOtlpTraces {
  // Request spans, the phases of requests (child spans), and the phases derived from the latency
  // attributes of a request span (vLLM's gen_ai.latency.*), in request order.
  std::vector<traces::TraceSpan> spans;
  // Spans that are neither an inference request nor one of its phases (an HTTP client span, a
  // span of the application around the model call): accepted, not kept.
  uint64_t ignored_spans = 0;
  // Malformed spans left out (counted, not fatal): a trace id that is not 16 bytes or is all
  // zero, a span id that is not 8 bytes, a parent id that is neither empty nor 8 bytes, no start
  // time, an end before the start. Reported to the sender as partial_success.rejected_spans,
  // with `first_rejection` as the error_message.
  uint64_t rejected_spans = 0;
  std::string first_rejection;
};

// Decodes a serialized opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest.
//
//   - A request span: kind other than CLIENT, and named `llm_request` (vLLM), or carrying a
//     gen_ai.latency.* attribute or a model (gen_ai.response.model, gen_ai.request.model), or
//     the parent of a phase span in the same request.
//   - A phase span: a span with a parent whose name (lowercased, after its last '.', '/' or
//     ':') is a lifecycle phase: receive, tokenize (tokenise), queue (queued, waiting), prefill,
//     decode, detokenize (detokenise), respond (response).
//   - The model: gen_ai.response.model, else gen_ai.request.model, else the resource's
//     service.name (unless the SDK's "unknown_service" default), else "unknown".
//   - The entity: the resource's host.name (else options.default_host) and process.pid.
//
// Errors (InvalidArgument, for an HTTP 400 body): bytes that are not the message. Thread-safe;
// pure.
[[nodiscard]] base::Result<DecodedOtlpTraces> DecodeOtlpTracesProto(
    std::string_view bytes, const OtlpTraceOptions& options = {});

// The same from OTLP/JSON (Content-Type: application/json): lowerCamelCase keys, trace and span
// ids as hex strings (base64 is accepted too), 64-bit integers as strings or numbers, enums as
// integers, unknown fields ignored.
[[nodiscard]] base::Result<DecodedOtlpTraces> DecodeOtlpTracesJson(
    std::string_view json, const OtlpTraceOptions& options = {});

// The ExportTraceServiceResponse: empty when nothing was rejected, otherwise partial_success
// with the rejected count and the first reason. Protobuf, or OTLP/JSON when `as_json`.
[[nodiscard]] std::string EncodeOtlpTracesResponse(const DecodedOtlpTraces& decoded, bool as_json);

}  // namespace warpscope::server

#endif  // WARPSCOPE_SERVER_INGEST_OTLP_TRACES_H_

// SPDX-License-Identifier: Apache-2.0
// The plain types of the request-trace store: a request of an inference server (one span) and
// the phases of its lifecycle (child spans, or derived from the request span's latency
// attributes). Pure data; docs/design/inference.md ("Request traces") says where each field
// comes from.
#ifndef WARPSCOPE_SERVER_TRACES_TRACE_SPAN_H_
#define WARPSCOPE_SERVER_TRACES_TRACE_SPAN_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/labels.h"

namespace warpscope::server::traces {

// What a stored span is for the store.
enum class SpanRole {
  kRequest,  // one inference request (vLLM's `llm_request`, or the parent of phase spans)
  kPhase,    // one phase of a request: receive, tokenize, queue, prefill, decode, ...
};

// Where a span came from: its resource's host.name, process.pid and service.name. The host and
// the pid name warpscope's host and serving-process entity.
struct SpanOrigin {
  std::string host;
  int64_t pid = 0;  // 0: the resource has no process.pid
  std::string service;
};

// One stored span, as the OTLP decoder produces it and the store keeps it.
struct TraceSpan {
  SpanRole role = SpanRole::kRequest;
  std::string trace_id;  // 32 lowercase hex digits
  std::string span_id;   // 16 lowercase hex digits (a derived phase: "<request span>/<phase>")
  std::string parent_span_id;  // 16 hex digits, empty for a root span
  std::string name;            // the span's name as sent
  // kPhase: the normalised phase name ("queue", "prefill", ...); empty for requests.
  std::string phase;
  int64_t start_ns = 0;  // Unix nanoseconds
  int64_t end_ns = 0;    // not before start_ns
  bool error = false;    // the span's status is ERROR
  SpanOrigin origin;
  // kRequest only: the served model, the engine's request id, and what the engine reported.
  std::string model;
  std::string request_id;
  std::optional<int64_t> ttft_ns;
  std::optional<int64_t> prompt_tokens;
  std::optional<int64_t> completion_tokens;
  // Prompt tokens served from the KV/prefix cache (gen_ai.usage.cache_read.input_tokens).
  std::optional<int64_t> cached_tokens;
  // The span's attributes as text (values rendered as the OTLP metrics receiver renders them).
  model::Labels attributes;
};

// A request with its phases, as the queries return it.
struct RequestTrace {
  TraceSpan request;
  std::vector<TraceSpan> phases;  // by start time

  // Time to first token: the engine's own value, else the end of the prefill phase (when there
  // is one) minus the request's start.
  std::optional<int64_t> Ttft() const;
  int64_t Duration() const { return request.end_ns - request.start_ns; }
};

}  // namespace warpscope::server::traces

#endif  // WARPSCOPE_SERVER_TRACES_TRACE_SPAN_H_

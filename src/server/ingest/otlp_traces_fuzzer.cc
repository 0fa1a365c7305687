// SPDX-License-Identifier: Apache-2.0
// Fuzz target for DecodeOtlpTracesProto and DecodeOtlpTracesJson (docs/design/fuzzing.md).
// The input is decoded both as protobuf bytes and as JSON text.
//
// Invariants:
//   - Decoding never crashes or throws; an error is InvalidArgument with a message.
//   - Every kept span is what the trace store can keep: ids of 32 and 16 lowercase hex digits
//     (a derived phase's id is its request's plus "/<phase>"), a parent id empty or 16 digits, an
//     end not before the start, a host; a request has a model, a phase a phase name and a parent.
//   - Decoding is deterministic; encoding the response never fails.
#include <cstdint>
#include <string>

#include "fuzz/fuzz_check.h"
#include "server/ingest/otlp_traces.h"

namespace {

using warpscope::base::Result;
using warpscope::base::StatusCode;
using warpscope::server::DecodedOtlpTraces;
using warpscope::server::traces::SpanRole;

bool IsHex(std::string_view s, size_t size) {
  return s.size() == size && s.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

void Check(const Result<DecodedOtlpTraces>& r, const Result<DecodedOtlpTraces>& again,
           const char* how) {
  WARPSCOPE_FUZZ_CHECK(r.has_value() == again.has_value(), "{}: decoding is not deterministic",
                       how);
  if (!r) {
    WARPSCOPE_FUZZ_CHECK(r.error().code() == StatusCode::kInvalidArgument,
                         "{}: error is not InvalidArgument: {}", how, r.error().ToString());
    WARPSCOPE_FUZZ_CHECK(!r.error().message().empty(), "{}: failed silently", how);
    return;
  }
  WARPSCOPE_FUZZ_CHECK(r->spans.size() == again->spans.size(), "{}: span count differs", how);
  WARPSCOPE_FUZZ_CHECK((r->rejected_spans == 0) == r->first_rejection.empty(),
                       "{}: rejections without a reason (or a reason without rejections)", how);
  for (const auto& s : r->spans) {
    WARPSCOPE_FUZZ_CHECK(IsHex(s.trace_id, 32), "{}: trace id {}", how,
                         warpscope::fuzz::Quote(s.trace_id));
    const std::string_view id = s.span_id;
    const bool derived = s.role == SpanRole::kPhase && id.size() > 17 && id[16] == '/';
    WARPSCOPE_FUZZ_CHECK(IsHex(derived ? id.substr(0, 16) : id, 16), "{}: span id {}", how,
                         warpscope::fuzz::Quote(s.span_id));
    WARPSCOPE_FUZZ_CHECK(s.parent_span_id.empty() || IsHex(s.parent_span_id, 16),
                         "{}: parent span id {}", how, warpscope::fuzz::Quote(s.parent_span_id));
    WARPSCOPE_FUZZ_CHECK(s.end_ns >= s.start_ns && s.start_ns > 0, "{}: times", how);
    WARPSCOPE_FUZZ_CHECK(!s.origin.host.empty(), "{}: no host", how);
    if (s.role == SpanRole::kRequest) {
      WARPSCOPE_FUZZ_CHECK(!s.model.empty(), "{}: a request without a model", how);
    } else {
      WARPSCOPE_FUZZ_CHECK(!s.phase.empty() && !s.parent_span_id.empty(),
                           "{}: a phase without a name or a parent", how);
    }
  }
  (void)warpscope::server::EncodeOtlpTracesResponse(*r, false);
  (void)warpscope::server::EncodeOtlpTracesResponse(*r, true);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input = warpscope::fuzz::AsText(data, size);
  Check(warpscope::server::DecodeOtlpTracesProto(input),
        warpscope::server::DecodeOtlpTracesProto(input), "proto");
  Check(warpscope::server::DecodeOtlpTracesJson(input),
        warpscope::server::DecodeOtlpTracesJson(input), "json");
  return 0;
}

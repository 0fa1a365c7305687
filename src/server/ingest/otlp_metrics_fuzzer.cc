// SPDX-License-Identifier: Apache-2.0
// Fuzz target for DecodeOtlpMetricsProto and DecodeOtlpMetricsJson (docs/design/fuzzing.md).
// The input is decoded both as protobuf bytes and as JSON text.
//
// Invariants:
//   - Decoding never crashes or throws; an error is InvalidArgument with a message.
//   - Every decoded batch is what WriteBatch can store: agent_id and host are set, the window
//     does not end before it starts, every series names a metric described in its batch and an
//     entity that is the host or declared in the batch, values are finite, counts at least 1,
//     and no series appears twice in a batch.
//   - A retry decodes to the same sequences; encoding the response never fails.
#include <cmath>
#include <cstdint>
#include <set>
#include <string>

#include "fuzz/fuzz_check.h"
#include "server/ingest/otlp_metrics.h"

namespace {

using warpscope::base::Result;
using warpscope::base::StatusCode;
using warpscope::server::DecodedOtlpMetrics;

void Check(const Result<DecodedOtlpMetrics>& r, const Result<DecodedOtlpMetrics>& again,
           const char* how) {
  WARPSCOPE_FUZZ_CHECK(r.has_value() == again.has_value(), "{}: decoding is not deterministic",
                       how);
  if (!r) {
    WARPSCOPE_FUZZ_CHECK(r.error().code() == StatusCode::kInvalidArgument,
                         "{}: error is not InvalidArgument: {}", how, r.error().ToString());
    WARPSCOPE_FUZZ_CHECK(!r.error().message().empty(), "{}: failed silently", how);
    return;
  }
  WARPSCOPE_FUZZ_CHECK(r->batches.size() == again->batches.size(), "{}: batch count differs", how);
  WARPSCOPE_FUZZ_CHECK((r->rejected_points == 0) == r->first_rejection.empty(),
                       "{}: rejections without a reason (or a reason without rejections)", how);
  for (size_t i = 0; i < r->batches.size(); ++i) {
    const auto& b = r->batches[i];
    WARPSCOPE_FUZZ_CHECK(b.sequence == again->batches[i].sequence, "{}: sequence not stable", how);
    WARPSCOPE_FUZZ_CHECK(!b.agent_id.empty() && !b.host.empty(), "{}: agent_id or host empty", how);
    WARPSCOPE_FUZZ_CHECK(b.end >= b.start, "{}: window ends before it starts", how);
    std::set<std::string> metrics;
    for (const auto& m : b.metrics) {
      WARPSCOPE_FUZZ_CHECK(!m.key.empty(), "{}: metric with an empty key", how);
      WARPSCOPE_FUZZ_CHECK(metrics.insert(m.key).second, "{}: metric {} described twice", how,
                           warpscope::fuzz::Quote(m.key));
    }
    std::set<std::string> entities{b.host};
    for (const auto& e : b.entities) {
      WARPSCOPE_FUZZ_CHECK(!e.id.empty(), "{}: entity with an empty id", how);
      entities.insert(e.id);
    }
    std::set<std::string> series;
    for (const auto& s : b.series) {
      WARPSCOPE_FUZZ_CHECK(metrics.count(s.metric) == 1, "{}: series of undescribed metric {}", how,
                           warpscope::fuzz::Quote(s.metric));
      WARPSCOPE_FUZZ_CHECK(entities.count(s.entity) == 1, "{}: series of undeclared entity {}", how,
                           warpscope::fuzz::Quote(s.entity));
      WARPSCOPE_FUZZ_CHECK(std::isfinite(s.avg) && std::isfinite(s.min) && std::isfinite(s.max) &&
                               std::isfinite(s.last),
                           "{}: non-finite value kept", how);
      WARPSCOPE_FUZZ_CHECK(s.count >= 1, "{}: count 0 kept", how);
      std::string key = s.metric + '\0' + s.entity;
      for (const auto& [k, v] : s.labels) {
        key += '\0' + k + '\0' + v;
      }
      WARPSCOPE_FUZZ_CHECK(series.insert(key).second, "{}: series of {} repeated in a batch", how,
                           warpscope::fuzz::Quote(s.metric));
    }
  }
  (void)warpscope::server::EncodeOtlpMetricsResponse(*r, false);
  (void)warpscope::server::EncodeOtlpMetricsResponse(*r, true);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input = warpscope::fuzz::AsText(data, size);
  Check(warpscope::server::DecodeOtlpMetricsProto(input),
        warpscope::server::DecodeOtlpMetricsProto(input), "proto");
  Check(warpscope::server::DecodeOtlpMetricsJson(input),
        warpscope::server::DecodeOtlpMetricsJson(input), "json");
  return 0;
}

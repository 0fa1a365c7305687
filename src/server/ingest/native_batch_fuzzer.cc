// SPDX-License-Identifier: Apache-2.0
// Fuzz target for DecodeNativeBatchProto and DecodeNativeBatchJson (docs/design/fuzzing.md).
// The input is decoded both as protobuf bytes and as JSON text.
//
// Invariants:
//   - Decoding never crashes or throws; an error is InvalidArgument with a message.
//   - A decoded batch is what WriteBatch can store without further checks: agent_id and host are
//     set, the window does not end before it starts, every series names a described metric and
//     the host or a declared entity, every value is finite and every count is at least 1; at
//     most kMaxStepsPerBatch training steps, each with a job, the host or a declared entity, an
//     end not before its start, a step number >= 0 and the source "nvtx" or "collectives".
#include <cmath>
#include <cstdint>
#include <set>
#include <string>

#include "fuzz/fuzz_check.h"
#include "server/ingest/native_batch.h"

namespace {

using warpscope::base::Result;
using warpscope::base::StatusCode;
using warpscope::server::DecodedBatch;

void Check(const Result<DecodedBatch>& r, const char* how) {
  if (!r) {
    WARPSCOPE_FUZZ_CHECK(r.error().code() == StatusCode::kInvalidArgument,
                         "{}: error is not InvalidArgument: {}", how, r.error().ToString());
    WARPSCOPE_FUZZ_CHECK(!r.error().message().empty(), "{}: failed silently", how);
    return;
  }
  const auto& b = r->batch;
  WARPSCOPE_FUZZ_CHECK(!b.agent_id.empty() && !b.host.empty(), "{}: agent_id or host empty", how);
  WARPSCOPE_FUZZ_CHECK(b.end >= b.start, "{}: window ends before it starts", how);
  std::set<std::string> metrics;
  for (const auto& m : b.metrics) {
    WARPSCOPE_FUZZ_CHECK(!m.key.empty(), "{}: metric with an empty key", how);
    metrics.insert(m.key);
  }
  std::set<std::string> entities{b.host};
  for (const auto& e : b.entities) {
    WARPSCOPE_FUZZ_CHECK(!e.id.empty(), "{}: entity with an empty id", how);
    entities.insert(e.id);
  }
  for (const auto& s : b.series) {
    WARPSCOPE_FUZZ_CHECK(metrics.count(s.metric) == 1, "{}: series of undescribed metric {}",
                         how, warpscope::fuzz::Quote(s.metric));
    WARPSCOPE_FUZZ_CHECK(entities.count(s.entity) == 1, "{}: series of undeclared entity {}", how,
                         warpscope::fuzz::Quote(s.entity));
    WARPSCOPE_FUZZ_CHECK(std::isfinite(s.avg) && std::isfinite(s.min) && std::isfinite(s.max) &&
                             std::isfinite(s.last),
                         "{}: non-finite value kept", how);
    WARPSCOPE_FUZZ_CHECK(s.count >= 1, "{}: count 0 kept", how);
  }
  WARPSCOPE_FUZZ_CHECK(b.steps.size() <= warpscope::server::kMaxStepsPerBatch, "{}: {} steps kept",
                       how, b.steps.size());
  for (const auto& s : b.steps) {
    WARPSCOPE_FUZZ_CHECK(!s.job.empty(), "{}: step with an empty job", how);
    WARPSCOPE_FUZZ_CHECK(entities.count(s.entity) == 1, "{}: step of undeclared entity {}", how,
                         warpscope::fuzz::Quote(s.entity));
    WARPSCOPE_FUZZ_CHECK(s.end >= s.start, "{}: step ends before it starts", how);
    WARPSCOPE_FUZZ_CHECK(s.step >= 0, "{}: negative step number kept", how);
    WARPSCOPE_FUZZ_CHECK(s.source == "nvtx" || s.source == "collectives", "{}: step source {} kept",
                         how, warpscope::fuzz::Quote(s.source));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input = warpscope::fuzz::AsText(data, size);
  Check(warpscope::server::DecodeNativeBatchProto(input), "proto");
  Check(warpscope::server::DecodeNativeBatchJson(input), "json");
  return 0;
}

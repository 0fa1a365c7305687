// SPDX-License-Identifier: Apache-2.0
// Fuzz target for DecodeRemoteWrite and DecodeRemoteWriteProto (docs/design/fuzzing.md). The
// input is decoded as a snappy-compressed body, as an uncompressed WriteRequest, and (so that
// the protobuf decoder behind snappy is reached from protobuf-shaped inputs) compressed by the
// target and decoded again.
//
// Invariants:
//   - Decoding never crashes or throws; an error is InvalidArgument (ResourceExhausted for a
//     body over the size limit) with a message.
//   - The request is read with protobuf's wire reader, not generated messages: the input is
//     rejected as "not a valid protobuf" exactly when the generated prometheus.WriteRequest
//     (the same .proto) refuses to parse it.
//   - Every decoded batch is what WriteBatch can store: agent_id and host are set, a zero-length
//     window, every series on the host entity of a metric described in its batch, finite
//     values, count 1, no series twice in a batch; the sample count matches the series.
#include <google/protobuf/stubs/logging.h>
#include <snappy.h>

#include <cmath>
#include <cstdint>
#include <set>
#include <string>

#include "fuzz/fuzz_check.h"
#include "prometheus/remote.pb.h"
#include "server/ingest/remote_write.h"

namespace {

using warpscope::base::Result;
using warpscope::base::StatusCode;
using warpscope::server::DecodedRemoteWrite;

void Check(const Result<DecodedRemoteWrite>& r, const char* how) {
  if (!r) {
    WARPSCOPE_FUZZ_CHECK(r.error().code() == StatusCode::kInvalidArgument ||
                             r.error().code() == StatusCode::kResourceExhausted,
                         "{}: unexpected error: {}", how, r.error().ToString());
    WARPSCOPE_FUZZ_CHECK(!r.error().message().empty(), "{}: failed silently", how);
    return;
  }
  WARPSCOPE_FUZZ_CHECK((r->rejected_samples == 0) == r->first_rejection.empty(),
                       "{}: rejections without a reason (or a reason without rejections)", how);
  uint64_t samples = 0;
  for (const auto& b : r->batches) {
    WARPSCOPE_FUZZ_CHECK(!b.agent_id.empty() && !b.host.empty(), "{}: agent_id or host empty", how);
    WARPSCOPE_FUZZ_CHECK(b.end == b.start, "{}: window is not zero-length", how);
    std::set<std::string> metrics;
    for (const auto& m : b.metrics) {
      WARPSCOPE_FUZZ_CHECK(!m.key.empty(), "{}: metric with an empty key", how);
      WARPSCOPE_FUZZ_CHECK(metrics.insert(m.key).second, "{}: metric described twice", how);
    }
    std::set<std::string> series;
    for (const auto& s : b.series) {
      WARPSCOPE_FUZZ_CHECK(metrics.count(s.metric) == 1, "{}: series of undescribed metric {}", how,
                           warpscope::fuzz::Quote(s.metric));
      WARPSCOPE_FUZZ_CHECK(s.entity == b.host, "{}: series not on the host", how);
      WARPSCOPE_FUZZ_CHECK(std::isfinite(s.last) && s.avg == s.last && s.count == 1,
                           "{}: bad value kept", how);
      std::string key = s.metric;
      for (const auto& [k, v] : s.labels) {
        WARPSCOPE_FUZZ_CHECK(!k.empty() && !v.empty(), "{}: empty label kept", how);
        key += '\0' + k + '\0' + v;
      }
      WARPSCOPE_FUZZ_CHECK(series.insert(key).second, "{}: series of {} repeated in a batch", how,
                           warpscope::fuzz::Quote(s.metric));
      ++samples;
    }
  }
  WARPSCOPE_FUZZ_CHECK(samples == r->samples, "{}: sample count {} but {} series", how, r->samples,
                       samples);
}

// The decoder's protobuf verdict against the generated parser's.
void CheckAgainstGeneratedParser(std::string_view input,
                                 const Result<DecodedRemoteWrite>& decoded) {
  prometheus::WriteRequest req;
  google::protobuf::LogSilencer silence;
  const bool parsed = req.ParseFromArray(input.data(), static_cast<int>(input.size()));
  const bool refused_as_protobuf =
      !decoded && decoded.error().message().find("is not a valid protobuf") != std::string::npos;
  WARPSCOPE_FUZZ_CHECK(
      parsed != refused_as_protobuf, "proto: the generated parser {} the input, the decoder {}",
      parsed ? "accepts" : "refuses", decoded ? "accepts it" : decoded.error().message());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input = warpscope::fuzz::AsText(data, size);
  warpscope::server::RemoteWriteOptions options;
  options.max_uncompressed_bytes = 1 << 20;
  Check(warpscope::server::DecodeRemoteWrite(input, options), "snappy");
  const auto proto = warpscope::server::DecodeRemoteWriteProto(input, options);
  Check(proto, "proto");
  CheckAgainstGeneratedParser(input, proto);
  std::string compressed;
  snappy::Compress(input.data(), input.size(), &compressed);
  Check(warpscope::server::DecodeRemoteWrite(compressed, options), "compressed");
  return 0;
}

// SPDX-License-Identifier: Apache-2.0
// Decoding of Prometheus remote write 1.0 requests (POST /api/v1/write: snappy-compressed
// prometheus.WriteRequest) into the storage's IngestBatch. The mapping is described in
// docs/design/ingest.md.
#ifndef WARPSCOPE_SERVER_INGEST_REMOTE_WRITE_H_
#define WARPSCOPE_SERVER_INGEST_REMOTE_WRITE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "server/storage/storage.h"

namespace warpscope::server {

struct RemoteWriteOptions {
  // The host of series that carry none of the host labels (instance, host, Hostname).
  std::string default_host = "prometheus";
  // A body that decompresses to more than this is refused (ResourceExhausted, HTTP 413).
  size_t max_uncompressed_bytes = 64u << 20;
};

struct DecodedRemoteWrite {
  // One batch per (host, sample timestamp), ordered by host then time.
  std::vector<IngestBatch> batches;
  uint64_t samples = 0;        // samples in `batches`
  uint64_t stale_markers = 0;  // skipped: Prometheus' staleness marker
  // Skipped and counted, not fatal: NaN or infinite values, timestamps out of range, a
  // timestamp repeated within one series. `first_rejection` says why the first one was.
  uint64_t rejected_samples = 0;
  std::string first_rejection;
};

// The value Prometheus writes to mark a series stale (a NaN with this bit pattern).
inline constexpr uint64_t kStaleMarkerBits = 0x7ff0000000000002ull;

// Decodes a snappy block-compressed WriteRequest (Content-Encoding: snappy).
//
// Mapping (see docs/design/ingest.md):
//   - Host: the value of the series' `instance` label, else `host`, else `Hostname`, else
//     options.default_host. The label used is removed from the series' labels. Each host is its
//     own "agent": agent_id = "remote-write/<host>".
//   - metric key = `__name__`; the other labels are series labels; every series is on the host
//     entity. A name ending in `_total` is a counter, anything else a gauge (remote write 1.0
//     carries no types with the samples).
//   - Samples are grouped by (host, timestamp): each group is one IngestBatch with a zero-length
//     window at that timestamp, each sample a series with avg=min=max=last=value and count 1.
//     sequence = a 63-bit hash of the batch's content, so a retried identical request (or the
//     part of it stored before a failure) is a duplicate for the storage.
//
// Errors: ResourceExhausted when the body decompresses to more than
// options.max_uncompressed_bytes; InvalidArgument (the message names the series and the
// remedy) for data that is not snappy, bytes that are not a WriteRequest, a series without
// `__name__`, a label with an empty name, labels not sorted by name or repeated. Labels with an
// empty value are dropped (an empty value means "no label" in Prometheus).
// Thread-safe; pure.
[[nodiscard]] base::Result<DecodedRemoteWrite> DecodeRemoteWrite(std::string_view snappy_body,
                                                                 const RemoteWriteOptions& options);

// The same for an uncompressed WriteRequest (Content-Encoding: identity).
[[nodiscard]] base::Result<DecodedRemoteWrite> DecodeRemoteWriteProto(
    std::string_view bytes, const RemoteWriteOptions& options);

// Checks the X-Prometheus-Remote-Write-Version header: empty or 0.x / 1.x is remote write 1.0
// and accepted; anything else (2.0) is InvalidArgument with the remedy.
[[nodiscard]] base::Status CheckRemoteWriteVersion(std::string_view header);

}  // namespace warpscope::server

#endif  // WARPSCOPE_SERVER_INGEST_REMOTE_WRITE_H_

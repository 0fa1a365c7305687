// SPDX-License-Identifier: Apache-2.0
// A batch's sequence number derived from its content, for the ingest paths whose senders have no
// sequence numbers (OTLP, remote write): a retried identical request yields the same
// (agent_id, sequence, start), which the storage stores once (Storage::WriteBatch). Private to
// src/server/ingest/.
#ifndef WARPSCOPE_SERVER_INGEST_CONTENT_SEQUENCE_H_
#define WARPSCOPE_SERVER_INGEST_CONTENT_SEQUENCE_H_

#include <cstdint>
#include <cstring>
#include <string_view>

#include "server/storage/storage.h"

namespace warpscope::server::ingest_internal {

// FNV-1a over length-prefixed fields: a stable hash of a batch's content for its sequence.
class Hasher {
 public:
  void Add(std::string_view s) {
    AddU64(s.size());
    Bytes(s.data(), s.size());
  }
  void AddU64(uint64_t v) { Bytes(&v, sizeof(v)); }
  void AddDouble(double v) {
    uint64_t bits = 0;
    std::memcpy(&bits, &v, sizeof(bits));
    AddU64(bits);
  }
  void AddLabels(const model::Labels& labels) {
    AddU64(labels.size());
    for (const auto& [k, v] : labels) {
      Add(k);
      Add(v);
    }
  }
  // 63 bits: the storage keeps sequences as signed 64-bit integers.
  uint64_t value() const { return h_ & 0x7fffffffffffffffull; }

 private:
  void Bytes(const void* data, size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < n; ++i) {
      h_ ^= p[i];
      h_ *= 0x100000001b3ull;
    }
  }
  uint64_t h_ = 0xcbf29ce484222325ull;
};

// A 63-bit hash of everything in `b` except its sequence and events.
inline uint64_t ContentSequence(const IngestBatch& b) {
  Hasher h;
  h.Add(b.agent_id);
  h.Add(b.host);
  h.AddU64(static_cast<uint64_t>(base::ToUnixNanos(b.start)));
  h.AddU64(static_cast<uint64_t>(base::ToUnixNanos(b.end)));
  h.AddU64(b.entities.size());
  for (const model::Entity& e : b.entities) {
    h.AddU64(static_cast<uint64_t>(e.kind));
    h.Add(e.id);
    h.Add(e.parent);
    h.AddLabels(e.attributes);
  }
  h.AddU64(b.metrics.size());
  for (const MetricInfo& m : b.metrics) {
    h.Add(m.key);
    h.AddU64(static_cast<uint64_t>(m.kind));
    h.Add(m.unit);
    h.Add(m.help);
  }
  h.AddU64(b.series.size());
  for (const IngestSeries& s : b.series) {
    h.Add(s.metric);
    h.Add(s.entity);
    h.AddLabels(s.labels);
    h.AddDouble(s.avg);
    h.AddDouble(s.min);
    h.AddDouble(s.max);
    h.AddDouble(s.last);
    h.AddU64(s.count);
  }
  return h.value();
}

}  // namespace warpscope::server::ingest_internal

#endif  // WARPSCOPE_SERVER_INGEST_CONTENT_SEQUENCE_H_

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

// A stable 64-bit hash of length-prefixed fields for a batch's sequence: 8 bytes at a time,
// each word multiplied and folded in (batches hash ~200 bytes per series, so a byte-at-a-time
// hash showed up in ingest profiles).
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
  static uint64_t Mix(uint64_t v) {
    v ^= v >> 32;
    v *= 0x9e3779b97f4a7c15ull;
    v ^= v >> 29;
    return v;
  }
  void Word(uint64_t w) { h_ = (h_ ^ Mix(w)) * 0xff51afd7ed558ccdull; }
  void Bytes(const void* data, size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    while (n >= 8) {
      uint64_t w = 0;
      std::memcpy(&w, p, 8);
      Word(w);
      p += 8;
      n -= 8;
    }
    if (n > 0) {
      uint64_t w = 0;
      std::memcpy(&w, p, n);
      Word(w ^ (static_cast<uint64_t>(n) << 56));
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

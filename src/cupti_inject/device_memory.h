// SPDX-License-Identifier: Apache-2.0
// Allocations and releases through the CUDA allocator (CUPTI MEMORY2 records), aggregated in the
// library per (device, memory kind) into the cumulative totals the wire's DeviceMemory carries:
// sending every record would cost a frame per cudaMalloc, the totals cost one small frame per
// flush tick. Used by the flusher thread only (not on any CUPTI callback path).
//
// allocated_bytes is the sum of allocations minus releases. A release's size is the record's
// bytes; when a record says 0 the size remembered for its address is used (CUPTI's documentation
// describes bytes as "the number of bytes of memory allocated" without saying what a release
// record holds; unverified on a GPU). Releases of memory allocated before the library started
// count, and allocated_bytes stays at or above 0.
//
// Bounded: at most max_live addresses are remembered (beyond, allocations still count but are not
// remembered) and at most max_keys (device, kind) pairs are kept (records of further pairs are
// counted in dropped()).
#ifndef WARPSCOPE_CUPTI_INJECT_DEVICE_MEMORY_H_
#define WARPSCOPE_CUPTI_INJECT_DEVICE_MEMORY_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cupti/wire.h"
#include "cupti_inject/activity_decode.h"

namespace warpscope::cupti_inject {

class DeviceMemoryTotals {
 public:
  explicit DeviceMemoryTotals(size_t max_live = 16384, size_t max_keys = 64)
      : max_live_(max_live), max_keys_(max_keys) {}

  void Add(const DecodedMemory& record);

  // Every (device, kind) seen so far, in (device, kind) order.
  std::vector<wire::DeviceMemoryEntry> Entries() const;
  bool empty() const { return totals_.empty(); }
  uint64_t dropped() const { return dropped_; }
  // Heap bytes held (an estimate, for the library's memory gauge).
  size_t memory_bytes() const { return live_.size() * 48 + totals_.size() * 96; }

 private:
  size_t max_live_;
  size_t max_keys_;
  uint64_t dropped_ = 0;
  std::map<std::pair<uint32_t, uint32_t>, wire::DeviceMemoryEntry> totals_;
  std::unordered_map<uint64_t, uint64_t> live_;  // address -> bytes of live allocations
};

}  // namespace warpscope::cupti_inject

#endif  // WARPSCOPE_CUPTI_INJECT_DEVICE_MEMORY_H_

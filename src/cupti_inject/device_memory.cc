// SPDX-License-Identifier: Apache-2.0
#include "cupti_inject/device_memory.h"

#include <algorithm>

namespace warpscope::cupti_inject {

void DeviceMemoryTotals::Add(const DecodedMemory& record) {
  const std::pair<uint32_t, uint32_t> key{record.device, record.memory_kind};
  auto it = totals_.find(key);
  if (it == totals_.end()) {
    if (totals_.size() >= max_keys_) {
      ++dropped_;
      return;
    }
    wire::DeviceMemoryEntry entry;
    entry.device = record.device;
    entry.memory_kind = record.memory_kind;
    it = totals_.emplace(key, entry).first;
  }
  wire::DeviceMemoryEntry& e = it->second;
  if (record.allocation) {
    ++e.allocations;
    e.allocated_total_bytes += record.bytes;
    e.allocated_bytes += record.bytes;
    if (record.address != 0 && (live_.size() < max_live_ || live_.contains(record.address))) {
      live_[record.address] = record.bytes;
    }
    return;
  }
  uint64_t bytes = record.bytes;
  if (auto live = live_.find(record.address); live != live_.end()) {
    if (bytes == 0) {
      bytes = live->second;
    }
    live_.erase(live);
  }
  ++e.releases;
  e.released_total_bytes += bytes;
  e.allocated_bytes -= std::min(e.allocated_bytes, bytes);
}

std::vector<wire::DeviceMemoryEntry> DeviceMemoryTotals::Entries() const {
  std::vector<wire::DeviceMemoryEntry> out;
  out.reserve(totals_.size());
  for (const auto& [key, e] : totals_) {
    out.push_back(e);
  }
  return out;
}

}  // namespace warpscope::cupti_inject

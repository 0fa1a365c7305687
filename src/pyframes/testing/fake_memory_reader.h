// SPDX-License-Identifier: Apache-2.0
// A MemoryReader over regions a test lays out at made-up addresses: reads outside every region
// (or crossing a region's end) fail, as an unmapped page would. Test-only (allocates).
#ifndef WARPSCOPE_PYFRAMES_TESTING_FAKE_MEMORY_READER_H_
#define WARPSCOPE_PYFRAMES_TESTING_FAKE_MEMORY_READER_H_

#include <cstdint>
#include <cstring>
#include <map>
#include <vector>

#include "pyframes/memory_reader.h"

namespace warpscope::pyframes {

class FakeMemoryReader final : public MemoryReader {
 public:
  // Maps `size` zero bytes at `addr` (regions must not overlap).
  void Map(uint64_t addr, size_t size) { regions_[addr].assign(size, 0); }
  void Unmap(uint64_t addr) { regions_.erase(addr); }

  // Writes into mapped memory; the range must be mapped.
  void Write(uint64_t addr, const void* src, size_t len) {
    uint8_t* p = Find(addr, len);
    if (p != nullptr) {
      std::memcpy(p, src, len);
    }
  }
  template <typename T>
  void Put(uint64_t addr, T value) {
    Write(addr, &value, sizeof(T));
  }

  bool Read(uint64_t addr, void* dst, size_t len) override {
    ++reads_;
    const uint8_t* p = Find(addr, len);
    if (p == nullptr) {
      ++failed_reads_;
      return false;
    }
    std::memcpy(dst, p, len);
    return true;
  }

  size_t reads() const { return reads_; }
  size_t failed_reads() const { return failed_reads_; }

 private:
  uint8_t* Find(uint64_t addr, size_t len) {
    auto it = regions_.upper_bound(addr);
    if (it == regions_.begin()) {
      return nullptr;
    }
    --it;
    const uint64_t start = it->first;
    if (addr < start || addr - start + len > it->second.size()) {
      return nullptr;
    }
    return it->second.data() + (addr - start);
  }

  std::map<uint64_t, std::vector<uint8_t>> regions_;
  size_t reads_ = 0;
  size_t failed_reads_ = 0;
};

}  // namespace warpscope::pyframes

#endif  // WARPSCOPE_PYFRAMES_TESTING_FAKE_MEMORY_READER_H_

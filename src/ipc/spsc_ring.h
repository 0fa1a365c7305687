// SPDX-License-Identifier: Apache-2.0
// A lock-free single-producer single-consumer ring of variable-length byte records. The producer
// is one application thread (inside a CUPTI callback or an NCCL profiler call); the consumer is
// the flusher thread. A
// write that does not fit fails at once (the caller counts a drop): the producer never waits.
// Records are 8-byte aligned, prefixed with a u32 length; a record that would straddle the end
// of the buffer is preceded by a wrap marker and starts again at offset 0.
#ifndef WARPSCOPE_IPC_SPSC_RING_H_
#define WARPSCOPE_IPC_SPSC_RING_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>

namespace warpscope::ipc {

class SpscByteRing {
 public:
  // `capacity` is rounded up to a power of two, at least 64 bytes.
  explicit SpscByteRing(size_t capacity) {
    size_t c = 64;
    while (c < capacity) {
      c <<= 1;
    }
    capacity_ = c;
    buf_ = std::make_unique<uint8_t[]>(c);
  }
  SpscByteRing(const SpscByteRing&) = delete;
  SpscByteRing& operator=(const SpscByteRing&) = delete;

  size_t capacity() const { return capacity_; }
  // Largest record TryWrite can ever accept.
  size_t max_record() const { return capacity_ / 2 - kPrefix; }

  // Producer side. Returns false (nothing written) when the ring lacks room.
  bool TryWrite(const void* data, size_t size) {
    if (size == 0 || size > max_record()) {
      return false;
    }
    const uint64_t head = head_.load(std::memory_order_relaxed);
    const size_t need = Align(size + kPrefix);
    const size_t offset = head & (capacity_ - 1);
    const size_t to_end = capacity_ - offset;
    const size_t total = need <= to_end ? need : to_end + need;
    if (head + total - cached_tail_ > capacity_) {
      cached_tail_ = tail_.load(std::memory_order_acquire);
      if (head + total - cached_tail_ > capacity_) {
        return false;
      }
    }
    size_t at = offset;
    if (need > to_end) {
      // to_end is a multiple of 8, so there is room for the 4-byte marker.
      PutLen(offset, kWrapMarker);
      at = 0;
    }
    PutLen(at, static_cast<uint32_t>(size));
    std::memcpy(buf_.get() + at + kPrefix, data, size);
    head_.store(head + total, std::memory_order_release);
    return true;
  }

  // Consumer side: calls fn(std::span<const uint8_t>) for each record, oldest first, until the
  // ring is empty or `max_records` were read. Returns the number read.
  template <typename Fn>
  size_t Drain(Fn&& fn, size_t max_records = SIZE_MAX) {
    uint64_t tail = tail_.load(std::memory_order_relaxed);
    const uint64_t head = head_.load(std::memory_order_acquire);
    size_t n = 0;
    while (tail != head && n < max_records) {
      size_t offset = tail & (capacity_ - 1);
      uint32_t len = GetLen(offset);
      if (len == kWrapMarker) {
        tail += capacity_ - offset;
        offset = 0;
        len = GetLen(0);
      }
      fn(std::span<const uint8_t>(buf_.get() + offset + kPrefix, len));
      tail += Align(len + kPrefix);
      ++n;
      tail_.store(tail, std::memory_order_release);
    }
    return n;
  }

  bool Empty() const {
    return head_.load(std::memory_order_acquire) == tail_.load(std::memory_order_acquire);
  }

  // Discards everything. Only when neither side can run (a fork child, before reuse).
  void ResetUnsafe() {
    head_.store(0, std::memory_order_relaxed);
    tail_.store(0, std::memory_order_relaxed);
    cached_tail_ = 0;
  }

 private:
  static constexpr size_t kPrefix = 8;
  static constexpr uint32_t kWrapMarker = 0xffffffffu;
  static size_t Align(size_t n) { return (n + 7) & ~size_t{7}; }
  void PutLen(size_t at, uint32_t v) { std::memcpy(buf_.get() + at, &v, sizeof(v)); }
  uint32_t GetLen(size_t at) const {
    uint32_t v;
    std::memcpy(&v, buf_.get() + at, sizeof(v));
    return v;
  }

  size_t capacity_ = 0;
  std::unique_ptr<uint8_t[]> buf_;
  alignas(64) std::atomic<uint64_t> head_{0};  // written by the producer
  uint64_t cached_tail_ = 0;                    // producer's view of tail_
  alignas(64) std::atomic<uint64_t> tail_{0};  // written by the consumer
};

}  // namespace warpscope::ipc

#endif  // WARPSCOPE_IPC_SPSC_RING_H_

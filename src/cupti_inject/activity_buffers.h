// SPDX-License-Identifier: Apache-2.0
// The activity buffers handed to CUPTI: a fixed pool (WARPSCOPE_CUPTI_ACTIVITY_BUFFERS of
// _BUFFER_KB, allocated on CUPTI's request, kept and reused, never freed), a reserve of small
// buffers for when every pool buffer is out, and the queue of buffers CUPTI completed, waiting
// for the flusher.
//
// The reserve: CUPTI keeps a buffer per context (and stream) and asks for several in a row before
// it completes any (a forced flush at exit completes them all at once), so the number of buffers
// out at the same time follows the application's contexts and bursts, not its record rate. When
// the pool is out, up to kReserveBuffers of kReserveBytes (at most _BUFFER_KB each) are handed out
// instead of none: a burst costs at most 4 MiB more rather than its records.
//
// Threads: Request and Complete run inside CUPTI's buffer callbacks (BufferRequested,
// BufferCompleted below: CUPTI's own thread, or an application thread inside a CUDA call). They
// hold one of the two mutexes for a few instructions and never wait for the flusher: an empty
// pool gives CUPTI no buffer (CUPTI drops and counts the records; counted here as exhausted).
// TakeCompleted and Return run on the flusher thread. The pool owns every buffer it allocated;
// a buffer is CUPTI's between Request and Complete, the flusher's between TakeCompleted and
// Return.
#ifndef WARPSCOPE_CUPTI_INJECT_ACTIVITY_BUFFERS_H_
#define WARPSCOPE_CUPTI_INJECT_ACTIVITY_BUFFERS_H_

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "cupti/abi.h"

namespace warpscope::cupti_inject {

namespace abi = ::warpscope::cupti::abi;

struct CompletedBuffer {
  abi::CUcontext ctx;
  uint32_t stream;
  uint8_t* buffer;
  size_t valid;  // bytes of records
  size_t size;   // the buffer's size, as Request gave it
};

// A buffer for CUPTI and its size; data is nullptr when none is left.
struct ActivityBuffer {
  uint8_t* data = nullptr;
  size_t size = 0;
};

class ActivityBufferPool {
 public:
  ActivityBufferPool() = default;
  ActivityBufferPool(const ActivityBufferPool&) = delete;
  ActivityBufferPool& operator=(const ActivityBufferPool&) = delete;

  static constexpr size_t kReserveBuffers = 32;
  static constexpr size_t kReserveBytes = 128 * 1024;

  // Sets the pool's shape; before any Request (InitializeInjection).
  void Configure(size_t max_buffers, size_t buffer_bytes) {
    max_buffers_ = max_buffers;
    buffer_bytes_ = buffer_bytes;
    reserve_bytes_ = std::min(buffer_bytes, kReserveBytes);
  }
  size_t buffer_bytes() const { return buffer_bytes_; }

  // A free pool buffer, or a new one while fewer than max_buffers exist; else a reserve buffer
  // (counted in reserve_used); none (counted in exhausted) when the reserve is out too or the
  // allocation failed.
  ActivityBuffer Request();
  // Queues a buffer CUPTI filled for the flusher.
  void Complete(const CompletedBuffer& b);
  // Moves the queued buffers to `out` (emptied first), oldest first.
  void TakeCompleted(std::vector<CompletedBuffer>* out);
  // Gives a buffer back (to the pool or the reserve, by its size) once its records are decoded.
  void Return(uint8_t* buffer, size_t size);

  uint64_t allocated_bytes() const;
  uint64_t exhausted() const { return exhausted_.load(std::memory_order_relaxed); }
  uint64_t reserve_used() const { return reserve_used_.load(std::memory_order_relaxed); }

  // fork(): the prepare handler takes both mutexes so that the child finds them consistent; the
  // parent and the child release them. In the child, queued buffers hold the parent's records:
  // they go back to the pool unread.
  void LockForFork();
  void UnlockAfterFork();
  void ResetInForkChild();

 private:
  // A free or new buffer of `bytes` from `free`, while fewer than `max` exist; nullptr if none.
  static uint8_t* Take(std::vector<uint8_t*>& free, size_t& allocated, size_t max, size_t bytes);

  size_t max_buffers_ = 0;
  size_t buffer_bytes_ = 0;
  size_t reserve_bytes_ = 0;
  mutable std::mutex pool_mu_;
  std::vector<uint8_t*> free_;          // GUARDED_BY(pool_mu_)
  size_t allocated_ = 0;                // GUARDED_BY(pool_mu_)
  std::vector<uint8_t*> reserve_free_;  // GUARDED_BY(pool_mu_)
  size_t reserve_allocated_ = 0;        // GUARDED_BY(pool_mu_)
  std::atomic<uint64_t> exhausted_{0};
  std::atomic<uint64_t> reserve_used_{0};
  std::mutex completed_mu_;
  std::vector<CompletedBuffer> completed_;  // GUARDED_BY(completed_mu_)
};

// CUPTI's buffer callbacks (cuptiActivityRegisterCallbacks) over the process's pool; a completed
// buffer also wakes the flusher. noexcept with a last-resort catch that counts kCallbackErrors.
void BufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) noexcept;
void BufferCompleted(abi::CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t size,
                     size_t valid) noexcept;

}  // namespace warpscope::cupti_inject

#endif  // WARPSCOPE_CUPTI_INJECT_ACTIVITY_BUFFERS_H_

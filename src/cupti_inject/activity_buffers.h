// SPDX-License-Identifier: Apache-2.0
// The activity buffers handed to CUPTI: a fixed pool (WARPSCOPE_CUPTI_ACTIVITY_BUFFERS of
// _BUFFER_KB, allocated on CUPTI's request, kept and reused, never freed) and the queue of
// buffers CUPTI completed, waiting for the flusher.
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
};

class ActivityBufferPool {
 public:
  ActivityBufferPool() = default;
  ActivityBufferPool(const ActivityBufferPool&) = delete;
  ActivityBufferPool& operator=(const ActivityBufferPool&) = delete;

  // Sets the pool's shape; before any Request (InitializeInjection).
  void Configure(size_t max_buffers, size_t buffer_bytes) {
    max_buffers_ = max_buffers;
    buffer_bytes_ = buffer_bytes;
  }
  size_t buffer_bytes() const { return buffer_bytes_; }

  // A free buffer, or a new one while fewer than max_buffers exist; nullptr (counted) when every
  // buffer is in use or the allocation failed.
  uint8_t* Request();
  // Queues a buffer CUPTI filled for the flusher.
  void Complete(const CompletedBuffer& b);
  // Moves the queued buffers to `out` (emptied first), oldest first.
  void TakeCompleted(std::vector<CompletedBuffer>* out);
  // Gives a buffer back to the pool once its records are decoded.
  void Return(uint8_t* buffer);

  uint64_t allocated_bytes() const;
  uint64_t exhausted() const { return exhausted_.load(std::memory_order_relaxed); }

  // fork(): the prepare handler takes both mutexes so that the child finds them consistent; the
  // parent and the child release them. In the child, queued buffers hold the parent's records:
  // they go back to the pool unread.
  void LockForFork();
  void UnlockAfterFork();
  void ResetInForkChild();

 private:
  size_t max_buffers_ = 0;
  size_t buffer_bytes_ = 0;
  mutable std::mutex pool_mu_;
  std::vector<uint8_t*> free_;  // GUARDED_BY(pool_mu_)
  size_t allocated_ = 0;        // GUARDED_BY(pool_mu_)
  std::atomic<uint64_t> exhausted_{0};
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

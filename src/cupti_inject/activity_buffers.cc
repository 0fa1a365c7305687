// SPDX-License-Identifier: Apache-2.0
#include "cupti_inject/activity_buffers.h"

#include <cstdlib>

#include "cupti_inject/flusher.h"
#include "cupti_inject/state.h"

namespace warpscope::cupti_inject {

uint8_t* ActivityBufferPool::Request() {
  std::lock_guard lock(pool_mu_);
  uint8_t* buffer = nullptr;
  if (!free_.empty()) {
    buffer = free_.back();
    free_.pop_back();
  } else if (allocated_ < max_buffers_) {
    buffer = static_cast<uint8_t*>(std::aligned_alloc(8, buffer_bytes_));
    if (buffer != nullptr) {
      ++allocated_;
    }
  }
  if (buffer == nullptr) {
    exhausted_.fetch_add(1, std::memory_order_relaxed);
  }
  return buffer;
}

void ActivityBufferPool::Complete(const CompletedBuffer& b) {
  std::lock_guard lock(completed_mu_);
  completed_.push_back(b);
}

void ActivityBufferPool::TakeCompleted(std::vector<CompletedBuffer>* out) {
  out->clear();
  std::lock_guard lock(completed_mu_);
  out->swap(completed_);
}

void ActivityBufferPool::Return(uint8_t* buffer) {
  std::lock_guard lock(pool_mu_);
  free_.push_back(buffer);
}

uint64_t ActivityBufferPool::allocated_bytes() const {
  std::lock_guard lock(pool_mu_);
  return allocated_ * static_cast<uint64_t>(buffer_bytes_);
}

void ActivityBufferPool::LockForFork() {
  pool_mu_.lock();
  completed_mu_.lock();
}

void ActivityBufferPool::UnlockAfterFork() {
  completed_mu_.unlock();
  pool_mu_.unlock();
}

void ActivityBufferPool::ResetInForkChild() {
  std::scoped_lock lock(pool_mu_, completed_mu_);
  for (const auto& c : completed_) {
    free_.push_back(c.buffer);  // the parent's data, not the child's
  }
  completed_.clear();
}

void BufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) noexcept {
  *buffer = nullptr;
  *size = 0;
  *max_records = 0;
  try {
    *buffer = g->buffers.Request();
    if (*buffer != nullptr) {
      *size = g->buffers.buffer_bytes();
    }
  } catch (...) {
    g->callback_errors.fetch_add(1, std::memory_order_relaxed);
  }
}

void BufferCompleted(abi::CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t,
                     size_t valid) noexcept {
  try {
    if (buffer == nullptr) {
      return;
    }
    g->buffers.Complete({ctx, stream, buffer, valid});
    WakeFlusher();
  } catch (...) {
    g->callback_errors.fetch_add(1, std::memory_order_relaxed);
  }
}

}  // namespace warpscope::cupti_inject

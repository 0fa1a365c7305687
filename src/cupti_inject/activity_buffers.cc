// SPDX-License-Identifier: Apache-2.0
#include "cupti_inject/activity_buffers.h"

#include <cstdlib>

#include "cupti_inject/flusher.h"
#include "cupti_inject/state.h"

namespace warpscope::cupti_inject {

uint8_t* ActivityBufferPool::Take(std::vector<uint8_t*>& free, size_t& allocated, size_t max,
                                  size_t bytes) {
  if (!free.empty()) {
    uint8_t* buffer = free.back();
    free.pop_back();
    return buffer;
  }
  if (allocated >= max) {
    return nullptr;
  }
  auto* buffer = static_cast<uint8_t*>(std::aligned_alloc(8, bytes));
  if (buffer != nullptr) {
    ++allocated;
  }
  return buffer;
}

ActivityBuffer ActivityBufferPool::Request() {
  std::lock_guard lock(pool_mu_);
  if (uint8_t* b = Take(free_, allocated_, max_buffers_, buffer_bytes_)) {
    return {b, buffer_bytes_};
  }
  if (uint8_t* b = Take(reserve_free_, reserve_allocated_, kReserveBuffers, reserve_bytes_)) {
    reserve_used_.fetch_add(1, std::memory_order_relaxed);
    return {b, reserve_bytes_};
  }
  exhausted_.fetch_add(1, std::memory_order_relaxed);
  return {};
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

void ActivityBufferPool::Return(uint8_t* buffer, size_t size) {
  std::lock_guard lock(pool_mu_);
  // With _BUFFER_KB at or under kReserveBytes both kinds have one size and either list serves.
  (size == buffer_bytes_ ? free_ : reserve_free_).push_back(buffer);
}

uint64_t ActivityBufferPool::allocated_bytes() const {
  std::lock_guard lock(pool_mu_);
  return allocated_ * static_cast<uint64_t>(buffer_bytes_) +
         reserve_allocated_ * static_cast<uint64_t>(reserve_bytes_);
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
    // the parent's data, not the child's
    (c.size == buffer_bytes_ ? free_ : reserve_free_).push_back(c.buffer);
  }
  completed_.clear();
}

void BufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) noexcept {
  *buffer = nullptr;
  *size = 0;
  *max_records = 0;
  try {
    const ActivityBuffer b = g->buffers.Request();
    *buffer = b.data;
    *size = b.size;
  } catch (...) {
    g->callback_errors.fetch_add(1, std::memory_order_relaxed);
  }
}

void BufferCompleted(abi::CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t size,
                     size_t valid) noexcept {
  try {
    if (buffer == nullptr) {
      return;
    }
    g->buffers.Complete({ctx, stream, buffer, valid, size});
    WakeFlusher();
  } catch (...) {
    g->callback_errors.fetch_add(1, std::memory_order_relaxed);
  }
}

}  // namespace warpscope::cupti_inject

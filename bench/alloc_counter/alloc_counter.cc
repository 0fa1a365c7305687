// SPDX-License-Identifier: Apache-2.0
#include "bench/alloc_counter/alloc_counter.h"

#include <atomic>
#include <cstdlib>
#include <new>

namespace warpscope::bench {
namespace {

std::atomic<uint64_t> g_allocations{0};

void* Allocate(std::size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  void* p = std::malloc(size == 0 ? 1 : size);
  if (p == nullptr) {
    std::abort();  // a benchmark out of memory has nothing useful to report
  }
  return p;
}

void* AllocateAligned(std::size_t size, std::align_val_t align) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  const auto a = static_cast<std::size_t>(align);
  void* p = std::aligned_alloc(a, (size + a - 1) / a * a);
  if (p == nullptr) {
    std::abort();
  }
  return p;
}

}  // namespace

uint64_t AllocationCount() { return g_allocations.load(std::memory_order_relaxed); }

}  // namespace warpscope::bench

// The replaceable global allocation functions ([new.delete]); the nothrow and array forms
// default to these.
void* operator new(std::size_t size) { return warpscope::bench::Allocate(size); }
void* operator new[](std::size_t size) { return warpscope::bench::Allocate(size); }
void* operator new(std::size_t size, std::align_val_t align) {
  return warpscope::bench::AllocateAligned(size, align);
}
void* operator new[](std::size_t size, std::align_val_t align) {
  return warpscope::bench::AllocateAligned(size, align);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

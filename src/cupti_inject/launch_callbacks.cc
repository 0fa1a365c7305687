// SPDX-License-Identifier: Apache-2.0
#include "cupti_inject/launch_callbacks.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <span>
#include <string>

#include "cupti/wire.h"
#include "cupti_inject/flusher.h"
#include "cupti_inject/state.h"

namespace warpscope::cupti_inject {
namespace {

constexpr uint64_t kOverheadSampling = 256;  // power of two
constexpr int kHotAlign = 64;                // bytes: a cache line

uint32_t Gettid() { return static_cast<uint32_t>(syscall(SYS_gettid)); }

// Handle of the calling thread: its slot, valid for one process generation.
struct ThreadHandle {
  ThreadSlot* slot = nullptr;
  uint64_t generation = 0;
  int runtime_depth = 0;
  uint32_t claim_retries = 0;
  ~ThreadHandle() {
    if (slot != nullptr && g != nullptr &&
        generation == g->generation.load(std::memory_order_relaxed)) {
      slot->state.store(kSlotReleased, std::memory_order_release);
    }
  }
};
thread_local ThreadHandle t_handle;

ThreadSlot* ClaimSlot() {
  const uint32_t n = g->config.max_threads;
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t expected = kSlotFree;
    ThreadSlot& s = g->slots[i];
    if (s.state.load(std::memory_order_relaxed) == kSlotFree &&
        s.state.compare_exchange_strong(expected, kSlotClaiming, std::memory_order_acquire)) {
      if (!s.ring) {
        s.ring = std::make_unique<SpscByteRing>(static_cast<size_t>(g->config.ring_kb) * 1024);
        g->ring_bytes.fetch_add(s.ring->capacity(), std::memory_order_relaxed);
      }
      s.bucket = TokenBucket();
      // Both unwinders need the bounds: the fp walk always, the DWARF one to resume past code
      // without unwind tables. Once per thread (for the main thread glibc reads its maps).
      s.bounds = CurrentThreadStackBounds();
      s.tid = Gettid();
      s.state.store(kSlotOwned, std::memory_order_release);
      return &s;
    }
  }
  return nullptr;
}

// Marks a stack hash as sent on the current connection; false when it already was.
bool InternStack(uint64_t hash) {
  for (size_t probe = 0; probe < 16; ++probe) {
    auto& cell = g->interned[(hash + probe) & (kInternSize - 1)];
    uint64_t cur = cell.load(std::memory_order_relaxed);
    if (cur == hash) {
      return false;
    }
    if (cur == 0 && cell.compare_exchange_strong(cur, hash, std::memory_order_relaxed)) {
      return true;
    }
    if (cur == hash) {
      return false;
    }
  }
  return true;  // table crowded: send again
}

// The hot path: an API-domain launch callback at ENTER, after de-duplication.
// Callback and OnLaunch start on a cache line (kHotAlign): where they happen to land otherwise
// moved the refused launch's cost by ~4 ns (5 %) on the CI machine's Xeon with code added
// elsewhere in the library (cupti_launch_bench), their instructions being the same.
__attribute__((aligned(kHotAlign))) void OnLaunch(abi::CUpti_CallbackDomain domain,
                                                  abi::CUpti_CallbackId cbid,
                                                  const abi::CUpti_CallbackData* d) {
  if (!g->controls.enabled.load(std::memory_order_relaxed)) {
    return;
  }
  if (!g->flusher_started.load(std::memory_order_relaxed)) {
    StartFlusher();  // first launch in a fork child
  }
  ThreadHandle& h = t_handle;
  if (h.generation != g->generation.load(std::memory_order_relaxed)) {
    h.generation = g->generation.load(std::memory_order_relaxed);
    h.slot = ClaimSlot();
  }
  ThreadSlot* slot = h.slot;
  if (slot == nullptr) {
    g->threads_over_cap.fetch_add(1, std::memory_order_relaxed);
    if ((++h.claim_retries & 1023) == 0) {
      h.generation = 0;  // look for a slot freed by an exited thread, now and then
    }
    return;
  }
  // Overhead estimate: the refused path is timed on one launch in kOverheadSampling and scaled;
  // admitted launches (the expensive ones) are timed every time.
  const bool timed = (slot->seen.Get() & (kOverheadSampling - 1)) == 0;
  const uint64_t t0 = timed ? NowNs(CLOCK_MONOTONIC) : 0;
  slot->seen.Add();
  slot->last_correlation.store(d->correlationId, std::memory_order_relaxed);
  if (!slot->bucket.Admit(NowNs(CLOCK_MONOTONIC_COARSE),
                          g->controls.rate.load(std::memory_order_relaxed),
                          g->burst.load(std::memory_order_relaxed))) {
    slot->throttled.Add();
    if (timed) {
      slot->overhead_ns.Add((NowNs(CLOCK_MONOTONIC) - t0) * kOverheadSampling);
    }
    return;
  }
  slot->admitted.Add();
  struct AddElapsed {
    SlotCounter& counter;
    uint64_t start;
    ~AddElapsed() { counter.Add(NowNs(CLOCK_MONOTONIC) - start); }
  } add_elapsed{slot->overhead_ns, NowNs(CLOCK_MONOTONIC)};

  uint64_t native[128];
  const size_t n = CaptureNative(g->config.unwinder, slot->bounds, /*skip_own_frames=*/true,
                                 std::span<uint64_t>(native, g->config.max_frames));
  thread_local PythonStack python;
  python.count = 0;
  if (g->config.python) {
    CapturePython(&python);
  }
  const uint64_t hash = HashStack(std::span<const uint64_t>(native, n), &python);
  if (InternStack(hash)) {
    thread_local uint8_t
        frame[1 + 128 * 8 + PythonStack::kArenaSize + PythonStack::kMaxFrames * 12 + 64];
    frame[0] = kRecordStack;
    const size_t len =
        wire::EncodeStackInto(hash, std::span<const uint64_t>(native, n),
                              std::span<const wire::PythonFrameView>(python.frames, python.count),
                              std::span<uint8_t>(frame + 1, sizeof(frame) - 1));
    if (len == 0 || !slot->ring->TryWrite(frame, len + 1)) {
      slot->drops.Add();
      g->intern_dirty.store(true, std::memory_order_relaxed);
    }
  }
  LaunchRecord rec;
  rec.correlation_id = d->correlationId;
  rec.tid = slot->tid;
  rec.domain = static_cast<uint32_t>(domain);
  rec.cbid = cbid;
  rec.multi_kernel =
      abi::IsGraphLaunch(domain, cbid) ||
      cbid == (domain == abi::kDomainDriverApi ? abi::kCbidCuLaunchCooperativeKernelMultiDevice
                                               : abi::kCbidCudaLaunchCooperativeKernelMultiDevice);
  rec.timestamp_ns = NowNs(CLOCK_REALTIME);
  rec.stack_hash = hash;
  if (d->symbolName != nullptr) {
    const size_t len = strnlen(d->symbolName, kMaxSymbol);
    std::memcpy(rec.symbol, d->symbolName, len);
    rec.symbol_len = static_cast<uint16_t>(len);
  }
  if (!slot->ring->TryWrite(&rec, kLaunchHeader + rec.symbol_len)) {
    slot->drops.Add();
  }
}

void OnResource(abi::CUpti_CallbackId cbid, const abi::CUpti_ResourceData* r) {
  if (cbid == abi::kCbidResourceContextCreated) {
    std::lock_guard lock(g->ctx_mu);
    g->contexts.push_back(r->context);
    return;
  }
  if (cbid == abi::kCbidResourceContextDestroyStarting) {
    std::lock_guard lock(g->ctx_mu);
    std::erase(g->contexts, r->context);
    return;
  }
  if (cbid == abi::kCbidResourceModuleLoaded) {
    if (r->resourceDescriptor == nullptr) {
      return;
    }
    const auto* m = static_cast<const abi::CUpti_ModuleResourceData*>(r->resourceDescriptor);
    KeepCubin(m->pCubin, m->cubinSize);
  }
}

}  // namespace

__attribute__((aligned(kHotAlign))) void Callback(void*, abi::CUpti_CallbackDomain domain,
                                                  abi::CUpti_CallbackId cbid,
                                                  const void* cbdata) noexcept {
  try {
    if (g == nullptr || cbdata == nullptr || g->passive.load(std::memory_order_relaxed)) {
      return;
    }
    if (domain == abi::kDomainResource) {
      OnResource(cbid, static_cast<const abi::CUpti_ResourceData*>(cbdata));
      return;
    }
    const auto* d = static_cast<const abi::CUpti_CallbackData*>(cbdata);
    if (domain == abi::kDomainDriverApi && d->callbackSite != abi::kApiEnter) {
      return;  // before touching thread-local state: the cheapest way out
    }
    ThreadHandle& h = t_handle;
    if (domain == abi::kDomainRuntimeApi) {
      if (d->callbackSite == abi::kApiEnter) {
        if (++h.runtime_depth > 1) {
          return;
        }
      } else {
        h.runtime_depth = std::max(0, h.runtime_depth - 1);
        return;
      }
    } else if (domain == abi::kDomainDriverApi) {
      if (h.runtime_depth > 0) {
        return;  // the driver call nested in a runtime launch (same correlation id)
      }
    } else {
      return;
    }
    OnLaunch(domain, cbid, d);
  } catch (...) {
    g->callback_errors.fetch_add(1, std::memory_order_relaxed);
  }
}

}  // namespace warpscope::cupti_inject

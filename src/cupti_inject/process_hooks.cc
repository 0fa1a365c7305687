// SPDX-License-Identifier: Apache-2.0
#include "cupti_inject/process_hooks.h"

#include <pthread.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>

#include "cupti_inject/flusher.h"
#include "cupti_inject/state.h"

namespace warpscope::cupti_inject {
namespace {

void AtExit() noexcept {
  try {
    if (g == nullptr || !g->flusher_started.load(std::memory_order_acquire)) {
      return;
    }
    if (getpid() == g->cupti_pid && !g->passive.load(std::memory_order_relaxed)) {
      g->api.cuptiActivityFlushAll(abi::kActivityFlagFlushForced);
    }
    StopFlusher(std::chrono::seconds(2));
  } catch (...) {
  }
}

void ForkPrepare() {
  g->start_mu.lock();
  g->buffers.LockForFork();
  g->ctx_mu.lock();
  g->cubin_mu.lock();
  g->notice_mu.lock();
}

void ForkParent() {
  g->notice_mu.unlock();
  g->cubin_mu.unlock();
  g->ctx_mu.unlock();
  g->buffers.UnlockAfterFork();
  g->start_mu.unlock();
}

void ForkChild() {
  ForkParent();
  ForgetFlusherInForkChild();
  g->pid = getpid();
  g->buffers.ResetInForkChild();
  g->contexts.clear();
  for (uint32_t i = 0; i < g->config.max_threads; ++i) {
    ThreadSlot& s = g->slots[i];
    if (s.ring) {
      s.ring->ResetUnsafe();
    }
    s.ResetCounters();
    s.state.store(kSlotFree);
  }
  g->generation.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

void InstallProcessHooks() {
  std::atexit([] { AtExit(); });
  pthread_atfork(&ForkPrepare, &ForkParent, &ForkChild);
}

}  // namespace warpscope::cupti_inject

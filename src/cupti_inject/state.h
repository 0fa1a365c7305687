// SPDX-License-Identifier: Apache-2.0
// The process-wide state of the injected profiler, shared by the launch callbacks (application
// threads), CUPTI's buffer callbacks, the flusher thread and the exit and fork handlers; and the
// record format of the per-thread rings between the launch callback and the flusher.
//
// Ownership: one Global, created by InitializeInjection (`g`, null before) and never freed, since
// an application thread may still be inside a callback while the process exits.
// - Set once at initialization, read-only afterwards: config, api, cupti_version, subscriber,
//   cupti_pid, start_realtime_ns, slots and interned (the arrays, not their contents).
// - Atomics are flags and counters, accessed relaxed unless noted; the launch callbacks read them
//   on every launch and write only counters.
// - A ThreadSlot is written by the thread that owns it (its counters with plain load+store) and
//   read by the flusher; its state field hands it over (release/acquire).
// - Each mutex guards the fields listed under it. None is held across a system call that can
//   block, and the launch path takes none. The fork prepare handler takes all of them, in the
//   order start_mu, the buffer pool's, ctx_mu, cubin_mu, notice_mu.
#ifndef WARPSCOPE_CUPTI_INJECT_STATE_H_
#define WARPSCOPE_CUPTI_INJECT_STATE_H_

#include <time.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cupti/abi.h"
#include "cupti/wire.h"
#include "cupti_inject/activity_buffers.h"
#include "cupti_inject/control.h"
#include "cupti_inject/cubins.h"
#include "cupti_inject/cupti_loader.h"
#include "cupti_inject/env_config.h"
#include "cupti_inject/rate_limiter.h"
#include "cupti_inject/stack_capture.h"
#include "ipc/spsc_ring.h"

namespace warpscope::cupti_inject {

namespace abi = ::warpscope::cupti::abi;
namespace wire = ::warpscope::cupti::wire;
using ::warpscope::ipc::SpscByteRing;

inline constexpr size_t kInternSize = 1u << 16;  // stack hashes remembered as sent
inline constexpr size_t kMaxSymbol = 256;        // kernel symbol bytes kept in a launch record
inline constexpr size_t kMaxNotices = 32;

inline uint64_t NowNs(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// --- ring records
// ----------------------------------------------------------------------------------

// Each ring record starts with its type byte. A stack record is the type byte followed by a
// complete wire frame (wire::EncodeStackInto), which the flusher passes through as it is.
enum : uint8_t { kRecordLaunch = 1, kRecordStack = 2 };

// A launch record is this struct, cut after the symbol's symbol_len bytes.
struct LaunchRecord {
  uint8_t type = kRecordLaunch;
  uint8_t multi_kernel = 0;
  uint16_t symbol_len = 0;
  uint32_t correlation_id = 0;
  uint32_t tid = 0;
  uint32_t domain = 0;
  uint32_t cbid = 0;
  uint32_t pad = 0;
  uint64_t timestamp_ns = 0;
  uint64_t stack_hash = 0;
  char symbol[kMaxSymbol];
};
inline constexpr size_t kLaunchHeader = offsetof(LaunchRecord, symbol);

// --- per-thread slots
// ------------------------------------------------------------------------------

// A slot goes free -> claiming (its owner sets it up) -> owned -> released (the owner exited) ->
// free (the flusher drained it). The flusher only touches owned and released slots.
enum : uint32_t { kSlotFree = 0, kSlotOwned = 1, kSlotReleased = 2, kSlotClaiming = 3 };

// Counters written by the owning thread only (plain load+store), read by the flusher.
struct SlotCounter {
  std::atomic<uint64_t> v{0};
  void Add(uint64_t n = 1) {
    v.store(v.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  uint64_t Get() const { return v.load(std::memory_order_relaxed); }
};

struct ThreadSlot {
  std::atomic<uint32_t> state{kSlotFree};
  std::unique_ptr<SpscByteRing> ring;
  SlotCounter seen, admitted, throttled, drops;
  SlotCounter overhead_ns;  // estimated ns spent in the launch callback
  std::atomic<uint32_t> last_correlation{0};
  // Owner-only.
  TokenBucket bucket;
  StackBounds bounds;
  uint32_t tid = 0;

  // By the flusher once the slot is released, or in a fork child: no owner writes meanwhile.
  void ResetCounters() {
    for (SlotCounter* c : {&seen, &admitted, &throttled, &drops, &overhead_ns}) {
      c->v.store(0, std::memory_order_relaxed);
    }
  }
};

// Launch counters summed over slots (and over the slots already freed).
struct Counters {
  uint64_t seen = 0, admitted = 0, throttled = 0, drops = 0, overhead_ns = 0;

  void Add(const ThreadSlot& s) {
    seen += s.seen.Get();
    admitted += s.admitted.Get();
    throttled += s.throttled.Get();
    drops += s.drops.Get();
    overhead_ns += s.overhead_ns.Get();
  }
};

// --- the process
// ----------------------------------------------------------------------------------

struct Global {
  InjectConfig config;
  CuptiApi api;
  uint32_t cupti_version = 0;
  abi::CUpti_SubscriberHandle subscriber = nullptr;
  pid_t pid = 0;        // this process
  pid_t cupti_pid = 0;  // the process that set CUPTI up (a fork child does not flush CUPTI)
  uint64_t start_realtime_ns = 0;

  // Read on every launch and written rarely (setup, the agent's controls, fork): one cache line
  // of their own, so that no write on a launch or by the flusher invalidates it.
  alignas(64) std::atomic<bool> passive{true};
  std::atomic<bool> flusher_started{false};
  RuntimeControls controls;  // what the agent can change (control.h)
  std::atomic<uint32_t> burst{20};
  std::atomic<uint64_t> generation{1};  // bumped in a fork child: thread handles re-claim slots
  alignas(64) std::atomic<uint64_t> threads_over_cap{0};
  std::atomic<uint64_t> callback_errors{0};
  std::atomic<bool> intern_dirty{false};
  std::atomic<uint64_t> ring_bytes{0};  // rings allocated (kept for reuse, never freed)

  std::unique_ptr<ThreadSlot[]> slots;                // config.max_threads
  std::unique_ptr<std::atomic<uint64_t>[]> interned;  // kInternSize stack hashes sent

  ActivityBufferPool buffers;

  // Contexts (for PC sampling) and cubins.
  std::mutex ctx_mu;
  std::vector<abi::CUcontext> contexts;  // GUARDED_BY(ctx_mu)
  std::mutex cubin_mu;
  std::map<uint64_t, std::string> cubins;  // crc -> bytes; GUARDED_BY(cubin_mu)
  std::map<uint64_t, CubinRef> cubin_refs;  // crc -> where it was (cubins.h); GUARDED_BY(cubin_mu)
  size_t cubin_bytes = 0;                  // GUARDED_BY(cubin_mu)
  std::atomic<uint64_t> cubins_captured{0};
  std::atomic<uint64_t> cubin_generation{0};  // bumped when a cubin is added

  // Notices, kept and re-sent on every connection.
  std::mutex notice_mu;
  std::vector<wire::Notice> notices;  // GUARDED_BY(notice_mu)
  std::atomic<uint64_t> notice_generation{0};

  // Starting the flusher (once, and again in a fork child); flusher_started is above.
  std::mutex start_mu;
  // The flusher's wake-ups and stop handshake.
  std::mutex flusher_mu;
  std::condition_variable flusher_cv;
  bool flusher_stop = false;  // GUARDED_BY(flusher_mu)
  bool flusher_done = false;  // GUARDED_BY(flusher_mu)
  bool wake = false;          // GUARDED_BY(flusher_mu)
};

// The process's state; null until InitializeInjection. Hidden: it is read on every callback.
__attribute__((visibility("hidden"))) extern Global* g;

// Logs to the application's stderr when WARPSCOPE_CUPTI_LOG=stderr; silent otherwise.
void Log(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// Records a notice for the agent (sent on every connection; at most kMaxNotices) and logs it.
// Any thread but the launch path; takes notice_mu.
void Notify(wire::Severity severity, uint32_t code, std::string message);

// Forgets every stack hash sent (a new connection, or a stack dropped on the way). Flusher
// thread; the launch callbacks may insert concurrently (lost inserts only resend a stack).
void ClearInternedStacks();

}  // namespace warpscope::cupti_inject

#endif  // WARPSCOPE_CUPTI_INJECT_STATE_H_

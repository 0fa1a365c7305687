// SPDX-License-Identifier: Apache-2.0
// The version-independent core of the NCCL profiler plugin: communicators, the pool of events
// NCCL holds handles to, the completion of collectives from their child events, and the
// per-thread rings their records go through to the flusher (docs/design/nccl.md).
//
// Threads: Init and Finalize run on the thread NCCL creates or destroys a communicator on;
// StartEvent, StopEvent and RecordState on NCCL's application threads (collectives, P2P) and its
// proxy thread (proxy ops and steps, kernel channels); none of them takes a lock, waits or
// allocates (but for a thread's first record, which allocates its ring once). The flusher thread
// drains the rings (DrainRings) and changes the activation mask (SetProxyDetail).
//
// Bounds: at most max_events events in flight (an event refused is counted, and NCCL gets a null
// handle, which it accepts), max_threads rings of ring_kb each, kMaxComms communicators.
// A completed operation whose thread has no ring, or whose ring is full, is dropped and counted.
//
// Ownership: the Recorder outlives every call into it (the plugin never frees it: NCCL's threads
// may still hold handles at exit).
#ifndef WARPSCOPE_NCCL_PLUGIN_RECORDER_H_
#define WARPSCOPE_NCCL_PLUGIN_RECORDER_H_

#include <sys/types.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "cupti/wire.h"
#include "ipc/spsc_ring.h"
#include "nccl_plugin/abi.h"
#include "nccl_plugin/bandwidth.h"

namespace warpscope::nccl_plugin {

namespace wire = ::warpscope::cupti::wire;

inline constexpr size_t kMaxComms = 1024;
inline constexpr size_t kMaxName = 128;  // communicator name bytes kept
inline constexpr size_t kMaxLabel = 24;  // func, datatype, algo, proto bytes kept

// The activation masks: operations and their GPU time always; proxy ops and steps on demand.
inline constexpr int kDefaultMask =
    static_cast<int>(abi::kEventColl | abi::kEventP2p | abi::kEventKernelCh);
inline constexpr int kDetailMask =
    kDefaultMask | static_cast<int>(abi::kEventProxyOp | abi::kEventProxyStep);

// An event descriptor of any ABI version, reduced to what the recorder reads.
struct Descr {
  uint64_t type = 0;
  void* parent = nullptr;
  const char* func = nullptr;
  const char* datatype = nullptr;
  const char* algo = nullptr;
  const char* proto = nullptr;
  uint64_t seq_number = 0;
  uint64_t count = 0;
  int root = -1;  // root (collective) or peer (P2P)
  uint32_t n_channels = 0;
  uint32_t n_warps = 0;
  pid_t proxy_pid = 0;     // proxy ops: the process of the parent event
  uint64_t gpu_timer = 0;  // kernel channels: start
};

struct Comm {
  uint64_t id = 0;
  char name[kMaxName] = {};
  uint32_t nranks = 0, rank = 0, nnodes = 0, abi = 0;
  uint64_t init_ns = 0;
  int* mask = nullptr;  // NCCL's activation mask (process-wide in current NCCL)
  // min over kernel-channel starts of (CPU realtime when NCCL reported it - GPU timer): the
  // GPU timer's offset to CLOCK_REALTIME, up to NCCL's reporting delay (docs/design/nccl.md).
  std::atomic<int64_t> gpu_offset_ns{INT64_MAX};
  std::atomic<bool> ready{false};      // filled in; the flusher may send it
  std::atomic<bool> finalized{false};
};

// The ring record of one completed operation (its strings cut at kMaxLabel - 1 bytes).
struct OpRecord {
  uint32_t comm_index = 0;
  uint8_t kind = 0;  // wire::NcclOpKind
  uint8_t pad[3] = {};
  char func[kMaxLabel], datatype[kMaxLabel], algo[kMaxLabel], proto[kMaxLabel];
  uint64_t seq_number = 0, count = 0;
  int32_t root = -1;
  uint32_t n_channels = 0, n_warps = 0, tid = 0;
  uint64_t enqueue_ns = 0, enqueued_ns = 0, complete_ns = 0;
  uint64_t gpu_start = 0, gpu_end = 0;  // raw GPU timer; 0 when no kernel channel
  uint32_t kernel_channels = 0, proxy_ops = 0, proxy_steps = 0, flags = 0;
  uint64_t step_bytes = 0;
};

class Recorder {
 public:
  struct Options {
    uint32_t max_events = 8192;
    uint32_t ring_kb = 256;
    uint32_t max_threads = 64;
    bool proxy_detail = false;
  };
  using Clock = uint64_t (*)();  // CLOCK_REALTIME ns; a seam for tests and the benchmark

  Recorder(const Options& options, Clock realtime_ns);
  // Only tests destroy one: after every other thread that recorded into it has exited.
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  // A new communicator; returns its context for NCCL, or null when kMaxComms are in use.
  // Sets *mask to the activation mask and remembers it to change it later.
  Comm* Init(uint64_t comm_id, const char* name, int nnodes, int nranks, int rank, uint32_t abi,
             int* mask);
  void Finalize(Comm* comm);

  // NCCL's startEvent: *handle gets the event, or null when it is not recorded.
  void StartEvent(Comm* comm, void** handle, const Descr& d);
  void StopEvent(void* handle);
  void RecordState(void* handle, abi::EventState state, const abi::StateArgs* args);

  // Flusher: calls fn(const OpRecord&) for every record in the rings; frees released rings.
  template <typename Fn>
  void DrainRings(Fn&& fn);
  // Flusher: the proxy-step detail on or off (rewrites NCCL's activation mask).
  void SetProxyDetail(bool on);
  bool proxy_detail() const { return detail_.load(std::memory_order_relaxed); }
  // Flusher: the mask 0 (nothing recorded) or back to the current one.
  void SetCollecting(bool on);

  // The wire form of a record (the GPU timer moved onto CLOCK_REALTIME).
  wire::NcclCollective ToWire(const OpRecord& r) const;
  Comm& comm(uint32_t i) { return comms_[i]; }
  uint32_t comm_count() const {
    return std::min<uint32_t>(comm_count_.load(std::memory_order_acquire), kMaxComms);
  }

  // Counters, cumulative (wire::CounterId).
  void AppendCounters(std::vector<wire::Counter>* out) const;
  size_t memory_bytes() const;

  // In a fork child, where no other thread exists: forget rings' contents and threads' slots.
  void ResetInForkChild();

 private:
  struct Event;
  struct Slot;
  Event* Alloc();
  void Free(Event* e);
  void ChildDone(Event* parent, const Event& child);
  void Release(Event* op);
  void Complete(Event* op);
  Slot* ThreadSlot();
  int CurrentMask() const;

  const Options options_;
  const Clock now_;
  const pid_t pid_;
  std::unique_ptr<Comm[]> comms_;
  std::atomic<uint32_t> comm_count_{0};
  std::unique_ptr<Event[]> events_;
  std::atomic<uint64_t> free_head_;  // tag << 32 | index + 1 (0: empty)
  std::unique_ptr<Slot[]> slots_;
  std::atomic<bool> detail_;
  std::atomic<bool> collecting_{true};
  std::atomic<uint64_t> generation_{1};
  std::atomic<uint64_t> ring_bytes_{0};
  // Rare-path counters (any thread).
  std::atomic<uint64_t> events_dropped_{0}, orphans_{0}, threads_over_cap_{0}, no_ring_drops_{0};
  // Counts of slots already freed, kept for the cumulative counters.
  uint64_t freed_colls_ = 0, freed_p2p_ = 0, freed_drops_ = 0;
  static thread_local struct ThreadHandle {
    Slot* slot = nullptr;
    uint64_t generation = 0;
    Recorder* owner = nullptr;
    ~ThreadHandle();
  } thread_;
};

// --- implementation details the template needs ---------------------------------------------

// free -> claiming (the owner sets its ring up) -> owned -> released (the owner exited) -> free
// (the flusher drained it). The flusher touches owned and released slots only.
enum : uint32_t { kSlotFree = 0, kSlotOwned = 1, kSlotReleased = 2, kSlotClaiming = 3 };

struct Recorder::Slot {
  std::atomic<uint32_t> state{kSlotFree};
  std::unique_ptr<ipc::SpscByteRing> ring;
  // Written by the owner only (load + store), read by the flusher.
  std::atomic<uint64_t> colls{0}, p2p{0}, drops{0};
  void Bump(std::atomic<uint64_t>& c) {
    c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
};

template <typename Fn>
void Recorder::DrainRings(Fn&& fn) {
  for (uint32_t i = 0; i < options_.max_threads; ++i) {
    Slot& s = slots_[i];
    const uint32_t state = s.state.load(std::memory_order_acquire);
    if (state != kSlotOwned && state != kSlotReleased) {
      continue;
    }
    s.ring->Drain([&](std::span<const uint8_t> bytes) {
      if (bytes.size() == sizeof(OpRecord)) {
        OpRecord r;
        std::memcpy(&r, bytes.data(), sizeof(r));
        fn(static_cast<const OpRecord&>(r));
      }
    });
    if (state == kSlotReleased && s.ring->Empty()) {
      freed_colls_ += s.colls.load(std::memory_order_relaxed);
      freed_p2p_ += s.p2p.load(std::memory_order_relaxed);
      freed_drops_ += s.drops.load(std::memory_order_relaxed);
      s.colls.store(0, std::memory_order_relaxed);
      s.p2p.store(0, std::memory_order_relaxed);
      s.drops.store(0, std::memory_order_relaxed);
      s.state.store(kSlotFree, std::memory_order_release);
    }
  }
}

}  // namespace warpscope::nccl_plugin

#endif  // WARPSCOPE_NCCL_PLUGIN_RECORDER_H_

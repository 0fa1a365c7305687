// SPDX-License-Identifier: Apache-2.0
#include "nccl_plugin/recorder.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

namespace warpscope::nccl_plugin {

// An event NCCL holds a handle to. An operation (collective or P2P) lives until its own stop and
// every child's stop have been seen: `refs` counts them, and the thread that drops it to 0
// writes the record. Its own stop comes first (it only means "enqueued"); its kernel channels
// start later, on the proxy thread, so their refs are taken at the operation's start: one per
// channel (nChannels) when kernel channels are recorded, as NCCL starts one kernel-channel event
// per channel of the operation. Proxy ops and steps take theirs at their start, which NCCL's
// proxy thread does before the last channel of their operation stops. Children fold into their
// operation at their stop.
struct Recorder::Event {
  std::atomic<uint32_t> refs{0};
  // Index + 1 of the next free event. Atomic: a thread that lost the race for this event may
  // still read it (and then fail its compare-exchange).
  std::atomic<uint32_t> next_free{0};
  uint64_t type = 0;
  Event* parent = nullptr;  // children: their operation (proxy steps: their operation too)
  // Children's own values.
  uint64_t gpu_start = 0, gpu_stop = 0, step_bytes = 0;
  // Operations: the record being built; the fields children update are atomics below.
  OpRecord rec;
  std::atomic<uint64_t> complete_ns{0}, gpu_first{UINT64_MAX}, gpu_last{0}, bytes{0};
  std::atomic<uint32_t> kernel_channels{0}, proxy_ops{0}, proxy_steps{0};
  std::atomic<uint32_t> channels_started{0};
  uint32_t channels_reserved = 0;
};

thread_local Recorder::ThreadHandle Recorder::thread_;

Recorder::ThreadHandle::~ThreadHandle() {
  if (slot != nullptr && owner != nullptr && generation == owner->generation_.load()) {
    slot->state.store(kSlotReleased, std::memory_order_release);
  }
}

namespace {

void CopyLabel(char (&dst)[kMaxLabel], const char* src) {
  size_t n = 0;
  if (src != nullptr) {
    while (n < kMaxLabel - 1 && src[n] != '\0') {
      dst[n] = src[n];
      ++n;
    }
  }
  dst[n] = '\0';
}

void AtomicMin(std::atomic<uint64_t>& a, uint64_t v) {
  uint64_t cur = a.load(std::memory_order_relaxed);
  while (v < cur && !a.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}
void AtomicMax(std::atomic<uint64_t>& a, uint64_t v) {
  uint64_t cur = a.load(std::memory_order_relaxed);
  while (v > cur && !a.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}

bool IsOp(uint64_t type) { return type == abi::kEventColl || type == abi::kEventP2p; }

// The calling thread's id, asked of the kernel once per thread.
uint32_t ThreadId() {
  static thread_local uint32_t tid = 0;
  if (tid == 0) {
    tid = static_cast<uint32_t>(syscall(SYS_gettid));
  }
  return tid;
}

}  // namespace

Recorder::Recorder(const Options& options, Clock realtime_ns)
    : options_(options),
      now_(realtime_ns),
      pid_(getpid()),
      comms_(new Comm[kMaxComms]),
      events_(new Event[options.max_events]),
      free_head_(0),
      slots_(new Slot[options.max_threads]),
      detail_(options.proxy_detail) {
  for (uint32_t i = 0; i < options_.max_events; ++i) {
    events_[i].next_free.store(i + 1 < options_.max_events ? i + 2 : 0, std::memory_order_relaxed);
  }
  free_head_.store(options_.max_events > 0 ? 1 : 0);
}

Recorder::~Recorder() {
  if (thread_.owner == this) {
    thread_ = ThreadHandle{};
  }
}

// A Treiber stack of indexes with a tag against ABA: proxy and application threads allocate and
// free concurrently without a lock.
Recorder::Event* Recorder::Alloc() {
  uint64_t head = free_head_.load(std::memory_order_acquire);
  while (true) {
    const uint32_t index = static_cast<uint32_t>(head);
    if (index == 0) {
      events_dropped_.fetch_add(1, std::memory_order_relaxed);
      return nullptr;
    }
    Event* e = &events_[index - 1];
    const uint64_t next = ((head >> 32) + 1) << 32 | e->next_free.load(std::memory_order_relaxed);
    if (free_head_.compare_exchange_weak(head, next, std::memory_order_acq_rel)) {
      return e;
    }
  }
}

void Recorder::Free(Event* e) {
  const uint32_t index = static_cast<uint32_t>(e - events_.get()) + 1;
  uint64_t head = free_head_.load(std::memory_order_relaxed);
  while (true) {
    e->next_free.store(static_cast<uint32_t>(head), std::memory_order_relaxed);
    const uint64_t next = ((head >> 32) + 1) << 32 | index;
    if (free_head_.compare_exchange_weak(head, next, std::memory_order_release,
                                         std::memory_order_relaxed)) {
      return;
    }
  }
}

int Recorder::CurrentMask() const {
  if (!collecting_.load(std::memory_order_relaxed)) {
    return 0;
  }
  return detail_.load(std::memory_order_relaxed) ? kDetailMask : kDefaultMask;
}

Comm* Recorder::Init(uint64_t comm_id, const char* name, int nnodes, int nranks, int rank,
                     uint32_t abi, int* mask) {
  const uint32_t i = comm_count_.fetch_add(1, std::memory_order_acq_rel);
  if (i >= kMaxComms) {
    return nullptr;
  }
  Comm& c = comms_[i];
  c.id = comm_id;
  std::strncpy(c.name, name != nullptr ? name : "", kMaxName - 1);
  c.nnodes = static_cast<uint32_t>(nnodes);
  c.nranks = static_cast<uint32_t>(nranks);
  c.rank = static_cast<uint32_t>(rank);
  c.abi = abi;
  c.init_ns = now_();
  c.mask = mask;
  if (mask != nullptr) {
    __atomic_store_n(mask, CurrentMask(), __ATOMIC_RELAXED);
  }
  c.ready.store(true, std::memory_order_release);
  return &c;
}

void Recorder::Finalize(Comm* comm) {
  if (comm != nullptr) {
    comm->finalized.store(true, std::memory_order_relaxed);
  }
}

void Recorder::StartEvent(Comm* comm, void** handle, const Descr& d) {
  *handle = nullptr;
  if (comm == nullptr) {
    return;
  }
  if (IsOp(d.type)) {
    // With collection off NCCL may still start operations it created before: they are not
    // recorded (their children then find no parent), so that no operation waits for kernel
    // channels it did not reserve.
    if (!collecting_.load(std::memory_order_relaxed)) {
      return;
    }
    Event* e = Alloc();
    if (e == nullptr) {
      return;
    }
    e->type = d.type;
    e->parent = nullptr;
    OpRecord& r = e->rec;
    r = OpRecord{};
    r.comm_index = static_cast<uint32_t>(comm - comms_.get());
    r.kind = static_cast<uint8_t>(d.type == abi::kEventColl ? wire::NcclOpKind::kCollective
                                                             : wire::NcclOpKind::kP2p);
    CopyLabel(r.func, d.func);
    CopyLabel(r.datatype, d.datatype);
    CopyLabel(r.algo, d.algo);
    CopyLabel(r.proto, d.proto);
    r.seq_number = d.seq_number;
    r.count = d.count;
    r.root = d.root;
    r.n_channels = d.n_channels;
    r.n_warps = d.n_warps;
    r.tid = ThreadId();
    r.enqueue_ns = now_();
    e->complete_ns.store(0, std::memory_order_relaxed);
    e->gpu_first.store(UINT64_MAX, std::memory_order_relaxed);
    e->gpu_last.store(0, std::memory_order_relaxed);
    e->bytes.store(0, std::memory_order_relaxed);
    e->kernel_channels.store(0, std::memory_order_relaxed);
    e->proxy_ops.store(0, std::memory_order_relaxed);
    e->proxy_steps.store(0, std::memory_order_relaxed);
    e->channels_started.store(0, std::memory_order_relaxed);
    // Both masks ask for kernel channels (kDefaultMask, kDetailMask).
    e->channels_reserved = d.n_channels;
    e->refs.store(1 + e->channels_reserved, std::memory_order_release);
    *handle = e;
    return;
  }
  if (d.type != abi::kEventKernelCh && d.type != abi::kEventProxyOp &&
      d.type != abi::kEventProxyStep) {
    return;  // groups, API events, proxy control, network plugin events: not recorded
  }
  // Under PXN a proxy op's parent belongs to another process: its address means nothing here.
  if (d.parent == nullptr || (d.type == abi::kEventProxyOp && d.proxy_pid != pid_)) {
    orphans_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  auto* parent = static_cast<Event*>(d.parent);
  // A proxy step's parent is a proxy op; it folds into the operation above that.
  Event* op = d.type == abi::kEventProxyStep ? parent->parent : parent;
  if (op == nullptr || !IsOp(op->type)) {
    orphans_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const bool reserved =
      d.type == abi::kEventKernelCh &&
      op->channels_started.fetch_add(1, std::memory_order_relaxed) < op->channels_reserved;
  Event* e = Alloc();
  if (e == nullptr) {
    // The operation must not wait for a channel it will never hear of: that would keep its
    // event, and with enough of them the pool, forever.
    if (reserved) {
      Release(op);
    }
    return;
  }
  e->type = d.type;
  e->parent = op;
  e->gpu_start = d.gpu_timer;
  e->gpu_stop = 0;
  e->step_bytes = 0;
  if (!reserved) {
    op->refs.fetch_add(1, std::memory_order_relaxed);
  }
  if (d.type == abi::kEventKernelCh && d.gpu_timer != 0) {
    // NCCL reports a channel's start after the GPU wrote it: the smallest difference seen is
    // the closest to the clocks' true offset.
    const int64_t offset = static_cast<int64_t>(now_()) - static_cast<int64_t>(d.gpu_timer);
    std::atomic<int64_t>& best = comm->gpu_offset_ns;
    int64_t cur = best.load(std::memory_order_relaxed);
    while (offset < cur && !best.compare_exchange_weak(cur, offset, std::memory_order_relaxed)) {
    }
  }
  *handle = e;
}

void Recorder::RecordState(void* handle, abi::EventState state, const abi::StateArgs* args) {
  auto* e = static_cast<Event*>(handle);
  if (e == nullptr || args == nullptr) {
    return;
  }
  if (state == abi::kKernelChStop && e->type == abi::kEventKernelCh) {
    e->gpu_stop = args->kernel_ch.gpu_timer;
  } else if (e->type == abi::kEventProxyStep &&
             (state == abi::kProxyStepSendWait || state == abi::kProxyStepRecvFlushWait ||
              state == abi::kProxyStepRecvWait)) {
    e->step_bytes = std::max<uint64_t>(e->step_bytes, args->proxy_step.trans_size);
  }
}

void Recorder::StopEvent(void* handle) {
  auto* e = static_cast<Event*>(handle);
  if (e == nullptr) {
    return;
  }
  if (IsOp(e->type)) {
    e->rec.enqueued_ns = now_();
    Release(e);
    return;
  }
  Event* op = e->parent;
  ChildDone(op, *e);
  Free(e);
  Release(op);
}

void Recorder::ChildDone(Event* op, const Event& child) {
  AtomicMax(op->complete_ns, now_());
  if (child.type == abi::kEventKernelCh) {
    op->kernel_channels.fetch_add(1, std::memory_order_relaxed);
    if (child.gpu_start != 0 && child.gpu_stop >= child.gpu_start) {
      AtomicMin(op->gpu_first, child.gpu_start);
      AtomicMax(op->gpu_last, child.gpu_stop);
    }
  } else if (child.type == abi::kEventProxyOp) {
    op->proxy_ops.fetch_add(1, std::memory_order_relaxed);
  } else {
    op->proxy_steps.fetch_add(1, std::memory_order_relaxed);
    op->bytes.fetch_add(child.step_bytes, std::memory_order_relaxed);
  }
}

void Recorder::Release(Event* op) {
  if (op->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    Complete(op);
    Free(op);
  }
}

void Recorder::Complete(Event* op) {
  OpRecord& r = op->rec;
  r.complete_ns = op->complete_ns.load(std::memory_order_relaxed);
  const uint64_t first = op->gpu_first.load(std::memory_order_relaxed);
  if (first != UINT64_MAX) {
    r.gpu_start = first;
    r.gpu_end = op->gpu_last.load(std::memory_order_relaxed);
  }
  r.kernel_channels = op->kernel_channels.load(std::memory_order_relaxed);
  r.proxy_ops = op->proxy_ops.load(std::memory_order_relaxed);
  r.proxy_steps = op->proxy_steps.load(std::memory_order_relaxed);
  r.step_bytes = op->bytes.load(std::memory_order_relaxed);
  r.flags = r.proxy_steps != 0 ? uint32_t{wire::kNcclProxyDetail} : 0u;
  Slot* s = ThreadSlot();
  if (s == nullptr) {
    no_ring_drops_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (!s->ring->TryWrite(&r, sizeof(r))) {
    s->Bump(s->drops);
    return;
  }
  s->Bump(r.kind == static_cast<uint8_t>(wire::NcclOpKind::kP2p) ? s->p2p : s->colls);
}

Recorder::Slot* Recorder::ThreadSlot() {
  const uint64_t gen = generation_.load(std::memory_order_relaxed);
  if (thread_.owner == this && thread_.generation == gen) {
    return thread_.slot;
  }
  thread_ = ThreadHandle{};
  thread_.owner = this;
  thread_.generation = gen;
  for (uint32_t i = 0; i < options_.max_threads; ++i) {
    uint32_t expected = kSlotFree;
    Slot& s = slots_[i];
    if (s.state.compare_exchange_strong(expected, kSlotClaiming, std::memory_order_acq_rel)) {
      if (!s.ring) {
        // Once per slot, kept for reuse: memory stays within max_threads rings.
        s.ring = std::make_unique<ipc::SpscByteRing>(size_t{options_.ring_kb} * 1024);
        ring_bytes_.fetch_add(s.ring->capacity(), std::memory_order_relaxed);
      }
      s.state.store(kSlotOwned, std::memory_order_release);
      thread_.slot = &s;
      return &s;
    }
  }
  threads_over_cap_.fetch_add(1, std::memory_order_relaxed);
  return nullptr;
}

void Recorder::SetProxyDetail(bool on) {
  detail_.store(on, std::memory_order_relaxed);
  SetCollecting(collecting_.load(std::memory_order_relaxed));
}

void Recorder::SetCollecting(bool on) {
  collecting_.store(on, std::memory_order_relaxed);
  const int mask = CurrentMask();
  for (uint32_t i = 0; i < comm_count(); ++i) {
    Comm& c = comms_[i];
    if (c.ready.load(std::memory_order_acquire) && c.mask != nullptr &&
        !c.finalized.load(std::memory_order_relaxed)) {
      __atomic_store_n(c.mask, mask, __ATOMIC_RELAXED);
    }
  }
}

wire::NcclCollective Recorder::ToWire(const OpRecord& r) const {
  const Comm& c = comms_[r.comm_index];
  wire::NcclCollective w;
  w.comm_id = c.id;
  w.rank = c.rank;
  w.kind = static_cast<wire::NcclOpKind>(r.kind);
  w.func = r.func;
  w.seq_number = r.seq_number;
  w.count = r.count;
  w.datatype = r.datatype;
  w.bytes = r.count * DatatypeSize(w.datatype);
  w.bus_bytes = BusBytes(w.func, w.kind == wire::NcclOpKind::kP2p, w.bytes, c.nranks);
  w.root = r.root;
  w.algo = r.algo;
  w.proto = r.proto;
  w.nchannels = r.n_channels;
  w.nwarps = r.n_warps;
  w.tid = r.tid;
  w.enqueue_ns = r.enqueue_ns;
  w.enqueued_ns = r.enqueued_ns;
  w.complete_ns = r.complete_ns;
  const int64_t offset = c.gpu_offset_ns.load(std::memory_order_relaxed);
  if (r.gpu_start != 0 && offset != INT64_MAX) {
    w.gpu_start_ns = static_cast<uint64_t>(static_cast<int64_t>(r.gpu_start) + offset);
    w.gpu_end_ns = static_cast<uint64_t>(static_cast<int64_t>(r.gpu_end) + offset);
  }
  w.gpu_exec_ns = r.gpu_start != 0 ? r.gpu_end - r.gpu_start : 0;
  w.kernel_channels = r.kernel_channels;
  w.proxy_ops = r.proxy_ops;
  w.proxy_steps = r.proxy_steps;
  w.step_bytes = r.step_bytes;
  w.flags = r.flags;
  return w;
}

void Recorder::AppendCounters(std::vector<wire::Counter>* out) const {
  uint64_t colls = freed_colls_, p2p = freed_p2p_, drops = freed_drops_;
  for (uint32_t i = 0; i < options_.max_threads; ++i) {
    colls += slots_[i].colls.load(std::memory_order_relaxed);
    p2p += slots_[i].p2p.load(std::memory_order_relaxed);
    drops += slots_[i].drops.load(std::memory_order_relaxed);
  }
  drops += no_ring_drops_.load(std::memory_order_relaxed);
  out->push_back({wire::CounterId::kNcclCollectives, colls});
  out->push_back({wire::CounterId::kNcclP2p, p2p});
  out->push_back({wire::CounterId::kRingDrops, drops});
  out->push_back({wire::CounterId::kNcclEventsDropped, events_dropped_.load()});
  out->push_back({wire::CounterId::kNcclOrphanEvents, orphans_.load()});
  out->push_back({wire::CounterId::kThreadsOverCap, threads_over_cap_.load()});
}

size_t Recorder::memory_bytes() const {
  return sizeof(*this) + sizeof(Comm) * kMaxComms + sizeof(Event) * options_.max_events +
         sizeof(Slot) * options_.max_threads + ring_bytes_.load(std::memory_order_relaxed);
}

void Recorder::ResetInForkChild() {
  for (uint32_t i = 0; i < options_.max_threads; ++i) {
    Slot& s = slots_[i];
    if (s.ring) {
      s.ring->ResetUnsafe();
    }
    s.state.store(kSlotFree, std::memory_order_relaxed);
  }
  generation_.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace warpscope::nccl_plugin

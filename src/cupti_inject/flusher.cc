// SPDX-License-Identifier: Apache-2.0
#include "cupti_inject/flusher.h"

#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "cupti/wire.h"
#include "cupti_inject/activity_decode.h"
#include "cupti_inject/agent_connection.h"
#include "cupti_inject/code_ranges.h"
#include "cupti_inject/correlation_join.h"
#include "cupti_inject/cubins.h"
#include "cupti_inject/device_memory.h"
#include "cupti_inject/kernel_duty_cycle.h"
#include "cupti_inject/pc_sampling.h"
#include "cupti_inject/stack_capture.h"
#include "cupti_inject/state.h"

namespace warpscope::cupti_inject {
namespace {

constexpr uint32_t kLibraryVersion = 101;  // 0.1.1 (Hello.library_version; wire.h ControlOp)
constexpr uint32_t kDrainIntervalMs = 20;

uint64_t MonotonicNs() { return NowNs(CLOCK_MONOTONIC); }
uint64_t RealtimeNs() { return NowNs(CLOCK_REALTIME); }

// The process's libcuda (loaded before the driver called InitializeInjection): PC-sampling calls
// are made with their context current on the flusher thread, as CUPTI's samples make them on a
// thread where the context is current.
using CuCtxPushFn = int (*)(abi::CUcontext);
using CuCtxPopFn = int (*)(abi::CUcontext*);
CuCtxPushFn g_ctx_push = nullptr;
CuCtxPopFn g_ctx_pop = nullptr;

bool PushContext(abi::CUcontext ctx) { return g_ctx_push(ctx) == 0; }
void PopContext() {
  abi::CUcontext popped = nullptr;
  g_ctx_pop(&popped);
}

PcContextGuard FindContextGuard() {
  // libcuda may be loaded privately (RTLD_LOCAL): look it up by soname first.
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  void* scope = cuda != nullptr ? cuda : RTLD_DEFAULT;
  g_ctx_push = reinterpret_cast<CuCtxPushFn>(dlsym(scope, "cuCtxPushCurrent_v2"));
  g_ctx_pop = reinterpret_cast<CuCtxPopFn>(dlsym(scope, "cuCtxPopCurrent_v2"));
  if (g_ctx_push == nullptr || g_ctx_pop == nullptr) {
    return {};
  }
  return {&PushContext, &PopContext};
}

struct AggregateKey {
  uint32_t name_id, device, stream;
  bool operator<(const AggregateKey& o) const {
    return std::tie(name_id, device, stream) < std::tie(o.name_id, o.device, o.stream);
  }
};

// Launches wait for their kernels about 30 s whatever the flush period (GPU queues can be deep
// and CUPTI returns buffers when it pleases); the caps bound the memory either way.
JoinOptions MakeJoinOptions() {
  JoinOptions o;
  o.max_launches = 32768;
  o.launch_ttl_ticks = std::max<uint32_t>(10, 30000 / std::max<uint32_t>(g->config.flush_ms, 1));
  o.kernel_ttl_ticks = 2;
  return o;
}

// State owned by the flusher thread.
class Flusher {
 public:
  explicit Flusher(Flusher* abandoned)
      : abandoned_(abandoned),
        joiner_(MakeJoinOptions()),
        conn_(g->config.agent_socket, static_cast<size_t>(g->config.out_kb) * 1024, &MonotonicNs,
              [] { return DefaultAgentSocket(::getenv); }, &Log),
        pc_(&g->api, g->cupti_version, &Notify, &RealtimeNs, FindContextGuard()) {}

  void Run();

 private:
  void FinalPass();
  void Iterate(bool final_pass);
  void OnConnected();
  void ReadControl();
  void DrainRings();
  void ProcessBuffers();
  void ProcessRecord(const abi::CUpti_Activity* rec);
  void EmitKernels();
  void Tick(uint64_t now);
  void SendCounters();
  void SendNotices();
  void SendCubins();
  void PcSampling(uint64_t now);
  uint32_t NameId(const char* name);
  bool EnsureNameSent(uint32_t id);
  uint64_t MemoryBytes() const;

  Flusher* const abandoned_;  // the parent's state, in a fork child: kept reachable
  CorrelationJoiner joiner_;
  AgentConnection conn_;
  PcSampler pc_;
  std::vector<wire::Control> controls_;
  std::vector<CompletedBuffer> batch_;
  uint64_t stacks_ = 0;
  uint64_t cupti_dropped_ = 0;
  uint64_t kernels_seen_ = 0;
  uint64_t unknown_records_ = 0;
  Counters released_;  // counters of slots that were freed
  uint64_t next_tick_ns_ = 0;
  uint64_t last_tick_realtime_ns_ = 0;
  uint64_t controls_applied_ = 0;
  uint32_t watermark_ = 0;

  std::unordered_map<const char*, uint32_t> name_by_ptr_;
  std::unordered_map<std::string, uint32_t> name_by_str_;
  std::vector<std::string> names_;
  std::vector<bool> name_sent_;
  std::map<AggregateKey, wire::KernelAggregateEntry> aggregates_;
  std::vector<wire::KernelActivity> joined_;
  MarkerPairer markers_;
  DeviceMemoryTotals device_memory_;

  uint64_t notices_sent_generation_ = ~0ull;
  size_t notices_sent_ = 0;
  std::vector<uint64_t> cubins_sent_;
  uint64_t cubin_generation_seen_ = ~0ull;
  bool cubins_lost_noticed_ = false;
};

Flusher* g_flusher = nullptr;

uint32_t Flusher::NameId(const char* name) {
  if (name == nullptr) {
    name = "";
  }
  auto it = name_by_ptr_.find(name);
  if (it != name_by_ptr_.end()) {
    return it->second;
  }
  std::string s(name, strnlen(name, wire::kMaxString));
  auto [sit, inserted] = name_by_str_.try_emplace(s, static_cast<uint32_t>(names_.size() + 1));
  if (inserted) {
    names_.push_back(s);
    name_sent_.push_back(false);
  }
  if (name_by_ptr_.size() < 1'000'000) {
    name_by_ptr_[name] = sit->second;
  }
  return sit->second;
}

bool Flusher::EnsureNameSent(uint32_t id) {
  if (id == 0 || id > names_.size()) {
    return false;
  }
  if (name_sent_[id - 1]) {
    return true;
  }
  if (conn_.Emit(wire::KernelName{id, names_[id - 1]})) {
    name_sent_[id - 1] = true;
    return true;
  }
  return false;
}

// A new connection knows nothing: forget what was sent, then Hello, stall reasons and notices.
void Flusher::OnConnected() {
  std::fill(name_sent_.begin(), name_sent_.end(), false);
  ClearInternedStacks();
  cubins_sent_.clear();
  cubin_generation_seen_ = ~0ull;
  notices_sent_ = 0;
  notices_sent_generation_ = ~0ull;
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  wire::Hello hello;
  hello.pid = static_cast<uint32_t>(getpid());
  hello.exe = n > 0 ? std::string(exe, static_cast<size_t>(n)) : std::string();
  hello.cupti_version = g->cupti_version;
  hello.library_version = kLibraryVersion;
  hello.start_time_ns = g->start_realtime_ns;
  hello.monotonic_ns = NowNs(CLOCK_MONOTONIC);
  hello.realtime_ns = NowNs(CLOCK_REALTIME);
  conn_.Emit(hello);
  pc_.OnConnected(conn_);  // the new agent needs the names of the stall reason indices
  SendNotices();
}

void Flusher::ReadControl() {
  controls_.clear();
  conn_.ReadControls(&controls_);
  for (const auto& c : controls_) {
    if (ApplyControl(c, g->config.pc_interval_ms, &g->controls)) {
      ++controls_applied_;
    }
  }
}

void Flusher::DrainRings() {
  uint32_t watermark = watermark_;
  for (uint32_t i = 0; i < g->config.max_threads; ++i) {
    ThreadSlot& s = g->slots[i];
    const uint32_t state = s.state.load(std::memory_order_acquire);
    if (state != kSlotOwned && state != kSlotReleased) {
      continue;
    }
    watermark = std::max(watermark, s.last_correlation.load(std::memory_order_relaxed));
    s.ring->Drain([&](std::span<const uint8_t> rec) {
      if (rec.empty()) {
        return;
      }
      if (rec[0] == kRecordStack) {
        if (conn_.EmitRaw(rec.subspan(1))) {
          ++stacks_;
        } else {
          g->intern_dirty.store(true, std::memory_order_relaxed);
        }
        return;
      }
      if (rec[0] != kRecordLaunch || rec.size() < kLaunchHeader) {
        return;
      }
      LaunchRecord l;
      std::memcpy(&l, rec.data(), std::min(rec.size(), sizeof(l)));
      joiner_.OnLaunch(l.correlation_id, l.stack_hash, l.tid, l.multi_kernel != 0, &joined_,
                       l.domain, l.cbid, l.timestamp_ns);
      wire::Launch msg;
      msg.correlation_id = l.correlation_id;
      msg.tid = l.tid;
      msg.timestamp_ns = l.timestamp_ns;
      msg.domain = l.domain;
      msg.cbid = l.cbid;
      msg.stack_hash = l.stack_hash;
      msg.symbol.assign(l.symbol, std::min<size_t>(l.symbol_len, rec.size() - kLaunchHeader));
      conn_.Emit(msg);
    });
    if (state == kSlotReleased) {
      // The owner exited: fold its counters and free the slot once its ring is empty.
      released_.Add(s);
      s.ResetCounters();
      s.ring->ResetUnsafe();
      s.state.store(kSlotFree, std::memory_order_release);
    }
  }
  watermark_ = watermark;
  if (g->intern_dirty.exchange(false, std::memory_order_relaxed)) {
    ClearInternedStacks();
  }
}

void Flusher::ProcessRecord(const abi::CUpti_Activity* rec) {
  switch (rec->kind) {
    case abi::kActivityConcurrentKernel:
    case abi::kActivityKernel: {
      DecodedKernel k = DecodeKernel(rec, g->cupti_version);
      wire::KernelActivity& a = k.activity;
      ++kernels_seen_;
      a.name_id = NameId(k.name);
      const uint64_t dur = a.end_ns > a.start_ns ? a.end_ns - a.start_ns : 0;
      const AggregateKey key{a.name_id, a.device, a.stream};
      if (aggregates_.size() < 100000 || aggregates_.contains(key)) {
        auto& e = aggregates_[key];
        if (e.count == 0) {
          e.name_id = a.name_id;
          e.device = a.device;
          e.stream = a.stream;
          e.min_ns = dur;
        }
        ++e.count;
        e.total_ns += dur;
        e.min_ns = std::min(e.min_ns, dur);
        e.max_ns = std::max(e.max_ns, dur);
      }
      joiner_.OnKernel(a, watermark_, &joined_);
      return;
    }
    case abi::kActivityMemcpy:
      conn_.Emit(DecodeMemcpy(rec, g->cupti_version));
      return;
    case abi::kActivityMemset:
      conn_.Emit(DecodeMemset(rec, g->cupti_version));
      return;
    case abi::kActivityMemory2:
      if (auto memory = DecodeMemory(rec)) {
        device_memory_.Add(*memory);
      }
      return;
    case abi::kActivityMarker:
      if (auto range = markers_.Add(rec)) {
        conn_.Emit(*range);
      }
      return;
    case abi::kActivityDriver:
    case abi::kActivityRuntime:
      return;  // only enabled so that CUPTI assigns correlation ids (launch_api_records)
    default:
      ++unknown_records_;
      return;
  }
}

void Flusher::ProcessBuffers() {
  g->buffers.TakeCompleted(&batch_);
  if (batch_.empty()) {
    return;
  }
  // Launch records of every kernel in these buffers were written before the kernels ran.
  DrainRings();
  for (const auto& b : batch_) {
    abi::CUpti_Activity* rec = nullptr;
    while (g->api.cuptiActivityGetNextRecord(b.buffer, b.valid, &rec) == abi::kSuccess &&
           rec != nullptr) {
      ProcessRecord(rec);
    }
    size_t dropped = 0;
    if (g->api.cuptiActivityGetNumDroppedRecords(b.ctx, b.stream, &dropped) == abi::kSuccess) {
      cupti_dropped_ += dropped;
    }
    g->buffers.Return(b.buffer, b.size);
  }
  batch_.clear();
  EmitKernels();
}

void Flusher::EmitKernels() {
  if (joined_.empty()) {
    return;
  }
  // Every kernel was aggregated already; the duty cycle decides only which unsampled ones are
  // also encoded and sent with their timestamps (by their own GPU start time).
  const KernelDutyCycle cycle =
      KernelDutyCycle::Unpack(g->controls.all_kernels_cycle.load(std::memory_order_relaxed));
  for (const auto& k : joined_) {
    if (k.stack_hash == 0 && !cycle.Contains(k.start_ns)) {
      continue;
    }
    if (EnsureNameSent(k.name_id)) {
      conn_.Emit(k);
    } else {
      conn_.CountDropped(96);
    }
    // A flush period of kernels in "all kernels" mode can exceed the unsent-bytes cap (35k
    // kernels x 120 B > 4 MiB): hand what is ready to the socket, without waiting, as it grows.
    if (conn_.pending_bytes() > conn_.out_cap_bytes() / 2) {
      conn_.WriteOut(0);
    }
  }
  joined_.clear();
}

uint64_t Flusher::MemoryBytes() const {
  uint64_t bytes = conn_.buffer_capacity() + g->ring_bytes.load(std::memory_order_relaxed);
  bytes += g->buffers.allocated_bytes();
  {
    std::lock_guard lock(g->cubin_mu);
    bytes += g->cubin_bytes;
  }
  bytes += kInternSize * 8;
  bytes += device_memory_.memory_bytes();
  return bytes;
}

void Flusher::SendCounters() {
  Counters c = released_;
  for (uint32_t i = 0; i < g->config.max_threads; ++i) {
    c.Add(g->slots[i]);
  }
  const auto& js = joiner_.stats();
  using wire::CounterId;
  conn_.Emit(wire::Counters{{
      {CounterId::kLaunchesSeen, c.seen},
      {CounterId::kLaunchesAdmitted, c.admitted},
      {CounterId::kLaunchesThrottled, c.throttled},
      {CounterId::kRingDrops, c.drops},
      {CounterId::kThreadsOverCap, g->threads_over_cap.load(std::memory_order_relaxed)},
      {CounterId::kCuptiDroppedRecords, cupti_dropped_},
      {CounterId::kBufferPoolExhausted, g->buffers.exhausted()},
      {CounterId::kKernelsSeen, kernels_seen_},
      {CounterId::kKernelsJoined, js.joined},
      {CounterId::kPendingEvicted, js.evicted_kernels + js.evicted_launches},
      {CounterId::kBytesDropped, conn_.bytes_dropped()},
      {CounterId::kReconnects, conn_.connects()},
      {CounterId::kStacksInterned, stacks_},
      {CounterId::kCubinsCaptured, g->cubins_captured.load(std::memory_order_relaxed)},
      {CounterId::kPcSamplesDropped, pc_.dropped_samples()},
      {CounterId::kCallbackErrors, g->callback_errors.load(std::memory_order_relaxed)},
      {CounterId::kMemoryBytes, MemoryBytes()},
      {CounterId::kUnknownRecords, unknown_records_},
      {CounterId::kControlsApplied, controls_applied_},
      {CounterId::kOverheadNs, c.overhead_ns},
      {CounterId::kPythonFramesSkipped, PythonFramesSkipped()},
      {CounterId::kBufferReserveUsed, g->buffers.reserve_used()},
  }});
}

void Flusher::SendNotices() {
  if (!conn_.connected()) {
    return;
  }
  const uint64_t gen = g->notice_generation.load(std::memory_order_relaxed);
  if (gen == notices_sent_generation_) {
    return;
  }
  std::vector<wire::Notice> pending;
  {
    std::lock_guard lock(g->notice_mu);
    pending.assign(
        g->notices.begin() + static_cast<ptrdiff_t>(std::min(notices_sent_, g->notices.size())),
        g->notices.end());
  }
  for (const auto& n : pending) {
    if (!conn_.Emit(n)) {
      return;
    }
    ++notices_sent_;
  }
  notices_sent_generation_ = gen;
}

void Flusher::SendCubins() {
  // The agent needs cubins only while PC sampling runs; those loaded before it was switched on
  // are read back now (cubins.h).
  if (!g->controls.pc_wanted.load(std::memory_order_relaxed)) {
    return;
  }
  if (const size_t lost = ReadBackCubins(); lost > 0 && !cubins_lost_noticed_) {
    cubins_lost_noticed_ = true;
    Notify(wire::Severity::kInfo, 0,
           std::to_string(lost) +
               " cubin(s) loaded before PC sampling was switched on could not "
               "be read back (the driver freed or reused their memory); their PC samples show "
               "offsets without SASS. Set WARPSCOPE_CUPTI_PC_SAMPLING=1 at start to keep them all");
  }
  if (!conn_.connected()) {
    return;
  }
  const uint64_t gen = g->cubin_generation.load(std::memory_order_relaxed);
  if (gen == cubin_generation_seen_) {
    return;
  }
  std::lock_guard lock(g->cubin_mu);
  for (const auto& [crc, bytes] : g->cubins) {
    if (std::find(cubins_sent_.begin(), cubins_sent_.end(), crc) != cubins_sent_.end()) {
      continue;
    }
    const size_t room = conn_.out_cap_bytes() - conn_.pending_bytes();
    if (bytes.size() + 1024 > room) {
      return;  // try again after the socket drained (cubin_generation_seen_ not advanced)
    }
    for (size_t off = 0; off < bytes.size(); off += wire::kMaxCubinChunk) {
      const size_t n = std::min(wire::kMaxCubinChunk, bytes.size() - off);
      conn_.Emit(wire::CubinChunk{crc, bytes.size(), off, bytes.substr(off, n)});
    }
    cubins_sent_.push_back(crc);
  }
  cubin_generation_seen_ = gen;
}

void Flusher::PcSampling(uint64_t now) {
  {
    std::lock_guard lock(g->ctx_mu);
    pc_.TrackContexts(g->contexts);
  }
  const PcSampler::Schedule schedule{g->controls.pc_window_ms, g->config.pc_interval_ms,
                                     g->config.pc_period};
  pc_.Step(now, g->controls.pc_wanted.load(std::memory_order_relaxed), schedule, conn_);
}

void Flusher::Tick(uint64_t now) {
  RefreshCodeRanges();  // objects loaded since (Python extensions): for resuming native stacks
  joiner_.Tick(&joined_);
  EmitKernels();
  wire::KernelAggregate agg;
  agg.window_start_ns = last_tick_realtime_ns_ != 0 ? last_tick_realtime_ns_ : g->start_realtime_ns;
  agg.window_end_ns = NowNs(CLOCK_REALTIME);
  last_tick_realtime_ns_ = agg.window_end_ns;
  for (const auto& [key, e] : aggregates_) {
    if (EnsureNameSent(e.name_id)) {
      agg.entries.push_back(e);
    }
  }
  if (!agg.entries.empty()) {
    conn_.Emit(agg);
  }
  aggregates_.clear();
  if (!device_memory_.empty()) {
    conn_.Emit(wire::DeviceMemory{device_memory_.Entries()});
  }
  SendCounters();
  next_tick_ns_ = now + static_cast<uint64_t>(g->config.flush_ms) * 1'000'000;
}

void Flusher::Iterate(bool final_pass) {
  const uint64_t now = NowNs(CLOCK_MONOTONIC);
  if (conn_.MaybeConnect(now)) {
    OnConnected();
  }
  ReadControl();
  PostPythonNotice();
  SendNotices();
  DrainRings();
  ProcessBuffers();
  EmitKernels();
  if (!g->passive.load(std::memory_order_relaxed)) {
    PcSampling(now);
    SendNotices();  // a refusal noticed just now, before the connection may close
  }
  SendCubins();
  if (final_pass || now >= next_tick_ns_) {
    if (!final_pass && !g->passive.load(std::memory_order_relaxed)) {
      // Completed buffers come back through BufferCompleted on this thread or CUPTI's.
      g->api.cuptiActivityFlushAll(0);
      ProcessBuffers();
    }
    Tick(now);
  }
  conn_.WriteOut(final_pass ? 500 : 0);
}

void Flusher::Run() {
  next_tick_ns_ = NowNs(CLOCK_MONOTONIC) + static_cast<uint64_t>(g->config.flush_ms) * 1'000'000;
  // Connect at once: the agent reads the process's memory map when it accepts, and a short
  // process may be gone by the first drain interval.
  if (conn_.MaybeConnect(NowNs(CLOCK_MONOTONIC))) {
    OnConnected();
  }
  while (true) {
    {
      std::unique_lock lock(g->flusher_mu);
      g->flusher_cv.wait_for(lock, std::chrono::milliseconds(kDrainIntervalMs),
                             [] { return g->flusher_stop || g->wake; });
      g->wake = false;
      if (g->flusher_stop) {
        break;
      }
    }
    Iterate(false);
  }
  FinalPass();
  std::lock_guard lock(g->flusher_mu);
  g->flusher_done = true;
  g->flusher_cv.notify_all();
}

void Flusher::FinalPass() {
  if (!conn_.connected()) {
    conn_.RetryNow();
  }
  Iterate(true);
  conn_.ShutdownWrite();
}

void FlusherMain() noexcept {
  try {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, nullptr);  // signals belong to the application
    pthread_setname_np(pthread_self(), "warpscope-cupti");
    g_flusher->Run();
  } catch (...) {
    g->callback_errors.fetch_add(1, std::memory_order_relaxed);
    std::lock_guard lock(g->flusher_mu);
    g->flusher_done = true;
    g->flusher_cv.notify_all();
  }
}

}  // namespace

void PostPythonNotice() {
  if (const char* python_off = TakePythonNotice()) {  // raised on a launch thread
    Notify(wire::Severity::kWarning, 0, python_off);
  }
}

void StartFlusher() {
  std::lock_guard lock(g->start_mu);
  if (g->flusher_started.load(std::memory_order_acquire)) {
    return;
  }
  try {
    // A fork child abandons the parent's flusher state (it may be mid-update); keep it reachable.
    g_flusher = new Flusher(g_flusher);
    g->flusher_stop = false;
    g->flusher_done = false;
    std::thread(FlusherMain).detach();
    g->flusher_started.store(true, std::memory_order_release);
  } catch (...) {
    g->callback_errors.fetch_add(1, std::memory_order_relaxed);
    g->flusher_started.store(true, std::memory_order_release);  // do not retry on every launch
  }
}

void WakeFlusher() {
  {
    std::lock_guard lock(g->flusher_mu);
    g->wake = true;
  }
  g->flusher_cv.notify_one();
}

void StopFlusher(std::chrono::milliseconds timeout) {
  std::unique_lock lock(g->flusher_mu);
  g->flusher_stop = true;
  g->flusher_cv.notify_all();
  g->flusher_cv.wait_for(lock, timeout, [] { return g->flusher_done; });
}

void ForgetFlusherInForkChild() {
  new (&g->flusher_mu) std::mutex();
  new (&g->flusher_cv) std::condition_variable();
  g->wake = false;
  g->flusher_started.store(false, std::memory_order_release);
}

}  // namespace warpscope::cupti_inject

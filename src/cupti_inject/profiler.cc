// SPDX-License-Identifier: Apache-2.0
#include "cupti_inject/profiler.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <atomic>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "cupti/abi.h"
#include "cupti/wire.h"
#include "cupti_inject/activity_decode.h"
#include "cupti_inject/correlation_join.h"
#include "cupti_inject/env_config.h"
#include "cupti_inject/kernel_duty_cycle.h"
#include "cupti_inject/rate_limiter.h"
#include "cupti_inject/spsc_ring.h"
#include "cupti_inject/stack_capture.h"

namespace warpscope::cupti_inject {
namespace {

namespace abi = ::warpscope::cupti::abi;
namespace wire = ::warpscope::cupti::wire;

constexpr uint32_t kLibraryVersion = 101;  // 0.1.1 (Hello.library_version; wire.h ControlOp)
constexpr size_t kInternSize = 1u << 16;    // stack hashes remembered as sent
constexpr size_t kMaxSymbol = 256;          // kernel symbol bytes kept in a launch record
constexpr size_t kMaxNotices = 32;
constexpr uint32_t kDrainIntervalMs = 20;
constexpr uint64_t kOverheadSampling = 256;  // power of two

uint64_t NowNs(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

uint32_t Gettid() { return static_cast<uint32_t>(syscall(SYS_gettid)); }

// --- libcupti ------------------------------------------------------------------------------------

struct CuptiApi {
#define WARPSCOPE_CUPTI_MEMBER(name, ret, params) abi::name##_fn name = nullptr;
  WARPSCOPE_CUPTI_FUNCTIONS(WARPSCOPE_CUPTI_MEMBER, WARPSCOPE_CUPTI_MEMBER)
#undef WARPSCOPE_CUPTI_MEMBER
  void* handle = nullptr;
};

bool LoadCupti(const std::string& configured, CuptiApi* api, std::string* error) {
  std::vector<std::string> candidates;
  if (!configured.empty()) {
    candidates.push_back(configured);
  } else {
    candidates = {"libcupti.so.13", "libcupti.so.12", "libcupti.so"};
  }
  std::string tried;
  for (const auto& c : candidates) {
    api->handle = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (api->handle != nullptr) {
      break;
    }
    const char* e = dlerror();
    tried += (tried.empty() ? "" : "; ") + c + ": " + (e != nullptr ? e : "not found");
  }
  if (api->handle == nullptr) {
    *error = "libcupti could not be loaded (" + tried +
             "); set WARPSCOPE_CUPTI_LIBRARY to the libcupti.so of the CUDA toolkit in use";
    return false;
  }
  std::string missing;
#define WARPSCOPE_CUPTI_REQUIRED(name, ret, params)                                    \
  api->name = reinterpret_cast<abi::name##_fn>(dlsym(api->handle, #name));            \
  if (api->name == nullptr) {                                                          \
    missing += (missing.empty() ? "" : ", ") + std::string(#name);                     \
  }
#define WARPSCOPE_CUPTI_OPTIONAL(name, ret, params) \
  api->name = reinterpret_cast<abi::name##_fn>(dlsym(api->handle, #name));
  WARPSCOPE_CUPTI_FUNCTIONS(WARPSCOPE_CUPTI_REQUIRED, WARPSCOPE_CUPTI_OPTIONAL)
#undef WARPSCOPE_CUPTI_REQUIRED
#undef WARPSCOPE_CUPTI_OPTIONAL
  if (!missing.empty()) {
    *error = "libcupti lacks " + missing + "; use CUPTI from CUDA 12 or newer";
    return false;
  }
  return true;
}

// --- per-thread state ------------------------------------------------------------------------------

enum : uint8_t { kRecordLaunch = 1, kRecordStack = 2 };

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
constexpr size_t kLaunchHeader = offsetof(LaunchRecord, symbol);

// A slot goes free -> claiming (its owner sets it up) -> owned -> released (the owner exited) ->
// free (the flusher drained it). The flusher only touches owned and released slots.
enum : uint32_t { kSlotFree = 0, kSlotOwned = 1, kSlotReleased = 2, kSlotClaiming = 3 };

// Counters written by the owning thread only (plain load+store), read by the flusher.
struct SlotCounter {
  std::atomic<uint64_t> v{0};
  void Add(uint64_t n = 1) { v.store(v.load(std::memory_order_relaxed) + n, std::memory_order_relaxed); }
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
};

// --- process-wide state ------------------------------------------------------------------------

struct Counters {
  uint64_t seen = 0, admitted = 0, throttled = 0, drops = 0, overhead_ns = 0;
};

struct Global {
  InjectConfig config;
  CuptiApi api;
  uint32_t cupti_version = 0;
  abi::CUpti_SubscriberHandle subscriber = nullptr;
  pid_t pid = 0;        // this process
  pid_t cupti_pid = 0;  // the process that set CUPTI up (a fork child does not flush CUPTI)
  uint64_t start_realtime_ns = 0;

  std::atomic<bool> passive{true};
  std::atomic<bool> enabled{false};
  std::atomic<uint32_t> rate{200};
  std::atomic<uint32_t> burst{20};
  std::atomic<bool> pc_wanted{false};
  // KernelDutyCycle::Pack() of the unsampled kernels sent as KernelActivity (env, then Control).
  std::atomic<uint64_t> all_kernels_cycle{0};
  std::atomic<uint64_t> generation{1};  // bumped in a fork child: thread handles re-claim slots
  std::atomic<uint64_t> threads_over_cap{0};
  std::atomic<uint64_t> callback_errors{0};
  std::atomic<bool> intern_dirty{false};
  std::atomic<uint64_t> ring_bytes{0};  // rings allocated (kept for reuse, never freed)

  std::unique_ptr<ThreadSlot[]> slots;
  std::unique_ptr<std::atomic<uint64_t>[]> interned;

  // Activity buffer pool.
  std::mutex pool_mu;
  std::vector<uint8_t*> free_buffers;
  size_t buffers_allocated = 0;
  std::atomic<uint64_t> pool_exhausted{0};
  struct Completed {
    abi::CUcontext ctx;
    uint32_t stream;
    uint8_t* buffer;
    size_t valid;
  };
  std::mutex completed_mu;
  std::vector<Completed> completed;

  // Contexts (for PC sampling) and cubins.
  std::mutex ctx_mu;
  std::vector<abi::CUcontext> contexts;
  std::mutex cubin_mu;
  std::map<uint64_t, std::string> cubins;  // crc -> bytes
  size_t cubin_bytes = 0;
  std::atomic<uint64_t> cubins_captured{0};
  std::atomic<uint64_t> cubin_generation{0};  // bumped when a cubin is added

  // Notices, kept and re-sent on every connection.
  std::mutex notice_mu;
  std::vector<wire::Notice> notices;
  std::atomic<uint64_t> notice_generation{0};

  // Flusher thread.
  std::mutex flusher_mu;
  std::condition_variable flusher_cv;
  bool flusher_stop = false;
  bool flusher_done = false;
  bool wake = false;
  std::atomic<bool> flusher_started{false};
};

Global* g = nullptr;

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

void Log(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void Log(const char* fmt, ...) {
  if (g == nullptr || !g->config.log_stderr) {
    return;
  }
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  fprintf(stderr, "warpscope-cupti[%d]: %s\n", static_cast<int>(getpid()), buf);
}

// Records a notice for the agent (sent on every connection) and logs it.
void Notify(wire::Severity severity, uint32_t code, std::string message) {
  Log("%s", message.c_str());
  std::lock_guard lock(g->notice_mu);
  if (g->notices.size() >= kMaxNotices) {
    return;
  }
  g->notices.push_back(wire::Notice{severity, code, std::move(message)});
  g->notice_generation.fetch_add(1, std::memory_order_relaxed);
}

std::string ResultString(abi::CUptiResult r) {
  const char* s = nullptr;
  if (g->api.cuptiGetResultString != nullptr && g->api.cuptiGetResultString(r, &s) == abi::kSuccess &&
      s != nullptr) {
    return std::string(s) + " (" + std::to_string(r) + ")";
  }
  return "CUPTI error " + std::to_string(r);
}

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
      s.bounds = g->config.unwinder == Unwinder::kFramePointer ? CurrentThreadStackBounds()
                                                                : StackBounds{};
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

void StartFlusher();

// The hot path: an API-domain launch callback at ENTER, after de-duplication.
void OnLaunch(abi::CUpti_CallbackDomain domain, abi::CUpti_CallbackId cbid,
              const abi::CUpti_CallbackData* d) {
  if (!g->enabled.load(std::memory_order_relaxed)) {
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
  if (!slot->bucket.Admit(NowNs(CLOCK_MONOTONIC_COARSE), g->rate.load(std::memory_order_relaxed),
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
    thread_local uint8_t frame[1 + 128 * 8 + PythonStack::kArenaSize +
                               PythonStack::kMaxFrames * 12 + 64];
    frame[0] = kRecordStack;
    const size_t len = wire::EncodeStackInto(
        hash, std::span<const uint64_t>(native, n),
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
  rec.multi_kernel = abi::IsGraphLaunch(domain, cbid) ||
                     cbid == (domain == abi::kDomainDriverApi
                                  ? abi::kCbidCuLaunchCooperativeKernelMultiDevice
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
    if (!g->pc_wanted.load(std::memory_order_relaxed) || r->resourceDescriptor == nullptr) {
      return;
    }
    const auto* m = static_cast<const abi::CUpti_ModuleResourceData*>(r->resourceDescriptor);
    if (m->pCubin == nullptr || m->cubinSize == 0) {
      return;
    }
    uint64_t crc = 0;
    if (g->api.cuptiGetCubinCrc != nullptr) {
      abi::CUpti_GetCubinCrcParams p{};
      p.size = sizeof(p);
      p.cubinSize = m->cubinSize;
      p.cubin = m->pCubin;
      if (g->api.cuptiGetCubinCrc(&p) == abi::kSuccess) {
        crc = p.cubinCrc;
      }
    }
    if (crc == 0) {
      crc = wire::HashBytes(wire::kHashSeed, m->pCubin, m->cubinSize);
    }
    std::lock_guard lock(g->cubin_mu);
    const size_t cap = static_cast<size_t>(g->config.cubin_cap_mb) << 20;
    if (g->cubins.contains(crc) || g->cubin_bytes + m->cubinSize > cap) {
      return;
    }
    g->cubins.emplace(crc, std::string(m->pCubin, m->cubinSize));
    g->cubin_bytes += m->cubinSize;
    g->cubins_captured.fetch_add(1, std::memory_order_relaxed);
    g->cubin_generation.fetch_add(1, std::memory_order_relaxed);
  }
}

void Callback(void*, abi::CUpti_CallbackDomain domain, abi::CUpti_CallbackId cbid,
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

// --- activity buffers ----------------------------------------------------------------------------

void BufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) noexcept {
  *buffer = nullptr;
  *size = 0;
  *max_records = 0;
  try {
    std::lock_guard lock(g->pool_mu);
    const size_t bytes = static_cast<size_t>(g->config.activity_buffer_kb) * 1024;
    if (!g->free_buffers.empty()) {
      *buffer = g->free_buffers.back();
      g->free_buffers.pop_back();
    } else if (g->buffers_allocated < g->config.activity_buffers) {
      *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, bytes));
      if (*buffer != nullptr) {
        ++g->buffers_allocated;
      }
    }
    if (*buffer == nullptr) {
      g->pool_exhausted.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    *size = bytes;
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
    {
      std::lock_guard lock(g->completed_mu);
      g->completed.push_back({ctx, stream, buffer, valid});
    }
    {
      std::lock_guard lock(g->flusher_mu);
      g->wake = true;
    }
    g->flusher_cv.notify_one();
  } catch (...) {
    g->callback_errors.fetch_add(1, std::memory_order_relaxed);
  }
}

void ReturnBuffer(uint8_t* buffer) {
  std::lock_guard lock(g->pool_mu);
  g->free_buffers.push_back(buffer);
}

// --- the flusher ---------------------------------------------------------------------------------

struct AggregateKey {
  uint32_t name_id, device, stream;
  bool operator<(const AggregateKey& o) const {
    return std::tie(name_id, device, stream) < std::tie(o.name_id, o.device, o.stream);
  }
};

// A buffer CUPTI fills with parsed PC samples: the PC records and their stall-reason arrays.
struct PcBuffer {
  std::vector<abi::CUpti_PCSamplingPCData> pcs;
  std::vector<abi::CUpti_PCSamplingStallReason> reasons;
  abi::CUpti_PCSamplingData data{};
  size_t num_reasons = 0;

  void Allocate(size_t num_pcs, size_t reasons_per_pc) {
    num_reasons = reasons_per_pc;
    pcs.assign(num_pcs, abi::CUpti_PCSamplingPCData{});
    reasons.assign(num_pcs * reasons_per_pc, abi::CUpti_PCSamplingStallReason{});
    Reset();
  }
  // Points every record at its stall-reason slots again and clears the counts.
  void Reset() {
    data = abi::CUpti_PCSamplingData{};
    data.size = sizeof(data);
    data.collectNumPcs = pcs.size();
    data.pPcData = pcs.data();
    for (size_t i = 0; i < pcs.size(); ++i) {
      pcs[i].size = sizeof(abi::CUpti_PCSamplingPCData);
      pcs[i].stallReason = reasons.data() + i * num_reasons;
      pcs[i].stallReasonCount = 0;
      pcs[i].functionName = nullptr;
    }
  }
};

// PC-sampling state of one CUDA context. Held by pointer: CUPTI keeps the address of
// `config_buffer.data` (the configured sampling data buffer) while sampling is enabled.
struct PcContext {
  abi::CUcontext ctx = nullptr;
  uint32_t device = 0;
  bool enabled = false;
  bool failed = false;
  PcBuffer config_buffer;  // filled by CUPTI at Disable
  PcBuffer get_buffer;     // filled by cuptiPCSamplingGetData
  wire::StallReasons stall_reasons;
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

// State owned by the flusher thread. A fork child builds a new one (the old one may have been
// mid-update when the parent forked).
class Flusher {
 public:
  Flusher() : joiner_(MakeJoinOptions()) {}

  void Run();
  void FinalPass();

 private:
  void Iterate(bool final_pass);
  void MaybeConnect(uint64_t now);
  void OnConnected();
  void Disconnect(const char* why);
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
  void CollectPc(PcContext& pc);
  void AppendPcSamples(PcBuffer& buffer, wire::PcSamples* msg);
  void DisablePc(PcContext& pc);
  void WriteOut(int timeout_ms);
  bool Emit(const wire::Message& m);
  bool EmitRaw(std::span<const uint8_t> frame);
  uint32_t NameId(const char* name);
  bool EnsureNameSent(uint32_t id);
  uint64_t MemoryBytes() const;

  friend void StartFlusher();
  Flusher* abandoned_ = nullptr;  // the parent's state, in a fork child
  CorrelationJoiner joiner_;
  int fd_ = -1;
  uint64_t next_connect_ns_ = 0;
  uint64_t backoff_ns_ = 100'000'000;
  std::string socket_path_;
  std::string out_;
  size_t out_sent_ = 0;
  std::string scratch_;
  wire::StreamDecoder in_;
  uint64_t bytes_dropped_ = 0;
  uint64_t reconnects_ = 0;
  uint64_t stacks_ = 0;
  uint64_t cupti_dropped_ = 0;
  uint64_t kernels_seen_ = 0;
  uint64_t unknown_records_ = 0;
  uint64_t pc_dropped_ = 0;
  Counters released_;  // counters of slots that were freed
  uint64_t next_tick_ns_ = 0;
  uint64_t last_tick_realtime_ns_ = 0;
  uint64_t window_start_ns_ = 0;
  uint64_t controls_applied_ = 0;
  uint32_t watermark_ = 0;

  std::unordered_map<const char*, uint32_t> name_by_ptr_;
  std::unordered_map<std::string, uint32_t> name_by_str_;
  std::vector<std::string> names_;
  std::vector<bool> name_sent_;
  std::map<AggregateKey, wire::KernelAggregateEntry> aggregates_;
  std::vector<wire::KernelActivity> joined_;
  MarkerPairer markers_;

  uint64_t notices_sent_generation_ = ~0ull;
  size_t notices_sent_ = 0;
  std::vector<uint64_t> cubins_sent_;
  uint64_t cubin_generation_seen_ = ~0ull;

  std::vector<std::unique_ptr<PcContext>> pc_;
  bool pc_running_ = false;
  uint64_t pc_window_start_ = 0;
  uint64_t pc_next_window_ = 0;
};

Flusher* g_flusher = nullptr;

bool Flusher::EmitRaw(std::span<const uint8_t> frame) {
  if (fd_ < 0 || out_.size() - out_sent_ + frame.size() > static_cast<size_t>(g->config.out_kb) * 1024) {
    bytes_dropped_ += frame.size();
    return false;
  }
  out_.append(reinterpret_cast<const char*>(frame.data()), frame.size());
  return true;
}

bool Flusher::Emit(const wire::Message& m) {
  if (fd_ < 0) {
    scratch_.clear();
    wire::Encode(m, &scratch_);
    bytes_dropped_ += scratch_.size();
    return false;
  }
  const size_t before = out_.size();
  wire::Encode(m, &out_);
  if (out_.size() - out_sent_ > static_cast<size_t>(g->config.out_kb) * 1024) {
    bytes_dropped_ += out_.size() - before;
    out_.resize(before);
    return false;
  }
  return true;
}

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
  if (Emit(wire::KernelName{id, names_[id - 1]})) {
    name_sent_[id - 1] = true;
    return true;
  }
  return false;
}

void Flusher::MaybeConnect(uint64_t now) {
  if (fd_ >= 0 || now < next_connect_ns_) {
    return;
  }
  if (socket_path_.empty()) {
    socket_path_ = g->config.agent_socket.empty() ? DefaultAgentSocket(::getenv)
                                                  : g->config.agent_socket;
  }
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (fd < 0 || socket_path_.size() >= sizeof(addr.sun_path)) {
    if (fd >= 0) {
      close(fd);
    }
    next_connect_ns_ = now + 5'000'000'000ull;
    return;
  }
  std::memcpy(addr.sun_path, socket_path_.c_str(), socket_path_.size() + 1);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    next_connect_ns_ = now + backoff_ns_;
    backoff_ns_ = std::min<uint64_t>(backoff_ns_ * 2, 5'000'000'000ull);
    return;
  }
  fd_ = fd;
  backoff_ns_ = 100'000'000;
  ++reconnects_;
  OnConnected();
}

void Flusher::OnConnected() {
  out_.clear();
  out_sent_ = 0;
  in_ = wire::StreamDecoder();
  std::fill(name_sent_.begin(), name_sent_.end(), false);
  for (size_t i = 0; i < kInternSize; ++i) {
    g->interned[i].store(0, std::memory_order_relaxed);
  }
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
  Emit(hello);
  for (auto& pc : pc_) {
    if (pc->enabled) {
      Emit(pc->stall_reasons);  // the new agent needs the names of the indices
    }
  }
  SendNotices();
}

void Flusher::Disconnect(const char* why) {
  if (fd_ >= 0) {
    Log("agent connection closed: %s", why);
    close(fd_);
  }
  fd_ = -1;
  bytes_dropped_ += out_.size() - out_sent_;
  out_.clear();
  out_sent_ = 0;
  next_connect_ns_ = NowNs(CLOCK_MONOTONIC) + backoff_ns_;
}

void Flusher::ReadControl() {
  if (fd_ < 0) {
    return;
  }
  char buf[4096];
  while (true) {
    const ssize_t n = recv(fd_, buf, sizeof(buf), MSG_DONTWAIT);
    if (n > 0) {
      in_.Append(std::string_view(buf, static_cast<size_t>(n)));
      continue;
    }
    if (n == 0) {
      Disconnect("agent closed the socket");
      return;
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
      break;
    }
    Disconnect("recv failed");
    return;
  }
  wire::Message m;
  wire::DecodeStatus s;
  while ((s = in_.Next(&m)) == wire::DecodeStatus::kOk) {
    const auto* c = std::get_if<wire::Control>(&m);
    if (c == nullptr) {
      continue;
    }
    switch (c->op) {
      case wire::ControlOp::kEnableCollection:
        g->enabled.store(true, std::memory_order_relaxed);
        break;
      case wire::ControlOp::kDisableCollection:
        g->enabled.store(false, std::memory_order_relaxed);
        break;
      case wire::ControlOp::kSetRate:
        g->rate.store(static_cast<uint32_t>(std::min<uint64_t>(c->value, 1'000'000)),
                      std::memory_order_relaxed);
        break;
      case wire::ControlOp::kEnablePcSampling:
        if (c->value != 0) {
          g->config.pc_window_ms = static_cast<uint32_t>(
              std::min<uint64_t>(c->value, g->config.pc_interval_ms));
        }
        g->pc_wanted.store(true, std::memory_order_relaxed);
        break;
      case wire::ControlOp::kDisablePcSampling:
        g->pc_wanted.store(false, std::memory_order_relaxed);
        break;
      case wire::ControlOp::kSetAllKernelsDutyCycle:
        g->all_kernels_cycle.store(KernelDutyCycle::Unpack(c->value).Pack(),
                                   std::memory_order_relaxed);
        break;
      default:
        continue;  // an op from a newer agent: ignored, not counted
    }
    ++controls_applied_;
  }
  if (s == wire::DecodeStatus::kError) {
    Disconnect(in_.error().c_str());
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
        if (EmitRaw(rec.subspan(1))) {
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
      Emit(msg);
    });
    if (state == kSlotReleased) {
      // The owner exited: fold its counters and free the slot once its ring is empty.
      released_.seen += s.seen.Get();
      released_.admitted += s.admitted.Get();
      released_.throttled += s.throttled.Get();
      released_.drops += s.drops.Get();
      released_.overhead_ns += s.overhead_ns.Get();
      s.seen.v.store(0, std::memory_order_relaxed);
      s.admitted.v.store(0, std::memory_order_relaxed);
      s.throttled.v.store(0, std::memory_order_relaxed);
      s.drops.v.store(0, std::memory_order_relaxed);
      s.overhead_ns.v.store(0, std::memory_order_relaxed);
      s.ring->ResetUnsafe();
      s.state.store(kSlotFree, std::memory_order_release);
    }
  }
  watermark_ = watermark;
  if (g->intern_dirty.exchange(false, std::memory_order_relaxed)) {
    for (size_t i = 0; i < kInternSize; ++i) {
      g->interned[i].store(0, std::memory_order_relaxed);
    }
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
      Emit(DecodeMemcpy(rec, g->cupti_version));
      return;
    case abi::kActivityMemset:
      Emit(DecodeMemset(rec, g->cupti_version));
      return;
    case abi::kActivityMarker:
      if (auto range = markers_.Add(rec)) {
        Emit(*range);
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
  std::vector<Global::Completed> batch;
  {
    std::lock_guard lock(g->completed_mu);
    batch.swap(g->completed);
  }
  if (batch.empty()) {
    return;
  }
  // Launch records of every kernel in these buffers were written before the kernels ran.
  DrainRings();
  for (const auto& b : batch) {
    abi::CUpti_Activity* rec = nullptr;
    while (g->api.cuptiActivityGetNextRecord(b.buffer, b.valid, &rec) == abi::kSuccess &&
           rec != nullptr) {
      ProcessRecord(rec);
    }
    size_t dropped = 0;
    if (g->api.cuptiActivityGetNumDroppedRecords(b.ctx, b.stream, &dropped) == abi::kSuccess) {
      cupti_dropped_ += dropped;
    }
    ReturnBuffer(b.buffer);
  }
  EmitKernels();
}

void Flusher::EmitKernels() {
  if (joined_.empty()) {
    return;
  }
  // Every kernel was aggregated already; the duty cycle decides only which unsampled ones are
  // also encoded and sent with their timestamps (by their own GPU start time).
  const KernelDutyCycle cycle =
      KernelDutyCycle::Unpack(g->all_kernels_cycle.load(std::memory_order_relaxed));
  for (const auto& k : joined_) {
    if (k.stack_hash == 0 && !cycle.Contains(k.start_ns)) {
      continue;
    }
    if (EnsureNameSent(k.name_id)) {
      Emit(k);
    } else {
      bytes_dropped_ += 96;
    }
    // A flush period of kernels in "all kernels" mode can exceed the unsent-bytes cap (35k
    // kernels x 120 B > 4 MiB): hand what is ready to the socket, without waiting, as it grows.
    if (out_.size() - out_sent_ > static_cast<size_t>(g->config.out_kb) * 512) {
      WriteOut(0);
    }
  }
  joined_.clear();
}

uint64_t Flusher::MemoryBytes() const {
  uint64_t bytes = out_.capacity() + g->ring_bytes.load(std::memory_order_relaxed);
  {
    std::lock_guard lock(g->pool_mu);
    bytes += g->buffers_allocated * static_cast<uint64_t>(g->config.activity_buffer_kb) * 1024;
  }
  {
    std::lock_guard lock(g->cubin_mu);
    bytes += g->cubin_bytes;
  }
  bytes += kInternSize * 8;
  return bytes;
}

void Flusher::SendCounters() {
  Counters c = released_;
  for (uint32_t i = 0; i < g->config.max_threads; ++i) {
    const ThreadSlot& s = g->slots[i];
    c.seen += s.seen.Get();
    c.admitted += s.admitted.Get();
    c.throttled += s.throttled.Get();
    c.drops += s.drops.Get();
    c.overhead_ns += s.overhead_ns.Get();
  }
  const auto& js = joiner_.stats();
  using wire::CounterId;
  Emit(wire::Counters{{
      {CounterId::kLaunchesSeen, c.seen},
      {CounterId::kLaunchesAdmitted, c.admitted},
      {CounterId::kLaunchesThrottled, c.throttled},
      {CounterId::kRingDrops, c.drops},
      {CounterId::kThreadsOverCap, g->threads_over_cap.load(std::memory_order_relaxed)},
      {CounterId::kCuptiDroppedRecords, cupti_dropped_},
      {CounterId::kBufferPoolExhausted, g->pool_exhausted.load(std::memory_order_relaxed)},
      {CounterId::kKernelsSeen, kernels_seen_},
      {CounterId::kKernelsJoined, js.joined},
      {CounterId::kPendingEvicted, js.evicted_kernels + js.evicted_launches},
      {CounterId::kBytesDropped, bytes_dropped_},
      {CounterId::kReconnects, reconnects_},
      {CounterId::kStacksInterned, stacks_},
      {CounterId::kCubinsCaptured, g->cubins_captured.load(std::memory_order_relaxed)},
      {CounterId::kPcSamplesDropped, pc_dropped_},
      {CounterId::kCallbackErrors, g->callback_errors.load(std::memory_order_relaxed)},
      {CounterId::kMemoryBytes, MemoryBytes()},
      {CounterId::kUnknownRecords, unknown_records_},
      {CounterId::kControlsApplied, controls_applied_},
      {CounterId::kOverheadNs, c.overhead_ns},
  }});
}

void Flusher::SendNotices() {
  if (fd_ < 0) {
    return;
  }
  const uint64_t gen = g->notice_generation.load(std::memory_order_relaxed);
  if (gen == notices_sent_generation_) {
    return;
  }
  std::vector<wire::Notice> pending;
  {
    std::lock_guard lock(g->notice_mu);
    pending.assign(g->notices.begin() + static_cast<ptrdiff_t>(std::min(notices_sent_, g->notices.size())),
                   g->notices.end());
  }
  for (const auto& n : pending) {
    if (!Emit(n)) {
      return;
    }
    ++notices_sent_;
  }
  notices_sent_generation_ = gen;
}

void Flusher::SendCubins() {
  if (fd_ < 0) {
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
    const size_t room = static_cast<size_t>(g->config.out_kb) * 1024 - (out_.size() - out_sent_);
    if (bytes.size() + 1024 > room) {
      return;  // try again after the socket drained (cubin_generation_seen_ not advanced)
    }
    for (size_t off = 0; off < bytes.size(); off += wire::kMaxCubinChunk) {
      const size_t n = std::min(wire::kMaxCubinChunk, bytes.size() - off);
      Emit(wire::CubinChunk{crc, bytes.size(), off, bytes.substr(off, n)});
    }
    cubins_sent_.push_back(crc);
  }
  cubin_generation_seen_ = gen;
}

void Flusher::AppendPcSamples(PcBuffer& buffer, wire::PcSamples* msg) {
  msg->total_samples += buffer.data.totalSamples;
  msg->dropped_samples += buffer.data.droppedSamples;
  pc_dropped_ += buffer.data.droppedSamples;
  const size_t n = std::min(buffer.data.totalNumPcs, buffer.pcs.size());
  for (size_t i = 0; i < n; ++i) {
    auto& d = buffer.pcs[i];
    const size_t reasons = std::min(d.stallReasonCount, buffer.num_reasons);
    for (size_t r = 0; r < reasons; ++r) {
      if (d.stallReason[r].samples == 0) {
        continue;
      }
      msg->samples.push_back(wire::PcSample{
          d.cubinCrc, d.functionName != nullptr ? d.functionName : "", d.pcOffset,
          d.stallReason[r].pcSamplingStallReasonIndex, d.stallReason[r].samples});
    }
    std::free(d.functionName);  // CUPTI allocates it for the caller
    d.functionName = nullptr;
  }
}

void Flusher::CollectPc(PcContext& pc) {
  wire::PcSamples msg;
  msg.device = pc.device;
  msg.window_start_ns = pc_window_start_;
  msg.window_end_ns = NowNs(CLOCK_REALTIME);
  for (int round = 0; round < 64; ++round) {
    pc.get_buffer.Reset();
    abi::CUpti_PCSamplingGetDataParams p{};
    p.size = sizeof(p);
    p.ctx = pc.ctx;
    p.pcSamplingData = &pc.get_buffer.data;
    if (g->api.cuptiPCSamplingGetData(&p) != abi::kSuccess) {
      break;
    }
    AppendPcSamples(pc.get_buffer, &msg);
    if (pc.get_buffer.data.remainingNumPcs == 0) {
      break;
    }
  }
  Emit(msg);
}

void Flusher::DisablePc(PcContext& pc) {
  if (!pc.enabled || g->api.cuptiPCSamplingDisable == nullptr) {
    return;
  }
  abi::CUpti_PCSamplingContextParams p{sizeof(p), nullptr, pc.ctx};
  g->api.cuptiPCSamplingDisable(&p);
  pc.enabled = false;
  // Whatever CUPTI still held went to the configured buffer.
  if (pc.config_buffer.data.totalNumPcs > 0) {
    wire::PcSamples msg;
    msg.device = pc.device;
    msg.window_start_ns = pc_window_start_;
    msg.window_end_ns = NowNs(CLOCK_REALTIME);
    AppendPcSamples(pc.config_buffer, &msg);
    Emit(msg);
  }
  pc.config_buffer.Reset();
}

void Flusher::PcSampling(uint64_t now) {
  const bool wanted = g->pc_wanted.load(std::memory_order_relaxed) &&
                      g->api.cuptiPCSamplingEnable != nullptr &&
                      g->api.cuptiPCSamplingGetData != nullptr;
  {
    std::lock_guard lock(g->ctx_mu);
    // Track contexts: add new ones, forget destroyed ones.
    // A destroyed context took its sampling state with it (CUPTI disables it).
    std::erase_if(pc_, [](const std::unique_ptr<PcContext>& pc) {
      return std::find(g->contexts.begin(), g->contexts.end(), pc->ctx) == g->contexts.end();
    });
    for (auto* ctx : g->contexts) {
      if (std::none_of(pc_.begin(), pc_.end(),
                       [ctx](const std::unique_ptr<PcContext>& p) { return p->ctx == ctx; })) {
        auto pc = std::make_unique<PcContext>();
        pc->ctx = ctx;
        pc->device = static_cast<uint32_t>(pc_.size());
        pc_.push_back(std::move(pc));
      }
    }
  }
  if (!wanted) {
    for (auto& pc : pc_) {
      if (pc->enabled && pc_running_ && g->api.cuptiPCSamplingStop != nullptr) {
        abi::CUpti_PCSamplingContextParams p{sizeof(p), nullptr, pc->ctx};
        g->api.cuptiPCSamplingStop(&p);
        CollectPc(*pc);
      }
      DisablePc(*pc);
    }
    pc_running_ = false;
    return;
  }
  for (auto& pcp : pc_) {
    PcContext& pc = *pcp;
    if (pc.enabled || pc.failed) {
      continue;
    }
    abi::CUpti_PCSamplingContextParams ep{sizeof(ep), nullptr, pc.ctx};
    abi::CUptiResult r = g->api.cuptiPCSamplingEnable(&ep);
    if (r != abi::kSuccess && r != abi::kErrorNotSupported) {
      // Already enabled (after a reconnect) is fine; anything else disables PC sampling here.
    }
    size_t num = 0;
    abi::CUpti_PCSamplingGetNumStallReasonsParams np{sizeof(np), nullptr, pc.ctx, &num};
    if (r != abi::kSuccess || g->api.cuptiPCSamplingGetNumStallReasons == nullptr ||
        g->api.cuptiPCSamplingGetNumStallReasons(&np) != abi::kSuccess || num == 0 || num > 1024) {
      pc.failed = true;
      Notify(wire::Severity::kWarning, static_cast<uint32_t>(r),
             "PC sampling could not be enabled on a CUDA context (" + ResultString(r) +
                 "); it needs profiling permission (NVreg_RestrictProfilingToAdminUsers=0 or "
                 "CAP_SYS_ADMIN) and a GPU of compute capability 7.5 or newer");
      continue;
    }
    std::vector<uint32_t> indices(num);
    std::vector<std::vector<char>> storage(num, std::vector<char>(abi::kStallReasonNameMax));
    std::vector<char*> names(num);
    for (size_t i = 0; i < num; ++i) {
      names[i] = storage[i].data();
    }
    abi::CUpti_PCSamplingGetStallReasonsParams sp{sizeof(sp), nullptr, pc.ctx, num,
                                                  indices.data(), names.data()};
    wire::StallReasons reasons;
    reasons.device = pc.device;
    if (g->api.cuptiPCSamplingGetStallReasons != nullptr &&
        g->api.cuptiPCSamplingGetStallReasons(&sp) == abi::kSuccess) {
      for (size_t i = 0; i < num; ++i) {
        storage[i].back() = '\0';
        reasons.reasons.push_back({indices[i], names[i]});
      }
    }
    pc.config_buffer.Allocate(512, num);
    pc.get_buffer.Allocate(512, num);
    std::vector<abi::CUpti_PCSamplingConfigurationInfo> attrs;
    abi::CUpti_PCSamplingConfigurationInfo a{};
    a.attributeType = abi::kPcSamplingAttrCollectionMode;
    a.attributeData.collectionMode = abi::kPcSamplingCollectionModeContinuous;
    attrs.push_back(a);
    a = {};
    a.attributeType = abi::kPcSamplingAttrEnableStartStopControl;
    a.attributeData.enableStartStopControl = 1;
    attrs.push_back(a);
    a = {};
    a.attributeType = abi::kPcSamplingAttrOutputDataFormat;
    a.attributeData.outputDataFormat = abi::kPcSamplingOutputDataFormatParsed;
    attrs.push_back(a);
    a = {};
    a.attributeType = abi::kPcSamplingAttrSamplingDataBuffer;
    a.attributeData.samplingDataBuffer = &pc.config_buffer.data;
    attrs.push_back(a);
    if (g->config.pc_period != 0) {
      a = {};
      a.attributeType = abi::kPcSamplingAttrSamplingPeriod;
      a.attributeData.samplingPeriod = g->config.pc_period;
      attrs.push_back(a);
    }
    abi::CUpti_PCSamplingConfigurationInfoParams cp{sizeof(cp), nullptr, pc.ctx, attrs.size(),
                                                    attrs.data()};
    if (g->api.cuptiPCSamplingSetConfigurationAttribute != nullptr) {
      r = g->api.cuptiPCSamplingSetConfigurationAttribute(&cp);
      if (r != abi::kSuccess) {
        Notify(wire::Severity::kWarning, static_cast<uint32_t>(r),
               "PC sampling configuration was refused (" + ResultString(r) + ")");
      }
    }
    pc.enabled = true;
    pc.stall_reasons = std::move(reasons);
    Emit(pc.stall_reasons);
  }
  if (!pc_running_ && now >= pc_next_window_) {
    for (auto& pc : pc_) {
      if (pc->enabled && g->api.cuptiPCSamplingStart != nullptr) {
        abi::CUpti_PCSamplingContextParams p{sizeof(p), nullptr, pc->ctx};
        g->api.cuptiPCSamplingStart(&p);
      }
    }
    pc_running_ = true;
    pc_window_start_ = NowNs(CLOCK_REALTIME);
    pc_next_window_ = now + static_cast<uint64_t>(g->config.pc_interval_ms) * 1'000'000;
    window_start_ns_ = now;
  } else if (pc_running_ &&
             now >= window_start_ns_ + static_cast<uint64_t>(g->config.pc_window_ms) * 1'000'000) {
    for (auto& pc : pc_) {
      if (pc->enabled && g->api.cuptiPCSamplingStop != nullptr) {
        abi::CUpti_PCSamplingContextParams p{sizeof(p), nullptr, pc->ctx};
        g->api.cuptiPCSamplingStop(&p);
        CollectPc(*pc);
      }
    }
    pc_running_ = false;
  }
}

void Flusher::Tick(uint64_t now) {
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
    Emit(agg);
  }
  aggregates_.clear();
  SendCounters();
  next_tick_ns_ = now + static_cast<uint64_t>(g->config.flush_ms) * 1'000'000;
}

void Flusher::WriteOut(int timeout_ms) {
  if (fd_ < 0) {
    return;
  }
  const uint64_t deadline = NowNs(CLOCK_MONOTONIC) + static_cast<uint64_t>(timeout_ms) * 1'000'000;
  while (out_sent_ < out_.size()) {
    const ssize_t n = send(fd_, out_.data() + out_sent_, out_.size() - out_sent_,
                           MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      out_sent_ += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      const uint64_t now = NowNs(CLOCK_MONOTONIC);
      if (now >= deadline) {
        break;
      }
      pollfd pfd{fd_, POLLOUT, 0};
      poll(&pfd, 1, static_cast<int>((deadline - now) / 1'000'000) + 1);
      continue;
    }
    Disconnect("send failed");
    return;
  }
  if (out_sent_ == out_.size()) {
    out_.clear();
    out_sent_ = 0;
    if (out_.capacity() > (static_cast<size_t>(g->config.out_kb) << 10) * 2) {
      out_.shrink_to_fit();
    }
  } else if (out_sent_ > out_.size() / 2) {
    out_.erase(0, out_sent_);
    out_sent_ = 0;
  }
}

void Flusher::Iterate(bool final_pass) {
  const uint64_t now = NowNs(CLOCK_MONOTONIC);
  MaybeConnect(now);
  ReadControl();
  SendNotices();
  DrainRings();
  ProcessBuffers();
  EmitKernels();
  if (!g->passive.load(std::memory_order_relaxed)) {
    PcSampling(now);
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
  WriteOut(final_pass ? 500 : 0);
}

void Flusher::Run() {
  next_tick_ns_ = NowNs(CLOCK_MONOTONIC) + static_cast<uint64_t>(g->config.flush_ms) * 1'000'000;
  // Connect at once: the agent reads the process's memory map when it accepts, and a short
  // process may be gone by the first drain interval.
  MaybeConnect(NowNs(CLOCK_MONOTONIC));
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
  if (fd_ < 0) {
    next_connect_ns_ = 0;
  }
  Iterate(true);
  if (fd_ >= 0) {
    shutdown(fd_, SHUT_WR);
  }
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

std::mutex g_start_mu;

void StartFlusher() {
  std::lock_guard lock(g_start_mu);
  if (g->flusher_started.load(std::memory_order_acquire)) {
    return;
  }
  try {
    // A fork child abandons the parent's flusher state (it may be mid-update); keep it reachable.
    Flusher* previous = g_flusher;
    g_flusher = new Flusher();
    g_flusher->abandoned_ = previous;
    g->flusher_stop = false;
    g->flusher_done = false;
    std::thread(FlusherMain).detach();
    g->flusher_started.store(true, std::memory_order_release);
  } catch (...) {
    g->callback_errors.fetch_add(1, std::memory_order_relaxed);
    g->flusher_started.store(true, std::memory_order_release);  // do not retry on every launch
  }
}

// --- exit and fork -------------------------------------------------------------------------------

void AtExit() noexcept {
  try {
    if (g == nullptr || !g->flusher_started.load(std::memory_order_acquire)) {
      return;
    }
    if (getpid() == g->cupti_pid && !g->passive.load(std::memory_order_relaxed)) {
      g->api.cuptiActivityFlushAll(abi::kActivityFlagFlushForced);
    }
    std::unique_lock lock(g->flusher_mu);
    g->flusher_stop = true;
    g->flusher_cv.notify_all();
    g->flusher_cv.wait_for(lock, std::chrono::seconds(2), [] { return g->flusher_done; });
  } catch (...) {
  }
}

void ForkPrepare() {
  g_start_mu.lock();
  g->pool_mu.lock();
  g->completed_mu.lock();
  g->ctx_mu.lock();
  g->cubin_mu.lock();
  g->notice_mu.lock();
}

void ForkParent() {
  g->notice_mu.unlock();
  g->cubin_mu.unlock();
  g->ctx_mu.unlock();
  g->completed_mu.unlock();
  g->pool_mu.unlock();
  g_start_mu.unlock();
}

void ForkChild() {
  ForkParent();
  // Only this thread survives: the flusher is gone (its mutex and state may be mid-use, so both
  // are replaced), rings and their owners are reset, buffers in flight belong to the parent.
  new (&g->flusher_mu) std::mutex();
  new (&g->flusher_cv) std::condition_variable();
  g->wake = false;
  g->flusher_started.store(false, std::memory_order_release);
  g->pid = getpid();
  for (const auto& c : g->completed) {
    g->free_buffers.push_back(c.buffer);  // the parent's data, not the child's
  }
  g->completed.clear();
  g->contexts.clear();
  for (uint32_t i = 0; i < g->config.max_threads; ++i) {
    ThreadSlot& s = g->slots[i];
    if (s.ring) {
      s.ring->ResetUnsafe();
    }
    s.seen.v.store(0);
    s.admitted.v.store(0);
    s.throttled.v.store(0);
    s.drops.v.store(0);
    s.overhead_ns.v.store(0);
    s.state.store(kSlotFree);
  }
  g->generation.fetch_add(1, std::memory_order_relaxed);
}

// --- initialization -------------------------------------------------------------------------------

// Sets the library passive and reports why, once.
void GoPassive(abi::CUptiResult code, const std::string& message) {
  g->passive.store(true, std::memory_order_relaxed);
  Notify(wire::Severity::kError, static_cast<uint32_t>(code), message);
}

void SetUpCupti() {
  std::string error;
  if (!LoadCupti(g->config.cupti_library, &g->api, &error)) {
    GoPassive(0, error);
    return;
  }
  g->api.cuptiGetVersion(&g->cupti_version);
  if (g->cupti_version < 18) {
    // 18 = CUDA 12.0; older record layouts are not decoded.
    GoPassive(0, "CUPTI API version " + std::to_string(g->cupti_version) +
                     " is older than CUDA 12.0; kernel profiling needs CUDA 12 or newer");
    return;
  }
  if (g->api.cuptiSetThreadIdType != nullptr) {
    g->api.cuptiSetThreadIdType(abi::kActivityThreadIdTypeSystem);
  }
  // cuptiSubscribe_v2 (CUDA 13) names us to other tools and tells us who holds CUPTI.
  char holder[abi::kOldSubscriberNameLen] = {};
  abi::CUptiResult r;
  if (g->api.cuptiSubscribe_v2 != nullptr) {
    abi::CUpti_SubscriberParams params{sizeof(params), "warpscope", holder, sizeof(holder)};
    r = g->api.cuptiSubscribe_v2(&g->subscriber, &Callback, nullptr, &params);
  } else {
    r = g->api.cuptiSubscribe(&g->subscriber, &Callback, nullptr);
  }
  if (r == abi::kErrorMultipleSubscribersNotSupported) {
    holder[sizeof(holder) - 1] = '\0';
    const std::string who = holder[0] != '\0' ? std::string(" (held by \"") + holder + "\")" : "";
    GoPassive(r,
              "CUPTI is already used by another tool in this process" + who +
                  ": Nsight Systems/Compute, torch.profiler/Kineto, compute-sanitizer or cuda-gdb; "
                  "warpscope kernel profiling is off for it. Stop the other tool or unset "
                  "CUDA_INJECTION64_PATH to choose one");
    return;
  }
  if (r != abi::kSuccess) {
    GoPassive(r, "cuptiSubscribe failed: " + ResultString(r) +
                     "; kernel profiling is off (is an NVIDIA driver loaded? CUPTI 13 needs r580 or newer)");
    return;
  }
  int enabled = 0;
  for (auto cbid : abi::kDriverLaunchCbids) {
    enabled += g->api.cuptiEnableCallback(1, g->subscriber, abi::kDomainDriverApi, cbid) == abi::kSuccess;
  }
  for (auto cbid : abi::kRuntimeLaunchCbids) {
    // Ids newer than the loaded CUPTI fail individually; that is expected.
    g->api.cuptiEnableCallback(1, g->subscriber, abi::kDomainRuntimeApi, cbid);
  }
  for (auto cbid : {abi::kCbidResourceContextCreated, abi::kCbidResourceContextDestroyStarting,
                    abi::kCbidResourceModuleLoaded}) {
    g->api.cuptiEnableCallback(1, g->subscriber, abi::kDomainResource, cbid);
  }
  if (enabled == 0) {
    g->api.cuptiUnsubscribe(g->subscriber);
    GoPassive(0, "CUPTI accepted none of the kernel launch callbacks; kernel profiling is off");
    return;
  }
  r = g->api.cuptiActivityRegisterCallbacks(&BufferRequested, &BufferCompleted);
  if (r == abi::kSuccess) {
    r = g->api.cuptiActivityEnable(abi::kActivityConcurrentKernel);
  }
  if (r != abi::kSuccess) {
    g->api.cuptiUnsubscribe(g->subscriber);
    GoPassive(r, "CUPTI kernel activity could not be enabled: " + ResultString(r) +
                     "; another tool may own the activity API. Kernel profiling is off");
    return;
  }
  if (g->config.memcpy) {
    g->api.cuptiActivityEnable(abi::kActivityMemcpy);
    g->api.cuptiActivityEnable(abi::kActivityMemset);
  }
  if (g->config.nvtx) {
    g->api.cuptiActivityEnable(abi::kActivityMarker);
  }
  if (g->config.launch_api_records && g->api.cuptiActivityEnableDriverApi != nullptr) {
    for (auto cbid : abi::kDriverLaunchCbids) {
      g->api.cuptiActivityEnableDriverApi(cbid, 1);
    }
  }
  if (g->api.cuptiActivityFlushPeriod != nullptr) {
    g->api.cuptiActivityFlushPeriod(g->config.flush_ms);
  }
  g->passive.store(false, std::memory_order_relaxed);
}

int Initialize() {
  g = new Global();
  std::vector<std::string> warnings;
  g->config = ReadInjectConfig(::getenv, &warnings);
  g->pid = getpid();
  g->cupti_pid = g->pid;
  g->start_realtime_ns = NowNs(CLOCK_REALTIME);
  g->rate.store(g->config.rate);
  g->burst.store(g->config.burst);
  g->enabled.store(g->config.enabled);
  g->pc_wanted.store(g->config.pc_sampling);
  g->all_kernels_cycle.store(g->config.AllKernelsCycle().Pack());
  g->slots = std::make_unique<ThreadSlot[]>(g->config.max_threads);
  g->interned = std::make_unique<std::atomic<uint64_t>[]>(kInternSize);
  for (auto& w : warnings) {
    Notify(wire::Severity::kWarning, 0, w);
  }
  WarmUpUnwinder();
  SetUpCupti();
  std::atexit([] { AtExit(); });
  pthread_atfork(&ForkPrepare, &ForkParent, &ForkChild);
  StartFlusher();
  return 1;
}

}  // namespace

int InitializeInjectionOnce() noexcept {
  static std::once_flag once;
  static int result = 0;
  try {
    std::call_once(once, [] { result = Initialize(); });
  } catch (...) {
    result = 1;
  }
  return result;
}

}  // namespace warpscope::cupti_inject

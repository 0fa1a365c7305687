// SPDX-License-Identifier: Apache-2.0
// An in-memory libcupti for tests (see fake_cupti.h). Implements the entry points of
// cupti/abi.h's WARPSCOPE_CUPTI_FUNCTIONS with CUDA 13.0 behaviour where the tests depend on it:
// single subscriber, per-cbid callbacks, activity buffers requested from and completed to the
// client (records split over several buffers, optionally completed in reverse order), the
// PC-sampling calls, cuptiGetCubinCrc, and the two libcuda calls the library makes
// (cuCtxPushCurrent_v2, cuCtxPopCurrent_v2).
//
// Chosen by environment variables, read once when the library loads (or by the hooks):
//   WARPSCOPE_FAKE_CUPTI_VERSION=N       cuptiGetVersion (default 130001); the PC records are
//                                        written in that version's layout
//                                        (abi::PcSamplingLayoutFor)
//   WARPSCOPE_FAKE_CUPTI_BUFFERS=sync    buffers are completed synchronously inside
//                                        cuptiActivityFlushAll, on its caller's thread; default
//                                        (or =async): on the fake's own thread, every 2 ms and
//                                        when cuptiActivityFlushAll asks (which blocks until
//                                        then, as CUPTI's does), as CUPTI completes them
//   WARPSCOPE_FAKE_CUPTI_CORRELATION=distinct  the driver call nested in a runtime launch gets
//                                        a correlation id of its own (the kernel record keeps the
//                                        runtime call's); default (or =shared): both share one id
//   WARPSCOPE_FAKE_CUPTI_PRESET=cuda12   version 21 (CUDA 12.3), distinct (each of the above
//                                        still overrides it)
// Strict where CUPTI may be: every PC-sampling call must have its context current on the calling
// thread (else CUPTI_ERROR_INVALID_CONTEXT), and the client's record `size` and data `size` must
// be those of the reported version's layout (else CUPTI_ERROR_INVALID_PARAMETER).
#include "fakes/cupti/fake_cupti.h"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "cupti/abi.h"

namespace {

namespace abi = ::warpscope::cupti::abi;

struct PcSample {
  uint64_t crc;
  std::string function;
  uint64_t pc_offset;
  uint32_t reason;
  uint32_t samples;
};

struct PcContext {
  bool enabled = false;
  bool started = false;  // a window was opened once (GetData delivers from then on)
  bool open = false;     // between Start and Stop
  std::vector<PcSample> samples;
};

// Indices are CUPTI's choice per device (not ordered by name); the names are the ones CUPTI 12
// reports.
constexpr uint32_t kStallIndices[] = {3, 7, 12, 20, 14, 9, 18, 13, 8};
constexpr const char* kStallNames[] = {
    "smsp__pcsamp_warps_issue_stalled_barrier",
    "smsp__pcsamp_warps_issue_stalled_long_scoreboard",
    "smsp__pcsamp_warps_issue_stalled_math_pipe_throttle",
    "smsp__pcsamp_warps_issue_stalled_selected",
    "smsp__pcsamp_warps_issue_stalled_short_scoreboard",
    "smsp__pcsamp_warps_issue_stalled_mio_throttle",
    "smsp__pcsamp_warps_issue_stalled_wait",
    "smsp__pcsamp_warps_issue_stalled_not_selected",
    "smsp__pcsamp_warps_issue_stalled_lg_throttle",
};
static_assert(std::size(kStallIndices) == std::size(kStallNames));

constexpr abi::CUptiResult kErrorInvalidContext = 3;  // CUPTI_ERROR_INVALID_CONTEXT

uint32_t EnvU32(const char* name, uint32_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? static_cast<uint32_t>(std::strtoul(v, nullptr, 10))
                                    : fallback;
}
bool EnvIs(const char* name, const char* value) {
  const char* v = std::getenv(name);
  return v != nullptr && std::strcmp(v, value) == 0;
}
// WARPSCOPE_FAKE_CUPTI_PRESET=cuda12: CUDA 12.3 (API version 21, 56-byte PC records) and
// distinct driver correlation ids, unless a variable above says otherwise. One variable, so that a ctest can select the whole CUDA 12 path.
bool Cuda12Preset() { return EnvIs("WARPSCOPE_FAKE_CUPTI_PRESET", "cuda12"); }
bool Choice(const char* name, const char* on, const char* off, bool preset) {
  return EnvIs(name, on) || (preset && !EnvIs(name, off));
}

struct State {
  std::mutex mu;
  uint32_t version = EnvU32("WARPSCOPE_FAKE_CUPTI_VERSION", Cuda12Preset() ? 21 : 130001);
  bool async_buffers = !EnvIs("WARPSCOPE_FAKE_CUPTI_BUFFERS", "sync");
  bool distinct_correlation =
      Choice("WARPSCOPE_FAKE_CUPTI_CORRELATION", "distinct", "shared", Cuda12Preset());
  // The asynchronous delivery thread (async_buffers): started in the process that first needs
  // it (a fork child starts its own). flush_requested/flush_done count FlushAll requests.
  pid_t worker_pid = 0;
  std::condition_variable worker_cv;
  uint64_t flush_requested = 0;
  uint64_t flush_done = 0;
  std::atomic<uint64_t> buffers_completed{0};
  std::atomic<uint64_t> buffers_completed_by_worker{0};
  std::atomic<int> pc_context_errors{0};
  std::atomic<int> pc_layout_errors{0};
  int subscribe_result = abi::kSuccess;
  bool subscribed = false;
  abi::CUpti_CallbackFunc callback = nullptr;
  void* userdata = nullptr;
  std::set<std::pair<int, uint32_t>> enabled;
  std::set<int> kinds;
  abi::CUpti_BuffersCallbackRequestFunc request = nullptr;
  abi::CUpti_BuffersCallbackCompleteFunc complete = nullptr;
  std::vector<std::vector<uint8_t>> pending;  // serialized records
  size_t per_buffer = 64;
  bool reverse = false;
  size_t dropped = 0;
  std::map<void*, PcContext> pc;
  std::atomic<int> pc_starts{0};
  std::atomic<uint32_t> next_correlation{1};
};

State& S() {
  static State* s = new State();
  return *s;
}

// Keeps the fake's lock consistent across fork, as a real library would.
[[maybe_unused]] const bool kForkHandlers = [] {
  S();
  pthread_atfork([] { S().mu.lock(); }, [] { S().mu.unlock(); }, [] { S().mu.unlock(); });
  return true;
}();

void EnsureWorker();

size_t RecordSize(int kind) {
  switch (kind) {
    case abi::kActivityConcurrentKernel:
    case abi::kActivityKernel:
      return sizeof(abi::CUpti_ActivityKernel10);
    case abi::kActivityMemcpy:
      return sizeof(abi::CUpti_ActivityMemcpy6);
    case abi::kActivityMemset:
      return sizeof(abi::CUpti_ActivityMemset4);
    case abi::kActivityMarker:
      return sizeof(abi::CUpti_ActivityMarker2);
    case abi::kActivityMemory2:
      return sizeof(abi::CUpti_ActivityMemory4);
    default:
      return 0;
  }
}

template <typename T>
void Queue(const T& rec, int kind) {
  std::lock_guard lock(S().mu);
  if (!S().kinds.contains(kind)) {
    return;
  }
  std::vector<uint8_t> bytes(sizeof(T));
  std::memcpy(bytes.data(), &rec, sizeof(T));
  S().pending.push_back(std::move(bytes));
  if (S().async_buffers) {
    EnsureWorker();  // delivers at its own time from now on
  }
}

void Fire(int domain, uint32_t cbid, const void* data) {
  abi::CUpti_CallbackFunc cb = nullptr;
  void* user = nullptr;
  {
    std::lock_guard lock(S().mu);
    if (!S().subscribed || !S().enabled.contains({domain, cbid})) {
      return;
    }
    cb = S().callback;
    user = S().userdata;
  }
  cb(user, domain, cbid, data);
}

uint64_t Crc(const void* data, size_t size) {
  uint64_t h = 0x84222325cbf29ce4ull;
  const auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < size; ++i) {
    h = (h ^ p[i]) * 0x100000001b3ull;
  }
  return h;
}

thread_local std::vector<abi::CUcontext> t_current;  // cuCtxPushCurrent_v2's stack

// PC-sampling calls need their context current on the calling thread (see the header comment).
bool ContextIsCurrent(abi::CUcontext ctx) {
  if (!t_current.empty() && t_current.back() == ctx) {
    return true;
  }
  S().pc_context_errors.fetch_add(1);
  return false;
}

// Hands every pending record to the client: buffers requested, filled and completed.
void DeliverPending(bool by_worker) {
  std::vector<std::vector<uint8_t>> records;
  abi::CUpti_BuffersCallbackRequestFunc request;
  abi::CUpti_BuffersCallbackCompleteFunc complete;
  size_t per_buffer;
  bool reverse;
  {
    std::lock_guard lock(S().mu);
    records.swap(S().pending);
    request = S().request;
    complete = S().complete;
    per_buffer = S().per_buffer;
    reverse = S().reverse;
  }
  if (request == nullptr || complete == nullptr || records.empty()) {
    return;
  }
  struct Filled {
    uint8_t* buffer;
    size_t size;
    size_t valid;
  };
  std::vector<Filled> filled;
  size_t dropped = 0;
  for (size_t i = 0; i < records.size(); i += per_buffer) {
    uint8_t* buffer = nullptr;
    size_t size = 0;
    size_t max_records = 0;
    request(&buffer, &size, &max_records);
    const size_t end = std::min(records.size(), i + per_buffer);
    if (buffer == nullptr) {
      dropped += end - i;
      continue;
    }
    size_t valid = 0;
    for (size_t r = i; r < end; ++r) {
      if (valid + records[r].size() > size) {
        ++dropped;
        continue;
      }
      std::memcpy(buffer + valid, records[r].data(), records[r].size());
      valid += records[r].size();
    }
    filled.push_back({buffer, size, valid});
  }
  {
    std::lock_guard lock(S().mu);
    S().dropped += dropped;
  }
  if (reverse) {
    std::reverse(filled.begin(), filled.end());
  }
  for (const auto& f : filled) {
    complete(nullptr, 0, f.buffer, f.size, f.valid);
    S().buffers_completed.fetch_add(1);
    if (by_worker) {
      S().buffers_completed_by_worker.fetch_add(1);
    }
  }
}

// The fake's own delivery thread: every 2 ms, and at once when FlushAll asks.
void WorkerMain() {
  std::unique_lock lock(S().mu);
  while (true) {
    S().worker_cv.wait_for(lock, std::chrono::milliseconds(2),
                           [] { return S().flush_requested > S().flush_done; });
    const uint64_t ticket = S().flush_requested;
    lock.unlock();
    DeliverPending(/*by_worker=*/true);
    lock.lock();
    S().flush_done = std::max(S().flush_done, ticket);
    S().worker_cv.notify_all();
  }
}

// Starts the delivery thread of this process; S().mu held.
void EnsureWorker() {
  if (S().worker_pid == getpid()) {
    return;
  }
  S().worker_pid = getpid();
  S().flush_done = S().flush_requested;  // a fork child does not wait for the parent's thread
  std::thread(WorkerMain).detach();
}

// In async mode, a report of who completed the buffers, printed when the process exits (after
// the profiler's own exit flush: this handler was registered first).
[[maybe_unused]] const bool kExitReport = [] {
  if (S().async_buffers) {
    std::atexit([] {
      std::printf("fake_cupti buffers=%lu by_worker=%lu\n",
                  static_cast<unsigned long>(S().buffers_completed.load()),
                  static_cast<unsigned long>(S().buffers_completed_by_worker.load()));
      std::fflush(stdout);
    });
  }
  return true;
}();

}  // namespace

extern "C" {

// --- libcuda calls the library makes -----------------------------------------------------------

int cuCtxPushCurrent_v2(abi::CUcontext ctx) {
  t_current.push_back(ctx);
  return 0;
}

int cuCtxPopCurrent_v2(abi::CUcontext* ctx) {
  if (t_current.empty()) {
    return 201;  // CUDA_ERROR_INVALID_CONTEXT
  }
  if (ctx != nullptr) {
    *ctx = t_current.back();
  }
  t_current.pop_back();
  return 0;
}

// --- CUPTI entry points ------------------------------------------------------------------------

abi::CUptiResult cuptiGetVersion(uint32_t* version) {
  *version = S().version;
  return abi::kSuccess;
}

abi::CUptiResult cuptiGetResultString(abi::CUptiResult result, const char** str) {
  *str = result == abi::kErrorMultipleSubscribersNotSupported
             ? "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"
             : "CUPTI_ERROR_FAKE";
  return abi::kSuccess;
}

abi::CUptiResult cuptiSubscribe(abi::CUpti_SubscriberHandle* subscriber,
                                abi::CUpti_CallbackFunc callback, void* userdata) {
  std::lock_guard lock(S().mu);
  if (S().subscribe_result != abi::kSuccess) {
    return S().subscribe_result;
  }
  if (S().subscribed) {
    return abi::kErrorMultipleSubscribersNotSupported;
  }
  S().subscribed = true;
  S().callback = callback;
  S().userdata = userdata;
  *subscriber = reinterpret_cast<abi::CUpti_SubscriberHandle>(&S());
  return abi::kSuccess;
}

abi::CUptiResult cuptiSubscribe_v2(abi::CUpti_SubscriberHandle* subscriber,
                                   abi::CUpti_CallbackFunc callback, void* userdata,
                                   abi::CUpti_SubscriberParams* params) {
  const abi::CUptiResult r = cuptiSubscribe(subscriber, callback, userdata);
  if (r == abi::kErrorMultipleSubscribersNotSupported && params != nullptr &&
      params->oldSubscriberName != nullptr && params->oldSubscriberSize > 0) {
    std::strncpy(params->oldSubscriberName, "CUPTI for FakeOtherTool",
                 params->oldSubscriberSize - 1);
    params->oldSubscriberName[params->oldSubscriberSize - 1] = '\0';
  }
  return r;
}

abi::CUptiResult cuptiUnsubscribe(abi::CUpti_SubscriberHandle) {
  std::lock_guard lock(S().mu);
  S().subscribed = false;
  S().enabled.clear();
  return abi::kSuccess;
}

abi::CUptiResult cuptiEnableCallback(uint32_t enable, abi::CUpti_SubscriberHandle,
                                     abi::CUpti_CallbackDomain domain, abi::CUpti_CallbackId cbid) {
  std::lock_guard lock(S().mu);
  if (enable) {
    S().enabled.insert({domain, cbid});
  } else {
    S().enabled.erase({domain, cbid});
  }
  return abi::kSuccess;
}

abi::CUptiResult cuptiActivityEnable(abi::CUpti_ActivityKind kind) {
  if (kind == abi::kActivityKernel) {
    return abi::kErrorNotSupported;  // the library must never serialize kernels
  }
  std::lock_guard lock(S().mu);
  S().kinds.insert(kind);
  return abi::kSuccess;
}

abi::CUptiResult cuptiActivityDisable(abi::CUpti_ActivityKind kind) {
  std::lock_guard lock(S().mu);
  S().kinds.erase(kind);
  return abi::kSuccess;
}

abi::CUptiResult cuptiActivityRegisterCallbacks(abi::CUpti_BuffersCallbackRequestFunc request,
                                                abi::CUpti_BuffersCallbackCompleteFunc complete) {
  std::lock_guard lock(S().mu);
  S().request = request;
  S().complete = complete;
  return abi::kSuccess;
}

abi::CUptiResult cuptiActivityGetNextRecord(uint8_t* buffer, size_t valid,
                                            abi::CUpti_Activity** record) {
  uint8_t* next = buffer;
  if (*record != nullptr) {
    auto* cur = reinterpret_cast<uint8_t*>(*record);
    next = cur + RecordSize((*record)->kind);
  }
  if (next + sizeof(abi::CUpti_Activity) > buffer + valid) {
    return abi::kErrorMaxLimitReached;
  }
  auto* rec = reinterpret_cast<abi::CUpti_Activity*>(next);
  const size_t size = RecordSize(rec->kind);
  if (size == 0 || next + size > buffer + valid) {
    return abi::kErrorMaxLimitReached;
  }
  *record = rec;
  return abi::kSuccess;
}

abi::CUptiResult cuptiActivityGetNumDroppedRecords(abi::CUcontext, uint32_t, size_t* dropped) {
  std::lock_guard lock(S().mu);
  *dropped = S().dropped;
  S().dropped = 0;
  return abi::kSuccess;
}

abi::CUptiResult cuptiActivityFlushAll(uint32_t) {
  if (!S().async_buffers) {
    DeliverPending(/*by_worker=*/false);
    return abi::kSuccess;
  }
  // Blocking, as CUPTI's: returns once the fake's thread delivered what was pending.
  std::unique_lock lock(S().mu);
  EnsureWorker();
  const uint64_t ticket = ++S().flush_requested;
  S().worker_cv.notify_all();
  S().worker_cv.wait_for(lock, std::chrono::seconds(5),
                         [ticket] { return S().flush_done >= ticket; });
  return abi::kSuccess;
}

abi::CUptiResult cuptiActivityFlushPeriod(uint32_t) { return abi::kSuccess; }
abi::CUptiResult cuptiActivitySetAttribute(int, size_t*, void*) { return abi::kSuccess; }
abi::CUptiResult cuptiSetThreadIdType(int) { return abi::kSuccess; }
abi::CUptiResult cuptiFinalize() { return abi::kSuccess; }
abi::CUptiResult cuptiActivityEnableDriverApi(abi::CUpti_CallbackId, uint8_t) {
  return abi::kSuccess;
}

abi::CUptiResult cuptiGetTimestamp(uint64_t* timestamp) {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  *timestamp = static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + ts.tv_nsec;
  return abi::kSuccess;
}

abi::CUptiResult cuptiGetStreamIdEx(abi::CUcontext, abi::CUstream stream, uint8_t,
                                    uint32_t* stream_id) {
  *stream_id = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(stream) & 0xffff);
  return abi::kSuccess;
}

abi::CUptiResult cuptiGetCubinCrc(abi::CUpti_GetCubinCrcParams* p) {
  if (p == nullptr || p->cubin == nullptr) {
    return abi::kErrorInvalidParameter;
  }
  p->cubinCrc = Crc(p->cubin, p->cubinSize);
  return abi::kSuccess;
}

abi::CUptiResult cuptiPCSamplingEnable(abi::CUpti_PCSamplingContextParams* p) {
  if (!ContextIsCurrent(p->ctx)) {
    return kErrorInvalidContext;
  }
  std::lock_guard lock(S().mu);
  S().pc[p->ctx].enabled = true;
  return abi::kSuccess;
}

abi::CUptiResult cuptiPCSamplingDisable(abi::CUpti_PCSamplingContextParams* p) {
  if (!ContextIsCurrent(p->ctx)) {
    return kErrorInvalidContext;
  }
  std::lock_guard lock(S().mu);
  S().pc[p->ctx].enabled = false;
  return abi::kSuccess;
}

abi::CUptiResult cuptiPCSamplingStart(abi::CUpti_PCSamplingContextParams* p) {
  if (!ContextIsCurrent(p->ctx)) {
    return kErrorInvalidContext;
  }
  std::lock_guard lock(S().mu);
  auto& pc = S().pc[p->ctx];
  if (!pc.enabled) {
    return abi::kErrorInvalidParameter;
  }
  pc.started = true;
  pc.open = true;
  S().pc_starts.fetch_add(1);
  return abi::kSuccess;
}

abi::CUptiResult cuptiPCSamplingStop(abi::CUpti_PCSamplingContextParams* p) {
  if (!ContextIsCurrent(p->ctx)) {
    return kErrorInvalidContext;
  }
  std::lock_guard lock(S().mu);
  auto& pc = S().pc[p->ctx];
  if (!pc.enabled) {
    return abi::kErrorInvalidParameter;
  }
  pc.open = false;
  return abi::kSuccess;
}

abi::CUptiResult cuptiPCSamplingGetNumStallReasons(
    abi::CUpti_PCSamplingGetNumStallReasonsParams* p) {
  if (!ContextIsCurrent(p->ctx)) {
    return kErrorInvalidContext;
  }
  std::lock_guard lock(S().mu);
  if (!S().pc[p->ctx].enabled) {
    return abi::kErrorInvalidParameter;  // every call but Enable needs Enable first
  }
  *p->numStallReasons = std::size(kStallIndices);
  return abi::kSuccess;
}

abi::CUptiResult cuptiPCSamplingGetStallReasons(abi::CUpti_PCSamplingGetStallReasonsParams* p) {
  if (!ContextIsCurrent(p->ctx)) {
    return kErrorInvalidContext;
  }
  const size_t n = std::min(p->numStallReasons, std::size(kStallIndices));
  for (size_t i = 0; i < n; ++i) {
    p->stallReasonIndex[i] = kStallIndices[i];
    std::strncpy(p->stallReasons[i], kStallNames[i], abi::kStallReasonNameMax - 1);
    p->stallReasons[i][abi::kStallReasonNameMax - 1] = '\0';
  }
  return abi::kSuccess;
}

abi::CUptiResult cuptiPCSamplingSetConfigurationAttribute(
    abi::CUpti_PCSamplingConfigurationInfoParams* p) {
  if (!ContextIsCurrent(p->ctx)) {
    return kErrorInvalidContext;
  }
  const abi::PcSamplingLayout layout = abi::PcSamplingLayoutFor(S().version);
  for (size_t i = 0; i < p->numAttributes; ++i) {
    const auto& a = p->pPCSamplingConfigurationInfo[i];
    if (a.attributeType == abi::kPcSamplingAttrSamplingPeriod &&
        (a.attributeData.samplingPeriod < 5 || a.attributeData.samplingPeriod > 31)) {
      return abi::kErrorInvalidParameter;
    }
    if (a.attributeType == abi::kPcSamplingAttrSamplingDataBuffer) {
      const auto* data =
          static_cast<const abi::CUpti_PCSamplingData*>(a.attributeData.samplingDataBuffer);
      if (data == nullptr || data->size != layout.data_size) {
        S().pc_layout_errors.fetch_add(1);
        return abi::kErrorInvalidParameter;
      }
    }
  }
  return abi::kSuccess;
}

// Writes the queued samples as records of the reported version's layout. Records of one call
// that name the same function share one malloc'd string, as CUPTI's may: the client must free
// each distinct pointer once.
abi::CUptiResult cuptiPCSamplingGetData(abi::CUpti_PCSamplingGetDataParams* p) {
  if (!ContextIsCurrent(p->ctx)) {
    return kErrorInvalidContext;
  }
  auto* data = static_cast<abi::CUpti_PCSamplingData*>(p->pcSamplingData);
  std::lock_guard lock(S().mu);
  auto& pc = S().pc[p->ctx];
  if (!pc.enabled || data == nullptr || data->pPcData == nullptr) {
    return abi::kErrorInvalidParameter;
  }
  const abi::PcSamplingLayout layout = abi::PcSamplingLayoutFor(S().version);
  auto* base = reinterpret_cast<uint8_t*>(data->pPcData);
  auto record = [&](size_t i) {
    return reinterpret_cast<abi::CUpti_PCSamplingPCData_v1*>(base + i * layout.pc_record_size);
  };
  bool sizes_ok = data->size == layout.data_size;
  for (size_t i = 0; sizes_ok && i < data->collectNumPcs; ++i) {
    sizes_ok = record(i)->size == layout.pc_record_size;
  }
  if (!sizes_ok) {
    S().pc_layout_errors.fetch_add(1);
    return abi::kErrorInvalidParameter;
  }
  data->totalNumPcs = 0;
  data->totalSamples = 0;
  data->droppedSamples = 0;
  data->remainingNumPcs = 0;
  if (!pc.started) {
    return abi::kSuccess;
  }
  const size_t n = std::min(pc.samples.size(), data->collectNumPcs);
  std::map<std::string, char*> names;
  for (size_t i = 0; i < n; ++i) {
    const auto& s = pc.samples[i];
    auto& d = *record(i);
    d.cubinCrc = s.crc;
    d.pcOffset = s.pc_offset;
    d.functionIndex = 0;
    char*& name = names[s.function];
    if (name == nullptr) {
      name = strdup(s.function.c_str());  // the caller frees it, once
    }
    d.functionName = name;
    d.stallReasonCount = 1;
    d.stallReason[0] = {s.reason, s.samples};
    if (layout.has_correlation_id) {
      const uint32_t zero = 0;  // continuous mode: always 0
      std::memcpy(
          base + i * layout.pc_record_size + offsetof(abi::CUpti_PCSamplingPCData, correlationId),
          &zero, sizeof(zero));
    }
    data->totalSamples += s.samples;
  }
  data->totalNumPcs = n;
  pc.samples.erase(pc.samples.begin(), pc.samples.begin() + static_cast<ptrdiff_t>(n));
  data->remainingNumPcs = pc.samples.size();
  return abi::kSuccess;
}

// --- test hooks --------------------------------------------------------------------------------

void FakeCuptiSetSubscribeResult(int result) {
  std::lock_guard lock(S().mu);
  S().subscribe_result = result;
}

int FakeCuptiIsCallbackEnabled(int domain, uint32_t cbid) {
  std::lock_guard lock(S().mu);
  return S().enabled.contains({domain, cbid}) ? 1 : 0;
}

uint32_t FakeCuptiLaunch(int domain, uint32_t cbid, const char* symbol, void* context) {
  const uint32_t corr = S().next_correlation.fetch_add(1);
  uint64_t correlation_data = 0;
  abi::CUpti_CallbackData d{};
  d.functionName = "fakeLaunch";
  d.symbolName = symbol;
  d.context = static_cast<abi::CUcontext>(context);
  d.contextUid = 1;
  d.correlationData = &correlation_data;
  d.correlationId = corr;
  d.callbackSite = abi::kApiEnter;
  Fire(domain, cbid, &d);
  if (domain == abi::kDomainRuntimeApi) {
    abi::CUpti_CallbackData nested = d;
    if (S().distinct_correlation) {
      nested.correlationId = S().next_correlation.fetch_add(1);  // the driver call's own id
    }
    Fire(abi::kDomainDriverApi, abi::kCbidCuLaunchKernel, &nested);
    nested.callbackSite = abi::kApiExit;
    Fire(abi::kDomainDriverApi, abi::kCbidCuLaunchKernel, &nested);
  }
  d.callbackSite = abi::kApiExit;
  Fire(domain, cbid, &d);
  return corr;
}

void FakeCuptiAddKernel(uint32_t correlation_id, const char* name, uint32_t device, uint32_t stream,
                        uint64_t start_ns, uint64_t end_ns, uint32_t graph_id,
                        uint64_t graph_node_id) {
  abi::CUpti_ActivityKernel10 k{};
  k.kind = abi::kActivityConcurrentKernel;
  k.correlationId = correlation_id;
  k.name = name;
  k.deviceId = device;
  k.contextId = 1;
  k.streamId = stream;
  k.start = start_ns;
  k.end = end_ns;
  k.gridX = 128;
  k.gridY = 1;
  k.gridZ = 1;
  k.blockX = 256;
  k.blockY = 1;
  k.blockZ = 1;
  k.registersPerThread = 32;
  k.staticSharedMemory = 1024;
  k.graphId = graph_id;
  k.graphNodeId = graph_node_id;
  Queue(k, abi::kActivityConcurrentKernel);
}

void FakeCuptiAddMemcpy(uint32_t correlation_id, uint8_t copy_kind, uint64_t bytes,
                        uint64_t start_ns, uint64_t end_ns) {
  FakeCuptiAddMemcpyOn(correlation_id, copy_kind, bytes, start_ns, end_ns, 0, 7);
}

void FakeCuptiAddMemcpyOn(uint32_t correlation_id, uint8_t copy_kind, uint64_t bytes,
                          uint64_t start_ns, uint64_t end_ns, uint32_t device, uint32_t stream) {
  abi::CUpti_ActivityMemcpy6 m{};
  m.kind = abi::kActivityMemcpy;
  m.copyKind = copy_kind;
  m.bytes = bytes;
  m.start = start_ns;
  m.end = end_ns;
  m.correlationId = correlation_id;
  m.deviceId = device;
  m.contextId = 1;
  m.streamId = stream;
  Queue(m, abi::kActivityMemcpy);
}

void FakeCuptiAddMemset(uint32_t correlation_id, uint64_t bytes, uint64_t start_ns,
                        uint64_t end_ns, uint32_t device, uint32_t stream) {
  abi::CUpti_ActivityMemset4 m{};
  m.kind = abi::kActivityMemset;
  m.bytes = bytes;
  m.start = start_ns;
  m.end = end_ns;
  m.deviceId = device;
  m.contextId = 1;
  m.streamId = stream;
  m.correlationId = correlation_id;
  m.memoryKind = abi::kMemoryKindDevice;
  Queue(m, abi::kActivityMemset);
}

void FakeCuptiAddMemory(int operation, int memory_kind, uint32_t device, uint64_t address,
                        uint64_t bytes, uint64_t timestamp_ns) {
  abi::CUpti_ActivityMemory4 m{};
  m.kind = abi::kActivityMemory2;
  m.memoryOperationType = operation;
  m.memoryKind = memory_kind;
  m.address = address;
  m.bytes = bytes;
  m.timestamp = timestamp_ns;
  m.processId = static_cast<uint32_t>(getpid());
  m.deviceId = device;
  m.contextId = 1;
  Queue(m, abi::kActivityMemory2);
}

void FakeCuptiAddMarker(uint32_t id, uint32_t flags, uint64_t timestamp_ns, const char* name,
                        uint32_t tid) {
  abi::CUpti_ActivityMarker2 m{};
  m.kind = abi::kActivityMarker;
  m.flags = flags;
  m.timestamp = timestamp_ns;
  m.id = id;
  m.objectKind = abi::kActivityObjectThread;
  m.objectThreadId = tid;
  m.name = name;
  m.domain = nullptr;
  Queue(m, abi::kActivityMarker);
}

void FakeCuptiSetDelivery(size_t records_per_buffer, int reverse) {
  std::lock_guard lock(S().mu);
  S().per_buffer = std::max<size_t>(1, records_per_buffer);
  S().reverse = reverse != 0;
}

void FakeCuptiContextCreated(void* context) {
  abi::CUpti_ResourceData r{};
  r.context = static_cast<abi::CUcontext>(context);
  Fire(abi::kDomainResource, abi::kCbidResourceContextCreated, &r);
}

void FakeCuptiModuleLoaded(void* context, uint32_t module_id, const void* cubin, size_t size) {
  abi::CUpti_ModuleResourceData m{};
  m.moduleId = module_id;
  m.cubinSize = size;
  m.pCubin = static_cast<const char*>(cubin);
  abi::CUpti_ResourceData r{};
  r.context = static_cast<abi::CUcontext>(context);
  r.resourceDescriptor = &m;
  Fire(abi::kDomainResource, abi::kCbidResourceModuleLoaded, &r);
}

void FakeCuptiAddPcSample(void* context, uint64_t cubin_crc, const char* function,
                          uint64_t pc_offset, uint32_t stall_reason_index, uint32_t samples) {
  std::lock_guard lock(S().mu);
  S().pc[context].samples.push_back({cubin_crc, function, pc_offset, stall_reason_index, samples});
}

int FakeCuptiPcSamplingStarts(void) { return S().pc_starts.load(); }

uint32_t FakeCuptiStallReasonIndex(const char* name) {
  constexpr std::string_view kPrefix = "smsp__pcsamp_warps_issue_stalled_";
  for (size_t i = 0; i < std::size(kStallNames); ++i) {
    if (std::string_view(kStallNames[i]).substr(kPrefix.size()) == name) return kStallIndices[i];
  }
  return UINT32_MAX;
}

int FakeCuptiPcSamplingActive(void* context) {
  std::lock_guard lock(S().mu);
  auto it = S().pc.find(context);
  return it != S().pc.end() && it->second.enabled && it->second.open ? 1 : 0;
}

int FakeCuptiPcErrors(void) { return S().pc_context_errors.load() + S().pc_layout_errors.load(); }

void FakeCuptiSetVersion(uint32_t version) {
  std::lock_guard lock(S().mu);
  S().version = version;
}

size_t FakeCuptiPendingRecords(void) {
  std::lock_guard lock(S().mu);
  return S().pending.size();
}

}  // extern "C"

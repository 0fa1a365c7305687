// SPDX-License-Identifier: Apache-2.0
#include "nccl_plugin/plugin.h"

#include <pthread.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "ipc/agent_connection.h"
#include "nccl_plugin/config.h"

namespace warpscope::nccl_plugin {
namespace {

inline constexpr uint32_t kLibraryVersion = 101;  // major*10000 + minor*100 + patch
inline constexpr uint64_t kCountersEveryNs = 1'000'000'000;

uint64_t NowNs(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}
uint64_t RealtimeNs() { return NowNs(CLOCK_REALTIME); }
uint64_t MonotonicNs() { return NowNs(CLOCK_MONOTONIC); }

struct Plugin {
  PluginConfig config;
  std::unique_ptr<Recorder> recorder;
  std::atomic<abi::Logger> nccl_log{nullptr};
  uint64_t start_realtime_ns = 0;
  std::mutex mu;  // start/stop of the flusher; the fork handlers hold it across fork
  std::condition_variable cv;
  bool flusher_running = false;  // GUARDED_BY(mu)
  bool stop = false;             // GUARDED_BY(mu)
  bool done = false;             // GUARDED_BY(mu)
  bool wake = false;             // GUARDED_BY(mu)
  std::thread* thread = nullptr;  // GUARDED_BY(mu); leaked in a fork child
};

Plugin* g = nullptr;
std::atomic<uint64_t> g_callback_errors{0};
std::once_flag g_once;

std::string DefaultPath() {
  return DefaultSocket(::getenv, [](const char* p) {
    struct stat st;
    return stat(p, &st) == 0;
  });
}

class Flusher {
 public:
  Flusher()
      : conn_(g->config.agent_socket, size_t{g->config.out_kb} * 1024, &MonotonicNs, &DefaultPath,
              &Log) {}

  void Run() {
    std::unique_lock lock(g->mu);
    while (!g->stop) {
      lock.unlock();
      Pass(0);
      lock.lock();
      g->cv.wait_for(lock, std::chrono::milliseconds(g->config.flush_ms),
                     [] { return g->stop || g->wake; });
      g->wake = false;
    }
    lock.unlock();
    conn_.RetryNow();
    Pass(700);
    conn_.ShutdownWrite();
    lock.lock();
    g->done = true;
    g->cv.notify_all();
  }

 private:
  void Pass(int write_timeout_ms) {
    Recorder& rec = *g->recorder;
    const uint64_t now = MonotonicNs();
    if (conn_.MaybeConnect(now)) {
      wire::Hello hello;
      hello.pid = static_cast<uint32_t>(getpid());
      char exe[4096];
      const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
      hello.exe = n > 0 ? std::string(exe, static_cast<size_t>(n)) : std::string();
      hello.library_version = kLibraryVersion;
      hello.start_time_ns = g->start_realtime_ns;
      hello.monotonic_ns = MonotonicNs();
      hello.realtime_ns = RealtimeNs();
      hello.component = wire::Component::kNccl;
      conn_.Emit(hello);
      comms_sent_ = 0;
      counters_at_ = 0;
      Log("connected to the agent");
    }
    while (comms_sent_ < rec.comm_count() && rec.comm(comms_sent_).ready.load()) {
      const Comm& c = rec.comm(comms_sent_++);
      conn_.Emit(wire::NcclComm{c.id, c.name, c.nranks, c.rank, c.nnodes, c.abi, c.init_ns});
    }
    rec.DrainRings([&](const OpRecord& r) { conn_.Emit(rec.ToWire(r)); });
    if (write_timeout_ms > 0) {
      // The final pass: make room, so that the last counters (with every drop) get through.
      conn_.WriteOut(write_timeout_ms);
    }
    if (now >= counters_at_ || write_timeout_ms > 0) {
      counters_at_ = now + kCountersEveryNs;
      wire::Counters counters;
      rec.AppendCounters(&counters.counters);
      counters.counters.push_back({wire::CounterId::kBytesDropped, conn_.bytes_dropped()});
      counters.counters.push_back({wire::CounterId::kCallbackErrors, g_callback_errors.load()});
      counters.counters.push_back({wire::CounterId::kReconnects, conn_.connects()});
      counters.counters.push_back({wire::CounterId::kControlsApplied, controls_applied_});
      counters.counters.push_back(
          {wire::CounterId::kMemoryBytes, rec.memory_bytes() + conn_.buffer_capacity()});
      conn_.Emit(counters);
    }
    conn_.WriteOut(write_timeout_ms);
    controls_.clear();
    conn_.ReadControls(&controls_);
    for (const wire::Control& c : controls_) {
      Apply(c);
    }
  }

  void Apply(const wire::Control& c) {
    Recorder& rec = *g->recorder;
    switch (c.op) {
      case wire::ControlOp::kSetNcclProxyDetail: rec.SetProxyDetail(c.value != 0); break;
      case wire::ControlOp::kEnableCollection: rec.SetCollecting(true); break;
      case wire::ControlOp::kDisableCollection: rec.SetCollecting(false); break;
      default: return;  // the CUDA library's ops
    }
    ++controls_applied_;
  }

  ipc::AgentConnection conn_;
  uint32_t comms_sent_ = 0;
  uint64_t counters_at_ = 0;
  uint64_t controls_applied_ = 0;
  std::vector<wire::Control> controls_;
};

void FlusherMain() noexcept {
  pthread_setname_np(pthread_self(), "warpscope-nccl");
  try {
    Flusher f;
    f.Run();
  } catch (...) {
    std::lock_guard lock(g->mu);
    g->done = true;
    g->cv.notify_all();
  }
}

// Under g->mu.
void StartFlusherLocked() {
  if (g->flusher_running) {
    return;
  }
  g->stop = g->done = g->wake = false;
  try {
    g->thread = new std::thread(&FlusherMain);
    g->flusher_running = true;
  } catch (...) {
    Log("could not start the flusher thread; records stay in the rings");
  }
}

void AtExit() noexcept {
  std::unique_lock lock(g->mu);
  if (!g->flusher_running) {
    return;
  }
  g->stop = true;
  g->cv.notify_all();
  if (g->cv.wait_for(lock, std::chrono::seconds(2), [] { return g->done; })) {
    g->thread->join();
  } else {
    g->thread->detach();
  }
  g->flusher_running = false;
}

void ForkPrepare() { g->mu.lock(); }
void ForkParent() { g->mu.unlock(); }
void ForkChild() {
  // Only the forking thread exists: the flusher's thread object is forgotten, not joined, and
  // the condition variable it was waiting on is made anew (its copy still counts that waiter).
  new (&g->cv) std::condition_variable();
  g->thread = nullptr;
  g->flusher_running = false;
  g->recorder->ResetInForkChild();
  g->mu.unlock();
}

void CreateOnce() {
  auto* p = new Plugin;
  std::vector<std::string> warnings;
  p->config = ReadPluginConfig(::getenv, &warnings);
  p->start_realtime_ns = RealtimeNs();
  Recorder::Options o;
  o.max_events = p->config.max_events;
  o.ring_kb = p->config.ring_kb;
  o.max_threads = p->config.max_threads;
  o.proxy_detail = p->config.proxy_detail;
  p->recorder = std::make_unique<Recorder>(o, &RealtimeNs);
  g = p;
  for (const std::string& w : warnings) {
    Log("%s", w.c_str());
  }
  std::atexit([] { AtExit(); });
  pthread_atfork(&ForkPrepare, &ForkParent, &ForkChild);
}

}  // namespace

void Log(const char* fmt, ...) {
  if (g == nullptr) {
    return;
  }
  const abi::Logger nccl_log = g->nccl_log.load(std::memory_order_relaxed);
  if (nccl_log == nullptr && !g->config.log_stderr) {
    return;
  }
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  if (nccl_log != nullptr) {
    nccl_log(abi::kLogInfo, abi::kLogSubsysProfile, __FILE__, __LINE__, "warpscope: %s", buf);
  }
  if (g->config.log_stderr) {
    std::fprintf(stderr, "[warpscope-nccl %d] %s\n", static_cast<int>(getpid()), buf);
  }
}

Comm* PluginInit(uint64_t comm_id, const char* name, int nnodes, int nranks, int rank,
                 uint32_t abi_version, int* mask, abi::Logger log) {
  std::call_once(g_once, &CreateOnce);
  if (log != nullptr) {
    g->nccl_log.store(log, std::memory_order_relaxed);
  }
  if (!g->config.enabled) {
    return nullptr;
  }
  Comm* c = g->recorder->Init(comm_id, name, nnodes, nranks, rank, abi_version, mask);
  if (c == nullptr) {
    Log("more than %zu communicators; this one is not profiled", kMaxComms);
    return nullptr;
  }
  std::lock_guard lock(g->mu);
  StartFlusherLocked();
  return c;
}

void PluginFinalize(Comm* comm) {
  g->recorder->Finalize(comm);
  std::lock_guard lock(g->mu);
  g->wake = true;  // send what the communicator left without waiting for the period
  g->cv.notify_all();
}

Recorder& PluginRecorder() { return *g->recorder; }

void CountCallbackError() { g_callback_errors.fetch_add(1, std::memory_order_relaxed); }

}  // namespace warpscope::nccl_plugin

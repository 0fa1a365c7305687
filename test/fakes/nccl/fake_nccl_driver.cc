// SPDX-License-Identifier: Apache-2.0
// A fake NCCL for the plugin's tests: it dlopens a profiler plugin and calls it as NCCL 2.27-2.30
// does (src/plugin/profiler.cc of those versions), with no GPU:
//   - lookup: dlopen(RTLD_NOW | RTLD_LOCAL), then the newest table this NCCL knows first
//     (2.29 and 2.30: ncclProfiler_v6, v5, v4; 2.28: v5, v4; 2.27: v4);
//   - init once per communicator, NCCL's process-wide activation mask passed by pointer and read
//     again before every operation (the plugin may rewrite it);
//   - per operation on the rank's application thread: Group start, Coll (or P2p) start with the
//     group as parent... its stop right after ("enqueued"), Group stop;
//   - on the rank's proxy thread, per channel: ProxyOp start (with this pid) and its steps (start,
//     a SendWait state with the bytes, stop) when the mask asks for them; KernelCh start with the
//     GPU timer, the KernelChStop state with the GPU timer, KernelCh stop; ProxyOp stop;
//   - finalize per communicator.
// GPU timers are CLOCK_MONOTONIC (an epoch unlike the CPU's CLOCK_REALTIME, as %globaltimer may
// be). Every rank runs `--exec-us` per collective on the GPU, but for the ranks waiting for a slow
// one (`--slow-rank`), which run `--slow-us` more: waiters show long kernels.
//
// Steps (`--step-compute-us US`): the collectives come in steps of `--step-collectives` all-reduces
// of decreasing sizes (count, count/2, ...: DDP's buckets); before each step the rank sleeps US
// (its compute phase; the slow rank `--slow-compute-us` more), and after each collective it sleeps
// the kernel's time, so the GPU times lie on the real clock. The other ranks' first collective of
// a step runs `--slow-compute-us` longer: they wait in it for the slow rank.
// `--slow-phase backward` puts the slow rank's extra compute before its step's last collective
// instead (a slow backward pass between DDP's buckets): the slow rank starts its last collective
// late, and the other ranks wait in their last collective, which starts on time.
//
// Prints "calls N slow_calls M max_call_ns X" at the end: event calls (start, stop, state) that
// took longer than --slow-call-ms, 500 by default (a plugin that blocks shows here; a busy
// machine's scheduling delays stay far below). Exit status 0 unless the plugin failed to load.
#include <dlfcn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "nccl_plugin/abi.h"

namespace abi = ::warpscope::nccl_plugin::abi;

namespace {

struct Options {
  std::string plugin;
  std::string nccl = "2.30";
  int ranks = 2;          // communicators (ranks) in this process
  int first_rank = 0;
  int nranks = 0;         // of the communicator (default: ranks)
  int nnodes = 1;
  uint64_t comm_id = 0x5eed;
  int collectives = 10;
  int channels = 2;
  int steps = 4;
  bool p2p = false;
  int slow_rank = -1;
  uint64_t exec_us = 100;
  uint64_t slow_us = 400;
  uint64_t count = 1 << 20;  // elements of ncclFloat32
  int slow_call_ms = 500;
  uint64_t step_compute_us = 0;  // > 0: run in steps (see the header comment)
  uint64_t slow_compute_us = 0;
  int step_collectives = 2;
  bool slow_backward = false;  // --slow-phase backward (default forward)
  std::string wait_file;     // after the first half, wait until this file exists
  bool fork_child = false;   // after the first half, fork a child that runs its own communicator
};

uint64_t Now(clockid_t c) {
  timespec ts;
  clock_gettime(c, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

std::atomic<uint64_t> g_calls{0}, g_slow_calls{0}, g_max_call_ns{0};
uint64_t g_slow_ns = 0;

// Times one event call (init and finalize may take their time, as NCCL's own do).
template <typename F>
void Call(F&& f) {
  const uint64_t t0 = Now(CLOCK_MONOTONIC);
  f();
  const uint64_t dt = Now(CLOCK_MONOTONIC) - t0;
  g_calls.fetch_add(1);
  if (dt > g_slow_ns) {
    g_slow_calls.fetch_add(1);
  }
  uint64_t cur = g_max_call_ns.load();
  while (dt > cur && !g_max_call_ns.compare_exchange_weak(cur, dt)) {
  }
}

void Logger(int, unsigned long, const char*, int, const char*, ...) {}

// One table, whatever version NCCL picked: descriptors are built as v6 and copied into the
// version's layout.
struct Plugin {
  int version = 0;
  void* table = nullptr;

  int Init(void** ctx, uint64_t id, int* mask, const char* name, int nnodes, int nranks, int rank) {
    int r = 0;
    {
      if (version == 4) {
        r = static_cast<abi::ProfilerV4*>(table)->init(ctx, mask, name, id, nnodes, nranks, rank,
                                                       &Logger);
      } else {
        // v5 and v6 share init's signature.
        r = static_cast<abi::ProfilerV5*>(table)->init(ctx, id, mask, name, nnodes, nranks, rank,
                                                       &Logger);
      }
    }
    return r;
  }
  void* Start(void* ctx, const abi::EventDescrV6& d) {
    void* h = nullptr;
    Call([&] {
      if (version == 6) {
        abi::EventDescrV6 copy = d;
        static_cast<abi::ProfilerV6*>(table)->start_event(ctx, &h, &copy);
      } else if (version == 5) {
        abi::EventDescrV5 v5{};
        static_assert(sizeof(v5) == sizeof(d));
        std::memcpy(&v5, &d, sizeof(v5));  // v6 only adds union members
        static_cast<abi::ProfilerV5*>(table)->start_event(ctx, &h, &v5);
      } else {
        abi::EventDescrV4 v4{};
        v4.type = static_cast<uint8_t>(d.type);
        v4.parent = d.parent;
        v4.rank = d.rank;
        // The v4 union is v5's without parentGroup at the end of coll and p2p.
        std::memcpy(&v4.coll, &d.coll, sizeof(v4.coll));
        static_cast<abi::ProfilerV4*>(table)->start_event(ctx, &h, &v4);
      }
    });
    return h;
  }
  void Stop(void* h) {
    if (h != nullptr) {
      Call([&] { static_cast<abi::ProfilerV5*>(table)->stop_event(h); });
    }
  }
  void State(void* h, abi::EventState s, abi::StateArgs a) {
    if (h != nullptr) {
      Call([&] { static_cast<abi::ProfilerV5*>(table)->record_event_state(h, s, &a); });
    }
  }
  void Finalize(void* ctx) { static_cast<abi::ProfilerV5*>(table)->finalize(ctx); }
};

bool Load(const Options& o, Plugin* p) {
  void* lib = dlopen(o.plugin.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    std::fprintf(stderr, "dlopen %s: %s\n", o.plugin.c_str(), dlerror());
    return false;
  }
  const int newest = o.nccl == "2.27" ? 4 : o.nccl == "2.28" ? 5 : 6;
  for (int v = newest; v >= 4; --v) {
    const std::string sym = "ncclProfiler_v" + std::to_string(v);
    if (void* t = dlsym(lib, sym.c_str())) {
      p->version = v;
      p->table = t;
      std::printf("loaded %s\n", sym.c_str());
      return true;
    }
  }
  std::fprintf(stderr, "no ncclProfiler_v4..v%d in %s\n", newest, o.plugin.c_str());
  return false;
}

// The rank's proxy thread: runs queued work in order.
class ProxyThread {
 public:
  ProxyThread() : thread_([this] { Loop(); }) {}
  ~ProxyThread() {
    Post(nullptr);
    thread_.join();
  }
  void Post(std::function<void()> f) {
    std::lock_guard lock(mu_);
    q_.push_back(std::move(f));
    cv_.notify_one();
  }

 private:
  void Loop() {
    while (true) {
      std::function<void()> f;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return !q_.empty(); });
        f = std::move(q_.front());
        q_.pop_front();
      }
      if (!f) {
        return;
      }
      f();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> q_;
  std::thread thread_;
};

// NCCL's process-wide activation mask.
int g_mask = 0;

void RunRank(const Options& o, Plugin& p, void* ctx, int rank, int from, int to) {
  ProxyThread proxy;
  const uint64_t exec_ns =
      (o.exec_us + (o.slow_rank >= 0 && rank != o.slow_rank ? o.slow_us : 0)) * 1000;
  const bool steps = o.step_compute_us > 0;
  const int per_step = std::max(1, o.step_collectives);
  const bool slow = o.slow_rank >= 0 && rank == o.slow_rank;
  for (int i = from; i < to; ++i) {
    uint64_t op_exec_ns = exec_ns;
    uint64_t count = o.count;
    if (steps) {
      const int bucket = i % per_step;
      count = o.count >> bucket;
      op_exec_ns = o.exec_us * 1000;
      // Where the slow rank computes longer and the others wait: before the step's first
      // collective (forward) or its last (backward).
      const bool slow_here = o.slow_backward ? bucket == per_step - 1 : bucket == 0;
      if (bucket == 0) {
        usleep(static_cast<useconds_t>(o.step_compute_us));
      }
      if (slow_here && slow) {
        usleep(static_cast<useconds_t>(o.slow_compute_us));
      } else if (slow_here && o.slow_rank >= 0) {
        op_exec_ns += o.slow_compute_us * 1000;
      }
    }
    const int mask = __atomic_load_n(&g_mask, __ATOMIC_RELAXED);
    abi::EventDescrV6 g{};
    g.type = abi::kEventGroup;
    g.rank = rank;
    void* group = (mask & abi::kEventGroup) != 0 ? p.Start(ctx, g) : nullptr;
    for (int op = 0; op < (o.p2p ? 2 : 1); ++op) {
      const bool is_p2p = op == 1;
      if ((mask & (is_p2p ? abi::kEventP2p : abi::kEventColl)) == 0) {
        continue;
      }
      abi::EventDescrV6 d{};
      d.rank = rank;
      d.parent = nullptr;  // the CollApi event's handle when API events are on
      if (is_p2p) {
        d.type = abi::kEventP2p;
        d.p2p.func = "Send";
        d.p2p.datatype = "ncclInt8";
        d.p2p.count = 4096;
        d.p2p.peer = (rank + 1) % (o.nranks > 0 ? o.nranks : o.ranks);
        d.p2p.n_channels = static_cast<uint8_t>(o.channels);
        d.p2p.parent_group = group;
      } else {
        d.type = abi::kEventColl;
        d.coll.seq_number = static_cast<uint64_t>(i);
        d.coll.func = "AllReduce";
        d.coll.count = count;
        d.coll.root = -1;
        d.coll.datatype = "ncclFloat32";
        d.coll.n_channels = static_cast<uint8_t>(o.channels);
        d.coll.n_warps = 16;
        d.coll.algo = "RING";
        d.coll.proto = "SIMPLE";
        d.coll.parent_group = group;
      }
      void* h = p.Start(ctx, d);
      p.Stop(h);  // enqueued
      if (h == nullptr) {
        continue;
      }
      proxy.Post([&p, ctx, h, mask, exec_ns = op_exec_ns, rank, &o] {
        // The kernel starts on every channel at once, 1 us before the proxy thread sees it.
        const uint64_t start = Now(CLOCK_MONOTONIC) - 1000;
        for (int ch = 0; ch < o.channels; ++ch) {
          void* pop = nullptr;
          if ((mask & abi::kEventProxyOp) != 0) {
            abi::EventDescrV6 pd{};
            pd.type = abi::kEventProxyOp;
            pd.parent = h;
            pd.rank = rank;
            pd.proxy_op.pid = getpid();
            pd.proxy_op.channel_id = static_cast<uint8_t>(ch);
            pd.proxy_op.n_steps = o.steps;
            pd.proxy_op.is_send = 1;
            pop = p.Start(ctx, pd);
          }
          if (pop != nullptr && (mask & abi::kEventProxyStep) != 0) {
            for (int s = 0; s < o.steps; ++s) {
              abi::EventDescrV6 sd{};
              sd.type = abi::kEventProxyStep;
              sd.parent = pop;
              sd.rank = rank;
              sd.proxy_step.step = s;
              void* step = p.Start(ctx, sd);
              abi::StateArgs a{};
              a.proxy_step.trans_size = 65536;
              p.State(step, abi::kProxyStepSendWait, a);
              p.Stop(step);
            }
          }
          if ((mask & abi::kEventKernelCh) != 0) {
            abi::EventDescrV6 kd{};
            kd.type = abi::kEventKernelCh;
            kd.parent = h;
            kd.rank = rank;
            kd.kernel_ch.channel_id = static_cast<uint8_t>(ch);
            kd.kernel_ch.gpu_timer = start;
            void* k = p.Start(ctx, kd);
            abi::StateArgs a{};
            a.kernel_ch.gpu_timer = start + exec_ns;
            p.State(k, abi::kKernelChStop, a);
            p.Stop(k);
          }
          p.Stop(pop);
        }
      });
    }
    p.Stop(group);
    if (steps) {
      usleep(static_cast<useconds_t>(op_exec_ns / 1000));  // the kernel's time
    }
  }
}

void RunRanks(const Options& o, Plugin& p, std::vector<void*>& ctxs, int from, int to) {
  std::vector<std::thread> threads;
  for (int r = 0; r < o.ranks; ++r) {
    threads.emplace_back([&, r] { RunRank(o, p, ctxs[r], o.first_rank + r, from, to); });
  }
  for (auto& t : threads) {
    t.join();
  }
}

bool InitComms(const Options& o, Plugin& p, uint64_t comm_id, std::vector<void*>* ctxs) {
  const int nranks = o.nranks > 0 ? o.nranks : o.ranks;
  for (int r = 0; r < o.ranks; ++r) {
    void* ctx = nullptr;
    if (p.Init(&ctx, comm_id, &g_mask, "fake", o.nnodes, nranks, o.first_rank + r) != 0) {
      std::printf("init failed rank %d\n", o.first_rank + r);
      return false;
    }
    ctxs->push_back(ctx);
  }
  return true;
}

Options Parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const char* v = argv[i + 1];
    if (k == "--plugin") o.plugin = v;
    else if (k == "--nccl") o.nccl = v;
    else if (k == "--ranks") o.ranks = std::atoi(v);
    else if (k == "--first-rank") o.first_rank = std::atoi(v);
    else if (k == "--nranks") o.nranks = std::atoi(v);
    else if (k == "--nnodes") o.nnodes = std::atoi(v);
    else if (k == "--comm-id") o.comm_id = std::strtoull(v, nullptr, 0);
    else if (k == "--collectives") o.collectives = std::atoi(v);
    else if (k == "--channels") o.channels = std::atoi(v);
    else if (k == "--steps") o.steps = std::atoi(v);
    else if (k == "--p2p") o.p2p = std::atoi(v) != 0;
    else if (k == "--slow-rank") o.slow_rank = std::atoi(v);
    else if (k == "--exec-us") o.exec_us = std::strtoull(v, nullptr, 10);
    else if (k == "--slow-us") o.slow_us = std::strtoull(v, nullptr, 10);
    else if (k == "--count") o.count = std::strtoull(v, nullptr, 10);
    else if (k == "--slow-call-ms") o.slow_call_ms = std::atoi(v);
    else if (k == "--wait-file") o.wait_file = v;
    else if (k == "--step-compute-us") o.step_compute_us = std::strtoull(v, nullptr, 10);
    else if (k == "--slow-compute-us") o.slow_compute_us = std::strtoull(v, nullptr, 10);
    else if (k == "--step-collectives") o.step_collectives = std::atoi(v);
    else if (k == "--slow-phase") o.slow_backward = std::string(v) == "backward";
    else if (k == "--fork") o.fork_child = std::atoi(v) != 0;
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = Parse(argc, argv);
  g_slow_ns = static_cast<uint64_t>(o.slow_call_ms) * 1'000'000;
  Plugin p;
  if (!Load(o, &p)) {
    return 2;
  }
  std::vector<void*> ctxs;
  if (!InitComms(o, p, o.comm_id, &ctxs)) {
    return 0;  // NCCL runs on without the plugin
  }
  const int half = o.collectives / 2;
  RunRanks(o, p, ctxs, 0, half);
  if (!o.wait_file.empty()) {
    std::printf("half\n");
    std::fflush(stdout);
    struct stat st;
    while (stat(o.wait_file.c_str(), &st) != 0) {
      usleep(1000);
    }
  }
  if (o.fork_child) {
    const pid_t child = fork();
    if (child == 0) {
      Options co = o;
      co.ranks = 1;
      std::vector<void*> cctx;
      if (InitComms(co, p, o.comm_id + 1, &cctx)) {
        RunRanks(co, p, cctx, 0, o.collectives);
        p.Finalize(cctx[0]);
      }
      std::printf("child %d\n", static_cast<int>(getpid()));
      std::exit(0);
    }
    int status = 0;
    waitpid(child, &status, 0);
  }
  RunRanks(o, p, ctxs, half, o.collectives);
  for (void* c : ctxs) {
    p.Finalize(c);
  }
  std::printf("calls %llu slow_calls %llu max_call_ns %llu\n",
              static_cast<unsigned long long>(g_calls.load()),
              static_cast<unsigned long long>(g_slow_calls.load()),
              static_cast<unsigned long long>(g_max_call_ns.load()));
  return 0;
}

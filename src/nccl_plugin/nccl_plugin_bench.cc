// SPDX-License-Identifier: Apache-2.0
// CPU the plugin adds on NCCL's threads (docs/benchmarks.md, "NCCL profiler plugin"):
//   BM_Collective/<channels>: one collective as NCCL reports it with the default mask: its start
//     and stop, then per channel a kernel-channel start, its stop state (GPU timer) and stop.
//   BM_ProxyStep: one proxy step with the detail on: start, a state with its size, stop.
// A drainer thread empties the rings as the flusher does, so the rings never fill.
#include <benchmark/benchmark.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "nccl_plugin/recorder.h"

namespace warpscope::nccl_plugin {
namespace {

uint64_t Realtime() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

class Drainer {
 public:
  explicit Drainer(Recorder& r)
      : thread_([this, &r] {
          uint64_t n = 0;
          while (!stop_.load(std::memory_order_relaxed)) {
            r.DrainRings([&](const OpRecord&) { ++n; });
            usleep(1000);
          }
          benchmark::DoNotOptimize(n);
        }) {}
  ~Drainer() {
    stop_ = true;
    thread_.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

Descr CollDescr(uint32_t channels) {
  Descr d;
  d.type = abi::kEventColl;
  d.func = "AllReduce";
  d.datatype = "ncclBfloat16";
  d.algo = "RING";
  d.proto = "SIMPLE";
  d.count = 1 << 24;
  d.n_channels = channels;
  return d;
}

void BM_Collective(benchmark::State& state) {
  Recorder r(Recorder::Options{}, &Realtime);
  int mask = 0;
  Comm* comm = r.Init(1, "bench", 1, 8, 0, 6, &mask);
  const auto channels = static_cast<uint32_t>(state.range(0));
  const Descr coll = CollDescr(channels);
  Drainer drainer(r);
  uint64_t gpu = 1'000'000;
  for (auto _ : state) {
    void* op = nullptr;
    r.StartEvent(comm, &op, coll);
    r.StopEvent(op);
    for (uint32_t c = 0; c < channels; ++c) {
      Descr k;
      k.type = abi::kEventKernelCh;
      k.parent = op;
      k.gpu_timer = gpu;
      void* ch = nullptr;
      r.StartEvent(comm, &ch, k);
      abi::StateArgs a{};
      a.kernel_ch.gpu_timer = gpu + 5000;
      r.RecordState(ch, abi::kKernelChStop, &a);
      r.StopEvent(ch);
    }
    gpu += 10'000;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Collective)->Arg(0)->Arg(2)->Arg(8)->Arg(32);

void BM_ProxyStep(benchmark::State& state) {
  Recorder::Options o;
  o.proxy_detail = true;
  Recorder r(o, &Realtime);
  int mask = 0;
  Comm* comm = r.Init(1, "bench", 2, 16, 0, 6, &mask);
  void* op = nullptr;
  r.StartEvent(comm, &op, CollDescr(0));
  Descr pd;
  pd.type = abi::kEventProxyOp;
  pd.parent = op;
  pd.proxy_pid = getpid();
  void* proxy = nullptr;
  r.StartEvent(comm, &proxy, pd);
  Descr sd;
  sd.type = abi::kEventProxyStep;
  sd.parent = proxy;
  for (auto _ : state) {
    void* step = nullptr;
    r.StartEvent(comm, &step, sd);
    abi::StateArgs a{};
    a.proxy_step.trans_size = 524288;
    r.RecordState(step, abi::kProxyStepSendWait, &a);
    r.StopEvent(step);
  }
  r.StopEvent(proxy);
  r.StopEvent(op);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ProxyStep);

}  // namespace
}  // namespace warpscope::nccl_plugin

BENCHMARK_MAIN();

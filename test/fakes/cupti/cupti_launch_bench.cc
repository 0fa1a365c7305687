// SPDX-License-Identifier: Apache-2.0
// Added cost per kernel launch of libwarpscope_cupti.so with its default settings, measured in
// one process over the fake libcupti (docs/design/cuda-profiler.md, "Overhead"). The first
// benchmark launches before injection (the fake driver only); the second loads the library as
// the driver does (CUDA_INJECTION64_PATH semantics: dlopen + InitializeInjection) and launches
// again. Each launch is a runtime launch: four callbacks (runtime and nested driver, enter and
// exit), as with real CUDA. BM_LaunchNoOpSubscriber delivers the same callbacks to an empty
// subscriber: InjectedDefaults minus NoOpSubscriber is the library's own added cost.
// Run: <build>/bin/cupti_launch_bench
#include <benchmark/benchmark.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

#include "cupti/abi.h"
#include "fakes/cupti/fake_cupti.h"

// Exported by the fake libcupti, as by the real one.
extern "C" {
warpscope::cupti::abi::CUptiResult cuptiSubscribe(warpscope::cupti::abi::CUpti_SubscriberHandle*,
                                                  warpscope::cupti::abi::CUpti_CallbackFunc, void*);
warpscope::cupti::abi::CUptiResult cuptiUnsubscribe(warpscope::cupti::abi::CUpti_SubscriberHandle);
warpscope::cupti::abi::CUptiResult cuptiEnableCallback(uint32_t,
                                                       warpscope::cupti::abi::CUpti_SubscriberHandle,
                                                       warpscope::cupti::abi::CUpti_CallbackDomain,
                                                       warpscope::cupti::abi::CUpti_CallbackId);
}

namespace {

namespace abi = ::warpscope::cupti::abi;

void NoOpCallback(void*, abi::CUpti_CallbackDomain, abi::CUpti_CallbackId, const void*) {}
void* const kContext = reinterpret_cast<void*>(0x1000);

__attribute__((noinline)) uint32_t LaunchSite() {
  return FakeCuptiLaunch(abi::kDomainRuntimeApi, abi::kCbidCudaLaunchKernel, "_Z4gemmv", kContext);
}

bool Inject() {
  static const bool ok = [] {
    setenv("WARPSCOPE_CUPTI_LIBRARY", WARPSCOPE_FAKE_CUPTI_PATH, 1);
    setenv("WARPSCOPE_AGENT_SOCKET", "/nonexistent/warpscope-bench.sock", 1);
    void* lib = dlopen(WARPSCOPE_INJECT_PATH, RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      std::fprintf(stderr, "dlopen(%s): %s\n", WARPSCOPE_INJECT_PATH, dlerror());
      return false;
    }
    auto init = reinterpret_cast<int (*)()>(dlsym(lib, "InitializeInjection"));
    return init != nullptr && init() == 1;
  }();
  return ok;
}

void BM_LaunchWithoutInjection(benchmark::State& state) {
  for (auto _ : state) {
    benchmark::DoNotOptimize(LaunchSite());
  }
}

// The same callbacks delivered to an empty subscriber: the fake driver's dispatch cost, which the
// injected library's figure includes.
void BM_LaunchNoOpSubscriber(benchmark::State& state) {
  static abi::CUpti_SubscriberHandle sub = nullptr;
  if (state.thread_index() == 0) {
    cuptiSubscribe(&sub, &NoOpCallback, nullptr);
    cuptiEnableCallback(1, sub, abi::kDomainRuntimeApi, abi::kCbidCudaLaunchKernel);
    cuptiEnableCallback(1, sub, abi::kDomainDriverApi, abi::kCbidCuLaunchKernel);
  }
  for (auto _ : state) {
    benchmark::DoNotOptimize(LaunchSite());
  }
  if (state.thread_index() == 0) {
    cuptiUnsubscribe(sub);
  }
}

void BM_LaunchInjectedDefaults(benchmark::State& state) {
  if (!Inject()) {
    state.SkipWithError("libwarpscope_cupti.so could not be injected");
    return;
  }
  for (auto _ : state) {
    benchmark::DoNotOptimize(LaunchSite());
  }
}

// Registration order is run order: the baseline must run before the library is loaded.
BENCHMARK(BM_LaunchWithoutInjection)->Threads(1)->Threads(2);
BENCHMARK(BM_LaunchNoOpSubscriber)->Threads(1);
BENCHMARK(BM_LaunchInjectedDefaults)->Threads(1)->Threads(2);

}  // namespace

BENCHMARK_MAIN();

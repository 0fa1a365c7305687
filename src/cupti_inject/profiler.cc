// SPDX-License-Identifier: Apache-2.0
// InitializeInjection's path: read the configuration, build the process's state, load and set up
// CUPTI (subscribe, enable the launch and resource callbacks, register the activity buffers),
// install the exit and fork handlers and start the flusher. The pieces it wires:
// cupti_loader.h, launch_callbacks.h, activity_buffers.h, flusher.h, process_hooks.h.
#include "cupti_inject/profiler.h"

#include <unistd.h>

#include <mutex>
#include <string>
#include <vector>

#include "cupti_inject/activity_buffers.h"
#include "cupti_inject/cupti_loader.h"
#include "cupti_inject/env_config.h"
#include "cupti_inject/flusher.h"
#include "cupti_inject/launch_callbacks.h"
#include "cupti_inject/process_hooks.h"
#include "cupti_inject/stack_capture.h"
#include "cupti_inject/state.h"

namespace warpscope::cupti_inject {
namespace {

// Sets the library passive and reports why, once.
void GoPassive(abi::CUptiResult code, const std::string& message) {
  g->passive.store(true, std::memory_order_relaxed);
  Notify(wire::Severity::kError, static_cast<uint32_t>(code), message);
}

// Subscribes as "warpscope" and enables the launch and resource callbacks; false (passive, with
// the reason sent to the agent) when CUPTI is held by another tool or takes none of them.
bool Subscribe() {
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
    return false;
  }
  if (r != abi::kSuccess) {
    GoPassive(r, "cuptiSubscribe failed: " + ResultString(g->api, r) +
                     "; kernel profiling is off (is an NVIDIA driver loaded? CUPTI 13 needs r580 "
                     "or newer)");
    return false;
  }
  int enabled = 0;
  for (auto cbid : abi::kDriverLaunchCbids) {
    enabled +=
        g->api.cuptiEnableCallback(1, g->subscriber, abi::kDomainDriverApi, cbid) == abi::kSuccess;
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
    return false;
  }
  return true;
}

// Registers the buffer callbacks and enables the activity kinds; false (unsubscribed, passive)
// when kernel activity cannot be enabled.
bool EnableActivity() {
  abi::CUptiResult r = g->api.cuptiActivityRegisterCallbacks(&BufferRequested, &BufferCompleted);
  if (r == abi::kSuccess) {
    r = g->api.cuptiActivityEnable(abi::kActivityConcurrentKernel);
  }
  if (r != abi::kSuccess) {
    g->api.cuptiUnsubscribe(g->subscriber);
    GoPassive(r, "CUPTI kernel activity could not be enabled: " + ResultString(g->api, r) +
                     "; another tool may own the activity API. Kernel profiling is off");
    return false;
  }
  if (g->config.memcpy) {
    g->api.cuptiActivityEnable(abi::kActivityMemcpy);
    g->api.cuptiActivityEnable(abi::kActivityMemset);
  }
  if (g->config.nvtx) {
    g->api.cuptiActivityEnable(abi::kActivityMarker);
  }
  if (g->config.device_memory) {
    g->api.cuptiActivityEnable(abi::kActivityMemory2);  // optional: refused, the rest runs on
  }
  if (g->config.launch_api_records && g->api.cuptiActivityEnableDriverApi != nullptr) {
    for (auto cbid : abi::kDriverLaunchCbids) {
      g->api.cuptiActivityEnableDriverApi(cbid, 1);
    }
  }
  if (g->api.cuptiActivityFlushPeriod != nullptr) {
    g->api.cuptiActivityFlushPeriod(g->config.flush_ms);
  }
  return true;
}

void SetUpCupti() {
  std::string error;
  if (!LoadCupti(g->config.cupti_library, &g->api, &error)) {
    GoPassive(0, error);
    return;
  }
  g->api.cuptiGetVersion(&g->cupti_version);
  if (!CuptiVersionSupported(g->cupti_version, &error)) {
    GoPassive(0, error);
    return;
  }
  if (g->api.cuptiSetThreadIdType != nullptr) {
    g->api.cuptiSetThreadIdType(abi::kActivityThreadIdTypeSystem);
  }
  if (!Subscribe() || !EnableActivity()) {
    return;
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
  g->controls.rate.store(g->config.rate);
  g->burst.store(g->config.burst);
  g->controls.enabled.store(g->config.enabled);
  g->controls.pc_wanted.store(g->config.pc_sampling);
  g->controls.all_kernels_cycle.store(g->config.AllKernelsCycle().Pack());
  g->controls.pc_window_ms = g->config.pc_window_ms;
  g->slots = std::make_unique<ThreadSlot[]>(g->config.max_threads);
  g->interned = std::make_unique<std::atomic<uint64_t>[]>(kInternSize);
  g->buffers.Configure(g->config.activity_buffers,
                       static_cast<size_t>(g->config.activity_buffer_kb) * 1024);
  for (auto& w : warnings) {
    Notify(wire::Severity::kWarning, 0, w);
  }
  WarmUpUnwinder();
  SetUpCupti();
  InstallProcessHooks();
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

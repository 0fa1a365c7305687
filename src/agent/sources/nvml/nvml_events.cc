// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/nvml/nvml_events.h"

#include <pthread.h>

#include <algorithm>
#include <string>

#include "agent/sources/nvml/nvml_metrics.h"
#include "base/logging.h"
#include "model/xid.h"

namespace warpscope::agent::nvml_internal {
namespace {

namespace abi = nvml::abi;
namespace m = nvml_metrics;
using abi::nvmlReturn_t;
using nvml::NvmlLibrary;

constexpr unsigned long long kEventMask = abi::kEventTypeXidCriticalError |
                                          abi::kEventTypeSingleBitEccError |
                                          abi::kEventTypeDoubleBitEccError;

}  // namespace

bool EventWatcher::Create(const NvmlLibrary& lib, Reporter& reporter) {
  lib_ = &lib;
  if (lib.api().nvmlEventSetCreate == nullptr || lib.api().nvmlEventSetWait_v2 == nullptr ||
      lib.api().nvmlDeviceRegisterEvents == nullptr) {
    WARPSCOPE_LOG(WARNING, "NVML {} has no event API: XID errors will not be reported", lib.path());
    reporter.ReportError("not_supported");
    return false;
  }
  nvmlReturn_t rc = WARPSCOPE_NVML_CALL(lib, nvmlEventSetCreate, &set_);
  if (rc != abi::kSuccess) {
    set_ = nullptr;
    WARPSCOPE_LOG(WARNING, "{}; XID errors will not be reported",
                  lib.ToStatus(rc, "nvmlEventSetCreate").message());
    reporter.ReportError(nvml::ReturnCodeReason(rc));
    return false;
  }
  return true;
}

bool EventWatcher::Register(GpuState& g, Reporter& reporter) const {
  if (set_ == nullptr) {
    return false;
  }
  const NvmlLibrary& lib = *lib_;
  unsigned long long mask = kEventMask;
  unsigned long long supported = 0;
  if (WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetSupportedEventTypes, g.handle, &supported) ==
      abi::kSuccess) {
    mask &= supported;
  }
  if (mask == 0) {
    return false;
  }
  nvmlReturn_t rc = WARPSCOPE_NVML_CALL(lib, nvmlDeviceRegisterEvents, g.handle, mask, set_);
  if (rc != abi::kSuccess && mask != abi::kEventTypeXidCriticalError &&
      (mask & abi::kEventTypeXidCriticalError) != 0) {
    // NOT_SUPPORTED for a combined mask registers nothing: retry with XID alone.
    rc = WARPSCOPE_NVML_CALL(lib, nvmlDeviceRegisterEvents, g.handle,
                             abi::kEventTypeXidCriticalError, set_);
  }
  if (rc != abi::kSuccess) {
    WARPSCOPE_LOG(WARNING, "GPU {}: {}; XID errors will not be reported for it", g.index,
                  lib.ToStatus(rc, "nvmlDeviceRegisterEvents").message());
    reporter.ReportError(nvml::ReturnCodeReason(rc));
    return false;
  }
  g.events_registered = true;
  return true;
}

void EventWatcher::Start() {
  thread_ = std::jthread([this](std::stop_token stop) { Loop(std::move(stop)); });
}

void EventWatcher::StopThread() {
  if (thread_.joinable()) {
    thread_.request_stop();
    thread_.join();
  }
}

void EventWatcher::Stop() {
  StopThread();
  if (set_ != nullptr && lib_ != nullptr) {
    (void)WARPSCOPE_NVML_CALL(*lib_, nvmlEventSetFree, set_);
  }
  set_ = nullptr;
  std::lock_guard lock(queue_mu_);
  queue_.clear();
}

void EventWatcher::Loop(std::stop_token stop) {
  pthread_setname_np(pthread_self(), "nvml-events");
  const NvmlLibrary& lib = *lib_;
  const auto timeout = options_.event_wait_timeout;
  const unsigned timeout_ms = static_cast<unsigned>(std::max<int64_t>(1, timeout.count()));
  std::mutex sleep_mu;
  std::condition_variable_any sleep_cv;
  while (!stop.stop_requested()) {
    try {
      abi::nvmlEventData_t data{};
      const auto started = std::chrono::steady_clock::now();
      nvmlReturn_t rc = WARPSCOPE_NVML_CALL(lib, nvmlEventSetWait_v2, set_, &data, timeout_ms);
      if (rc == abi::kSuccess) {
        RawEvent ev{data.device, data.eventType, data.eventData, data.gpuInstanceId,
                    std::chrono::steady_clock::now()};
        std::lock_guard lock(queue_mu_);
        if (queue_.size() >= options_.event_queue_capacity) {
          events_dropped_.fetch_add(1, std::memory_order_relaxed);
        } else {
          queue_.push_back(ev);
        }
        ++events_received_;
        queue_cv_.notify_all();
        continue;
      }
      if (rc != abi::kErrorTimeout) {
        wait_errors_.fetch_add(1, std::memory_order_relaxed);
      }
      // Never spin: a wait that returned early (an error, or a library that does not block)
      // sleeps for the rest of the timeout, and wakes at once on Stop().
      auto remaining = timeout - (std::chrono::steady_clock::now() - started);
      if (remaining > std::chrono::steady_clock::duration::zero()) {
        std::unique_lock lock(sleep_mu);
        sleep_cv.wait_for(lock, stop, remaining, [] { return false; });
      }
    } catch (...) {
      WARPSCOPE_LOG_FIRST_N(ERROR, 1, "NVML event thread: unexpected exception; stopping it");
      return;
    }
  }
}

void EventWatcher::Take(std::vector<RawEvent>& out) {
  out.clear();
  std::lock_guard lock(queue_mu_);
  out.swap(queue_);
}

void EventWatcher::ReportCounters(Reporter& reporter) {
  uint64_t dropped = events_dropped_.load(std::memory_order_relaxed);
  for (; reported_dropped_ < dropped; ++reported_dropped_) {
    reporter.ReportError("event_queue_full");
  }
  uint64_t wait_errors = wait_errors_.load(std::memory_order_relaxed);
  for (; reported_wait_errors_ < wait_errors; ++reported_wait_errors_) {
    reporter.ReportError("event_wait");
  }
}

bool EventWatcher::WaitForEvents(uint64_t count, std::chrono::milliseconds timeout) {
  std::unique_lock lock(queue_mu_);
  return queue_cv_.wait_for(lock, timeout, [&] { return events_received_ >= count; });
}

void DeliverEvents(std::span<const RawEvent> events, base::TimePoint now,
                   const std::function<std::optional<EventTarget>(nvml::Device)>& find,
                   Reporter& reporter) {
  const auto steady_now = std::chrono::steady_clock::now();
  for (const RawEvent& ev : events) {
    std::optional<EventTarget> target = find(ev.device);
    if (!target) {
      reporter.ReportError("event_unknown_device");
      continue;
    }
    const GpuIdentity& gpu = *target->identity;
    // The event's own time: `now` minus how long it waited in the queue.
    base::TimePoint when =
        now - std::chrono::duration_cast<base::Duration>(
                  std::max(steady_now - ev.when, std::chrono::steady_clock::duration::zero()));
    const std::string* entity = &gpu.entity.id;
    for (const MigIdentity& mig : gpu.migs) {
      if (ev.gpu_instance_id != abi::kInvalidInstanceId &&
          mig.gpu_instance_id == ev.gpu_instance_id) {
        entity = &mig.entity.id;
        break;
      }
    }
    if ((ev.type & abi::kEventTypeXidCriticalError) != 0) {
      target->xids->push_back(ev.data);
      std::string_view text = model::XidDescription(ev.data);
      model::Event e = MakeEvent(
          when, *entity, "xid", static_cast<int64_t>(ev.data),
          text.empty() ? fmt::format("XID {}", ev.data) : fmt::format("XID {}: {}", ev.data, text));
      e.attributes.Set(m::kLabelXid, std::to_string(ev.data));
      WARPSCOPE_LOG(WARNING, "GPU {} ({}): {}", target->index, gpu.entity.id, e.message);
      reporter.AddEvent(std::move(e));
    } else if ((ev.type & abi::kEventTypeDoubleBitEccError) != 0) {
      reporter.AddEvent(
          MakeEvent(when, *entity, "ecc_uncorrected", 0, "uncorrectable (double-bit) ECC error"));
    } else if ((ev.type & abi::kEventTypeSingleBitEccError) != 0) {
      reporter.AddEvent(
          MakeEvent(when, *entity, "ecc_corrected", 0, "corrected (single-bit) ECC error"));
    }
  }
}

void CountXids(std::span<const uint64_t> xids, GpuState& g) {
  for (uint64_t xid : xids) {
    g.last_xid = xid;
    XidCount& seen = g.xids[xid];
    if (seen.count++ == 0) {
      seen.labels.Set(m::kLabelXid, std::to_string(xid));
    }
  }
}

}  // namespace warpscope::agent::nvml_internal

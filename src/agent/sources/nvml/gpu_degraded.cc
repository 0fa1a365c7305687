// SPDX-License-Identifier: Apache-2.0
// GpuPoller's error policy: unsupported queries are remembered, a lost GPU (or one with a streak
// of failed calls) is degraded, retried every lost_retry_polls polls and re-probed when it
// answers again.
#include <cstring>
#include <string>

#include "agent/sources/nvml/gpu_poller.h"
#include "agent/sources/nvml/nvml_events.h"
#include "agent/sources/nvml/nvml_metrics.h"
#include "base/logging.h"

namespace warpscope::agent::nvml_internal {

namespace abi = nvml::abi;
namespace m = nvml_metrics;
using abi::nvmlReturn_t;
using nvml::Device;
using nvml::NvmlLibrary;

bool GpuPoller::Check(Support& support, Query q, nvmlReturn_t rc) {
  if (rc == abi::kSuccess) {
    g_.error_streak = 0;
    return true;
  }
  if (nvml::IsUnsupported(rc)) {
    support.set(q);
    reporter_.ReportError("not_supported");
    WARPSCOPE_VLOG(1, "GPU {}: {} not supported ({}); metric absent", g_.index, kQueryNames[q],
                   nvml::ReturnCodeName(rc));
    return false;
  }
  if (nvml::IsGpuLost(rc)) {
    MarkDegraded(rc, q);
    return false;
  }
  if (rc == abi::kErrorNoPermission) {
    support.set(q);
    reporter_.ReportError("no_permission");
    WARPSCOPE_LOG_FIRST_N(WARNING, 8, "GPU {}: {}: no permission; metric absent", g_.index,
                          kQueryNames[q]);
    return false;
  }
  reporter_.ReportError(nvml::ReturnCodeReason(rc));
  WARPSCOPE_LOG_EVERY_N(WARNING, 64, "GPU {}: {}", g_.index,
                        lib_.ToStatus(rc, kQueryNames[q]).message());
  if (++g_.error_streak >= ctx_.options.error_streak_to_degrade) {
    MarkDegraded(rc, q);
  }
  return false;
}

void GpuPoller::MarkDegraded(nvmlReturn_t rc, Query q) {
  if (g_.degraded) {
    return;
  }
  g_.degraded = true;
  g_.degraded_polls = 0;
  g_.error_streak = 0;
  g_.gpm.Reset();
  for (auto& mig : g_.migs) {
    mig->gpm.Reset();
  }
  for (auto& link : g_.links) {
    link.has_prev = false;
  }
  // A lost GPU is counted here; the codes of an error streak were counted one by one in Check.
  reporter_.ReportError(nvml::IsGpuLost(rc) ? nvml::ReturnCodeReason(rc) : "degraded_after_errors");
  std::string why = lib_.ToStatus(rc, kQueryNames[q]).message();
  if (!nvml::IsGpuLost(rc)) {
    why = fmt::format("{} failed NVML calls in a row, the last: {}",
                      ctx_.options.error_streak_to_degrade, why);
  }
  WARPSCOPE_LOG(WARNING, "GPU {} ({}) degraded: {}; retrying every {} polls", g_.index,
                g_.entity.id, why, ctx_.options.lost_retry_polls);
  reporter_.AddEvent(MakeEvent(now_, g_.entity.id, "gpu_lost", rc, std::move(why)));
}

void GpuPoller::TryRecover() {
  const NvmlLibrary& lib = lib_;
  Device handle = nullptr;
  nvmlReturn_t rc = lib.DeviceGetHandleByIndex(g_.index, &handle);
  char buf[abi::kDeviceUuidBufferSize] = {};
  if (rc == abi::kSuccess) {
    rc = WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetUUID, handle, buf, sizeof(buf));
  }
  if (rc != abi::kSuccess) {
    WARPSCOPE_VLOG(1, "GPU {} still unavailable: {}", g_.index, nvml::ReturnCodeName(rc));
    return;
  }
  if (!g_.uuid.empty() && CopyString(buf, sizeof(buf)) != g_.uuid) {
    // The index now names another GPU (re-enumeration after a reset): look for ours by UUID.
    handle = nullptr;
    unsigned count = 0;
    if (lib.DeviceGetCount(&count) == abi::kSuccess) {
      for (unsigned i = 0; i < count && handle == nullptr; ++i) {
        Device candidate = nullptr;
        std::memset(buf, 0, sizeof(buf));
        if (lib.DeviceGetHandleByIndex(i, &candidate) == abi::kSuccess &&
            WARPSCOPE_NVML_CALL(lib, nvmlDeviceGetUUID, candidate, buf, sizeof(buf)) ==
                abi::kSuccess &&
            CopyString(buf, sizeof(buf)) == g_.uuid) {
          handle = candidate;
        }
      }
    }
    if (handle == nullptr) {
      return;
    }
  }
  const bool handle_changed = handle != g_.handle;
  const bool was_known = !g_.uuid.empty();
  g_.handle = handle;
  ++identity_version_;
  g_.degraded = false;
  if (was_known) {
    InitStatic();
  } else {
    InitGpu();  // never identified (lost at start)
  }
  if (g_.degraded) {
    return;  // lost again while re-probing
  }
  if (ctx_.events != nullptr && (handle_changed || !g_.events_registered)) {
    (void)RegisterEvents();
  }
  WARPSCOPE_LOG(INFO, "GPU {} ({}) recovered", g_.index, g_.entity.id);
  reporter_.AddEvent(
      MakeEvent(now_, g_.entity.id, "gpu_recovered", 0, "GPU answers NVML queries again"));
}

void GpuPoller::MarkLostAtStart(nvmlReturn_t rc, base::TimePoint now) {
  now_ = now;
  // Keep the GPU: a lost GPU may come back and is reported as degraded meanwhile.
  WARPSCOPE_LOG(
      WARNING, "{}",
      lib_.ToStatus(rc, fmt::format("nvmlDeviceGetHandleByIndex({})", g_.index)).message());
  reporter_.ReportError(nvml::ReturnCodeReason(rc));
  ++identity_version_;
  g_.entity.kind = model::EntityKind::kGpu;
  g_.entity.id = fmt::format("nvml-index-{}", g_.index);
  g_.entity.attributes.Set(model::attr::kGpuIndex, std::to_string(g_.index));
  g_.degraded = true;
  reporter_.AddEvent(MakeEvent(now, g_.entity.id, "gpu_lost", rc,
                               lib_.ToStatus(rc, "nvmlDeviceGetHandleByIndex").message()));
}

bool GpuPoller::RegisterEvents() {
  return ctx_.events != nullptr && ctx_.events->Register(g_, reporter_);
}

void GpuPoller::PollDegraded(model::SampleSink& out) {
  ++g_.degraded_polls;
  if (g_.degraded_polls % static_cast<uint64_t>(ctx_.options.lost_retry_polls) == 0) {
    TryRecover();
    if (!g_.degraded) {
      // A GPU first seen lost gets its real identity now, and the re-probe may have found
      // other MIG instances: declare them for this poll.
      out.AddEntity(g_.entity);
      for (auto& mig : g_.migs) {
        out.AddEntity(mig->entity);
      }
    }
  }
  if (g_.degraded) {
    out.AddValue(m::kDegraded, g_.entity.id, 1);
  }
}

}  // namespace warpscope::agent::nvml_internal

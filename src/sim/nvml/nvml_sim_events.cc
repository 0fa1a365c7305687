// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <tuple>
#include <vector>

#include "sim/nvml/nvml_sim_internal.h"

namespace warpscope::sim {

using abi::nvmlReturn_t;

// ---- Events ----

unsigned long long NvmlSim::SupportedEventTypes(size_t dev) const {
  unsigned long long types = abi::kEventTypeXidCriticalError;
  if (sim_->device(dev).ecc) {
    types |= abi::kEventTypeSingleBitEccError | abi::kEventTypeDoubleBitEccError;
  }
  return types;
}

nvmlReturn_t NvmlSim::EventSetCreate(abi::nvmlEventSet_t* set) {
  return SystemCall("nvmlEventSetCreate", [&](double) {
    if (set == nullptr) {
      return abi::kErrorInvalidArgument;
    }
    auto* s = new EventSet();
    event_sets_.insert(s);
    *set = reinterpret_cast<abi::nvmlEventSet_t>(s);
    return abi::kSuccess;
  });
}

nvmlReturn_t NvmlSim::DeviceRegisterEvents(abi::nvmlDevice_t device, unsigned long long types,
                                           abi::nvmlEventSet_t set) {
  return DeviceCall("nvmlDeviceRegisterEvents", device, HandleUse::kFullGpu,
                    [&](const Target& target, double) {
                      auto* s = reinterpret_cast<EventSet*>(set);
                      if (!event_sets_.contains(s)) {
                        return abi::kErrorInvalidArgument;
                      }
                      if ((types & ~SupportedEventTypes(target.dev)) != 0) {
                        return abi::kErrorNotSupported;
                      }
                      s->types[target.dev] |= types;
                      return abi::kSuccess;
                    });
}

nvmlReturn_t NvmlSim::DeviceGetSupportedEventTypes(abi::nvmlDevice_t device,
                                                   unsigned long long* types) {
  return DeviceCall("nvmlDeviceGetSupportedEventTypes", device, HandleUse::kFullGpu,
                    [&](const Target& target, double) {
                      if (types == nullptr) {
                        return abi::kErrorInvalidArgument;
                      }
                      *types = SupportedEventTypes(target.dev);
                      return abi::kSuccess;
                    });
}

nvmlReturn_t NvmlSim::EventSetWait(abi::nvmlEventSet_t set, abi::nvmlEventData_t* data,
                                   unsigned timeout_ms) {
  std::unique_lock lock(mu_);
  if (!sim_) {
    return abi::kErrorUninitialized;
  }
  if (Missing("nvmlEventSetWait_v2")) {
    return abi::kErrorFunctionNotFound;
  }
  auto* s = reinterpret_cast<EventSet*>(set);
  if (!event_sets_.contains(s) || data == nullptr) {
    return abi::kErrorInvalidArgument;
  }
  const uint64_t generation = generation_;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    const double t = NowSeconds();
    // The earliest due XID of a device registered for XID events, not yet delivered here.
    std::optional<std::tuple<double, size_t, size_t>> best;
    bool lost = false;
    for (size_t dev = 0; dev < sim_->device_count(); ++dev) {
      if (s->types[dev] == 0) {
        continue;
      }
      lost = lost || sim_->Lost(dev, t);
      if ((s->types[dev] & abi::kEventTypeXidCriticalError) == 0) {
        continue;
      }
      const auto& faults = sim_->device(dev).faults;
      for (size_t f = 0; f < faults.size(); ++f) {
        if (faults[f].kind != FaultKind::kXid || faults[f].at_s > t ||
            s->delivered.contains({dev, f})) {
          continue;
        }
        std::tuple<double, size_t, size_t> candidate{faults[f].at_s, dev, f};
        if (!best || candidate < *best) {
          best = candidate;
        }
      }
    }
    if (best) {
      auto [at, dev, f] = *best;
      const FaultSpec& fault = sim_->device(dev).faults[f];
      s->delivered.insert({dev, f});
      std::memset(data, 0, sizeof(*data));
      data->device = HandleFor(dev, std::nullopt);
      data->eventType = abi::kEventTypeXidCriticalError;
      data->eventData = fault.code;
      data->gpuInstanceId = fault.gpu_instance_id;
      data->computeInstanceId = fault.compute_instance_id;
      return abi::kSuccess;
    }
    if (lost) {
      return abi::kErrorGpuIsLost;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      return abi::kErrorTimeout;
    }
    auto wake = deadline;
    if (!manual_clock_) {
      if (auto next = sim_->NextEventTime(t)) {
        auto until_next = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
            std::chrono::duration<double>(*next - t));
        wake = std::min(wake, now + until_next + std::chrono::milliseconds(1));
      }
    }
    cv_.wait_until(lock, wake);
    if (!sim_ || generation_ != generation) {
      return abi::kErrorUninitialized;
    }
    if (!event_sets_.contains(s)) {
      return abi::kErrorInvalidArgument;
    }
  }
}

nvmlReturn_t NvmlSim::EventSetFree(abi::nvmlEventSet_t set) {
  nvmlReturn_t r = SystemCall("nvmlEventSetFree", [&](double) {
    auto* s = reinterpret_cast<EventSet*>(set);
    if (event_sets_.erase(s) == 0) {
      return abi::kErrorInvalidArgument;
    }
    delete s;
    return abi::kSuccess;
  });
  cv_.notify_all();
  return r;
}

// ---- MIG ----

nvmlReturn_t NvmlSim::DeviceGetMigMode(abi::nvmlDevice_t device, unsigned* current,
                                       unsigned* pending) {
  return DeviceCall("nvmlDeviceGetMigMode", device, HandleUse::kFullGpu,
                    [&](const Target& target, double) {
                      const DeviceSpec& d = sim_->device(target.dev);
                      if (!d.SupportsMig()) {
                        return abi::kErrorNotSupported;
                      }
                      if (current == nullptr || pending == nullptr) {
                        return abi::kErrorInvalidArgument;
                      }
                      *current = *pending = d.mig.enabled ? abi::kMigEnable : abi::kMigDisable;
                      return abi::kSuccess;
                    });
}

nvmlReturn_t NvmlSim::DeviceGetMaxMigDeviceCount(abi::nvmlDevice_t device, unsigned* count) {
  return DeviceCall("nvmlDeviceGetMaxMigDeviceCount", device, HandleUse::kFullGpu,
                    [&](const Target& target, double) {
                      const DeviceSpec& d = sim_->device(target.dev);
                      if (!d.SupportsMig()) {
                        return abi::kErrorNotSupported;
                      }
                      if (count == nullptr) {
                        return abi::kErrorInvalidArgument;
                      }
                      *count = d.mig.enabled ? d.mig.max_devices : 0;
                      return abi::kSuccess;
                    });
}

nvmlReturn_t NvmlSim::DeviceGetMigDeviceHandleByIndex(abi::nvmlDevice_t device, unsigned index,
                                                      abi::nvmlDevice_t* mig) {
  return DeviceCall("nvmlDeviceGetMigDeviceHandleByIndex", device, HandleUse::kFullGpu,
                    [&](const Target& target, double) {
                      const DeviceSpec& d = sim_->device(target.dev);
                      if (!d.SupportsMig()) {
                        return abi::kErrorNotSupported;
                      }
                      if (mig == nullptr || !d.mig.enabled || index >= d.mig.max_devices) {
                        return abi::kErrorInvalidArgument;
                      }
                      for (size_t i = 0; i < d.mig.instances.size(); ++i) {
                        if (d.mig.instances[i].slot == index) {
                          *mig = HandleFor(target.dev, i);
                          return abi::kSuccess;
                        }
                      }
                      return abi::kErrorNotFound;
                    });
}

nvmlReturn_t NvmlSim::DeviceGetDeviceHandleFromMigDeviceHandle(abi::nvmlDevice_t mig,
                                                               abi::nvmlDevice_t* device) {
  return DeviceCall("nvmlDeviceGetDeviceHandleFromMigDeviceHandle", mig, HandleUse::kMigOnly,
                    [&](const Target& target, double) {
                      if (device == nullptr) {
                        return abi::kErrorInvalidArgument;
                      }
                      *device = HandleFor(target.dev, std::nullopt);
                      return abi::kSuccess;
                    });
}

nvmlReturn_t NvmlSim::DeviceGetInstanceId(std::string_view fn, abi::nvmlDevice_t mig,
                                          unsigned* id) {
  const bool gpu = fn == "nvmlDeviceGetGpuInstanceId";
  return DeviceCall(fn, mig, HandleUse::kMigOnly, [&](const Target& target, double) {
    if (id == nullptr) {
      return abi::kErrorInvalidArgument;
    }
    const auto& inst = sim_->device(target.dev).mig.instances[*target.instance];
    *id = gpu ? inst.gpu_instance_id : inst.compute_instance_id;
    return abi::kSuccess;
  });
}

}  // namespace warpscope::sim

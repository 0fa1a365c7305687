// SPDX-License-Identifier: Apache-2.0
// NvmlSim's insides, shared by its files (nvml_sim.cc: lifecycle and system calls;
// nvml_sim_device.cc: identity, memory, utilisation, power, clocks, PCIe; nvml_sim_fields.cc:
// field values, NVLink, ECC; nvml_sim_events.cc: events and MIG; nvml_sim_gpm.cc: GPM).
// Private to src/sim/nvml.
#ifndef WARPSCOPE_SIM_NVML_NVML_SIM_INTERNAL_H_
#define WARPSCOPE_SIM_NVML_NVML_SIM_INTERNAL_H_

#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "sim/nvml/nvml_sim.h"

namespace warpscope::sim {

inline constexpr unsigned kPciVendorNvidia = 0x10DE;
// What nvmlDevice{En,De}coderUtilization report as their sampling period on datacenter boards.
inline constexpr unsigned kCodecSamplingPeriodUs = 167000;

inline abi::nvmlReturn_t CopyString(const std::string& value, char* out, unsigned length) {
  if (out == nullptr) {
    return abi::kErrorInvalidArgument;
  }
  if (length < value.size() + 1) {
    return abi::kErrorInsufficientSize;
  }
  std::memcpy(out, value.c_str(), value.size() + 1);
  return abi::kSuccess;
}

// Both saturate: a double outside the target range (or NaN, read as 0) must not reach the
// conversion, where it would be undefined behaviour (FloorU64) or an unspecified llround.
inline unsigned RoundU32(double v) {
  if (!(v > 0)) {
    return 0;
  }
  return static_cast<unsigned>(std::llround(std::min(v, 4294967295.0)));
}

inline unsigned long long FloorU64(double v) {
  if (!(v > 0)) {
    return 0;
  }
  if (v >= 0x1p64) {
    return std::numeric_limits<unsigned long long>::max();
  }
  return static_cast<unsigned long long>(std::floor(v));
}

inline long long TimestampUs(double t) {
  return kEpochBaseUs + static_cast<long long>(std::floor(t * 1e6));
}

struct NvmlSim::EventSet {
  // Registered event types per device index.
  std::vector<unsigned long long> types = std::vector<unsigned long long>(kMaxDevices, 0);
  // (device, fault index) of XID events already delivered through this set.
  std::set<std::pair<size_t, size_t>> delivered;
};

struct NvmlSim::GpmSample {
  bool filled = false;
  size_t dev = 0;
  std::optional<size_t> instance;
  double t = 0;
};

template <typename Body>
abi::nvmlReturn_t NvmlSim::SystemCall(std::string_view fn, Body&& body) {
  std::lock_guard lock(mu_);
  if (!sim_) {
    return abi::kErrorUninitialized;
  }
  if (Missing(fn)) {
    return abi::kErrorFunctionNotFound;
  }
  return body(NowSeconds());
}

template <typename Body>
abi::nvmlReturn_t NvmlSim::DeviceCall(std::string_view fn, abi::nvmlDevice_t handle, HandleUse use,
                                      Body&& body) {
  std::unique_lock lock(mu_);
  if (!sim_) {
    return abi::kErrorUninitialized;
  }
  if (Missing(fn)) {
    return abi::kErrorFunctionNotFound;
  }
  auto target = Resolve(handle);
  if (!target) {
    return abi::kErrorInvalidArgument;
  }
  if (!WaitWhileSlow(lock, target->dev, fn)) {
    return abi::kErrorUninitialized;
  }
  double t = NowSeconds();
  if (sim_->Lost(target->dev, t)) {
    return abi::kErrorGpuIsLost;
  }
  if ((use == HandleUse::kFullGpu && target->instance) ||
      (use == HandleUse::kMigOnly && !target->instance)) {
    return abi::kErrorNotSupported;
  }
  if (sim_->Unsupported(target->dev, fn, t)) {
    return abi::kErrorNotSupported;
  }
  return body(*target, t);
}

}  // namespace warpscope::sim

#endif  // WARPSCOPE_SIM_NVML_NVML_SIM_INTERNAL_H_

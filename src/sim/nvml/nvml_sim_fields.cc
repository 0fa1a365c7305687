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

// ---- Field values ----

nvmlReturn_t NvmlSim::DeviceGetFieldValues(abi::nvmlDevice_t device, int count,
                                           abi::nvmlFieldValue_t* values) {
  return DeviceCall(
      "nvmlDeviceGetFieldValues", device, HandleUse::kFullGpu, [&](const Target& target, double t) {
        if (count < 0 || (count > 0 && values == nullptr)) {
          return abi::kErrorInvalidArgument;
        }
        const DeviceSpec& d = sim_->device(target.dev);
        const size_t dev = target.dev;
        for (int i = 0; i < count; ++i) {
          abi::nvmlFieldValue_t& fv = values[i];
          fv.timestamp = TimestampUs(t);
          fv.latencyUsec = 0;
          fv.value.ullVal = 0;
          auto set_uint = [&](double v) {
            fv.valueType = abi::kValueTypeUnsignedInt;
            fv.value.uiVal = RoundU32(v);
            fv.nvmlReturn = abi::kSuccess;
          };
          auto set_ull = [&](unsigned long long v) {
            fv.valueType = abi::kValueTypeUnsignedLongLong;
            fv.value.ullVal = v;
            fv.nvmlReturn = abi::kSuccess;
          };
          auto fail = [&](nvmlReturn_t r) {
            fv.valueType = abi::kValueTypeUnsignedLongLong;
            fv.nvmlReturn = r;
          };
          auto signal_unsupported = [&](std::string_view s) { return Unsupported(target, s, t); };
          switch (fv.fieldId) {
            case 1:  // NVML_FI_DEV_ECC_CURRENT
            case 2:  // NVML_FI_DEV_ECC_PENDING
              set_uint(d.ecc ? 1 : 0);
              break;
            case abi::kFiEccSbeVolTotal:
            case abi::kFiEccSbeAggTotal:
            case abi::kFiEccDbeVolTotal:
            case abi::kFiEccDbeAggTotal: {
              const bool sbe =
                  fv.fieldId == abi::kFiEccSbeVolTotal || fv.fieldId == abi::kFiEccSbeAggTotal;
              if (!d.ecc || signal_unsupported(sbe ? "ecc_sbe_rate" : "ecc_dbe_rate")) {
                fail(abi::kErrorNotSupported);
              } else {
                set_ull(FloorU64(
                    sim_->Integral(dev, sbe ? SignalId::kEccSbeRate : SignalId::kEccDbeRate, t)));
              }
              break;
            }
            case abi::kFiMemoryTemp:
              if (signal_unsupported("memory_temperature")) {
                fail(abi::kErrorNotSupported);
              } else {
                set_uint(sim_->Value(dev, SignalId::kMemoryTemperature, t));
              }
              break;
            case abi::kFiTotalEnergyConsumption:
            case 191:  // NVML_FI_DEV_ENERGY
              if (d.architecture < Architecture::kVolta ||
                  sim_->Unsupported(dev, "nvmlDeviceGetTotalEnergyConsumption", t)) {
                fail(abi::kErrorNotSupported);
              } else {
                set_ull(FloorU64(sim_->Integral(dev, SignalId::kPower, t) * 1000));
              }
              break;
            case abi::kFiNvlinkLinkCount:
              if (d.nvlink_links == 0) {
                fail(abi::kErrorNotSupported);
              } else {
                set_uint(d.nvlink_links);
              }
              break;
            case 94:  // NVML_FI_DEV_PCIE_REPLAY_COUNTER
              if (signal_unsupported("pcie_replay_rate")) {
                fail(abi::kErrorNotSupported);
              } else {
                set_uint(std::floor(sim_->Integral(dev, SignalId::kPcieReplayRate, t)));
              }
              break;
            case abi::kFiNvlinkThroughputDataTx:
            case abi::kFiNvlinkThroughputDataRx:
            case 140:  // NVML_FI_DEV_NVLINK_THROUGHPUT_RAW_TX
            case 141: {
              const bool tx = fv.fieldId == abi::kFiNvlinkThroughputDataTx || fv.fieldId == 140;
              const bool raw = fv.fieldId >= 140;
              if (d.nvlink_links == 0 || signal_unsupported(tx ? "nvlink_tx" : "nvlink_rx")) {
                fail(abi::kErrorNotSupported);
                break;
              }
              double links = 1;
              if (fv.scopeId == abi::kScopeAllLinks) {
                links = d.nvlink_links;
              } else if (fv.scopeId >= d.nvlink_links) {
                fail(abi::kErrorInvalidArgument);
                break;
              }
              // Raw counts include packet headers: about 6% on top of the payload.
              double bytes =
                  sim_->Integral(dev, tx ? SignalId::kNvlinkTx : SignalId::kNvlinkRx, t) * links *
                  (raw ? 1.0625 : 1.0);
              set_ull(FloorU64(bytes / 1024.0));
              break;
            }
            case abi::kFiRemappedCor:
            case abi::kFiRemappedUnc:
            case abi::kFiRemappedPending:
            case abi::kFiRemappedFailure: {
              static constexpr SignalId kRemap[] = {
                  SignalId::kRemappedRowsCorrectable, SignalId::kRemappedRowsUncorrectable,
                  SignalId::kRemapPending, SignalId::kRemapFailure};
              SignalId s = kRemap[fv.fieldId - abi::kFiRemappedCor];
              if (d.architecture < Architecture::kAmpere ||
                  signal_unsupported(GetSignalInfo(s).name) ||
                  sim_->Unsupported(dev, "nvmlDeviceGetRemappedRows", t)) {
                fail(abi::kErrorNotSupported);
              } else {
                set_uint(sim_->Value(dev, s, t));
              }
              break;
            }
            case 165:  // NVML_FI_DEV_NVLINK_GET_STATE (scopeId = link)
              if (d.nvlink_links == 0) {
                fail(abi::kErrorNotSupported);
              } else if (fv.scopeId >= d.nvlink_links) {
                fail(abi::kErrorInvalidArgument);
              } else {
                set_uint(1);
              }
              break;
            case 185:  // NVML_FI_DEV_POWER_AVERAGE (mW)
            case 186:  // NVML_FI_DEV_POWER_INSTANT
              if (signal_unsupported("power") ||
                  sim_->Unsupported(dev, "nvmlDeviceGetPowerUsage", t)) {
                fail(abi::kErrorNotSupported);
              } else {
                set_uint(sim_->Value(dev, SignalId::kPower, t) * 1000);
              }
              break;
            case 190:  // NVML_FI_DEV_POWER_CURRENT_LIMIT (mW)
              set_uint(d.enforced_power_limit_w * 1000);
              break;
            default:
              fail(abi::kErrorNotSupported);
              break;
          }
        }
        return abi::kSuccess;
      });
}

// ---- NVLink, ECC, remapped rows ----

nvmlReturn_t NvmlSim::DeviceGetNvLinkState(abi::nvmlDevice_t device, unsigned link,
                                           unsigned* is_active) {
  return DeviceCall("nvmlDeviceGetNvLinkState", device, HandleUse::kFullGpu,
                    [&](const Target& target, double) {
                      const DeviceSpec& d = sim_->device(target.dev);
                      if (d.nvlink_links == 0) {
                        return abi::kErrorNotSupported;
                      }
                      if (is_active == nullptr || link >= d.nvlink_links) {
                        return abi::kErrorInvalidArgument;
                      }
                      *is_active = abi::kFeatureEnabled;
                      return abi::kSuccess;
                    });
}

nvmlReturn_t NvmlSim::DeviceGetTotalEccErrors(abi::nvmlDevice_t device, unsigned error_type,
                                              unsigned counter_type, unsigned long long* count) {
  return DeviceCall(
      "nvmlDeviceGetTotalEccErrors", device, HandleUse::kFullGpu,
      [&](const Target& target, double t) {
        if (count == nullptr || error_type > abi::kMemoryErrorUncorrected ||
            counter_type > abi::kEccCounterAggregate) {
          return abi::kErrorInvalidArgument;
        }
        const bool corrected = error_type == abi::kMemoryErrorCorrected;
        if (!sim_->device(target.dev).ecc ||
            Unsupported(target, corrected ? "ecc_sbe_rate" : "ecc_dbe_rate", t)) {
          return abi::kErrorNotSupported;
        }
        // Volatile and aggregate counts are equal: the simulated driver loaded at t = 0 on a
        // board with no earlier errors.
        *count = FloorU64(sim_->Integral(
            target.dev, corrected ? SignalId::kEccSbeRate : SignalId::kEccDbeRate, t));
        return abi::kSuccess;
      });
}

nvmlReturn_t NvmlSim::DeviceGetRemappedRows(abi::nvmlDevice_t device, unsigned* corr, unsigned* unc,
                                            unsigned* pending, unsigned* failure) {
  return DeviceCall(
      "nvmlDeviceGetRemappedRows", device, HandleUse::kFullGpu,
      [&](const Target& target, double t) {
        if (corr == nullptr || unc == nullptr || pending == nullptr || failure == nullptr) {
          return abi::kErrorInvalidArgument;
        }
        const DeviceSpec& d = sim_->device(target.dev);
        if (d.architecture < Architecture::kAmpere || (d.mig.enabled && !d.mig.instances.empty())) {
          return abi::kErrorNotSupported;
        }
        for (SignalId s : {SignalId::kRemappedRowsCorrectable, SignalId::kRemappedRowsUncorrectable,
                           SignalId::kRemapPending, SignalId::kRemapFailure}) {
          if (Unsupported(target, GetSignalInfo(s).name, t)) {
            return abi::kErrorNotSupported;
          }
        }
        *corr = RoundU32(sim_->Value(target.dev, SignalId::kRemappedRowsCorrectable, t));
        *unc = RoundU32(sim_->Value(target.dev, SignalId::kRemappedRowsUncorrectable, t));
        *pending = RoundU32(sim_->Value(target.dev, SignalId::kRemapPending, t)) > 0 ? 1 : 0;
        *failure = RoundU32(sim_->Value(target.dev, SignalId::kRemapFailure, t)) > 0 ? 1 : 0;
        return abi::kSuccess;
      });
}

}  // namespace warpscope::sim

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

// ---- Enumeration and identity ----

nvmlReturn_t NvmlSim::DeviceGetCount(std::string_view fn, unsigned* count) {
  return SystemCall(fn, [&](double) {
    if (count == nullptr) {
      return abi::kErrorInvalidArgument;
    }
    *count = static_cast<unsigned>(sim_->device_count());
    return abi::kSuccess;
  });
}

nvmlReturn_t NvmlSim::DeviceGetHandleByIndex(std::string_view fn, unsigned index,
                                             abi::nvmlDevice_t* device) {
  {
    // A slow device is slow to open too.
    std::unique_lock lock(mu_);
    if (sim_ && !Missing(fn) && index < sim_->device_count() && !WaitWhileSlow(lock, index, fn)) {
      return abi::kErrorUninitialized;
    }
  }
  return SystemCall(fn, [&](double t) {
    if (device == nullptr || index >= sim_->device_count()) {
      return abi::kErrorInvalidArgument;
    }
    if (sim_->Lost(index, t)) {
      return abi::kErrorGpuIsLost;
    }
    if (sim_->NoPermission(index, t)) {
      return abi::kErrorNoPermission;
    }
    if (sim_->Unsupported(index, fn, t)) {
      return abi::kErrorNotSupported;
    }
    *device = HandleFor(index, std::nullopt);
    return abi::kSuccess;
  });
}

nvmlReturn_t NvmlSim::DeviceGetIndex(abi::nvmlDevice_t device, unsigned* index) {
  return DeviceCall("nvmlDeviceGetIndex", device, HandleUse::kFullGpu,
                    [&](const Target& target, double) {
                      if (index == nullptr) {
                        return abi::kErrorInvalidArgument;
                      }
                      *index = sim_->device(target.dev).index;
                      return abi::kSuccess;
                    });
}

nvmlReturn_t NvmlSim::DeviceGetName(abi::nvmlDevice_t device, char* name, unsigned length) {
  return DeviceCall("nvmlDeviceGetName", device, HandleUse::kFullGpuOrMig,
                    [&](const Target& target, double) {
                      const DeviceSpec& d = sim_->device(target.dev);
                      std::string value = d.name;
                      if (target.instance) {
                        value += " MIG " + d.mig.instances[*target.instance].profile;
                      }
                      return CopyString(value, name, length);
                    });
}

nvmlReturn_t NvmlSim::DeviceGetUuid(abi::nvmlDevice_t device, char* uuid, unsigned length) {
  return DeviceCall(
      "nvmlDeviceGetUUID", device, HandleUse::kFullGpuOrMig, [&](const Target& target, double) {
        const DeviceSpec& d = sim_->device(target.dev);
        return CopyString(target.instance ? d.mig.instances[*target.instance].uuid : d.uuid, uuid,
                          length);
      });
}

nvmlReturn_t NvmlSim::DeviceGetSerial(abi::nvmlDevice_t device, char* serial, unsigned length) {
  return DeviceCall("nvmlDeviceGetSerial", device, HandleUse::kFullGpu,
                    [&](const Target& target, double) {
                      return CopyString(sim_->device(target.dev).serial, serial, length);
                    });
}

nvmlReturn_t NvmlSim::DeviceGetPciInfo(std::string_view fn, abi::nvmlDevice_t device,
                                       abi::nvmlPciInfo_t* pci) {
  return DeviceCall(fn, device, HandleUse::kFullGpuOrMig, [&](const Target& target, double) {
    if (pci == nullptr) {
      return abi::kErrorInvalidArgument;
    }
    const DeviceSpec& d = sim_->device(target.dev);
    std::memset(pci, 0, sizeof(*pci));
    pci->domain = d.pci_domain;
    pci->bus = d.pci_bus;
    pci->device = d.pci_device;
    pci->pciDeviceId = (d.pci_device_id << 16) | kPciVendorNvidia;
    pci->pciSubSystemId = pci->pciDeviceId;
    fmt::format_to_n(pci->busIdLegacy, sizeof(pci->busIdLegacy) - 1, "{:04X}:{:02X}:{:02X}.0",
                     d.pci_domain & 0xFFFF, d.pci_bus, d.pci_device);
    fmt::format_to_n(pci->busId, sizeof(pci->busId) - 1, "{:08X}:{:02X}:{:02X}.0", d.pci_domain,
                     d.pci_bus, d.pci_device);
    return abi::kSuccess;
  });
}

nvmlReturn_t NvmlSim::DeviceGetMinorNumber(abi::nvmlDevice_t device, unsigned* minor) {
  return DeviceCall("nvmlDeviceGetMinorNumber", device, HandleUse::kFullGpu,
                    [&](const Target& target, double) {
                      if (minor == nullptr) {
                        return abi::kErrorInvalidArgument;
                      }
                      *minor = sim_->device(target.dev).minor_number;
                      return abi::kSuccess;
                    });
}

nvmlReturn_t NvmlSim::DeviceGetArchitecture(abi::nvmlDevice_t device, unsigned* arch) {
  return DeviceCall("nvmlDeviceGetArchitecture", device, HandleUse::kFullGpuOrMig,
                    [&](const Target& target, double) {
                      if (arch == nullptr) {
                        return abi::kErrorInvalidArgument;
                      }
                      *arch = static_cast<unsigned>(sim_->device(target.dev).architecture);
                      return abi::kSuccess;
                    });
}

nvmlReturn_t NvmlSim::DeviceGetCudaComputeCapability(abi::nvmlDevice_t device, int* major,
                                                     int* minor) {
  return DeviceCall("nvmlDeviceGetCudaComputeCapability", device, HandleUse::kFullGpuOrMig,
                    [&](const Target& target, double) {
                      if (major == nullptr || minor == nullptr) {
                        return abi::kErrorInvalidArgument;
                      }
                      *major = sim_->device(target.dev).cc_major;
                      *minor = sim_->device(target.dev).cc_minor;
                      return abi::kSuccess;
                    });
}

// ---- Memory and utilisation ----

nvmlReturn_t NvmlSim::DeviceGetMemoryInfoV2(abi::nvmlDevice_t device,
                                            abi::nvmlMemory_v2_t* memory) {
  return DeviceCall("nvmlDeviceGetMemoryInfo_v2", device, HandleUse::kFullGpuOrMig,
                    [&](const Target& target, double t) {
                      if (memory == nullptr) {
                        return abi::kErrorInvalidArgument;
                      }
                      if (memory->version != abi::kMemoryV2Version) {
                        return abi::kErrorArgumentVersionMismatch;
                      }
                      if (Unsupported(target, "memory_used", t)) {
                        return abi::kErrorNotSupported;
                      }
                      const DeviceSpec& d = sim_->device(target.dev);
                      if (target.instance) {
                        const auto& inst = d.mig.instances[*target.instance];
                        memory->total = FloorU64(inst.memory_total);
                        memory->reserved = 0;
                        memory->used = FloorU64(sim_->InstanceValue(target.dev, *target.instance,
                                                                    SignalId::kMemoryUsed, t));
                      } else {
                        memory->total = FloorU64(d.memory_total);
                        memory->reserved = FloorU64(d.memory_reserved);
                        memory->used = FloorU64(sim_->Value(target.dev, SignalId::kMemoryUsed, t));
                      }
                      memory->free = memory->total - memory->reserved - memory->used;
                      return abi::kSuccess;
                    });
}

nvmlReturn_t NvmlSim::DeviceGetMemoryInfoV1(abi::nvmlDevice_t device, abi::nvmlMemory_t* memory) {
  return DeviceCall("nvmlDeviceGetMemoryInfo", device, HandleUse::kFullGpuOrMig,
                    [&](const Target& target, double t) {
                      if (memory == nullptr) {
                        return abi::kErrorInvalidArgument;
                      }
                      if (Unsupported(target, "memory_used", t)) {
                        return abi::kErrorNotSupported;
                      }
                      const DeviceSpec& d = sim_->device(target.dev);
                      if (target.instance) {
                        const auto& inst = d.mig.instances[*target.instance];
                        memory->total = FloorU64(inst.memory_total);
                        memory->used = FloorU64(sim_->InstanceValue(target.dev, *target.instance,
                                                                    SignalId::kMemoryUsed, t));
                      } else {
                        // v1 counts the driver's reservation as used.
                        memory->total = FloorU64(d.memory_total);
                        memory->used = FloorU64(d.memory_reserved) +
                                       FloorU64(sim_->Value(target.dev, SignalId::kMemoryUsed, t));
                      }
                      memory->free = memory->total - memory->used;
                      return abi::kSuccess;
                    });
}

nvmlReturn_t NvmlSim::DeviceGetUtilizationRates(abi::nvmlDevice_t device,
                                                abi::nvmlUtilization_t* util) {
  return DeviceCall("nvmlDeviceGetUtilizationRates", device, HandleUse::kFullGpu,
                    [&](const Target& target, double t) {
                      if (util == nullptr) {
                        return abi::kErrorInvalidArgument;
                      }
                      if (sim_->device(target.dev).mig.enabled ||
                          Unsupported(target, "gpu_util", t) ||
                          Unsupported(target, "mem_copy_util", t)) {
                        return abi::kErrorNotSupported;
                      }
                      util->gpu = RoundU32(sim_->Value(target.dev, SignalId::kGpuUtil, t));
                      util->memory = RoundU32(sim_->Value(target.dev, SignalId::kMemCopyUtil, t));
                      return abi::kSuccess;
                    });
}

nvmlReturn_t NvmlSim::DeviceGetCodecUtilization(std::string_view fn, abi::nvmlDevice_t device,
                                                unsigned* util, unsigned* sampling_period_us) {
  const bool encoder = fn == "nvmlDeviceGetEncoderUtilization";
  return DeviceCall(fn, device, HandleUse::kFullGpu, [&](const Target& target, double t) {
    if (util == nullptr || sampling_period_us == nullptr) {
      return abi::kErrorInvalidArgument;
    }
    std::string_view signal = encoder ? "encoder_util" : "decoder_util";
    if (sim_->device(target.dev).mig.enabled || Unsupported(target, signal, t)) {
      return abi::kErrorNotSupported;
    }
    *util = RoundU32(
        sim_->Value(target.dev, encoder ? SignalId::kEncoderUtil : SignalId::kDecoderUtil, t));
    *sampling_period_us = kCodecSamplingPeriodUs;
    return abi::kSuccess;
  });
}

nvmlReturn_t NvmlSim::DeviceGetProcessUtilization(abi::nvmlDevice_t device,
                                                  abi::nvmlProcessUtilizationSample_t* samples,
                                                  unsigned* count,
                                                  unsigned long long last_seen_timestamp) {
  return DeviceCall(
      "nvmlDeviceGetProcessUtilization", device, HandleUse::kFullGpu,
      [&](const Target& target, double t) {
        if (count == nullptr) {
          return abi::kErrorInvalidArgument;
        }
        if (sim_->device(target.dev).mig.enabled) {
          return abi::kErrorNotSupported;
        }
        // The driver samples each process once per second and keeps a short ring; only
        // processes that used the GPU in a sample period appear.
        std::vector<abi::nvmlProcessUtilizationSample_t> out;
        auto last_second = static_cast<long long>(std::floor(t));
        const auto& procs = sim_->device(target.dev).processes;
        for (long long k = std::max(0LL, last_second - kProcessSampleRing + 1); k <= last_second;
             ++k) {
          auto ts = static_cast<unsigned long long>(TimestampUs(static_cast<double>(k)));
          if (ts <= last_seen_timestamp) {
            continue;
          }
          for (size_t p = 0; p < procs.size(); ++p) {
            double tk = static_cast<double>(k);
            if (!sim_->ProcessActive(target.dev, p, tk)) {
              continue;
            }
            unsigned sm = RoundU32(sim_->ProcessValue(target.dev, p, ProcessSignal::kSmUtil, tk));
            unsigned mem = RoundU32(sim_->ProcessValue(target.dev, p, ProcessSignal::kMemUtil, tk));
            if (sm == 0 && mem == 0) {
              continue;
            }
            abi::nvmlProcessUtilizationSample_t sample{};
            sample.pid = procs[p].pid;
            sample.timeStamp = ts;
            sample.smUtil = sm;
            sample.memUtil = mem;
            out.push_back(sample);
          }
        }
        if (out.empty()) {
          *count = 0;
          return abi::kErrorNotFound;
        }
        if (samples == nullptr || *count < out.size()) {
          *count = static_cast<unsigned>(out.size());
          return abi::kErrorInsufficientSize;
        }
        std::copy(out.begin(), out.end(), samples);
        *count = static_cast<unsigned>(out.size());
        return abi::kSuccess;
      });
}

nvmlReturn_t NvmlSim::DeviceGetRunningProcesses(std::string_view fn, abi::nvmlDevice_t device,
                                                ProcessType type, ProcessLayout layout,
                                                unsigned* count, void* infos) {
  return DeviceCall(fn, device, HandleUse::kFullGpuOrMig, [&](const Target& target, double t) {
    if (count == nullptr) {
      return abi::kErrorInvalidArgument;
    }
    const DeviceSpec& d = sim_->device(target.dev);
    const MigInstanceSpec* inst = target.instance ? &d.mig.instances[*target.instance] : nullptr;
    std::vector<size_t> list;
    for (size_t p = 0; p < d.processes.size(); ++p) {
      const ProcessSpec& proc = d.processes[p];
      if (proc.type != type || !sim_->ProcessActive(target.dev, p, t)) {
        continue;
      }
      if (inst != nullptr && (proc.gpu_instance_id != inst->gpu_instance_id ||
                              proc.compute_instance_id != inst->compute_instance_id)) {
        continue;
      }
      list.push_back(p);
    }
    if (list.empty()) {
      *count = 0;
      return abi::kSuccess;
    }
    if (*count < list.size()) {
      *count = static_cast<unsigned>(list.size());
      return abi::kErrorInsufficientSize;
    }
    if (infos == nullptr) {
      return abi::kErrorInvalidArgument;
    }
    size_t stride = layout == ProcessLayout::kV1   ? sizeof(abi::nvmlProcessInfo_v1_t)
                    : layout == ProcessLayout::kV2 ? sizeof(abi::nvmlProcessInfo_t)
                                                   : sim_->scenario().driver.process_stride;
    auto* out = static_cast<unsigned char*>(infos);
    for (size_t i = 0; i < list.size(); ++i) {
      const ProcessSpec& proc = d.processes[list[i]];
      unsigned char* entry = out + i * stride;
      std::memset(entry, 0, stride);
      unsigned pid = proc.pid;
      unsigned long long mem =
          FloorU64(sim_->ProcessValue(target.dev, list[i], ProcessSignal::kMemory, t));
      std::memcpy(entry + offsetof(abi::nvmlProcessInfo_t, pid), &pid, sizeof(pid));
      std::memcpy(entry + offsetof(abi::nvmlProcessInfo_t, usedGpuMemory), &mem, sizeof(mem));
      if (layout != ProcessLayout::kV1) {
        unsigned gi = abi::kInvalidInstanceId;
        unsigned ci = abi::kInvalidInstanceId;
        if (d.mig.enabled && proc.gpu_instance_id) {
          gi = *proc.gpu_instance_id;
          ci = proc.compute_instance_id;
        }
        std::memcpy(entry + offsetof(abi::nvmlProcessInfo_t, gpuInstanceId), &gi, sizeof(gi));
        std::memcpy(entry + offsetof(abi::nvmlProcessInfo_t, computeInstanceId), &ci, sizeof(ci));
      }
    }
    *count = static_cast<unsigned>(list.size());
    return abi::kSuccess;
  });
}

// ---- Power, temperature, clocks, PCIe ----

nvmlReturn_t NvmlSim::DeviceGetPowerUsage(abi::nvmlDevice_t device, unsigned* milliwatts) {
  return DeviceCall("nvmlDeviceGetPowerUsage", device, HandleUse::kFullGpu,
                    [&](const Target& target, double t) {
                      if (milliwatts == nullptr) {
                        return abi::kErrorInvalidArgument;
                      }
                      if (Unsupported(target, "power", t)) {
                        return abi::kErrorNotSupported;
                      }
                      *milliwatts = RoundU32(sim_->Value(target.dev, SignalId::kPower, t) * 1000);
                      return abi::kSuccess;
                    });
}

nvmlReturn_t NvmlSim::DeviceGetPowerLimit(std::string_view fn, abi::nvmlDevice_t device,
                                          unsigned* milliwatts) {
  const bool enforced = fn == "nvmlDeviceGetEnforcedPowerLimit";
  return DeviceCall(fn, device, HandleUse::kFullGpu, [&](const Target& target, double) {
    if (milliwatts == nullptr) {
      return abi::kErrorInvalidArgument;
    }
    const DeviceSpec& d = sim_->device(target.dev);
    *milliwatts = RoundU32((enforced ? d.enforced_power_limit_w : d.power_limit_w) * 1000);
    return abi::kSuccess;
  });
}

nvmlReturn_t NvmlSim::DeviceGetTotalEnergyConsumption(abi::nvmlDevice_t device,
                                                      unsigned long long* millijoules) {
  return DeviceCall("nvmlDeviceGetTotalEnergyConsumption", device, HandleUse::kFullGpu,
                    [&](const Target& target, double t) {
                      if (millijoules == nullptr) {
                        return abi::kErrorInvalidArgument;
                      }
                      if (sim_->device(target.dev).architecture < Architecture::kVolta) {
                        return abi::kErrorNotSupported;
                      }
                      *millijoules =
                          FloorU64(sim_->Integral(target.dev, SignalId::kPower, t) * 1000);
                      return abi::kSuccess;
                    });
}

nvmlReturn_t NvmlSim::DeviceGetTemperature(abi::nvmlDevice_t device, unsigned sensor,
                                           unsigned* celsius) {
  return DeviceCall("nvmlDeviceGetTemperature", device, HandleUse::kFullGpu,
                    [&](const Target& target, double t) {
                      if (celsius == nullptr || sensor != abi::kTemperatureGpu) {
                        return abi::kErrorInvalidArgument;
                      }
                      if (Unsupported(target, "temperature", t)) {
                        return abi::kErrorNotSupported;
                      }
                      *celsius = RoundU32(sim_->Value(target.dev, SignalId::kTemperature, t));
                      return abi::kSuccess;
                    });
}

nvmlReturn_t NvmlSim::DeviceGetTemperatureThreshold(abi::nvmlDevice_t device, unsigned threshold,
                                                    unsigned* celsius) {
  // NVML_TEMPERATURE_THRESHOLD_GPS_CURR (7) is the last value any header declares.
  constexpr unsigned kLastKnownThreshold = 7;
  return DeviceCall("nvmlDeviceGetTemperatureThreshold", device, HandleUse::kFullGpu,
                    [&](const Target& target, double) {
                      if (celsius == nullptr || threshold > kLastKnownThreshold) {
                        return abi::kErrorInvalidArgument;
                      }
                      if (threshold >= kTemperatureThresholdCount) {
                        return abi::kErrorNotSupported;
                      }
                      const std::optional<unsigned>& value =
                          sim_->device(target.dev).temperature_thresholds[threshold];
                      if (!value) {
                        return abi::kErrorNotSupported;
                      }
                      *celsius = *value;
                      return abi::kSuccess;
                    });
}

nvmlReturn_t NvmlSim::DeviceGetClockInfo(std::string_view fn, abi::nvmlDevice_t device,
                                         unsigned type, unsigned* mhz) {
  const bool max = fn == "nvmlDeviceGetMaxClockInfo";
  return DeviceCall(fn, device, HandleUse::kFullGpu, [&](const Target& target, double t) {
    if (mhz == nullptr || type > 3) {
      return abi::kErrorInvalidArgument;
    }
    if (type == 3) {  // NVML_CLOCK_VIDEO is not simulated
      return abi::kErrorNotSupported;
    }
    const DeviceSpec& d = sim_->device(target.dev);
    const bool mem = type == abi::kClockMem;
    if (max) {
      *mhz = mem ? d.max_mem_clock : d.max_sm_clock;
      return abi::kSuccess;
    }
    if (Unsupported(target, mem ? "mem_clock" : "sm_clock", t)) {
      return abi::kErrorNotSupported;
    }
    *mhz = RoundU32(sim_->Value(target.dev, mem ? SignalId::kMemClock : SignalId::kSmClock, t));
    return abi::kSuccess;
  });
}

nvmlReturn_t NvmlSim::DeviceGetClockReasons(std::string_view fn, abi::nvmlDevice_t device,
                                            unsigned long long* reasons) {
  return DeviceCall(fn, device, HandleUse::kFullGpu, [&](const Target& target, double t) {
    if (reasons == nullptr) {
      return abi::kErrorInvalidArgument;
    }
    if (Unsupported(target, "clock_event_reasons", t)) {
      return abi::kErrorNotSupported;
    }
    *reasons = FloorU64(sim_->Value(target.dev, SignalId::kClockEventReasons, t));
    return abi::kSuccess;
  });
}

nvmlReturn_t NvmlSim::DeviceGetPcieThroughput(abi::nvmlDevice_t device, unsigned counter,
                                              unsigned* kb_per_s) {
  return DeviceCall("nvmlDeviceGetPcieThroughput", device, HandleUse::kFullGpu,
                    [&](const Target& target, double t) {
                      if (kb_per_s == nullptr || counter > abi::kPcieUtilRxBytes) {
                        return abi::kErrorInvalidArgument;
                      }
                      const bool tx = counter == abi::kPcieUtilTxBytes;
                      if (Unsupported(target, tx ? "pcie_tx" : "pcie_rx", t)) {
                        return abi::kErrorNotSupported;
                      }
                      *kb_per_s = RoundU32(
                          sim_->Value(target.dev, tx ? SignalId::kPcieTx : SignalId::kPcieRx, t));
                      return abi::kSuccess;
                    });
}

nvmlReturn_t NvmlSim::DeviceGetPcieReplayCounter(abi::nvmlDevice_t device, unsigned* value) {
  return DeviceCall("nvmlDeviceGetPcieReplayCounter", device, HandleUse::kFullGpu,
                    [&](const Target& target, double t) {
                      if (value == nullptr) {
                        return abi::kErrorInvalidArgument;
                      }
                      if (Unsupported(target, "pcie_replay_rate", t)) {
                        return abi::kErrorNotSupported;
                      }
                      *value = static_cast<unsigned>(
                          FloorU64(sim_->Integral(target.dev, SignalId::kPcieReplayRate, t)));
                      return abi::kSuccess;
                    });
}

}  // namespace warpscope::sim

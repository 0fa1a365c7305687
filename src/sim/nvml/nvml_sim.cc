// SPDX-License-Identifier: Apache-2.0
#include "sim/nvml/nvml_sim.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <tuple>
#include <vector>

namespace warpscope::sim {
namespace {

using abi::nvmlReturn_t;

constexpr unsigned kPciVendorNvidia = 0x10DE;
// What nvmlDevice{En,De}coderUtilization report as their sampling period on datacenter boards.
constexpr unsigned kCodecSamplingPeriodUs = 167000;

nvmlReturn_t CopyString(const std::string& value, char* out, unsigned length) {
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
unsigned RoundU32(double v) {
  if (!(v > 0)) {
    return 0;
  }
  return static_cast<unsigned>(std::llround(std::min(v, 4294967295.0)));
}

unsigned long long FloorU64(double v) {
  if (!(v > 0)) {
    return 0;
  }
  if (v >= 0x1p64) {
    return std::numeric_limits<unsigned long long>::max();
  }
  return static_cast<unsigned long long>(std::floor(v));
}

long long TimestampUs(double t) {
  return kEpochBaseUs + static_cast<long long>(std::floor(t * 1e6));
}

struct GpmMetricDef {
  unsigned id;
  SignalId signal;
  const char* short_name;
  const char* long_name;
  const char* unit;
};

// Metric ids from the NVML header (nvmlGpmMetricId_t) and the signal that backs each.
constexpr GpmMetricDef kGpmMetrics[] = {
    {abi::kGpmGraphicsUtil, SignalId::kGrEngineActive, "GR_UTIL",
     "Graphics/compute engine "
     "activity",
     "%"},
    {abi::kGpmSmUtil, SignalId::kSmActive, "SM_UTIL", "SM activity", "%"},
    {abi::kGpmSmOccupancy, SignalId::kSmOccupancy, "SM_OCCUPANCY", "SM occupancy", "%"},
    {abi::kGpmIntegerUtil, SignalId::kIntActive, "INTEGER_UTIL", "Integer pipe activity", "%"},
    {abi::kGpmAnyTensorUtil, SignalId::kTensorActive, "ANY_TENSOR_UTIL", "Tensor pipe activity",
     "%"},
    {abi::kGpmDfmaTensorUtil, SignalId::kDfmaActive, "DFMA_TENSOR_UTIL",
     "DFMA tensor pipe activity", "%"},
    {abi::kGpmHmmaTensorUtil, SignalId::kHmmaActive, "HMMA_TENSOR_UTIL",
     "HMMA tensor pipe activity", "%"},
    {abi::kGpmImmaTensorUtil, SignalId::kImmaActive, "IMMA_TENSOR_UTIL",
     "IMMA tensor pipe activity", "%"},
    {abi::kGpmDramBwUtil, SignalId::kDramActive, "DRAM_BW_UTIL", "DRAM bandwidth utilization", "%"},
    {abi::kGpmFp64Util, SignalId::kFp64Active, "FP64_UTIL", "FP64 pipe activity", "%"},
    {abi::kGpmFp32Util, SignalId::kFp32Active, "FP32_UTIL", "FP32 pipe activity", "%"},
    {abi::kGpmFp16Util, SignalId::kFp16Active, "FP16_UTIL", "FP16 pipe activity", "%"},
    {abi::kGpmPcieTxPerSec, SignalId::kGpmPcieTx, "PCIE_TX", "PCIe transmit throughput", "MiB/s"},
    {abi::kGpmPcieRxPerSec, SignalId::kGpmPcieRx, "PCIE_RX", "PCIe receive throughput", "MiB/s"},
    {abi::kGpmNvlinkTotalRxPerSec, SignalId::kGpmNvlinkRx, "NVLINK_RX", "NVLink receive throughput",
     "MiB/s"},
    {abi::kGpmNvlinkTotalTxPerSec, SignalId::kGpmNvlinkTx, "NVLINK_TX",
     "NVLink transmit throughput", "MiB/s"},
};
// Per-link NVLink GPM metrics: 62 + 2k = link k RX, 63 + 2k = link k TX, k = 0..17.
constexpr unsigned kGpmNvlinkPerLinkFirst = 62;
constexpr unsigned kGpmNvlinkPerLinkLinks = 18;

const GpmMetricDef* FindGpmMetric(unsigned id) {
  for (const auto& m : kGpmMetrics) {
    if (m.id == id) {
      return &m;
    }
  }
  return nullptr;
}

// NVDEC (30-37), NVJPG (40-47) and NVOFA (50-51) engines: simulated as idle.
bool IsIdleEngineMetric(unsigned id) {
  return (id >= 30 && id <= 37) || (id >= 40 && id <= 47) || (id >= 50 && id <= 51);
}

}  // namespace

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

NvmlSim::NvmlSim() = default;
NvmlSim::~NvmlSim() { ReleaseSimulation(); }

NvmlSim& NvmlSim::Global() {
  // Placement-new into static storage: no destructor runs at exit (threads may still call in),
  // and no heap object is left behind when the library is unloaded (see ReleaseAll()).
  alignas(NvmlSim) static unsigned char storage[sizeof(NvmlSim)];
  static NvmlSim* instance = new (storage) NvmlSim();
  return *instance;
}

void NvmlSim::ReleaseAll() {
  {
    std::lock_guard lock(mu_);
    ReleaseSimulation();
    refcount_ = 0;
    ++generation_;
    std::string().swap(last_printed_error_);
  }
  cv_.notify_all();
}

void NvmlSim::SetTimeNs(long long t_ns) {
  {
    std::lock_guard lock(mu_);
    manual_clock_ = true;
    manual_ns_ = std::max(t_ns, 0LL);
  }
  cv_.notify_all();
}

const char* NvmlSim::LastError() { return last_error_.data(); }

double NvmlSim::NowSeconds() const {
  if (manual_clock_) {
    return static_cast<double>(manual_ns_) / 1e9;
  }
  if (!origin_set_) {
    return 0;
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - origin_).count();
}

bool NvmlSim::Missing(std::string_view fn) const {
  return sim_ && sim_->scenario().driver.missing_symbols.contains(fn);
}

void NvmlSim::SetError(std::string message) {
  size_t n = std::min(message.size(), last_error_.size() - 1);
  std::memcpy(last_error_.data(), message.data(), n);
  last_error_[n] = '\0';
  if (message != last_printed_error_) {
    std::fprintf(stderr, "warpscope NVML simulator: %s\n", message.c_str());
    last_printed_error_ = std::move(message);
  }
}

void NvmlSim::ReleaseSimulation() {
  for (EventSet* set : event_sets_) {
    delete set;
  }
  event_sets_.clear();
  for (GpmSample* s : gpm_samples_) {
    delete s;
  }
  gpm_samples_.clear();
  sim_.reset();
}

abi::nvmlDevice_t NvmlSim::HandleFor(size_t dev, std::optional<size_t> instance) {
  size_t slot = 0;
  if (instance) {
    slot = sim_->device(dev).mig.instances[*instance].slot + 1;
  }
  return reinterpret_cast<abi::nvmlDevice_t>(&handles_[dev][slot]);
}

std::optional<NvmlSim::Target> NvmlSim::Resolve(abi::nvmlDevice_t handle) const {
  if (handle == nullptr || !sim_) {
    return std::nullopt;
  }
  auto addr = reinterpret_cast<uintptr_t>(handle);
  auto base = reinterpret_cast<uintptr_t>(&handles_[0][0]);
  constexpr size_t kPerDevice = kMaxMigSlots + 1;
  if (addr < base || addr >= base + sizeof(handles_)) {
    return std::nullopt;
  }
  size_t offset = (addr - base) / sizeof(HandleSlot);
  size_t dev = offset / kPerDevice;
  size_t slot = offset % kPerDevice;
  if (dev >= sim_->device_count()) {
    return std::nullopt;
  }
  Target target{dev, std::nullopt};
  if (slot > 0) {
    const MigSpec& mig = sim_->device(dev).mig;
    if (!mig.enabled) {
      return std::nullopt;
    }
    for (size_t i = 0; i < mig.instances.size(); ++i) {
      if (mig.instances[i].slot + 1 == slot) {
        target.instance = i;
      }
    }
    if (!target.instance) {
      return std::nullopt;
    }
  }
  return target;
}

bool NvmlSim::Unsupported(const Target& target, std::string_view what, double t) const {
  return sim_->Unsupported(target.dev, what, t);
}

template <typename Body>
nvmlReturn_t NvmlSim::SystemCall(std::string_view fn, Body&& body) {
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
nvmlReturn_t NvmlSim::DeviceCall(std::string_view fn, abi::nvmlDevice_t handle, HandleUse use,
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

// ---- Lifecycle ----

nvmlReturn_t NvmlSim::Init(std::string_view fn) {
  std::lock_guard lock(mu_);
  if (refcount_ > 0) {
    if (Missing(fn)) {
      return abi::kErrorFunctionNotFound;
    }
    ++refcount_;
    return abi::kSuccess;
  }
  const char* path = std::getenv(kScenarioEnvVar);
  if (path == nullptr || *path == '\0') {
    SetError(
        fmt::format("{} is not set; point it at a scenario file, e.g. "
                    "{}=scenarios/healthy-8xh100.yaml",
                    kScenarioEnvVar, kScenarioEnvVar));
    return abi::kErrorUnknown;
  }
  auto scenario = LoadScenarioFile(path);
  if (!scenario) {
    SetError(scenario.error().message());
    return abi::kErrorUnknown;
  }
  if (scenario->driver.missing_symbols.contains(fn)) {
    return abi::kErrorFunctionNotFound;
  }
  sim_ = std::make_unique<Simulation>(std::move(*scenario));
  refcount_ = 1;
  ++generation_;
  if (!origin_set_) {
    origin_ = std::chrono::steady_clock::now();
    origin_set_ = true;
  }
  last_error_[0] = '\0';
  return abi::kSuccess;
}

nvmlReturn_t NvmlSim::Shutdown() {
  {
    std::lock_guard lock(mu_);
    if (refcount_ == 0) {
      return abi::kErrorUninitialized;
    }
    if (--refcount_ > 0) {
      return abi::kSuccess;
    }
    ReleaseSimulation();
    ++generation_;
  }
  cv_.notify_all();
  return abi::kSuccess;
}

const char* NvmlSim::ErrorString(nvmlReturn_t result) {
  switch (result) {
    case 0:
      return "Success";
    case 1:
      return "Uninitialized";
    case 2:
      return "Invalid Argument";
    case 3:
      return "Not Supported";
    case 4:
      return "Insufficient Permissions";
    case 5:
      return "Already Initialized";
    case 6:
      return "Not Found";
    case 7:
      return "Insufficient Size";
    case 8:
      return "Insufficient External Power";
    case 9:
      return "Driver Not Loaded";
    case 10:
      return "Timeout";
    case 11:
      return "Interrupt Request Issue";
    case 12:
      return "NVML Shared Library Not Found";
    case 13:
      return "Function Not Found";
    case 14:
      return "Corrupted infoROM";
    case 15:
      return "GPU is lost";
    case 16:
      return "GPU requires restart";
    case 17:
      return "The operating system has blocked the request";
    case 18:
      return "RM has detected an NVML/RM version mismatch";
    case 19:
      return "In use by another client";
    case 20:
      return "Insufficient Memory";
    case 21:
      return "No data";
    case 22:
      return "The requested vgpu operation is not available on target device, because "
             "ECC is enabled";
    case 23:
      return "Insufficient resources";
    case 24:
      return "Frequency not supported";
    case 25:
      return "Argument version mismatch";
    case 26:
      return "Deprecated";
    case 27:
      return "Not Ready";
    case 28:
      return "GPU not found";
    case 29:
      return "Invalid state";
    case 30:
      return "Reset type not supported";
    default:
      return "Unknown Error";
  }
}

// ---- System ----

nvmlReturn_t NvmlSim::SystemGetDriverVersion(char* version, unsigned length) {
  return SystemCall("nvmlSystemGetDriverVersion", [&](double) {
    return CopyString(sim_->scenario().driver.version, version, length);
  });
}

nvmlReturn_t NvmlSim::SystemGetNvmlVersion(char* version, unsigned length) {
  return SystemCall("nvmlSystemGetNVMLVersion", [&](double) {
    return CopyString(sim_->scenario().driver.nvml_version, version, length);
  });
}

nvmlReturn_t NvmlSim::SystemGetCudaDriverVersion(std::string_view fn, int* version) {
  return SystemCall(fn, [&](double) {
    if (version == nullptr) {
      return abi::kErrorInvalidArgument;
    }
    *version = sim_->scenario().driver.cuda_version;
    return abi::kSuccess;
  });
}

nvmlReturn_t NvmlSim::SystemGetProcessName(unsigned pid, char* name, unsigned length) {
  return SystemCall("nvmlSystemGetProcessName", [&](double t) {
    if (name == nullptr || length == 0) {
      return abi::kErrorInvalidArgument;
    }
    for (size_t d = 0; d < sim_->device_count(); ++d) {
      const auto& procs = sim_->device(d).processes;
      for (size_t p = 0; p < procs.size(); ++p) {
        if (procs[p].pid == pid && sim_->ProcessActive(d, p, t)) {
          return CopyString(procs[p].name, name, length);
        }
      }
    }
    return abi::kErrorNotFound;
  });
}

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

// ---- GPM ----

nvmlReturn_t NvmlSim::GpmQueryDeviceSupport(abi::nvmlDevice_t device,
                                            abi::nvmlGpmSupport_t* support) {
  return DeviceCall("nvmlGpmQueryDeviceSupport", device, HandleUse::kFullGpuOrMig,
                    [&](const Target& target, double) {
                      if (support == nullptr) {
                        return abi::kErrorInvalidArgument;
                      }
                      if (support->version != abi::kGpmSupportVersion) {
                        return abi::kErrorArgumentVersionMismatch;
                      }
                      support->isSupportedDevice = sim_->device(target.dev).SupportsGpm() ? 1 : 0;
                      return abi::kSuccess;
                    });
}

nvmlReturn_t NvmlSim::GpmSampleAlloc(abi::nvmlGpmSample_t* sample) {
  return SystemCall("nvmlGpmSampleAlloc", [&](double) {
    if (sample == nullptr) {
      return abi::kErrorInvalidArgument;
    }
    auto* s = new GpmSample();
    gpm_samples_.insert(s);
    *sample = reinterpret_cast<abi::nvmlGpmSample_t>(s);
    return abi::kSuccess;
  });
}

nvmlReturn_t NvmlSim::GpmSampleFree(abi::nvmlGpmSample_t sample) {
  return SystemCall("nvmlGpmSampleFree", [&](double) {
    auto* s = reinterpret_cast<GpmSample*>(sample);
    if (gpm_samples_.erase(s) == 0) {
      return abi::kErrorInvalidArgument;
    }
    delete s;
    return abi::kSuccess;
  });
}

nvmlReturn_t NvmlSim::GpmSampleGet(abi::nvmlDevice_t device, abi::nvmlGpmSample_t sample) {
  return DeviceCall("nvmlGpmSampleGet", device, HandleUse::kFullGpuOrMig,
                    [&](const Target& target, double t) {
                      auto* s = reinterpret_cast<GpmSample*>(sample);
                      if (!gpm_samples_.contains(s)) {
                        return abi::kErrorInvalidArgument;
                      }
                      if (!sim_->device(target.dev).SupportsGpm()) {
                        return abi::kErrorNotSupported;
                      }
                      *s = GpmSample{true, target.dev, target.instance, t};
                      return abi::kSuccess;
                    });
}

nvmlReturn_t NvmlSim::GpmMigSampleGet(abi::nvmlDevice_t device, unsigned gpu_instance_id,
                                      abi::nvmlGpmSample_t sample) {
  return DeviceCall("nvmlGpmMigSampleGet", device, HandleUse::kFullGpu,
                    [&](const Target& target, double t) {
                      auto* s = reinterpret_cast<GpmSample*>(sample);
                      if (!gpm_samples_.contains(s)) {
                        return abi::kErrorInvalidArgument;
                      }
                      const DeviceSpec& d = sim_->device(target.dev);
                      if (!d.SupportsGpm() || !d.mig.enabled) {
                        return abi::kErrorNotSupported;
                      }
                      for (size_t i = 0; i < d.mig.instances.size(); ++i) {
                        if (d.mig.instances[i].gpu_instance_id == gpu_instance_id) {
                          *s = GpmSample{true, target.dev, i, t};
                          return abi::kSuccess;
                        }
                      }
                      return abi::kErrorNotFound;
                    });
}

nvmlReturn_t NvmlSim::GpmMetricsGet(abi::nvmlGpmMetricsGet_t* m) {
  return SystemCall("nvmlGpmMetricsGet", [&](double now) {
    if (m == nullptr) {
      return abi::kErrorInvalidArgument;
    }
    if (m->version != abi::kGpmMetricsGetVersion) {
      return abi::kErrorArgumentVersionMismatch;
    }
    auto* s1 = reinterpret_cast<GpmSample*>(m->sample1);
    auto* s2 = reinterpret_cast<GpmSample*>(m->sample2);
    if (m->numMetrics > abi::kGpmMetricMax || !gpm_samples_.contains(s1) ||
        !gpm_samples_.contains(s2) || !s1->filled || !s2->filled) {
      return abi::kErrorInvalidArgument;
    }
    // Both samples must come from the same GPU (or MIG instance); sample1 is the older one and
    // NVML needs at least 100 ms between them to compute rates.
    if (s1->dev != s2->dev || s1->instance != s2->instance || s2->t < s1->t ||
        s2->t - s1->t < kGpmMinIntervalSeconds) {
      return abi::kErrorInvalidArgument;
    }
    const size_t dev = s1->dev;
    if (sim_->Lost(dev, now)) {
      return abi::kErrorGpuIsLost;
    }
    if (sim_->Unsupported(dev, "nvmlGpmMetricsGet", now)) {
      return abi::kErrorNotSupported;
    }
    const DeviceSpec& d = sim_->device(dev);
    for (unsigned i = 0; i < m->numMetrics; ++i) {
      abi::nvmlGpmMetric_t& metric = m->metrics[i];
      metric.value = 0;
      metric.metricInfo.shortName = nullptr;
      metric.metricInfo.longName = nullptr;
      metric.metricInfo.unit = nullptr;
      const GpmMetricDef* def = FindGpmMetric(metric.metricId);
      if (def != nullptr) {
        if (sim_->Unsupported(dev, GetSignalInfo(def->signal).name, s2->t)) {
          metric.nvmlReturn = abi::kErrorNotSupported;
          continue;
        }
        metric.value = sim_->Average(dev, s1->instance, def->signal, s1->t, s2->t);
        metric.metricInfo.shortName = const_cast<char*>(def->short_name);
        metric.metricInfo.longName = const_cast<char*>(def->long_name);
        metric.metricInfo.unit = const_cast<char*>(def->unit);
        metric.nvmlReturn = abi::kSuccess;
        continue;
      }
      const unsigned id = metric.metricId;
      if (id >= kGpmNvlinkPerLinkFirst &&
          id < kGpmNvlinkPerLinkFirst + 2 * kGpmNvlinkPerLinkLinks) {
        const unsigned link = (id - kGpmNvlinkPerLinkFirst) / 2;
        const bool rx = (id - kGpmNvlinkPerLinkFirst) % 2 == 0;
        if (s1->instance || link >= d.nvlink_links) {
          metric.nvmlReturn = abi::kErrorNotSupported;
          continue;
        }
        metric.value =
            sim_->Average(dev, std::nullopt, rx ? SignalId::kGpmNvlinkRx : SignalId::kGpmNvlinkTx,
                          s1->t, s2->t) /
            d.nvlink_links;
        metric.nvmlReturn = abi::kSuccess;
        continue;
      }
      if (IsIdleEngineMetric(id)) {
        metric.nvmlReturn = abi::kSuccess;
        continue;
      }
      metric.nvmlReturn = abi::kErrorNotSupported;
    }
    return abi::kSuccess;
  });
}

}  // namespace warpscope::sim

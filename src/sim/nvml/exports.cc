// SPDX-License-Identifier: Apache-2.0
// The C entry points of the simulated libnvidia-ml.so.1. Each forwards to NvmlSim::Global() and
// catches every exception (NVML callers are C code), answering NVML_ERROR_UNKNOWN instead.
// Which of these symbols a built library exports is decided by its linker version script
// (libnvidia-ml.map or libnvidia-ml-legacy.map); everything else in the library is hidden.
#include <climits>
#include <cstring>
#include <string>
#include <type_traits>

#include "fmt/format.h"
#include "nvml/abi.h"
#include "sim/nvml/nvml_sim.h"
#include "sim/nvml/scenario.h"

#define WARPSCOPE_SIM_EXPORT extern "C" __attribute__((visibility("default")))

using namespace warpscope::nvml::abi;  // NOLINT: the C signatures below spell NVML's own names
using warpscope::sim::NvmlSim;
using warpscope::sim::ProcessLayout;
using warpscope::sim::ProcessType;

namespace {

NvmlSim& Sim() { return NvmlSim::Global(); }

template <typename F>
nvmlReturn_t Guard(F&& f) noexcept {
  try {
    return f();
  } catch (...) {
    return kErrorUnknown;
  }
}

}  // namespace

WARPSCOPE_SIM_EXPORT nvmlReturn_t nvmlInit_v2(void) {
  return Guard([] { return Sim().Init("nvmlInit_v2"); });
}
WARPSCOPE_SIM_EXPORT nvmlReturn_t nvmlInit(void) {
  return Guard([] { return Sim().Init("nvmlInit"); });
}
WARPSCOPE_SIM_EXPORT nvmlReturn_t nvmlShutdown(void) {
  return Guard([] { return Sim().Shutdown(); });
}
WARPSCOPE_SIM_EXPORT const char* nvmlErrorString(nvmlReturn_t result) {
  return NvmlSim::ErrorString(result);
}

WARPSCOPE_SIM_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  return Guard([&] { return Sim().SystemGetDriverVersion(version, length); });
}
WARPSCOPE_SIM_EXPORT nvmlReturn_t nvmlSystemGetNVMLVersion(char* version, unsigned int length) {
  return Guard([&] { return Sim().SystemGetNvmlVersion(version, length); });
}
WARPSCOPE_SIM_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* version) {
  return Guard([&] {
    return Sim().SystemGetCudaDriverVersion("nvmlSystemGetCudaDriverVersion_v2", version);
  });
}
WARPSCOPE_SIM_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion(int* version) {
  return Guard(
      [&] { return Sim().SystemGetCudaDriverVersion("nvmlSystemGetCudaDriverVersion", version); });
}
WARPSCOPE_SIM_EXPORT nvmlReturn_t nvmlSystemGetProcessName(unsigned int pid, char* name,
                                                           unsigned int length) {
  return Guard([&] { return Sim().SystemGetProcessName(pid, name, length); });
}

WARPSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  return Guard([&] { return Sim().DeviceGetCount("nvmlDeviceGetCount_v2", count); });
}
WARPSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned int* count) {
  return Guard([&] { return Sim().DeviceGetCount("nvmlDeviceGetCount", count); });
}
WARPSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index,
                                                                nvmlDevice_t* device) {
  return Guard(
      [&] { return Sim().DeviceGetHandleByIndex("nvmlDeviceGetHandleByIndex_v2", index, device); });
}
WARPSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index,
                                                             nvmlDevice_t* device) {
  return Guard(
      [&] { return Sim().DeviceGetHandleByIndex("nvmlDeviceGetHandleByIndex", index, device); });
}
WARPSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int* index) {
  return Guard([&] { return Sim().DeviceGetIndex(device, index); });
}
WARPSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name,
                                                    unsigned int length) {
  return Guard([&] { return Sim().DeviceGetName(device, name, length); });
}
WARPSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid,
                                                    unsigned int length) {
  return Guard([&] { return Sim().DeviceGetUuid(device, uuid, length); });
}
WARPSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t device, char* serial,
                                                      unsigned int length) {
  return Guard([&] { return Sim().DeviceGetSerial(device, serial, length); });
}
WARPSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  return Guard([&] { return Sim().DeviceGetPciInfo("nvmlDeviceGetPciInfo_v3", device, pci); });
}
WARPSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  return Guard([&] { return Sim().DeviceGetPciInfo("nvmlDeviceGetPciInfo_v2", device, pci); });
}
WARPSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device,
                                                           unsigned int* minor) {
  return Guard([&] { return Sim().DeviceGetMinorNumber(device, minor); });
}
WARPSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t device,
                                                            unsigned int* arch) {
  return Guard([&] { return Sim().DeviceGetArchitecture(device, arch); });
}
WARPSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device,
                                                                     int* major, int* minor) {
  return Guard([&] { return Sim().DeviceGetCudaComputeCapability(device, major, minor); });
}

WARPSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device,
                                                             nvmlMemory_v2_t* memory) {
  return Guard([&] { return Sim().DeviceGetMemoryInfoV2(device, memory); });
}
WARPSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device,
                                                          nvmlMemory_t* memory) {
  return Guard([&] { return Sim().DeviceGetMemoryInfoV1(device, memory); });
}
WARPSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device,
                                                                nvmlUtilization_t* util) {
  return Guard([&] { return Sim().DeviceGetUtilizationRates(device, util); });
}
WARPSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetEncoderUtilization(
    nvmlDevice_t device, unsigned int* util, unsigned int* sampling_period_us) {
  return Guard([&] {
    return Sim().DeviceGetCodecUtilization("nvmlDeviceGetEncoderUtilization", device, util,
                                           sampling_period_us);
  });
}
WARPSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetDecoderUtilization(
    nvmlDevice_t device, unsigned int* util, unsigned int* sampling_period_us) {
  return Guard([&] {
    return Sim().DeviceGetCodecUtilization("nvmlDeviceGetDecoderUtilization", device, util,
                                           sampling_period_us);
  });
}
WARPSCOPE_SIM_EXPORT nvmlReturn_t
nvmlDeviceGetProcessUtilization(nvmlDevice_t device, nvmlProcessUtilizationSample_t* samples,
                                unsigned int* count, unsigned long long last_seen_timestamp) {
  return Guard([&] {
    return Sim().DeviceGetProcessUtilization(device, samples, count, last_seen_timestamp);
  });
}

#define WARPSCOPE_SIM_PROCESS_CALL(symbol, info_type, type, layout)                        \
  WARPSCOPE_SIM_EXPORT nvmlReturn_t symbol(nvmlDevice_t device, unsigned int* count,       \
                                           info_type* infos) {                             \
    return Guard([&] {                                                                     \
      return Sim().DeviceGetRunningProcesses(#symbol, device, type, layout, count, infos); \
    });                                                                                    \
  }
WARPSCOPE_SIM_PROCESS_CALL(nvmlDeviceGetComputeRunningProcesses_v3, nvmlProcessInfo_t,
                           ProcessType::kCompute, ProcessLayout::kV3)
WARPSCOPE_SIM_PROCESS_CALL(nvmlDeviceGetGraphicsRunningProcesses_v3, nvmlProcessInfo_t,
                           ProcessType::kGraphics, ProcessLayout::kV3)
WARPSCOPE_SIM_PROCESS_CALL(nvmlDeviceGetComputeRunningProcesses_v2, nvmlProcessInfo_t,
                           ProcessType::kCompute, ProcessLayout::kV2)
WARPSCOPE_SIM_PROCESS_CALL(nvmlDeviceGetGraphicsRunningProcesses_v2, nvmlProcessInfo_t,
                           ProcessType::kGraphics, ProcessLayout::kV2)
WARPSCOPE_SIM_PROCESS_CALL(nvmlDeviceGetComputeRunningProcesses, nvmlProcessInfo_v1_t,
                           ProcessType::kCompute, ProcessLayout::kV1)
WARPSCOPE_SIM_PROCESS_CALL(nvmlDeviceGetGraphicsRunningProcesses, nvmlProcessInfo_v1_t,
                           ProcessType::kGraphics, ProcessLayout::kV1)
#undef WARPSCOPE_SIM_PROCESS_CALL

WARPSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device,
                                                          unsigned int* milliwatts) {
  return Guard([&] { return Sim().DeviceGetPowerUsage(device, milliwatts); });
}
WARPSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t device,
                                                                    unsigned int* milliwatts) {
  return Guard([&] {
    return Sim().DeviceGetPowerLimit("nvmlDeviceGetPowerManagementLimit", device, milliwatts);
  });
}
WARPSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device,
                                                                  unsigned int* milliwatts) {
  return Guard([&] {
    return Sim().DeviceGetPowerLimit("nvmlDeviceGetEnforcedPowerLimit", device, milliwatts);
  });
}
WARPSCOPE_SIM_EXPORT nvmlReturn_t
nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device, unsigned long long* millijoules) {
  return Guard([&] { return Sim().DeviceGetTotalEnergyConsumption(device, millijoules); });
}
WARPSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, unsigned int sensor,
                                                           unsigned int* celsius) {
  return Guard([&] { return Sim().DeviceGetTemperature(device, sensor, celsius); });
}
WARPSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetTemperatureThreshold(nvmlDevice_t device,
                                                                    unsigned int threshold,
                                                                    unsigned int* celsius) {
  return Guard([&] { return Sim().DeviceGetTemperatureThreshold(device, threshold, celsius); });
}
WARPSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, unsigned int type,
                                                         unsigned int* mhz) {
  return Guard(
      [&] { return Sim().DeviceGetClockInfo("nvmlDeviceGetClockInfo", device, type, mhz); });
}
WARPSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, unsigned int type,
                                                            unsigned int* mhz) {
  return Guard(
      [&] { return Sim().DeviceGetClockInfo("nvmlDeviceGetMaxClockInfo", device, type, mhz); });
}
WARPSCOPE_SIM_EXPORT nvmlReturn_t
nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device, unsigned long long* reasons) {
  return Guard([&] {
    return Sim().DeviceGetClockReasons("nvmlDeviceGetCurrentClocksEventReasons", device, reasons);
  });
}
WARPSCOPE_SIM_EXPORT nvmlReturn_t
nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t device, unsigned long long* reasons) {
  return Guard([&] {
    return Sim().DeviceGetClockReasons("nvmlDeviceGetCurrentClocksThrottleReasons", device,
                                       reasons);
  });
}
WARPSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t device,
                                                              unsigned int counter,
                                                              unsigned int* kb_per_s) {
  return Guard([&] { return Sim().DeviceGetPcieThroughput(device, counter, kb_per_s); });
}
WARPSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetPcieReplayCounter(nvmlDevice_t device,
                                                                 unsigned int* value) {
  return Guard([&] { return Sim().DeviceGetPcieReplayCounter(device, value); });
}
WARPSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int count,
                                                           nvmlFieldValue_t* values) {
  return Guard([&] { return Sim().DeviceGetFieldValues(device, count, values); });
}
WARPSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link,
                                                           unsigned int* is_active) {
  return Guard([&] { return Sim().DeviceGetNvLinkState(device, link, is_active); });
}
WARPSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device,
                                                              unsigned int error_type,
                                                              unsigned int counter_type,
                                                              unsigned long long* count) {
  return Guard(
      [&] { return Sim().DeviceGetTotalEccErrors(device, error_type, counter_type, count); });
}
WARPSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int* corr,
                                                            unsigned int* unc,
                                                            unsigned int* pending,
                                                            unsigned int* failure) {
  return Guard([&] { return Sim().DeviceGetRemappedRows(device, corr, unc, pending, failure); });
}

WARPSCOPE_SIM_EXPORT nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set) {
  return Guard([&] { return Sim().EventSetCreate(set); });
}
WARPSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device,
                                                           unsigned long long types,
                                                           nvmlEventSet_t set) {
  return Guard([&] { return Sim().DeviceRegisterEvents(device, types, set); });
}
WARPSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device,
                                                                   unsigned long long* types) {
  return Guard([&] { return Sim().DeviceGetSupportedEventTypes(device, types); });
}
WARPSCOPE_SIM_EXPORT nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data,
                                                      unsigned int timeout_ms) {
  return Guard([&] { return Sim().EventSetWait(set, data, timeout_ms); });
}
WARPSCOPE_SIM_EXPORT nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
  return Guard([&] { return Sim().EventSetFree(set); });
}

WARPSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int* current,
                                                       unsigned int* pending) {
  return Guard([&] { return Sim().DeviceGetMigMode(device, current, pending); });
}
WARPSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device,
                                                                 unsigned int* count) {
  return Guard([&] { return Sim().DeviceGetMaxMigDeviceCount(device, count); });
}
WARPSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device,
                                                                      unsigned int index,
                                                                      nvmlDevice_t* mig) {
  return Guard([&] { return Sim().DeviceGetMigDeviceHandleByIndex(device, index, mig); });
}
WARPSCOPE_SIM_EXPORT nvmlReturn_t
nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t mig, nvmlDevice_t* device) {
  return Guard([&] { return Sim().DeviceGetDeviceHandleFromMigDeviceHandle(mig, device); });
}
WARPSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t mig, unsigned int* id) {
  return Guard([&] { return Sim().DeviceGetInstanceId("nvmlDeviceGetGpuInstanceId", mig, id); });
}
WARPSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t mig,
                                                                 unsigned int* id) {
  return Guard(
      [&] { return Sim().DeviceGetInstanceId("nvmlDeviceGetComputeInstanceId", mig, id); });
}

WARPSCOPE_SIM_EXPORT nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t device,
                                                            nvmlGpmSupport_t* support) {
  return Guard([&] { return Sim().GpmQueryDeviceSupport(device, support); });
}
WARPSCOPE_SIM_EXPORT nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t* sample) {
  return Guard([&] { return Sim().GpmSampleAlloc(sample); });
}
WARPSCOPE_SIM_EXPORT nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t sample) {
  return Guard([&] { return Sim().GpmSampleFree(sample); });
}
WARPSCOPE_SIM_EXPORT nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t device, nvmlGpmSample_t sample) {
  return Guard([&] { return Sim().GpmSampleGet(device, sample); });
}
WARPSCOPE_SIM_EXPORT nvmlReturn_t nvmlGpmMigSampleGet(nvmlDevice_t device,
                                                      unsigned int gpu_instance_id,
                                                      nvmlGpmSample_t sample) {
  return Guard([&] { return Sim().GpmMigSampleGet(device, gpu_instance_id, sample); });
}
WARPSCOPE_SIM_EXPORT nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t* metrics) {
  return Guard([&] { return Sim().GpmMetricsGet(metrics); });
}

WARPSCOPE_SIM_EXPORT void warpscope_sim_set_time_ns(long long t_ns) {
  try {
    Sim().SetTimeNs(t_ns);
  } catch (...) {
    // Only std::system_error from the mutex is possible; nothing useful to report to a test.
  }
}
WARPSCOPE_SIM_EXPORT const char* warpscope_sim_last_error(void) { return Sim().LastError(); }
WARPSCOPE_SIM_EXPORT long warpscope_sim_list_workloads(const char* scenario_path, char* out,
                                                       unsigned long cap) {
  try {
    std::string text;
    long result = 0;
    auto scenario = warpscope::sim::LoadScenarioFile(scenario_path == nullptr ? "" : scenario_path);
    if (!scenario) {
      text = scenario.error().message();
      result = LONG_MIN;
    } else {
      for (const auto& w : warpscope::sim::ListWorkloads(*scenario)) {
        text += fmt::format("{} {} {} {:g}\n", w.pid, w.device, w.workload, w.slowdown_percent);
      }
      result = static_cast<long>(text.size());
    }
    if (text.size() + 1 > cap) {
      if (result == LONG_MIN) {
        text.resize(cap == 0 ? 0 : cap - 1);
      } else {
        return -static_cast<long>(text.size() + 1);
      }
    }
    if (cap > 0) std::memcpy(out, text.c_str(), text.size() + 1);
    return result;
  } catch (...) {
    return LONG_MIN;
  }
}

// Runs when the library is unloaded (dlclose of the last handle, or process exit): frees what
// the scenario allocated, so a test that unloads the simulator without a final nvmlShutdown does
// not leak it.
__attribute__((destructor)) static void WarpscopeSimUnload() {
  try {
    Sim().ReleaseAll();
  } catch (...) {
    // Nothing can be reported while the library is being unloaded.
  }
}

// Every declared NVML function is defined above with exactly the declared signature.
#define WARPSCOPE_SIM_CHECK_SIGNATURE(ret, name, params)                            \
  static_assert(std::is_same_v<decltype(&::name), warpscope::nvml::abi::name##_fn>, \
                #name " does not match its declaration in nvml/abi.h");
WARPSCOPE_NVML_FUNCTIONS(WARPSCOPE_SIM_CHECK_SIGNATURE)
WARPSCOPE_NVML_LEGACY_FUNCTIONS(WARPSCOPE_SIM_CHECK_SIGNATURE)
#undef WARPSCOPE_SIM_CHECK_SIGNATURE

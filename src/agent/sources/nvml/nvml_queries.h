// SPDX-License-Identifier: Apache-2.0
// Internal to the NVML source: the per-device queries whose support is remembered, the clock
// event reason table and small helpers shared by its files.
#ifndef WARPSCOPE_AGENT_SOURCES_NVML_NVML_QUERIES_H_
#define WARPSCOPE_AGENT_SOURCES_NVML_NVML_QUERIES_H_

#include <bitset>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace warpscope::agent::nvml_internal {

// Every per-device query whose support is remembered. NOT_SUPPORTED on one of them stops the
// calls for that (device, query) until the device recovers.
enum Query : uint8_t {
  kQUtilization,
  kQEncoder,
  kQDecoder,
  kQMemory,
  kQPower,
  kQPowerLimit,
  kQEnforcedLimit,
  kQEnergy,
  kQTemperature,
  kQMemoryTemperature,
  kQShutdownTemperature,  // the four nvmlDeviceGetTemperatureThreshold queries, in
  kQSlowdownTemperature,  // nvmlTemperatureThresholds_t order
  kQMemoryMaxTemperature,
  kQGpuMaxTemperature,
  kQSmClock,
  kQMemClock,
  kQClockReasons,
  kQPcieTx,
  kQPcieRx,
  kQPcieReplay,
  kQFieldValues,
  kQNvlink,
  kQEccCorrectedVolatile,
  kQEccUncorrectedVolatile,
  kQEccCorrectedAggregate,
  kQEccUncorrectedAggregate,
  kQRemappedRows,
  kQComputeProcesses,
  kQGraphicsProcesses,
  kQProcessUtilization,
  kQGpm,
  kQIdentity,
  kQMig,
  kQueryCount,
};
using Support = std::bitset<kQueryCount>;

inline constexpr std::string_view kQueryNames[kQueryCount] = {
    "nvmlDeviceGetUtilizationRates",
    "nvmlDeviceGetEncoderUtilization",
    "nvmlDeviceGetDecoderUtilization",
    "nvmlDeviceGetMemoryInfo",
    "nvmlDeviceGetPowerUsage",
    "nvmlDeviceGetPowerManagementLimit",
    "nvmlDeviceGetEnforcedPowerLimit",
    "nvmlDeviceGetTotalEnergyConsumption",
    "nvmlDeviceGetTemperature",
    "memory temperature (field 82)",
    "nvmlDeviceGetTemperatureThreshold(SHUTDOWN)",
    "nvmlDeviceGetTemperatureThreshold(SLOWDOWN)",
    "nvmlDeviceGetTemperatureThreshold(MEM_MAX)",
    "nvmlDeviceGetTemperatureThreshold(GPU_MAX)",
    "nvmlDeviceGetClockInfo(SM)",
    "nvmlDeviceGetClockInfo(MEM)",
    "nvmlDeviceGetCurrentClocksEventReasons",
    "nvmlDeviceGetPcieThroughput(TX)",
    "nvmlDeviceGetPcieThroughput(RX)",
    "nvmlDeviceGetPcieReplayCounter",
    "nvmlDeviceGetFieldValues",
    "NVLink throughput (fields 138/139)",
    "nvmlDeviceGetTotalEccErrors(corrected, volatile)",
    "nvmlDeviceGetTotalEccErrors(uncorrected, volatile)",
    "nvmlDeviceGetTotalEccErrors(corrected, aggregate)",
    "nvmlDeviceGetTotalEccErrors(uncorrected, aggregate)",
    "nvmlDeviceGetRemappedRows",
    "nvmlDeviceGetComputeRunningProcesses",
    "nvmlDeviceGetGraphicsRunningProcesses",
    "nvmlDeviceGetProcessUtilization",
    "NVML GPM",
    "device identity",
    "MIG",
};

struct ClockReason {
  unsigned long long bit;
  std::string_view name;
};
// Bit values identical from the 11.0 to the 13.3 header; names as dcgm-exporter's clock_event.
inline constexpr ClockReason kClockReasons[] = {
    {0x1, "gpu_idle"},    {0x2, "clocks_setting"},  {0x4, "power_cap"},
    {0x8, "hw_slowdown"}, {0x10, "sync_boost"},     {0x20, "sw_thermal"},
    {0x40, "hw_thermal"}, {0x80, "hw_power_brake"}, {0x100, "display_clocks"},
};
inline constexpr size_t kClockReasonCount = sizeof(kClockReasons) / sizeof(kClockReasons[0]);

// NVML_NVLINK_MAX_LINKS grew 12 -> 18 -> 36; probing stops at the first INVALID_ARGUMENT.
inline constexpr unsigned kMaxNvlinkLinks = 36;
// NVML reports temperatures above this as garbage on some boards (DCGM discards them too).
inline constexpr double kMaxPlausibleCelsius = 200;
// Temperature thresholds are static: read at the first poll, then again this often (and after a
// GPU recovers), the last answer written on every poll in between.
inline constexpr std::chrono::minutes kThresholdRereadInterval{5};

// A NUL-terminated (or full) NVML string buffer as a std::string.
inline std::string CopyString(const char* buf, size_t size) {
  return std::string(buf, strnlen(buf, size));
}

}  // namespace warpscope::agent::nvml_internal

#endif  // WARPSCOPE_AGENT_SOURCES_NVML_NVML_QUERIES_H_

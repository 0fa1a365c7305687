// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_EXPORTERS_TESTING_SAMPLE_FRAME_H_
#define WARPSCOPE_EXPORTERS_TESTING_SAMPLE_FRAME_H_

#include <string>

#include "base/time.h"
#include "model/frame.h"
#include "model/metric.h"

// A realistic frame for exporter tests and benchmarks: a host with N GPUs (dcgm-exporter metric
// names plus warpscope per-link and per-reason series, about 60 series per GPU), M GPU processes
// with their executables, and host CPU/memory/network series. The metric descriptions are local
// stand-ins for the agent's catalog so that exporter tests do not depend on the agent.
namespace warpscope::exporters::sample {

// Metric descriptions used by the sample frame (static storage, stable addresses).
extern const model::MetricDesc kGpuTemp;        // DCGM_FI_DEV_GPU_TEMP, Cel
extern const model::MetricDesc kGpuUtil;        // DCGM_FI_DEV_GPU_UTIL, ratio -> %
extern const model::MetricDesc kFbUsed;         // DCGM_FI_DEV_FB_USED, By -> MiB
extern const model::MetricDesc kPower;          // DCGM_FI_DEV_POWER_USAGE, W
extern const model::MetricDesc kEnergy;         // DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, J -> mJ
extern const model::MetricDesc kSmClock;        // DCGM_FI_DEV_SM_CLOCK, Hz -> MHz
extern const model::MetricDesc kMemClock;       // DCGM_FI_DEV_MEM_CLOCK, Hz -> MHz
extern const model::MetricDesc kXid;            // DCGM_FI_DEV_XID_ERRORS
extern const model::MetricDesc kNvlinkTx;       // warpscope_gpu_nvlink_transmit_bytes_total{link}
extern const model::MetricDesc kClockEvent;     // warpscope_gpu_clock_event_active{reason}
extern const model::MetricDesc kMigFbUsed;      // DCGM_FI_DEV_FB_USED on MIG instances
extern const model::MetricDesc kProcessGpuMem;  // warpscope_process_gpu_memory_used_bytes
extern const model::MetricDesc kProcessCpu;     // warpscope_process_cpu_utilization_ratio
extern const model::MetricDesc kExecutableGpuMem;  // warpscope_executable_gpu_memory_used_bytes
extern const model::MetricDesc kHostCpuTime;       // warpscope_host_cpu_time_seconds_total{mode}
extern const model::MetricDesc kHostMemUsage;      // warpscope_host_memory_usage_bytes{state}
extern const model::MetricDesc kHostNetIo;         // warpscope_host_network_io_bytes_total{...}

struct SampleFrameOptions {
  int gpus = 8;
  int processes = 64;   // spread round-robin over the GPUs
  int mig_per_gpu = 0;  // MIG instances per GPU (each with one DCGM_FI_DEV_FB_USED series)
  std::string host = "node1";
  std::string driver_version = "550.127.08";
  base::TimePoint start = base::FromUnixNanos(1'700'000'000'000'000'000);
  base::Duration window = std::chrono::seconds(60);
  uint32_t samples_per_series = 4;  // `count`; gauges get min = avg - 1, max = avg + 1
};

model::Frame MakeSampleFrame(const SampleFrameOptions& options = {});

// The values the sample frame holds, in the metric's base unit (what SeriesPoint::last holds).
double SampleGpuTemperatureCelsius(int gpu);  // 40 + gpu
double SampleGpuUtilizationRatio(int gpu);    // (50 + gpu) / 100
double SampleFbUsedBytes(int gpu);            // (gpu + 1) GiB
double SamplePowerWatts(int gpu);             // 300.5 + 10 * gpu
double SampleEnergyJoules(int gpu);           // 1e6 * (gpu + 1)
double SampleSmClockHz(int gpu);              // 1980 MHz - gpu MHz
double SampleMemClockHz(int gpu);             // 2619 MHz
std::string SampleGpuUuid(int gpu);           // "GPU-00000000-0000-0000-0000-00000000000<gpu>"
std::string SamplePciBusId(int gpu);          // "00000000:<17+gpu hex>:00.0"
inline constexpr const char* kSampleGpuModel = "NVIDIA H100 80GB HBM3";

}  // namespace warpscope::exporters::sample

#endif  // WARPSCOPE_EXPORTERS_TESTING_SAMPLE_FRAME_H_

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

namespace {

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

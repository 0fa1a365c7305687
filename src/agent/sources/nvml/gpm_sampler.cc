// SPDX-License-Identifier: Apache-2.0
// GPM: the metric table, the two-sample scheme, and GpuPoller's GPM support probe and sampling
// for a GPU and its MIG instances.
#include "agent/sources/nvml/gpm_sampler.h"

#include <algorithm>
#include <cmath>

#include "agent/sources/nvml/gpu_poller.h"
#include "agent/sources/nvml/nvml_metrics.h"
#include "base/logging.h"

namespace warpscope::agent::nvml_internal {

namespace abi = nvml::abi;
namespace m = nvml_metrics;
using abi::nvmlReturn_t;
using nvml::Device;
using nvml::NvmlLibrary;

constexpr double kPercent = 0.01;
constexpr double kMiBPerSecond = 1048576.0;
extern const GpmMetricSpec kGpmMetrics[] = {
    {abi::kGpmGraphicsUtil, &m::kGraphicsEngineActive, kPercent},
    {abi::kGpmSmUtil, &m::kSmActive, kPercent},
    {abi::kGpmSmOccupancy, &m::kSmOccupancy, kPercent},
    {abi::kGpmAnyTensorUtil, &m::kTensorActive, kPercent},
    {abi::kGpmHmmaTensorUtil, &m::kTensorHmmaActive, kPercent},
    {abi::kGpmImmaTensorUtil, &m::kTensorImmaActive, kPercent},
    {abi::kGpmDfmaTensorUtil, &m::kTensorDfmaActive, kPercent},
    {abi::kGpmDramBwUtil, &m::kDramActive, kPercent},
    {abi::kGpmFp64Util, &m::kFp64Active, kPercent},
    {abi::kGpmFp32Util, &m::kFp32Active, kPercent},
    {abi::kGpmFp16Util, &m::kFp16Active, kPercent},
    {abi::kGpmIntegerUtil, &m::kIntActive, kPercent},
    {abi::kGpmPcieTxPerSec, &m::kProfPcieTransmitRate, kMiBPerSecond},
    {abi::kGpmPcieRxPerSec, &m::kProfPcieReceiveRate, kMiBPerSecond},
    {abi::kGpmNvlinkTotalTxPerSec, &m::kProfNvlinkTransmitRate, kMiBPerSecond},
    {abi::kGpmNvlinkTotalRxPerSec, &m::kProfNvlinkReceiveRate, kMiBPerSecond},
};
extern const size_t kGpmMetricCount = sizeof(kGpmMetrics) / sizeof(kGpmMetrics[0]);
static_assert(sizeof(kGpmMetrics) / sizeof(kGpmMetrics[0]) <= 98,
              "older drivers accept at most 98 GPM metrics per call");

nvmlReturn_t GpmSampler::Allocate(const NvmlLibrary& lib) {
  Free();
  lib_ = &lib;
  for (auto& s : samples_) {
    nvmlReturn_t rc = WARPSCOPE_NVML_CALL(lib, nvmlGpmSampleAlloc, &s);
    if (rc != abi::kSuccess) {
      s = nullptr;
      Free();
      return rc;
    }
  }
  return abi::kSuccess;
}

void GpmSampler::Free() {
  if (lib_ != nullptr) {
    for (auto& s : samples_) {
      if (s != nullptr) {
        (void)WARPSCOPE_NVML_CALL(*lib_, nvmlGpmSampleFree, s);
        s = nullptr;
      }
    }
  }
  lib_ = nullptr;
  Reset();
}

void GpuPoller::InitGpm() {
  g_.gpm_supported = false;
  g_.gpm.Free();
  for (auto& mig : g_.migs) {
    mig->gpm.Free();
  }
  g_.gpm_metrics.clear();
  const NvmlLibrary& lib = lib_;
  abi::nvmlGpmSupport_t support{};
  support.version = abi::kGpmSupportVersion;
  nvmlReturn_t rc = WARPSCOPE_NVML_CALL(lib, nvmlGpmQueryDeviceSupport, g_.handle, &support);
  if (rc != abi::kSuccess) {
    (void)Check(g_.unsupported, kQGpm, rc);
    g_.unsupported.set(kQGpm);
    return;
  }
  if (support.isSupportedDevice == 0) {
    g_.unsupported.set(kQGpm);  // pre-Hopper: expected, not an error
    return;
  }
  if (lib.api().nvmlGpmMetricsGet == nullptr || lib.api().nvmlGpmSampleGet == nullptr) {
    g_.unsupported.set(kQGpm);
    reporter_.ReportError("not_supported");
    return;
  }
  rc = g_.gpm.Allocate(lib);
  if (rc != abi::kSuccess) {
    WARPSCOPE_LOG(WARNING, "GPU {}: {}", g_.index,
                  lib.ToStatus(rc, "nvmlGpmSampleAlloc").message());
    reporter_.ReportError("gpm_alloc");
    g_.unsupported.set(kQGpm);
    return;
  }
  g_.gpm_supported = true;
  for (size_t i = 0; i < kGpmMetricCount; ++i) {
    g_.gpm_metrics.push_back(static_cast<uint8_t>(i));
  }
  if (lib.api().nvmlGpmMigSampleGet != nullptr) {
    for (auto& mig : g_.migs) {
      if (mig->gpm.Allocate(lib) != abi::kSuccess) {
        reporter_.ReportError("gpm_alloc");
        mig->unsupported.set(kQGpm);
        continue;
      }
      mig->gpm_metrics = g_.gpm_metrics;
    }
  } else {
    for (auto& mig : g_.migs) {
      mig->unsupported.set(kQGpm);
    }
  }
}

void GpuPoller::PollGpm(model::SampleSink& out) {
  if (!g_.gpm_supported || g_.unsupported[kQGpm]) {
    return;
  }
  SampleGpm(g_.unsupported, g_.gpm, g_.gpm_metrics, g_.handle, std::nullopt, g_.entity.id, out);
}

void GpuPoller::SampleGpm(Support& support, GpmSampler& sampler, std::vector<uint8_t>& metrics,
                          Device device, std::optional<unsigned> gpu_instance_id,
                          const std::string& id, model::SampleSink& out) {
  if (!sampler.allocated() || support[kQGpm]) {
    return;
  }
  const NvmlLibrary& lib = lib_;
  const base::Duration mono = mono_;
  if (sampler.has_baseline() && mono - sampler.latest_time() < ctx_.options.gpm_min_interval) {
    return;  // too soon for GPM: keep the baseline, no values this poll
  }
  abi::nvmlGpmSample_t next = sampler.next();
  nvmlReturn_t rc = gpu_instance_id ? WARPSCOPE_NVML_CALL(lib, nvmlGpmMigSampleGet, device,
                                                          *gpu_instance_id, next)
                                    : WARPSCOPE_NVML_CALL(lib, nvmlGpmSampleGet, device, next);
  if (!Check(support, kQGpm, rc)) {
    sampler.Reset();
    return;
  }
  if (!sampler.has_baseline()) {
    sampler.Advance(mono);  // first sample: the baseline only
    return;
  }
  abi::nvmlGpmMetricsGet_t& get = *scratch_.gpm_get;
  get.version = abi::kGpmMetricsGetVersion;
  get.numMetrics = static_cast<unsigned>(metrics.size());
  get.sample1 = sampler.latest();
  get.sample2 = next;
  for (size_t i = 0; i < metrics.size(); ++i) {
    abi::nvmlGpmMetric_t& metric = get.metrics[i];
    metric.metricId = kGpmMetrics[metrics[i]].id;
    metric.nvmlReturn = abi::kSuccess;
    metric.value = 0;
  }
  sampler.Advance(mono);
  rc = WARPSCOPE_NVML_CALL(lib, nvmlGpmMetricsGet, &get);
  if (!Check(support, kQGpm, rc)) {
    return;
  }
  bool drop = false;
  for (size_t i = 0; i < metrics.size(); ++i) {
    const abi::nvmlGpmMetric_t& metric = get.metrics[i];
    const GpmMetricSpec& spec = kGpmMetrics[metrics[i]];
    if (metric.nvmlReturn != abi::kSuccess) {
      if (nvml::IsUnsupported(metric.nvmlReturn)) {
        // This driver lacks the metric: stop asking for it on this GPU (or instance).
        metrics[i] = UINT8_MAX;
        drop = true;
        reporter_.ReportError("not_supported");
      } else {
        reporter_.ReportError(nvml::ReturnCodeReason(metric.nvmlReturn));
      }
      continue;
    }
    if (!std::isfinite(metric.value)) {
      continue;  // NaN: no value for this interval
    }
    out.AddValue(*spec.desc, id, metric.value * spec.scale);
  }
  if (drop) {
    std::erase(metrics, UINT8_MAX);
    if (metrics.empty()) {
      support.set(kQGpm);
    }
  }
}

}  // namespace warpscope::agent::nvml_internal

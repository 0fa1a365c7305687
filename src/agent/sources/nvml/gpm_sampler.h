// SPDX-License-Identifier: Apache-2.0
// Internal to the NVML source: GPM (Hopper and newer) sampling. Two samples per GPU or MIG
// instance are used alternately, so one nvmlGpmSampleGet per device per poll gives the metrics of
// the interval since the previous poll (docs/design/nvml.md section 5).
#ifndef WARPSCOPE_AGENT_SOURCES_NVML_GPM_SAMPLER_H_
#define WARPSCOPE_AGENT_SOURCES_NVML_GPM_SAMPLER_H_

#include <cstddef>

#include "base/time.h"
#include "model/metric.h"
#include "nvml/nvml_library.h"

namespace warpscope::agent::nvml_internal {

struct GpmMetricSpec {
  unsigned id;
  const model::MetricDesc* desc;
  double scale;  // GPM value -> base unit
};
// The 16 metrics requested in one nvmlGpmMetricsGet, and the catalogue entry of each.
extern const GpmMetricSpec kGpmMetrics[];
extern const size_t kGpmMetricCount;

// Two GPM samples used alternately: each poll fills the older one and computes metrics from
// (previous, new), so one nvmlGpmSampleGet per device per poll. Not thread-safe; owned by the
// state of one GPU or MIG instance.
class GpmSampler {
 public:
  GpmSampler() = default;
  GpmSampler(const GpmSampler&) = delete;
  GpmSampler& operator=(const GpmSampler&) = delete;
  ~GpmSampler() { Free(); }

  // Returns the first failing code, SUCCESS when both samples exist.
  nvml::abi::nvmlReturn_t Allocate(const nvml::NvmlLibrary& lib);
  void Free();
  bool allocated() const { return samples_[0] != nullptr && samples_[1] != nullptr; }
  void Reset() { latest_ = -1; }
  bool has_baseline() const { return latest_ >= 0; }
  base::Duration latest_time() const { return latest_time_; }
  nvml::abi::nvmlGpmSample_t next() const { return samples_[latest_ < 0 ? 0 : 1 - latest_]; }
  nvml::abi::nvmlGpmSample_t latest() const { return samples_[latest_]; }
  // The sample returned by next() now holds the newest reading.
  void Advance(base::Duration when) {
    latest_ = latest_ < 0 ? 0 : 1 - latest_;
    latest_time_ = when;
  }

 private:
  const nvml::NvmlLibrary* lib_ = nullptr;
  nvml::abi::nvmlGpmSample_t samples_[2] = {nullptr, nullptr};
  int latest_ = -1;
  base::Duration latest_time_{};
};

}  // namespace warpscope::agent::nvml_internal

#endif  // WARPSCOPE_AGENT_SOURCES_NVML_GPM_SAMPLER_H_

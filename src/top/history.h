// SPDX-License-Identifier: Apache-2.0
// The recent values of each GPU's gauges, for the sparklines of `warpscope top`.
#ifndef WARPSCOPE_TOP_HISTORY_H_
#define WARPSCOPE_TOP_HISTORY_H_

#include <array>
#include <cstddef>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "top/snapshot.h"

namespace warpscope::top {

// The gauges that have a sparkline, each as a fraction of its full scale (0..1).
enum class Gauge : uint8_t { kUtilization, kSmActive, kMemory, kPower, kTemperature };
inline constexpr size_t kGaugeCount = 5;

// Keeps the last `capacity` refreshes per GPU (by UUID, else index). A value the refresh did not
// have is kept as absent, so gaps stay gaps. GPUs missing from a refresh are forgotten.
// Not thread-safe.
class History {
 public:
  explicit History(size_t capacity = 120) : capacity_(capacity) {}

  void Add(const Snapshot& snapshot);
  // Oldest first; empty for an unknown GPU.
  std::vector<std::optional<double>> Values(const GpuRow& gpu, Gauge gauge) const;
  size_t capacity() const { return capacity_; }

  // Full scale of temperatures: 100 °C reads as a full bar.
  static constexpr double kTemperatureScale = 100.0;

 private:
  static std::string KeyOf(const GpuRow& gpu);
  using Series = std::array<std::deque<std::optional<double>>, kGaugeCount>;
  size_t capacity_;
  std::map<std::string, Series> gpus_;
};

}  // namespace warpscope::top

#endif  // WARPSCOPE_TOP_HISTORY_H_

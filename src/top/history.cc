// SPDX-License-Identifier: Apache-2.0
#include "top/history.h"

#include <algorithm>
#include <set>

namespace warpscope::top {
namespace {

std::optional<double> Ratio(const std::optional<double>& value, const std::optional<double>& full) {
  if (!value || !full || *full <= 0) return std::nullopt;
  return *value / *full;
}

std::optional<double> GaugeValue(const GpuRow& gpu, Gauge gauge) {
  switch (gauge) {
    case Gauge::kUtilization:
      return gpu.utilization;
    case Gauge::kSmActive:
      return gpu.sm_active;
    case Gauge::kMemory:
      return Ratio(gpu.memory_used, gpu.memory_total);
    case Gauge::kPower:
      return Ratio(gpu.power, gpu.power_limit);
    case Gauge::kTemperature:
      return Ratio(gpu.temperature, History::kTemperatureScale);
  }
  return std::nullopt;
}

}  // namespace

std::string History::KeyOf(const GpuRow& gpu) {
  return gpu.uuid.empty() ? "#" + std::to_string(gpu.index) : gpu.uuid;
}

void History::Add(const Snapshot& snapshot) {
  std::set<std::string> seen;
  for (const GpuRow& gpu : snapshot.gpus) {
    std::string key = KeyOf(gpu);
    Series& series = gpus_[key];
    for (size_t g = 0; g < kGaugeCount; ++g) {
      auto& values = series[g];
      values.push_back(GaugeValue(gpu, static_cast<Gauge>(g)));
      while (values.size() > capacity_) values.pop_front();
    }
    seen.insert(std::move(key));
  }
  std::erase_if(gpus_, [&seen](const auto& entry) { return !seen.contains(entry.first); });
}

std::vector<std::optional<double>> History::Values(const GpuRow& gpu, Gauge gauge) const {
  auto it = gpus_.find(KeyOf(gpu));
  if (it == gpus_.end()) return {};
  const auto& values = it->second[static_cast<size_t>(gauge)];
  return {values.begin(), values.end()};
}

}  // namespace warpscope::top

// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/cuda_profiler/runtime_metrics.h"

#include <algorithm>
#include <set>

#include "agent/sources/cuda_profiler/cuda_profiler_metrics.h"

namespace warpscope::agent::cuda_profiler {
namespace {

namespace m = cuda_profiler_metrics;

constexpr std::string_view kDevice = "cuda.device";

double Seconds(uint64_t ns) { return static_cast<double>(ns) / 1e9; }

uint64_t Duration(int64_t start_ns, int64_t end_ns) {
  return end_ns > start_ns ? static_cast<uint64_t>(end_ns - start_ns) : 0;
}

}  // namespace

std::string_view CopyDirection(std::string_view copy_kind) {
  if (copy_kind == "HtoD" || copy_kind == "HtoA") {
    return "H2D";
  }
  if (copy_kind == "DtoH" || copy_kind == "AtoH") {
    return "D2H";
  }
  if (copy_kind == "DtoD" || copy_kind == "AtoA" || copy_kind == "AtoD" || copy_kind == "DtoA") {
    return "D2D";
  }
  if (copy_kind == "PtoP") {
    return "P2P";
  }
  if (copy_kind == "HtoH") {
    return "H2H";
  }
  return "unknown";
}

void RuntimeMetrics::AddKernelTime(uint32_t device, uint32_t stream, uint64_t count,
                                   uint64_t ns) {
  Totals& t = kernels_[device];
  t.count += count;
  t.ns += ns;
  window_[{device, stream}] += ns;
}

void RuntimeMetrics::AddKernelAggregate(const KernelAggregate& aggregate) {
  AddKernelTime(aggregate.device, aggregate.stream, aggregate.count, aggregate.total_gpu_ns);
}

void RuntimeMetrics::AddKernel(const KernelActivity& kernel) {
  AddKernelTime(kernel.device, kernel.stream, 1, Duration(kernel.start_ns, kernel.end_ns));
}

void RuntimeMetrics::AddMemory(const MemoryActivity& activity) {
  Totals& t = activity.op == MemoryActivity::Op::kMemcpy
                  ? copies_[{activity.device, std::string(CopyDirection(activity.kind))}]
                  : memsets_[activity.device];
  ++t.count;
  t.bytes += activity.bytes;
  t.ns += Duration(activity.start_ns, activity.end_ns);
}

void RuntimeMetrics::UpdateDeviceMemory(std::vector<DeviceMemoryTotals> totals) {
  device_memory_ = std::move(totals);
}

void RuntimeMetrics::FinishWindow(int64_t start_ns, int64_t end_ns) {
  const double wall = static_cast<double>(Duration(start_ns, end_ns));
  // Streams of the last window that ran nothing in this one read 0 once.
  std::set<std::pair<uint32_t, std::string>> previous;
  for (const StreamBusy& b : busy_) {
    if (b.ratio > 0) {
      previous.emplace(b.device, b.stream);
    }
  }
  busy_.clear();
  if (wall <= 0) {
    window_.clear();
    return;
  }
  std::map<uint32_t, std::vector<std::pair<uint64_t, uint32_t>>> by_device;  // (ns, stream)
  for (const auto& [key, ns] : window_) {
    by_device[key.first].emplace_back(ns, key.second);
  }
  for (auto& [device, streams] : by_device) {
    std::sort(streams.begin(), streams.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    uint64_t other = 0;
    bool has_other = false;
    std::vector<StreamBusy> kept;
    for (size_t i = 0; i < streams.size(); ++i) {
      if (i < options_.max_streams) {
        const double ratio = std::min(1.0, static_cast<double>(streams[i].first) / wall);
        kept.push_back(StreamBusy{device, std::to_string(streams[i].second), ratio});
      } else {
        other += streams[i].first;
        has_other = true;
      }
    }
    std::sort(kept.begin(), kept.end(), [](const StreamBusy& a, const StreamBusy& b) {
      return std::stoull(a.stream) < std::stoull(b.stream);
    });
    for (auto& b : kept) {
      previous.erase({b.device, b.stream});
      busy_.push_back(std::move(b));
    }
    if (has_other) {
      previous.erase({device, std::string(kOtherStreams)});
      busy_.push_back(
          StreamBusy{device, std::string(kOtherStreams), static_cast<double>(other) / wall});
    }
  }
  for (const auto& [device, stream] : previous) {
    busy_.push_back(StreamBusy{device, stream, 0});
  }
  window_.clear();
}

void RuntimeMetrics::Emit(model::SampleSink& sink, std::string_view entity_id) const {
  for (const auto& [device, t] : kernels_) {
    const model::Labels labels{{std::string(kDevice), std::to_string(device)}};
    sink.AddValue(m::kKernelLaunches, entity_id, labels, static_cast<double>(t.count));
    sink.AddValue(m::kKernelTime, entity_id, labels, Seconds(t.ns));
  }
  for (const StreamBusy& b : busy_) {
    sink.AddValue(m::kStreamBusy, entity_id,
                  model::Labels{{std::string(kDevice), std::to_string(b.device)},
                                {"stream", b.stream}},
                  b.ratio);
  }
  for (const auto& [key, t] : copies_) {
    const model::Labels labels{{std::string(kDevice), std::to_string(key.first)},
                               {"direction", key.second}};
    sink.AddValue(m::kMemcpyBytes, entity_id, labels, static_cast<double>(t.bytes));
    sink.AddValue(m::kMemcpyTime, entity_id, labels, Seconds(t.ns));
  }
  for (const auto& [device, t] : memsets_) {
    const model::Labels labels{{std::string(kDevice), std::to_string(device)}};
    sink.AddValue(m::kMemsetBytes, entity_id, labels, static_cast<double>(t.bytes));
    sink.AddValue(m::kMemsetTime, entity_id, labels, Seconds(t.ns));
  }
  for (const DeviceMemoryTotals& d : device_memory_) {
    const model::Labels labels{{std::string(kDevice), std::to_string(d.device)}, {"kind", d.kind}};
    sink.AddValue(m::kMemoryAllocated, entity_id, labels, static_cast<double>(d.allocated_bytes));
    sink.AddValue(m::kMemoryAllocations, entity_id, labels, static_cast<double>(d.allocations));
    sink.AddValue(m::kMemoryAllocationBytes, entity_id, labels,
                  static_cast<double>(d.allocated_total_bytes));
    sink.AddValue(m::kMemoryReleases, entity_id, labels, static_cast<double>(d.releases));
    sink.AddValue(m::kMemoryReleaseBytes, entity_id, labels,
                  static_cast<double>(d.released_total_bytes));
  }
}

}  // namespace warpscope::agent::cuda_profiler

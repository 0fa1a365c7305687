// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/cuda_profiler/gpu_trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <string_view>

#include "profiling/chrome_trace.h"

namespace warpscope::agent::cuda_profiler {
namespace {

constexpr std::string_view kDefaultLaunch = "[kernel launch]";

}  // namespace

std::string FormatTraceBytes(uint64_t bytes) {
  constexpr std::string_view kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  size_t unit = 0;
  while (unit + 1 < std::size(kUnits) && bytes >= (uint64_t{1} << (10 * (unit + 1)))) {
    ++unit;
  }
  if (unit == 0) {
    return fmt::format("{} B", bytes);
  }
  const uint64_t scale = uint64_t{1} << (10 * unit);
  if (bytes % scale == 0) {
    return fmt::format("{} {}", bytes / scale, kUnits[unit]);
  }
  return fmt::format("{:.1f} {}", static_cast<double>(bytes) / static_cast<double>(scale),
                     kUnits[unit]);
}

namespace {

// Draws the window's events in order, within the event budget, and remembers the tracks used.
class GpuTrace {
 public:
  GpuTrace(const GpuTraceOptions& options, size_t expected_events, KernelNames& names,
           ProfileBuilder::Stats& stats)
      : options_(options),
        names_(names),
        stats_(stats),
        w_(4096 + std::min(expected_events, options.max_events) * 768) {
    w_.ProcessName(options.pid, fmt::format("{} (pid {})", options.process_name, options.pid));
  }

  void Nvtx(const NvtxRange& r) {
    if (!Admit(stats_.trace_events_dropped)) {
      return;
    }
    threads_.insert(r.thread_id);
    std::string_view name = r.name.empty() ? std::string_view("[nvtx]") : r.name;
    if (r.end_ns > r.start_ns) {
      w_.Complete("nvtx", options_.pid, r.thread_id, r.start_ns, r.end_ns - r.start_ns, name)
          .Str("domain", r.domain);
    } else {
      w_.Instant("nvtx", options_.pid, r.thread_id, r.start_ns, name).Str("domain", r.domain);
    }
  }

  void Kernel(const KernelActivity& k) {
    if (!Admit(stats_.trace_kernels_dropped)) {
      return;
    }
    const int64_t gpu_pid = kGpuTrackPidBase + k.device;
    gpu_tracks_.insert({k.device, k.stream});
    w_.Complete("kernel", gpu_pid, k.stream, k.start_ns,
                std::max<int64_t>(0, k.end_ns - k.start_ns), names_.Demangled(k.name))
        .Unsigned("correlation_id", k.correlation_id)
        .Unsigned("device", k.device)
        .Unsigned("stream", k.stream)
        .Unsigned("context", k.context)
        .Array("grid", {k.grid.x, k.grid.y, k.grid.z})
        .Array("block", {k.block.x, k.block.y, k.block.z})
        .Unsigned("registers_per_thread", k.registers_per_thread)
        .Unsigned("shared_memory_bytes", k.shared_memory_bytes)
        .Unsigned("graph_id", k.graph_id);
    if (k.api_end_ns <= k.api_start_ns) {
      return;
    }
    threads_.insert(k.thread_id);
    if (launch_slices_.insert(k.correlation_id).second) {
      w_.Complete("cuda_api", options_.pid, k.thread_id, k.api_start_ns,
                  k.api_end_ns - k.api_start_ns,
                  k.launch_api.empty() ? kDefaultLaunch : std::string_view(k.launch_api))
          .Unsigned("correlation_id", k.correlation_id);
    }
    ++flow_id_;
    w_.FlowStart("launch", "launch", flow_id_, options_.pid, k.thread_id, k.api_start_ns);
    w_.FlowEnd("launch", "launch", flow_id_, gpu_pid, k.stream, k.start_ns);
  }

  void Memory(const MemoryActivity& m) {
    if (!Admit(stats_.trace_events_dropped)) {
      return;
    }
    const bool copy = m.op == MemoryActivity::Op::kMemcpy;
    const int64_t dur = std::max<int64_t>(0, m.end_ns - m.start_ns);
    gpu_tracks_.insert({m.device, m.stream});
    std::string name = copy ? fmt::format("memcpy {} {}", m.kind, FormatTraceBytes(m.bytes))
                            : fmt::format("memset {}", FormatTraceBytes(m.bytes));
    profiling::TraceArgs args = w_.Complete(copy ? "memcpy" : "memset", kGpuTrackPidBase + m.device,
                                            m.stream, m.start_ns, dur, name);
    args.Str(copy ? "kind" : "memory_kind", m.kind)
        .Unsigned("bytes", m.bytes)
        .Unsigned("correlation_id", m.correlation_id)
        .Unsigned("device", m.device)
        .Unsigned("stream", m.stream)
        .Unsigned("context", m.context)
        .Unsigned("graph_id", m.graph_id);
    if (dur > 0) {
      // bytes per ns is GB/s (10^9 bytes per second)
      args.Fixed3("throughput_gb_per_s", static_cast<double>(m.bytes) / static_cast<double>(dur));
    }
  }

  std::string Finish() {
    for (int32_t tid : threads_) {
      w_.ThreadName(options_.pid, tid, fmt::format("thread {}", tid));
    }
    std::set<uint32_t> devices;
    for (const auto& [device, stream] : gpu_tracks_) {
      if (devices.insert(device).second) {
        w_.ProcessName(kGpuTrackPidBase + device, fmt::format("GPU {}", device));
        w_.ProcessSortIndex(kGpuTrackPidBase + device, 1 + device);
      }
      w_.ThreadName(kGpuTrackPidBase + device, stream, fmt::format("stream {}", stream));
    }
    return w_.Finish({{"pid", options_.pid},
                      {"window_start_ns", options_.start_ns},
                      {"window_end_ns", options_.end_ns}});
  }

 private:
  // Counts an event against the budget; false (and `dropped` counted) when it is spent.
  bool Admit(uint64_t& dropped) {
    if (drawn_ >= options_.max_events) {
      ++dropped;
      return false;
    }
    ++drawn_;
    return true;
  }

  const GpuTraceOptions& options_;
  KernelNames& names_;
  ProfileBuilder::Stats& stats_;
  profiling::ChromeTraceWriter w_;
  std::set<std::pair<uint32_t, uint32_t>> gpu_tracks_;
  std::set<int32_t> threads_;
  std::set<uint64_t> launch_slices_;  // correlation ids drawn (graph launches fan out)
  uint64_t flow_id_ = 0;
  size_t drawn_ = 0;
};

}  // namespace

std::string GpuTraceJson(const ProcessState& state, const GpuTraceOptions& options,
                         KernelNames& names, ProfileBuilder::Stats& stats) {
  GpuTrace trace(options, state.kernels.size() + state.memory.size() + state.nvtx_undrawn.size(),
                 names, stats);
  for (const NvtxRange& r : state.nvtx_undrawn) {
    trace.Nvtx(r);
  }
  for (const KernelActivity& k : state.kernels) {
    trace.Kernel(k);
  }
  for (const MemoryActivity& m : state.memory) {
    trace.Memory(m);
  }
  return trace.Finish();
}

}  // namespace warpscope::agent::cuda_profiler

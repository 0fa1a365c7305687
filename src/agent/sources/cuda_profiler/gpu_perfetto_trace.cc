// SPDX-License-Identifier: Apache-2.0
// GpuTracePerfetto (gpu_trace.h): the window's events are admitted within the event budget in
// the Chrome trace's order (NVTX ranges, kernels, copies), then written by start time, the
// longer first among equal starts, which is the order perfetto_trace.h asks for on each track.
#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <string_view>
#include <unordered_map>

#include "agent/sources/cuda_profiler/gpu_trace.h"
#include "profiling/perfetto_trace.h"

namespace warpscope::agent::cuda_profiler {
namespace {

using profiling::GpuStreamTrackUuid;
using profiling::GpuTrackUuid;
using profiling::ThreadTrackUuid;

constexpr std::string_view kDefaultLaunch = "[kernel launch]";

// One slice to write: what it is (`kind`, the index into its list) and where.
struct Item {
  enum class Kind : uint8_t { kNvtx, kLaunch, kKernel, kMemory };
  int64_t start_ns;
  int64_t end_ns;
  uint64_t track;
  uint32_t index;
  Kind kind;
};

// splitmix64's finalizer: flow ids unique across processes and windows of a merged trace.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::string Dim(const Dim3& d) { return fmt::format("[{}, {}, {}]", d.x, d.y, d.z); }

class PerfettoGpuTrace {
 public:
  PerfettoGpuTrace(const ProcessState& state, const GpuTraceOptions& options, KernelNames& names,
                   ProfileBuilder::Stats& stats)
      : state_(state),
        options_(options),
        names_(names),
        stats_(stats),
        w_(GpuTraceSequenceId(options.pid),
           4096 + std::min(state.kernels.size() + state.memory.size(), options.max_events) * 256),
        flow_base_(Mix(static_cast<uint64_t>(static_cast<uint32_t>(options.pid)) << 40 ^
                       static_cast<uint64_t>(options.start_ns))) {}

  void Admit() {
    for (uint32_t i = 0; i < state_.nvtx_undrawn.size(); ++i) {
      if (!Budget(stats_.trace_events_dropped)) continue;
      const NvtxRange& r = state_.nvtx_undrawn[i];
      threads_.insert(r.thread_id);
      items_.push_back({r.start_ns, std::max(r.start_ns, r.end_ns),
                        ThreadTrackUuid(options_.pid, r.thread_id), i, Item::Kind::kNvtx});
    }
    for (uint32_t i = 0; i < state_.kernels.size(); ++i) {
      if (!Budget(stats_.trace_kernels_dropped)) continue;
      const KernelActivity& k = state_.kernels[i];
      streams_.insert({k.device, k.stream});
      items_.push_back({k.start_ns, std::max(k.start_ns, k.end_ns),
                        GpuStreamTrackUuid(options_.pid, k.device, k.stream), i,
                        Item::Kind::kKernel});
      if (k.api_end_ns <= k.api_start_ns) continue;
      threads_.insert(k.thread_id);
      auto [launch, first] = launch_of_.try_emplace(k.correlation_id, i);
      if (first) {
        items_.push_back({k.api_start_ns, k.api_end_ns, ThreadTrackUuid(options_.pid, k.thread_id),
                          i, Item::Kind::kLaunch});
      } else {  // graph launches fan out: one launch slice, a flow to each kernel
        more_flows_[launch->second].push_back(i);
      }
    }
    for (uint32_t i = 0; i < state_.memory.size(); ++i) {
      if (!Budget(stats_.trace_events_dropped)) continue;
      const MemoryActivity& m = state_.memory[i];
      streams_.insert({m.device, m.stream});
      items_.push_back({m.start_ns, std::max(m.start_ns, m.end_ns),
                        GpuStreamTrackUuid(options_.pid, m.device, m.stream), i,
                        Item::Kind::kMemory});
    }
  }

  std::string Write() {
    WriteTracks();
    std::stable_sort(items_.begin(), items_.end(), [](const Item& a, const Item& b) {
      return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns > b.end_ns;
    });
    for (const Item& item : items_) {
      switch (item.kind) {
        case Item::Kind::kNvtx:
          Nvtx(item);
          break;
        case Item::Kind::kLaunch:
          Launch(item);
          break;
        case Item::Kind::kKernel:
          Kernel(item);
          break;
        case Item::Kind::kMemory:
          Memory(item);
          break;
      }
    }
    return w_.Finish();
  }

 private:
  bool Budget(uint64_t& dropped) {
    if (drawn_ >= options_.max_events) {
      ++dropped;
      return false;
    }
    ++drawn_;
    return true;
  }

  uint64_t FlowId(uint32_t kernel) const { return Mix(flow_base_ + kernel); }

  void WriteTracks() {
    w_.ProcessTrack(profiling::ProcessTrackUuid(options_.pid), options_.pid,
                    fmt::format("{} (pid {})", options_.process_name, options_.pid));
    for (int32_t tid : threads_) {
      w_.ThreadTrack(ThreadTrackUuid(options_.pid, tid), options_.pid, tid,
                     fmt::format("thread {}", tid));
    }
    std::set<uint32_t> devices;
    for (const auto& [device, stream] : streams_) {
      if (devices.insert(device).second) {
        w_.Track(GpuTrackUuid(device), 0, fmt::format("GPU {}", device),
                 static_cast<int32_t>(device));
      }
      w_.Track(GpuStreamTrackUuid(options_.pid, device, stream), GpuTrackUuid(device),
               fmt::format("stream {} (pid {})", stream, options_.pid),
               static_cast<int32_t>(stream & 0x7fffffff));
    }
  }

  void Nvtx(const Item& item) {
    const NvtxRange& r = state_.nvtx_undrawn[item.index];
    std::string_view name = r.name.empty() ? std::string_view("[nvtx]") : r.name;
    if (r.end_ns > r.start_ns) {
      w_.Slice(item.track, "nvtx", name, item.start_ns, item.end_ns)
          .InternedStr("domain", r.domain);
    } else {
      w_.Instant(item.track, "nvtx", name, item.start_ns).InternedStr("domain", r.domain);
    }
  }

  void Launch(const Item& item) {
    const KernelActivity& k = state_.kernels[item.index];
    profiling::PerfettoEvent e =
        w_.Slice(item.track, "cuda_api",
                 k.launch_api.empty() ? kDefaultLaunch : std::string_view(k.launch_api),
                 item.start_ns, item.end_ns);
    e.Uint("correlation_id", k.correlation_id).Flow(FlowId(item.index));
    if (auto more = more_flows_.find(item.index); more != more_flows_.end()) {
      for (uint32_t kernel : more->second) {
        e.Flow(FlowId(kernel));
      }
    }
  }

  void Kernel(const Item& item) {
    const KernelActivity& k = state_.kernels[item.index];
    profiling::PerfettoEvent e =
        w_.Slice(item.track, "kernel", names_.Demangled(k.name), item.start_ns, item.end_ns);
    e.Uint("correlation_id", k.correlation_id)
        .Uint("context", k.context)
        .InternedStr("grid", Dim(k.grid))
        .InternedStr("block", Dim(k.block))
        .Uint("registers_per_thread", k.registers_per_thread)
        .Uint("shared_memory_bytes", k.shared_memory_bytes);
    if (k.graph_id != 0) {
      e.Uint("graph_id", k.graph_id);
    }
    if (k.api_end_ns > k.api_start_ns) {
      e.TerminatingFlow(FlowId(item.index));
    }
  }

  void Memory(const Item& item) {
    const MemoryActivity& m = state_.memory[item.index];
    const bool copy = m.op == MemoryActivity::Op::kMemcpy;
    std::string name = copy ? fmt::format("memcpy {} {}", m.kind, FormatTraceBytes(m.bytes))
                            : fmt::format("memset {}", FormatTraceBytes(m.bytes));
    profiling::PerfettoEvent e =
        w_.Slice(item.track, copy ? "memcpy" : "memset", name, item.start_ns, item.end_ns);
    e.InternedStr(copy ? "kind" : "memory_kind", m.kind)
        .Uint("bytes", m.bytes)
        .Uint("correlation_id", m.correlation_id)
        .Uint("context", m.context);
    if (m.graph_id != 0) {
      e.Uint("graph_id", m.graph_id);
    }
    const int64_t dur = item.end_ns - item.start_ns;
    if (dur > 0) {
      // bytes per ns is GB/s (10^9 bytes per second)
      e.Double("throughput_gb_per_s", static_cast<double>(m.bytes) / static_cast<double>(dur));
    }
  }

  const ProcessState& state_;
  const GpuTraceOptions& options_;
  KernelNames& names_;
  ProfileBuilder::Stats& stats_;
  profiling::PerfettoTraceWriter w_;
  uint64_t flow_base_;
  std::vector<Item> items_;
  std::set<int32_t> threads_;
  std::set<std::pair<uint32_t, uint32_t>> streams_;
  std::unordered_map<uint64_t, uint32_t> launch_of_;  // correlation id -> first kernel
  // That kernel -> the others of its launch.
  std::unordered_map<uint32_t, std::vector<uint32_t>> more_flows_;
  size_t drawn_ = 0;
};

}  // namespace

std::string GpuTracePerfetto(const ProcessState& state, const GpuTraceOptions& options,
                             KernelNames& names, ProfileBuilder::Stats& stats) {
  PerfettoGpuTrace trace(state, options, names, stats);
  trace.Admit();
  return trace.Write();
}

}  // namespace warpscope::agent::cuda_profiler

// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/cuda_profiler/wire_convert.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <type_traits>
#include <utility>

#include "cupti/abi.h"

namespace warpscope::agent::cuda_profiler {
namespace {

namespace abi = ::warpscope::cupti::abi;

Dim3 ToDim3(const int32_t (&v)[3]) {
  auto u = [](int32_t x) { return x < 0 ? 0u : static_cast<uint32_t>(x); };
  return Dim3{u(v[0]), u(v[1]), u(v[2])};
}

int64_t ToNs(uint64_t ns) {
  return ns > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(ns);
}

uint64_t Sum(const std::map<wire::CounterId, uint64_t>& c,
             std::initializer_list<wire::CounterId> ids) {
  uint64_t total = 0;
  for (wire::CounterId id : ids) {
    auto it = c.find(id);
    if (it != c.end()) {
      total += it->second;
    }
  }
  return total;
}

}  // namespace

std::string LaunchApiName(uint32_t domain, uint32_t cbid) {
  const int id = static_cast<int>(cbid);
  if (static_cast<int>(domain) == abi::kDomainDriverApi) {
    switch (id) {
      case abi::kCbidCuLaunch:
        return "cuLaunch";
      case abi::kCbidCuLaunchGrid:
        return "cuLaunchGrid";
      case abi::kCbidCuLaunchGridAsync:
        return "cuLaunchGridAsync";
      case abi::kCbidCuLaunchKernel:
        return "cuLaunchKernel";
      case abi::kCbidCuLaunchKernelPtsz:
        return "cuLaunchKernel_ptsz";
      case abi::kCbidCuLaunchCooperativeKernel:
        return "cuLaunchCooperativeKernel";
      case abi::kCbidCuLaunchCooperativeKernelPtsz:
        return "cuLaunchCooperativeKernel_ptsz";
      case abi::kCbidCuLaunchCooperativeKernelMultiDevice:
        return "cuLaunchCooperativeKernelMultiDevice";
      case abi::kCbidCuGraphLaunch:
        return "cuGraphLaunch";
      case abi::kCbidCuGraphLaunchPtsz:
        return "cuGraphLaunch_ptsz";
      case abi::kCbidCuLaunchKernelEx:
        return "cuLaunchKernelEx";
      case abi::kCbidCuLaunchKernelExPtsz:
        return "cuLaunchKernelEx_ptsz";
      default:
        break;
    }
    return fmt::format("driver cbid {}", cbid);
  }
  if (static_cast<int>(domain) == abi::kDomainRuntimeApi) {
    switch (id) {
      case abi::kCbidCudaLaunchKernel:
        return "cudaLaunchKernel";
      case abi::kCbidCudaLaunchKernelPtsz:
        return "cudaLaunchKernel_ptsz";
      case abi::kCbidCudaLaunchCooperativeKernel:
        return "cudaLaunchCooperativeKernel";
      case abi::kCbidCudaLaunchCooperativeKernelPtsz:
        return "cudaLaunchCooperativeKernel_ptsz";
      case abi::kCbidCudaLaunchCooperativeKernelMultiDevice:
        return "cudaLaunchCooperativeKernelMultiDevice";
      case abi::kCbidCudaGraphLaunch:
        return "cudaGraphLaunch";
      case abi::kCbidCudaGraphLaunchPtsz:
        return "cudaGraphLaunch_ptsz";
      case abi::kCbidCudaLaunchKernelExC:
        return "cudaLaunchKernelExC";
      case abi::kCbidCudaLaunchKernelExCPtsz:
        return "cudaLaunchKernelExC_ptsz";
      case abi::kCbidCudaLaunchKernelV13:
        return "cudaLaunchKernel";
      case abi::kCbidCudaLaunchKernelV13Ptsz:
        return "cudaLaunchKernel_ptsz";
      default:
        break;
    }
    return fmt::format("runtime cbid {}", cbid);
  }
  return fmt::format("domain {} cbid {}", domain, cbid);
}

std::string_view MemcpyKindName(uint8_t copy_kind) {
  constexpr std::string_view kNames[] = {"unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                                         "AtoD",    "DtoA", "DtoD", "HtoH", "PtoP"};
  return copy_kind < std::size(kNames) ? kNames[copy_kind] : kNames[0];
}

std::string_view MemoryKindName(uint16_t memory_kind) {
  constexpr std::string_view kNames[] = {"unknown", "pageable", "pinned",        "device",
                                         "array",   "managed",  "device static", "managed static"};
  return memory_kind < std::size(kNames) ? kNames[memory_kind] : kNames[0];
}

ConnectionConverter::ConnectionConverter(int32_t peer_pid, Options options)
    : options_(std::move(options)), peer_pid_(peer_pid), pid_(peer_pid) {}

void ConnectionConverter::Handle(wire::Message message, ProfileInputSink& sink, Events& events) {
  ++stats_.messages;
  if (auto* hello = std::get_if<wire::Hello>(&message)) {
    OnHello(*hello, sink, events);
    return;
  }
  if (pid_ <= 0) {
    ++stats_.before_hello;
    return;
  }
  std::visit(
      [&](auto& m) {
        using T = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<T, wire::Stack>) {
          OnStack(std::move(m), sink);
        } else if constexpr (std::is_same_v<T, wire::KernelName>) {
          names_[m.id] = std::move(m.name);
          ResolvePending(m.id, sink);
        } else if constexpr (std::is_same_v<T, wire::KernelActivity>) {
          OnKernel(m, sink);
        } else if constexpr (std::is_same_v<T, wire::KernelAggregate>) {
          OnAggregate(m, sink);
        } else if constexpr (std::is_same_v<T, wire::StallReasons>) {
          auto& reasons = stall_reasons_[m.device];
          for (auto& r : m.reasons) {
            reasons[r.index] = std::move(r.name);
          }
        } else if constexpr (std::is_same_v<T, wire::PcSamples>) {
          OnPcSamples(std::move(m), sink);
        } else if constexpr (std::is_same_v<T, wire::CubinChunk>) {
          AddCubinChunk(std::move(m), events);
        } else if constexpr (std::is_same_v<T, wire::Counters>) {
          OnCounters(m, sink);
        } else if constexpr (std::is_same_v<T, wire::Memcpy> || std::is_same_v<T, wire::Memset>) {
          OnMemory(m, sink);
        } else if constexpr (std::is_same_v<T, wire::NvtxRange>) {
          NvtxRange r;
          r.name = std::move(m.name);
          r.domain = std::move(m.domain);
          r.start_ns = ToNs(m.start_ns);
          r.end_ns = ToNs(m.end_ns);
          r.thread_id = static_cast<int32_t>(m.tid);
          ++stats_.nvtx_ranges;
          sink.AddNvtxRange(pid_, std::move(r));
        } else if constexpr (std::is_same_v<T, wire::DeviceMemory>) {
          std::vector<DeviceMemoryTotals> totals;
          totals.reserve(m.entries.size());
          for (const auto& e : m.entries) {
            totals.push_back(DeviceMemoryTotals{
                e.device, std::string(MemoryKindName(static_cast<uint16_t>(
                              std::min<uint32_t>(e.memory_kind, 0xffff)))),
                e.allocations, e.allocated_total_bytes, e.releases, e.released_total_bytes,
                e.allocated_bytes});
          }
          ++stats_.device_memory;
          sink.UpdateDeviceMemory(pid_, std::move(totals));
        } else if constexpr (std::is_same_v<T, wire::Notice>) {
          ++stats_.notices;
          events.notices.push_back(std::move(m));
        } else {
          // Launch (its stack arrives joined in KernelActivity) and Control (agent -> process
          // only) do not enter the profile.
          ++stats_.ignored;
        }
      },
      message);
}

void ConnectionConverter::OnHello(const wire::Hello& hello, ProfileInputSink& sink,
                                  Events& events) {
  if (has_hello_) {
    return;  // one per connection; a repeat changes nothing
  }
  has_hello_ = true;
  pid_ = peer_pid_ > 0 ? peer_pid_ : static_cast<int32_t>(hello.pid);
  executable_ = hello.exe;
  ProcessDesc desc;
  desc.pid = pid_;
  desc.executable = hello.exe;
  desc.start_time_ns = ToNs(hello.start_time_ns);
  if (options_.start_ticks_of) {
    desc.start_ticks = options_.start_ticks_of(pid_);
  }
  sink.AddProcess(desc);
  events.hello = true;
}

void ConnectionConverter::OnStack(wire::Stack m, ProfileInputSink& sink) {
  InternedStack stack;
  stack.hash = m.hash;
  stack.native_pcs = std::move(m.native);
  stack.python_frames.reserve(m.python.size());
  for (auto& f : m.python) {
    stack.python_frames.push_back(
        PythonFrame{std::move(f.function), std::move(f.file), static_cast<int32_t>(f.line)});
  }
  sink.AddStack(pid_, std::move(stack));
}

void ConnectionConverter::OnKernel(const wire::KernelActivity& m, ProfileInputSink& sink) {
  KernelActivity k;
  k.correlation_id = m.correlation_id;
  if (m.stack_hash != 0) {
    k.stack_hash = m.stack_hash;
  }
  k.device = m.device;
  k.stream = m.stream;
  k.context = m.context;
  k.start_ns = ToNs(m.start_ns);
  k.end_ns = ToNs(m.end_ns);
  k.grid = ToDim3(m.grid);
  k.block = ToDim3(m.block);
  k.graph_id = m.graph_id;
  k.registers_per_thread = m.registers;
  k.shared_memory_bytes = m.static_smem + m.dynamic_smem;
  if (m.launch_ns != 0) {
    k.launch_api = LaunchApiName(m.launch_domain, m.launch_cbid);
    k.thread_id = static_cast<int32_t>(m.launch_tid);
    k.api_start_ns = ToNs(m.launch_ns);
    k.api_end_ns = k.api_start_ns + kLaunchSliceNs;
  }
  Pending p;
  p.name_id = m.name_id;
  p.kernel = std::move(k);
  auto it = names_.find(m.name_id);
  if (it != names_.end()) {
    Emit(std::move(p), it->second, sink);
  } else {
    pending_.push_back(std::move(p));
    TrimPending(sink);
  }
}

void ConnectionConverter::OnAggregate(const wire::KernelAggregate& m, ProfileInputSink& sink) {
  for (const auto& e : m.entries) {
    Pending p;
    p.name_id = e.name_id;
    p.aggregate = KernelAggregate{"", e.device, e.stream, e.count, e.total_ns};
    auto it = names_.find(e.name_id);
    if (it != names_.end()) {
      Emit(std::move(p), it->second, sink);
    } else {
      pending_.push_back(std::move(p));
    }
  }
  TrimPending(sink);
}

void ConnectionConverter::OnPcSamples(wire::PcSamples m, ProfileInputSink& sink) {
  const auto device_it = stall_reasons_.find(m.device);
  for (auto& s : m.samples) {
    PcSample sample;
    sample.cubin_hash = s.cubin_crc;
    sample.function = std::move(s.function);
    sample.pc_offset = s.pc_offset;
    sample.count = s.count;
    if (device_it != stall_reasons_.end()) {
      auto r = device_it->second.find(s.stall_reason);
      if (r != device_it->second.end()) {
        sample.stall_reason = r->second;
      }
    }
    if (sample.stall_reason.empty()) {
      sample.stall_reason = fmt::format("stall reason {}", s.stall_reason);
    }
    sink.AddPcSample(pid_, sample);
  }
}

void ConnectionConverter::OnCounters(const wire::Counters& m, ProfileInputSink& sink) {
  for (const auto& c : m.counters) {
    counters_[c.id] = c.value;
  }
  using wire::CounterId;
  ProcessCounters pc;
  pc.launches_seen = Sum(counters_, {CounterId::kLaunchesSeen});
  pc.launches_admitted = Sum(counters_, {CounterId::kLaunchesAdmitted});
  pc.launches_dropped = Sum(counters_, {CounterId::kRingDrops});
  pc.records_lost = Sum(counters_, {CounterId::kCuptiDroppedRecords, CounterId::kPcSamplesDropped,
                                    CounterId::kPendingEvicted});
  pc.overhead_ns = Sum(counters_, {CounterId::kOverheadNs});
  pc.python_frames_skipped = Sum(counters_, {CounterId::kPythonFramesSkipped});
  sink.UpdateCounters(pid_, pc);
}

template <typename Message>
void ConnectionConverter::OnMemory(const Message& m, ProfileInputSink& sink) {
  MemoryActivity a;
  if constexpr (std::is_same_v<Message, wire::Memcpy>) {
    a.op = MemoryActivity::Op::kMemcpy;
    a.kind = std::string(MemcpyKindName(m.copy_kind));
  } else {
    a.op = MemoryActivity::Op::kMemset;
    a.kind = std::string(MemoryKindName(m.memory_kind));
  }
  a.correlation_id = m.correlation_id;
  a.bytes = m.bytes;
  a.start_ns = ToNs(m.start_ns);
  a.end_ns = ToNs(m.end_ns);
  a.device = m.device;
  a.stream = m.stream;
  a.context = m.context;
  a.graph_id = m.graph_id;
  ++stats_.memory_activities;
  sink.AddMemoryActivity(pid_, std::move(a));
}

void ConnectionConverter::Emit(Pending pending, const std::string& name, ProfileInputSink& sink) {
  if (pending.kernel) {
    pending.kernel->name = name;
    sink.AddKernel(pid_, std::move(*pending.kernel));
  } else if (pending.aggregate) {
    pending.aggregate->name = name;
    sink.AddKernelAggregate(pid_, *pending.aggregate);
  }
}

void ConnectionConverter::ResolvePending(uint32_t name_id, ProfileInputSink& sink) {
  if (pending_.empty()) {
    return;
  }
  const std::string& name = names_[name_id];
  std::vector<Pending> keep;
  keep.reserve(pending_.size());
  for (auto& p : pending_) {
    if (p.name_id == name_id) {
      Emit(std::move(p), name, sink);
    } else {
      keep.push_back(std::move(p));
    }
  }
  pending_ = std::move(keep);
}

void ConnectionConverter::TrimPending(ProfileInputSink& sink) {
  if (pending_.size() <= options_.max_pending) {
    return;
  }
  const size_t excess = pending_.size() - options_.max_pending;
  const std::string unknown(kUnknownKernelName);
  for (size_t i = 0; i < excess; ++i) {
    ++stats_.unnamed_kernels;
    Emit(std::move(pending_[i]), unknown, sink);
  }
  pending_.erase(pending_.begin(), pending_.begin() + static_cast<ptrdiff_t>(excess));
}

void ConnectionConverter::OnWindowBoundary(ProfileInputSink& sink) {
  const std::string unknown(kUnknownKernelName);
  std::vector<Pending> keep;
  for (auto& p : pending_) {
    if (++p.boundaries >= 2) {
      ++stats_.unnamed_kernels;
      Emit(std::move(p), unknown, sink);
    } else {
      keep.push_back(std::move(p));
    }
  }
  pending_ = std::move(keep);
}

void ConnectionConverter::OnClose(ProfileInputSink& sink) {
  const std::string unknown(kUnknownKernelName);
  for (auto& p : pending_) {
    ++stats_.unnamed_kernels;
    Emit(std::move(p), unknown, sink);
  }
  pending_.clear();
  cubins_.clear();
  cubin_bytes_ = 0;
}

void ConnectionConverter::AddCubinChunk(wire::CubinChunk chunk, Events& events) {
  auto drop = [&](uint64_t crc) {
    auto it = cubins_.find(crc);
    if (it != cubins_.end()) {
      cubin_bytes_ -= it->second.bytes.size();
      cubins_.erase(it);
    }
    ++stats_.cubins_dropped;
  };
  if (chunk.total_size == 0 || chunk.offset > chunk.total_size ||
      chunk.bytes.size() > chunk.total_size - chunk.offset) {
    drop(chunk.crc);
    return;
  }
  auto it = cubins_.find(chunk.crc);
  if (it == cubins_.end()) {
    if (chunk.total_size >
        options_.max_cubin_bytes - std::min(cubin_bytes_, options_.max_cubin_bytes)) {
      ++stats_.cubins_dropped;
      return;
    }
    Cubin cubin;
    cubin.total_size = chunk.total_size;
    cubin.bytes.assign(chunk.total_size, '\0');
    cubin_bytes_ += cubin.bytes.size();
    it = cubins_.emplace(chunk.crc, std::move(cubin)).first;
  } else if (it->second.total_size != chunk.total_size) {
    drop(chunk.crc);
    return;
  }
  Cubin& cubin = it->second;
  cubin.bytes.replace(chunk.offset, chunk.bytes.size(), chunk.bytes);
  cubin.received += chunk.bytes.size();
  if (cubin.received >= cubin.total_size) {
    ++stats_.cubins_completed;
    cubin_bytes_ -= cubin.bytes.size();
    events.cubins.emplace_back(chunk.crc, std::move(cubin.bytes));
    cubins_.erase(it);
  }
}

}  // namespace warpscope::agent::cuda_profiler

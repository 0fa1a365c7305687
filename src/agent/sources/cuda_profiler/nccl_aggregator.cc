// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/cuda_profiler/nccl_aggregator.h"

#include <fmt/format.h>

#include <bit>
#include <limits>

#include "agent/sources/cuda_profiler/nccl_metrics.h"

namespace warpscope::agent::cuda_profiler {
namespace {

namespace wire = ::warpscope::cupti::wire;

constexpr std::pair<uint64_t, uint32_t> kOtherComm{0, std::numeric_limits<uint32_t>::max()};
constexpr std::string_view kOther = "other";

double Seconds(uint64_t ns) { return static_cast<double>(ns) / 1e9; }

uint64_t Counter(const std::map<wire::CounterId, uint64_t>& counters, wire::CounterId id) {
  auto it = counters.find(id);
  return it == counters.end() ? 0 : it->second;
}

}  // namespace

uint64_t MessageSizeBucket(uint64_t bytes) {
  if (bytes == 0) {
    return 0;
  }
  return bytes > (uint64_t{1} << 63) ? std::numeric_limits<uint64_t>::max() : std::bit_ceil(bytes);
}

void NcclAggregator::Sums::Add(const wire::NcclCollective& op) {
  ++count;
  gpu_ns += op.gpu_exec_ns;
  completion_ns += op.complete_ns > op.enqueue_ns ? op.complete_ns - op.enqueue_ns : 0;
  exec_ns += wire::NcclExecNs(op);
  bytes += op.bytes;
  bus_bytes += op.bus_bytes;
}

void NcclAggregator::AddProcess(const model::ProcessInfo& process) {
  processes_[process.pid].info = process;
}

void NcclAggregator::AddComm(int32_t pid, const wire::NcclComm& comm) {
  auto it = processes_.find(pid);
  if (it == processes_.end()) {
    return;
  }
  Process& p = it->second;
  const std::pair<uint64_t, uint32_t> key{comm.comm_id, comm.rank};
  if (p.known.size() < options_.max_known_comms || p.known.contains(key)) {
    p.known[key] = comm;
  }
  auto c = p.comms.find(key);
  if (c != p.comms.end()) {
    c->second.name = comm.name;
    c->second.nranks = std::to_string(comm.nranks);
  }
}

NcclAggregator::Comm& NcclAggregator::CommOf(Process& p, uint64_t comm_id, uint32_t rank) {
  std::pair<uint64_t, uint32_t> key{comm_id, rank};
  auto it = p.comms.find(key);
  if (it != p.comms.end()) {
    return it->second;
  }
  const size_t own = p.comms.size() - (p.comms.contains(kOtherComm) ? 1 : 0);
  if (own >= options_.max_comms || key == kOtherComm) {
    Comm& other = p.comms[kOtherComm];
    other.id = other.name = kOther;
    return other;
  }
  Comm& c = p.comms[key];
  c.id = fmt::format("{:016x}", comm_id);
  c.rank = std::to_string(rank);
  auto known = p.known.find(key);
  if (known != p.known.end()) {
    c.name = known->second.name;
    c.nranks = std::to_string(known->second.nranks);
  }
  return c;
}

void NcclAggregator::AddCollective(int32_t pid, const wire::NcclCollective& op) {
  auto it = processes_.find(pid);
  if (it == processes_.end()) {
    return;
  }
  Process& p = it->second;
  Comm& comm = CommOf(p, op.comm_id, op.rank);
  std::string name = op.func.empty() ? "unknown" : op.func;
  if (!comm.totals.contains(name) && comm.totals.size() >= options_.max_collectives) {
    name = kOther;
  }
  comm.totals[name].Add(op);
  comm.window[name].Add(op);
  if (op.kind != wire::NcclOpKind::kCollective) {
    return;  // Inspector reports collectives only
  }
  InspectorKey key{
      name,     MessageSizeBucket(op.bytes), op.algo + "_" + op.proto, comm.name, comm.nranks,
      comm.rank};
  auto s = p.inspector_window.find(key);
  if (s == p.inspector_window.end()) {
    if (p.inspector_window.size() >= options_.max_inspector_series) {
      ++inspector_dropped_;
      return;
    }
    s = p.inspector_window.emplace(std::move(key), Sums{}).first;
  }
  s->second.Add(op);
}

void NcclAggregator::UpdateCounters(int32_t pid, const wire::Counters& counters) {
  auto it = processes_.find(pid);
  if (it == processes_.end()) {
    return;
  }
  for (const auto& c : counters.counters) {
    it->second.counters[c.id] = c.value;
  }
}

void NcclAggregator::FinishWindow(int64_t start_ns, int64_t end_ns) {
  const double length_ns = static_cast<double>(end_ns - start_ns);
  for (auto& [pid, p] : processes_) {
    for (auto& [key, comm] : p.comms) {
      uint64_t exec_ns = 0;
      for (const auto& [name, sums] : comm.window) {
        exec_ns += sums.exec_ns;
      }
      comm.last_share.reset();
      if (length_ns > 0) {
        comm.last_share = static_cast<double>(exec_ns) / length_ns;
      }
      comm.last = std::move(comm.window);
      comm.window.clear();
    }
    p.inspector_last = std::move(p.inspector_window);
    p.inspector_window.clear();
  }
}

void NcclAggregator::ForgetProcess(int32_t pid) { processes_.erase(pid); }

void NcclAggregator::EmitMetrics(model::SampleSink& out) const {
  namespace m = nccl_metrics;
  for (const auto& [pid, p] : processes_) {
    const model::Entity entity = model::MakeProcessEntity(p.info);
    out.AddEntity(entity);
    for (const auto& [key, comm] : p.comms) {
      model::Labels labels{{"comm", comm.id},
                           {"comm_name", comm.name},
                           {"rank", comm.rank},
                           {"nranks", comm.nranks}};
      if (comm.last_share) {
        out.AddValue(m::kTimeShare, entity.id, labels, *comm.last_share);
      }
      for (const auto& [name, s] : comm.totals) {
        labels.Set("collective", name);
        out.AddValue(m::kCollectives, entity.id, labels, static_cast<double>(s.count));
        out.AddValue(m::kGpuTime, entity.id, labels, Seconds(s.gpu_ns));
        out.AddValue(m::kCompletionTime, entity.id, labels, Seconds(s.completion_ns));
        out.AddValue(m::kBytes, entity.id, labels, static_cast<double>(s.bytes));
        out.AddValue(m::kBusBytes, entity.id, labels, static_cast<double>(s.bus_bytes));
        auto last = comm.last.find(name);
        if (last != comm.last.end() && last->second.exec_ns > 0) {
          out.AddValue(m::kBusBandwidth, entity.id, labels,
                       static_cast<double>(last->second.bus_bytes) / Seconds(last->second.exec_ns));
        }
      }
    }
    for (const auto& [key, s] : p.inspector_last) {
      if (s.exec_ns == 0) {
        continue;
      }
      const auto& [collective, size, algo_proto, comm_name, nranks, rank] = key;
      const model::Labels labels{{"collective", collective}, {"message_size", std::to_string(size)},
                                 {"algo_proto", algo_proto}, {"comm_name", comm_name},
                                 {"nranks", nranks},         {"rank", rank}};
      out.AddValue(m::kInspectorBusBandwidth, entity.id, labels,
                   static_cast<double>(s.bus_bytes) / Seconds(s.exec_ns));
      out.AddValue(m::kInspectorExecTime, entity.id, labels,
                   Seconds(s.exec_ns) / static_cast<double>(s.count));
    }
    const std::pair<std::string_view, wire::CounterId> drops[] = {
        {"event_pool", wire::CounterId::kNcclEventsDropped},
        {"ring_full", wire::CounterId::kRingDrops},
        {"no_ring", wire::CounterId::kThreadsOverCap},
    };
    for (const auto& [reason, id] : drops) {
      out.AddValue(m::kRecordsDropped, entity.id, model::Labels{{"reason", std::string(reason)}},
                   static_cast<double>(Counter(p.counters, id)));
    }
    out.AddValue(m::kBytesDropped, entity.id,
                 static_cast<double>(Counter(p.counters, wire::CounterId::kBytesDropped)));
  }
}

}  // namespace warpscope::agent::cuda_profiler

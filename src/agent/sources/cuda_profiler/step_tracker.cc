// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/cuda_profiler/step_tracker.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "agent/sources/cuda_profiler/training_metrics.h"
#include "model/entity.h"

namespace warpscope::agent::cuda_profiler {
namespace {

namespace wire = ::warpscope::cupti::wire;

constexpr size_t kMaxCommsPerProcess = 64;
constexpr std::string_view kProfilerStep = "ProfilerStep#";

int64_t Ns(uint64_t v) { return static_cast<int64_t>(v); }

// Inserts `item` into `items`, kept ordered by `key`; items mostly arrive in order.
template <typename T, typename Key>
void InsertOrdered(std::deque<T>& items, T item, Key key) {
  auto it = items.end();
  while (it != items.begin() && key(*std::prev(it)) > key(item)) {
    --it;
  }
  items.insert(it, std::move(item));
}

std::optional<uint32_t> ParseU32(const std::string& s) {
  uint32_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || ptr != s.data() + s.size()) {
    return std::nullopt;
  }
  return v;
}

}  // namespace

std::optional<int64_t> ProfilerStepNumber(std::string_view name) {
  if (!name.starts_with(kProfilerStep)) {
    return std::nullopt;
  }
  name.remove_prefix(kProfilerStep.size());
  int64_t n = 0;
  auto [ptr, ec] = std::from_chars(name.data(), name.data() + name.size(), n);
  if (ec != std::errc() || ptr == name.data() || n < 0) {
    return std::nullopt;
  }
  return n;
}

int64_t UnionLength(std::vector<std::pair<int64_t, int64_t>> intervals, int64_t from, int64_t to) {
  std::sort(intervals.begin(), intervals.end());
  int64_t total = 0;
  int64_t covered = from;  // everything before this is counted
  for (auto [start, end] : intervals) {
    start = std::max(start, covered);
    end = std::min(end, to);
    if (end > start) {
      total += end - start;
      covered = end;
    }
  }
  return total;
}

void StepTracker::AddProcess(const model::ProcessInfo& process, std::string step_range) {
  auto it = processes_.find(process.pid);
  if (it == processes_.end()) {
    if (processes_.size() >= options_.max_processes) {
      ++stats_.processes_refused;
      return;
    }
    it = processes_.emplace(process.pid, Process{}).first;
  }
  it->second.info = process;
  it->second.entity = model::MakeProcessEntity(process).id;
  it->second.step_range = std::move(step_range);
}

StepTracker::Process* StepTracker::Find(int32_t pid) {
  auto it = processes_.find(pid);
  return it == processes_.end() ? nullptr : &it->second;
}

void StepTracker::AddComm(int32_t pid, const wire::NcclComm& comm) {
  Process* p = Find(pid);
  if (p == nullptr) {
    return;
  }
  const std::pair<uint64_t, uint32_t> key{comm.comm_id, comm.rank};
  if (!p->comms.contains(key) && p->comms.size() >= kMaxCommsPerProcess) {
    return;
  }
  Comm& c = p->comms[key];
  c.desc = comm;
  c.described = true;
}

void StepTracker::AddCollective(int32_t pid, const wire::NcclCollective& op) {
  Process* p = Find(pid);
  if (p == nullptr) {
    return;
  }
  Op o;
  o.comm_id = op.comm_id;
  o.rank = op.rank;
  o.enqueue_ns = Ns(op.enqueue_ns);
  if (op.gpu_start_ns != 0 && op.gpu_end_ns >= op.gpu_start_ns) {
    o.start_ns = Ns(op.gpu_start_ns);
    o.end_ns = Ns(op.gpu_end_ns);
  } else {
    o.start_ns = o.enqueue_ns;
    o.end_ns = Ns(std::max({op.complete_ns, op.enqueued_ns, op.enqueue_ns}));
  }
  o.exec_ns = Ns(wire::NcclExecNs(op));
  o.bus_bytes = op.bus_bytes;
  InsertOrdered(p->ops, o, [](const Op& x) { return x.enqueue_ns; });
  while (p->ops.size() > options_.max_ops) {
    if (p->ops.front().enqueue_ns >= p->last_end_ns) {
      ++stats_.ops_dropped;
    }
    p->ops.pop_front();
  }
  const std::pair<uint64_t, uint32_t> key{op.comm_id, op.rank};
  if (!p->comms.contains(key) && p->comms.size() >= kMaxCommsPerProcess) {
    return;
  }
  Comm& c = p->comms[key];
  c.bus_bytes += op.bus_bytes;
  if (op.kind != wire::NcclOpKind::kCollective) {
    return;  // point-to-point operations have no seq number: they join steps by time only
  }
  OpSignature sig{op.func, op.count, op.datatype, op.seq_number, o.enqueue_ns};
  InsertOrdered(c.history, std::move(sig), [](const OpSignature& x) { return x.enqueue_ns; });
  while (c.history.size() > options_.max_history) {
    c.history.pop_front();
  }
  c.history_changed = true;
}

void StepTracker::AddKernel(int32_t pid, std::string_view name, int64_t start_ns,
                            int64_t end_ns) {
  Process* p = Find(pid);
  if (p == nullptr || end_ns < start_ns) {
    return;
  }
  p->has_kernels = true;
  InsertOrdered(p->kernels, Kernel{start_ns, end_ns, name.starts_with("nccl")},
                [](const Kernel& k) { return k.start_ns; });
  while (p->kernels.size() > options_.max_kernels) {
    ++stats_.kernels_dropped;
    p->kernels.pop_front();
  }
}

void StepTracker::AddNvtxRange(int32_t pid, std::string_view name, int64_t start_ns,
                               int64_t end_ns) {
  Process* p = Find(pid);
  if (p == nullptr || end_ns < start_ns) {
    return;
  }
  std::optional<int64_t> step = ProfilerStepNumber(name);
  if (!step && !p->step_range.empty() && name == p->step_range) {
    step = p->next_counted++;
  }
  if (!step) {
    return;
  }
  p->nvtx = true;
  InsertOrdered(p->ranges, Range{*step, start_ns, end_ns}, [](const Range& r) {
    return r.start_ns;
  });
  while (p->ranges.size() > options_.max_ranges) {
    ++stats_.ranges_dropped;
    p->ranges.pop_front();
  }
}

std::vector<model::TrainingStep> StepTracker::ForgetProcess(int32_t pid) {
  std::vector<model::TrainingStep> out;
  auto it = processes_.find(pid);
  if (it == processes_.end()) {
    return out;
  }
  // Past every grace period: no data of it is still on the way.
  CollectProcess(it->second, INT64_MAX - options_.grace_ns, out);
  processes_.erase(it);
  return out;
}

StepTracker::Comm* StepTracker::StepComm(Process& p) {
  Comm* best = nullptr;
  for (auto& [key, c] : p.comms) {
    if (!c.history.empty() && (best == nullptr || c.bus_bytes > best->bus_bytes)) {
      best = &c;
    }
  }
  return best;
}

std::vector<model::TrainingStep> StepTracker::Collect(int64_t now_ns) {
  std::vector<model::TrainingStep> out;
  for (auto& [pid, p] : processes_) {
    CollectProcess(p, now_ns, out);
  }
  return out;
}

void StepTracker::CollectProcess(Process& p, int64_t now_ns,
                                 std::vector<model::TrainingStep>& out) {
  if (p.nvtx) {
    CollectRanges(p, now_ns, out);
  } else if (Comm* comm = StepComm(p)) {
    if (comm->history_changed) {
      Redetect(p, *comm);
    }
    CollectPattern(p, *comm, now_ns, out);
  }
  Trim(p);
}

void StepTracker::CollectRanges(Process& p, int64_t now_ns,
                                std::vector<model::TrainingStep>& out) {
  const Comm* comm = StepComm(p);
  while (!p.ranges.empty() && now_ns >= p.ranges.front().end_ns + options_.grace_ns) {
    const Range r = p.ranges.front();
    p.ranges.pop_front();
    if ((p.last_step && r.step <= *p.last_step) || r.start_ns < p.last_end_ns) {
      continue;  // a repeat (another thread's or domain's range of the same step), or overlapping
    }
    Emit(p, MakeStep(p, comm, r.step, r.start_ns, r.end_ns, "nvtx"), out);
  }
}

void StepTracker::Redetect(Process& p, Comm& comm) {
  comm.history_changed = false;
  const std::vector<OpSignature> ops(comm.history.begin(), comm.history.end());
  std::optional<StepPattern> found = FindStepPattern(ops, options_.max_period);
  if (found && comm.pattern && !found->SameSteps(*comm.pattern)) {
    ++stats_.pattern_changes;
  }
  if (found && (!comm.pattern || !found->SameSteps(*comm.pattern))) {
    comm.base = 0;
    if (p.last_step) {
      // Numbering goes on from the last step emitted: set below, at the first step cut.
      comm.base = INT64_MIN;
    }
  }
  if (found || !comm.pattern) {
    comm.pattern = std::move(found);
  } else {
    comm.pattern->run_start = comm.history.size();  // keep the numbering, cut nothing for now
  }
}

void StepTracker::CollectPattern(Process& p, Comm& comm, int64_t now_ns,
                                 std::vector<model::TrainingStep>& out) {
  if (!comm.pattern || comm.pattern->run_start >= comm.history.size()) {
    return;
  }
  const StepPattern& pattern = *comm.pattern;
  struct Seen {
    int64_t start_ns = INT64_MAX;
    size_t ops = 0;
  };
  std::map<int64_t, Seen> steps;
  for (size_t i = pattern.run_start; i < comm.history.size(); ++i) {
    const OpSignature& op = comm.history[i];
    if (auto k = pattern.StepOf(op.func, op.seq)) {
      Seen& s = steps[*k];
      s.start_ns = std::min(s.start_ns, op.enqueue_ns);
      ++s.ops;
    }
  }
  for (auto it = steps.begin(); it != steps.end(); ++it) {
    auto next = std::next(it);
    if (next == steps.end() || next->first != it->first + 1) {
      break;
    }
    const int64_t start = it->second.start_ns;
    const int64_t end = next->second.start_ns;
    if (it->second.ops != pattern.period || start < p.last_end_ns) {
      continue;  // partial (the run's first step) or already covered
    }
    if (comm.base == INT64_MIN) {
      comm.base = (p.last_step ? *p.last_step + 1 : 0) - it->first;
    }
    const int64_t number = it->first + comm.base;
    if (p.last_step && number <= *p.last_step) {
      continue;
    }
    auto after = std::next(next);
    const bool next_ended = after != steps.end() && after->first == next->first + 1;
    if (now_ns < end + options_.grace_ns && (p.has_kernels || !next_ended)) {
      break;  // its data may still be on the way
    }
    Emit(p, MakeStep(p, &comm, number, start, end, "collectives"), out);
  }
}

model::TrainingStep StepTracker::MakeStep(const Process& p, const Comm* comm, int64_t step,
                                          int64_t start_ns, int64_t end_ns,
                                          std::string_view source) const {
  model::TrainingStep s;
  s.entity = p.entity;
  s.step = step;
  s.start = base::FromUnixNanos(start_ns);
  s.end = base::FromUnixNanos(end_ns);
  s.source = std::string(source);
  for (const auto& [key, c] : p.comms) {
    if (&c == comm) {
      s.comm = fmt::format("{:016x}", key.first);
      s.rank = key.second;
      s.world_size = c.described ? c.desc.nranks : 0;
    }
  }
  const model::JobIdentity& job = p.info.job;
  if (!job.id.empty()) {
    s.job = job.id;
  } else if (!s.comm.empty()) {
    s.job = "comm-" + s.comm;
  } else {
    // A process in no launcher's job and without NCCL (NVTX steps only) is a job of its own:
    // its entity id ("pid/<pid>/<start ticks>") with dashes, never empty.
    s.job = p.entity;
    std::replace(s.job.begin(), s.job.end(), '/', '-');
  }
  if (auto rank = ParseU32(job.rank)) {
    s.rank = *rank;
  }
  if (auto world = ParseU32(job.world_size)) {
    s.world_size = *world;
  }
  const int64_t duration = end_ns - start_ns;
  std::vector<std::pair<int64_t, int64_t>> op_intervals;
  int64_t last_large = -1;
  auto op = std::lower_bound(p.ops.begin(), p.ops.end(), start_ns,
                             [](const Op& o, int64_t t) { return o.enqueue_ns < t; });
  for (; op != p.ops.end() && op->enqueue_ns < end_ns; ++op) {
    ++s.collectives;
    s.bus_bytes += op->bus_bytes;
    s.nccl_ns += op->exec_ns;
    op_intervals.emplace_back(op->start_ns, op->end_ns);
    if (duration > 0 && op->exec_ns * 100 >= duration) {
      last_large = std::max(last_large, op->start_ns);
    }
  }
  s.last_collective_offset_ns = last_large < 0 ? -1 : std::max<int64_t>(0, last_large - start_ns);
  if (!p.has_kernels) {
    s.compute_ns = -1;
    s.overlap_ns = 0;
    s.comm_ns = UnionLength(std::move(op_intervals), start_ns, end_ns);
    return s;
  }
  std::vector<std::pair<int64_t, int64_t>> compute;
  std::vector<std::pair<int64_t, int64_t>> nccl;
  for (const Kernel& k : p.kernels) {
    if (k.start_ns >= end_ns) {
      break;
    }
    if (k.end_ns > start_ns) {
      (k.nccl ? nccl : compute).emplace_back(k.start_ns, k.end_ns);
    }
  }
  const int64_t nccl_ns = UnionLength(nccl, start_ns, end_ns);
  s.compute_ns = UnionLength(compute, start_ns, end_ns);
  compute.insert(compute.end(), nccl.begin(), nccl.end());
  const int64_t either = UnionLength(std::move(compute), start_ns, end_ns);
  s.overlap_ns = nccl_ns + s.compute_ns - either;
  s.comm_ns = nccl_ns - s.overlap_ns;
  return s;
}

void StepTracker::Emit(Process& p, model::TrainingStep step,
                       std::vector<model::TrainingStep>& out) {
  const int64_t start = base::ToUnixNanos(step.start);
  const int64_t end = base::ToUnixNanos(step.end);
  p.last_step = step.step;
  p.last_end_ns = end;
  ++p.total_steps;
  WindowSums& w = p.window;
  ++w.steps;
  w.duration_ns += static_cast<double>(end - start);
  w.comm_ns += static_cast<double>(step.comm_ns);
  if (step.compute_ns >= 0) {
    w.compute_ns += static_cast<double>(step.compute_ns);
    w.known_ns += static_cast<double>(end - start);
    w.known_comm_ns += static_cast<double>(step.comm_ns);
  }
  p.job = step.job;
  p.rank = std::to_string(step.rank);
  out.push_back(std::move(step));
}

void StepTracker::Trim(Process& p) {
  // What ends before the last emitted step's end can no longer be part of a step.
  while (!p.kernels.empty() && p.kernels.front().end_ns <= p.last_end_ns) {
    p.kernels.pop_front();
  }
  while (!p.ops.empty() && p.ops.front().enqueue_ns < p.last_end_ns) {
    p.ops.pop_front();
  }
}

void StepTracker::FinishWindow() {
  for (auto& [pid, p] : processes_) {
    p.last_window.reset();
    if (p.window.steps > 0) {
      p.last_window = p.window;
    }
    p.window = WindowSums{};
  }
}

void StepTracker::EmitMetrics(model::SampleSink& out) const {
  namespace m = training_metrics;
  for (const auto& [pid, p] : processes_) {
    if (p.total_steps == 0) {
      continue;
    }
    out.AddEntity(model::MakeProcessEntity(p.info));
    const model::Labels labels{{"job", p.job}, {"rank", p.rank}};
    out.AddValue(m::kSteps, p.entity, labels, static_cast<double>(p.total_steps));
    out.AddValue(m::kLastStep, p.entity, labels, static_cast<double>(*p.last_step));
    if (!p.last_window || p.last_window->duration_ns <= 0) {
      continue;
    }
    const WindowSums& w = *p.last_window;
    out.AddValue(m::kStepDuration, p.entity, labels,
                 w.duration_ns / 1e9 / static_cast<double>(w.steps));
    out.AddValue(m::kCommShare, p.entity, labels, w.comm_ns / w.duration_ns);
    if (w.known_ns > 0) {
      out.AddValue(m::kComputeShare, p.entity, labels, w.compute_ns / w.known_ns);
      out.AddValue(m::kIdleShare, p.entity, labels,
                   std::max(0.0, (w.known_ns - w.compute_ns - w.known_comm_ns) / w.known_ns));
    }
  }
}

}  // namespace warpscope::agent::cuda_profiler

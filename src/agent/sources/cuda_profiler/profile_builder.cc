// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/cuda_profiler/profile_builder.h"

#include "agent/sources/cuda_profiler/cuda_profiler_metrics.h"
#include "agent/sources/cuda_profiler/process_window.h"
#include "base/logging.h"
#include "model/process.h"

namespace warpscope::agent::cuda_profiler {

ProfileBuilder::ProfileBuilder(profiling::Symbolizer* symbolizer, Options options)
    : symbolizer_(symbolizer),
      options_(std::move(options)),
      kernel_names_(std::make_unique<KernelNames>()) {}

ProfileBuilder::~ProfileBuilder() = default;

ProcessState& ProfileBuilder::State(int32_t pid) {
  auto& slot = processes_[pid];
  if (slot == nullptr) {
    slot = std::make_unique<ProcessState>();
    slot->desc.pid = pid;
  }
  return *slot;
}

void ProfileBuilder::AddProcess(const ProcessDesc& process) {
  ProcessState& state = State(process.pid);
  state.desc = process;
}

void ProfileBuilder::AddStack(int32_t pid, InternedStack stack) {
  ProcessState& state = State(pid);
  if (state.stacks.size() >= options_.max_stacks_per_process &&
      !state.stacks.contains(stack.hash)) {
    // A process that keeps producing new stacks (JIT, recursion) must not grow the agent
    // without bound; its later kernels read "[stack not received]".
    WARPSCOPE_LOG_FIRST_N(WARNING, 1,
                          "pid {}: more than {} distinct launch stacks; dropping new ones", pid,
                          options_.max_stacks_per_process);
    return;
  }
  uint64_t hash = stack.hash;
  state.stacks[hash] = ProcessState::Stack{std::move(stack), false, {}};
}

void ProfileBuilder::AddKernel(int32_t pid, KernelActivity kernel) {
  ProcessState& state = State(pid);
  if (options_.aggregate_mode == AggregateMode::kDisjoint) {
    runtime_[pid].AddKernel(kernel);  // kTotals: the aggregates count it already
  }
  state.kernels.push_back(std::move(kernel));
}

void ProfileBuilder::AddKernelAggregate(int32_t pid, const KernelAggregate& aggregate) {
  State(pid).aggregates.push_back(aggregate);
  runtime_[pid].AddKernelAggregate(aggregate);
}

void ProfileBuilder::AddPcSample(int32_t pid, const PcSample& sample) {
  State(pid).pc_samples.push_back(sample);
}

void ProfileBuilder::AddMemoryActivity(int32_t pid, MemoryActivity activity) {
  ProcessState& state = State(pid);
  runtime_[pid].AddMemory(activity);
  state.memory.push_back(std::move(activity));
}

void ProfileBuilder::UpdateDeviceMemory(int32_t pid, std::vector<DeviceMemoryTotals> totals) {
  State(pid);
  runtime_[pid].UpdateDeviceMemory(std::move(totals));
}

void ProfileBuilder::AddNvtxRange(int32_t pid, NvtxRange range) {
  ProcessState& state = State(pid);
  ++stats_.nvtx_ranges;
  if (options_.formats.any_trace()) {
    if (state.nvtx_undrawn.size() < options_.max_trace_kernels) {
      state.nvtx_undrawn.push_back(range);
    } else {
      ++stats_.trace_events_dropped;
    }
  }
  if (options_.max_nvtx_ranges_per_process == 0) {
    return;
  }
  while (state.nvtx_history.size() >= options_.max_nvtx_ranges_per_process) {
    state.nvtx_history.pop_front();
    ++stats_.nvtx_ranges_evicted;
  }
  state.nvtx_history.push_back(std::move(range));
}

void ProfileBuilder::AddSass(const profiling::SassMap& sass) {
  for (const auto& [key, text] : sass) {
    sass_[key] = text;
  }
}

void ProfileBuilder::UpdateCounters(int32_t pid, const ProcessCounters& counters) {
  State(pid).counters = counters;
}

void ProfileBuilder::ForgetProcess(int32_t pid) {
  processes_.erase(pid);
  runtime_.erase(pid);
  if (symbolizer_ != nullptr) {
    symbolizer_->ForgetProcess(pid);
  }
}

std::vector<profiling::WindowProfile> ProfileBuilder::FinishWindow(int64_t start_ns,
                                                                   int64_t end_ns) {
  ++stats_.windows;
  for (auto& [pid, runtime] : runtime_) {
    runtime.FinishWindow(start_ns, end_ns);
  }
  std::vector<profiling::WindowProfile> out;
  for (auto& [pid, state_ptr] : processes_) {
    ProcessState& state = *state_ptr;
    // The overhead estimate covers every known process, also idle ones.
    if (end_ns > start_ns) {
      uint64_t spent = state.counters.overhead_ns >= state.overhead_ns_at_window_start
                           ? state.counters.overhead_ns - state.overhead_ns_at_window_start
                           : 0;
      state.overhead_ratio = static_cast<double>(spent) / static_cast<double>(end_ns - start_ns);
    }
    state.overhead_ns_at_window_start = state.counters.overhead_ns;
    // Ranges that ended long before this window can no longer contain a launch of a kernel
    // still to come.
    std::erase_if(state.nvtx_history, [&](const NvtxRange& r) {
      return r.end_ns < start_ns - options_.nvtx_history_ns;
    });
    if (!state.HasWindowData()) {
      continue;
    }
    ProcessWindow window(pid, state, options_, symbolizer_, *kernel_names_, sass_, stats_);
    out.push_back(window.Build(start_ns, end_ns));
    state.ClearWindow();
  }
  return out;
}

void ProfileBuilder::EmitSelfMetrics(model::SampleSink& sink) const {
  for (const auto& [pid, state_ptr] : processes_) {
    const ProcessState& state = *state_ptr;
    model::ProcessInfo info;
    info.pid = pid;
    info.container_pid = pid;
    info.start_ticks = state.desc.start_ticks;
    info.executable = state.desc.executable.substr(state.desc.executable.rfind('/') + 1);
    info.executable_path = state.desc.executable;
    model::Entity entity = model::MakeProcessEntity(info);
    sink.AddEntity(entity);
    const ProcessCounters& c = state.counters;
    sink.AddValue(cuda_profiler_metrics::kLaunchesSeen, entity.id,
                  static_cast<double>(c.launches_seen));
    sink.AddValue(cuda_profiler_metrics::kLaunchesAdmitted, entity.id,
                  static_cast<double>(c.launches_admitted));
    sink.AddValue(cuda_profiler_metrics::kLaunchesDropped, entity.id,
                  static_cast<double>(c.launches_dropped));
    sink.AddValue(cuda_profiler_metrics::kRecordsLost, entity.id,
                  static_cast<double>(c.records_lost));
    sink.AddValue(cuda_profiler_metrics::kOverheadTime, entity.id,
                  static_cast<double>(c.overhead_ns) / 1e9);
    if (state.overhead_ratio) {
      sink.AddValue(cuda_profiler_metrics::kOverheadRatio, entity.id, *state.overhead_ratio);
    }
    sink.AddValue(cuda_profiler_metrics::kKernelsProfiled, entity.id,
                  static_cast<double>(state.kernels_profiled));
    sink.AddValue(cuda_profiler_metrics::kUnresolvedFrames, entity.id,
                  static_cast<double>(state.unresolved_frames));
    sink.AddValue(cuda_profiler_metrics::kPythonFramesSkipped, entity.id,
                  static_cast<double>(c.python_frames_skipped));
    if (auto runtime = runtime_.find(pid); runtime != runtime_.end()) {
      runtime->second.Emit(sink, entity.id);
    }
  }
}

}  // namespace warpscope::agent::cuda_profiler

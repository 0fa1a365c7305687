// SPDX-License-Identifier: Apache-2.0
// Training steps per process (docs/design/training.md, "Steps in the agent"): cuts each rank's
// steps and breaks each one down into compute, communication, overlap and idle GPU time, as
// model::TrainingStep (proto TrainingStep, proto/warpscope/v1/batch.proto, defines the fields).
//
// Inputs, per pid, from the listener: the process (at either library's Hello, with the
// WARPSCOPE_STEP_RANGE value of its environment), its NCCL communicators and completed
// operations (the NCCL plugin's connection), its kernels and NVTX ranges (the CUDA library's).
// Steps come
//   - from NVTX ("nvtx"): ranges named ProfilerStep#N (step N), or named exactly as the process's
//     WARPSCOPE_STEP_RANGE (steps counted from 0 in order). Once a process sent one, its steps
//     come from NVTX only;
//   - else from the periodicity of the collectives ("collectives", step_pattern.h) of the
//     process's communicator with the most bus bytes. Step k runs from the enqueue of its first
//     operation to the enqueue of the first operation of step k+1.
// A step is emitted once, by Collect(), when it has ended and its data is in: `grace_ns` after
// its end, or (collectives, a process without kernel records) as soon as the step after it has
// ended too. Steps that start before the end of the last emitted step are never emitted.
//
// Memory is bounded per process: the last `max_ops` NCCL operations (all communicators), the last
// `max_history` collectives per communicator for the pattern search, the last `max_kernels`
// kernel intervals and `max_ranges` step ranges waiting; the oldest go first (counted in
// stats()). At most `max_processes` processes; ForgetProcess drops one
// (returning the steps that ended).
//
// Thread contract: not thread-safe; owned by the listener thread.
#ifndef WARPSCOPE_AGENT_SOURCES_CUDA_PROFILER_STEP_TRACKER_H_
#define WARPSCOPE_AGENT_SOURCES_CUDA_PROFILER_STEP_TRACKER_H_

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/sources/cuda_profiler/step_pattern.h"
#include "cupti/wire.h"
#include "model/frame.h"
#include "model/process.h"
#include "model/sample_sink.h"

namespace warpscope::agent::cuda_profiler {

class StepTracker {
 public:
  struct Options {
    size_t max_processes = 4096;
    size_t max_ops = 8192;        // NCCL operations per process, every communicator
    size_t max_history = 1024;    // collectives per communicator for the pattern search
    size_t max_period = 256;      // longest step, in collectives
    size_t max_kernels = 65536;   // kernel intervals per process
    size_t max_ranges = 1024;     // step ranges per process waiting to be emitted
    int64_t grace_ns = 2'000'000'000;  // data of a step may arrive this late after its end
  };
  struct Stats {
    uint64_t ops_dropped = 0;      // over max_ops or max_history, before their step was cut
    uint64_t kernels_dropped = 0;  // over max_kernels
    uint64_t ranges_dropped = 0;   // over max_ranges
    uint64_t processes_refused = 0;
    uint64_t pattern_changes = 0;  // a communicator's pattern was found anew, different
  };

  explicit StepTracker(Options options) : options_(options) {}

  // A process announced itself; `step_range` is its WARPSCOPE_STEP_RANGE ("" when unset). A known
  // pid keeps its state and takes the new description.
  void AddProcess(const model::ProcessInfo& process, std::string step_range);
  void AddComm(int32_t pid, const ::warpscope::cupti::wire::NcclComm& comm);
  void AddCollective(int32_t pid, const ::warpscope::cupti::wire::NcclCollective& op);
  // A kernel of the CUDA library's connection; NCCL's kernels are those whose name starts
  // with "nccl".
  void AddKernel(int32_t pid, std::string_view name, int64_t start_ns, int64_t end_ns);
  void AddNvtxRange(int32_t pid, std::string_view name, int64_t start_ns, int64_t end_ns);
  // Drops a process whose connections have all closed. Nothing more arrives for it, so every
  // step of it that has ended is complete: those not emitted yet are returned (as Collect would
  // return them after the grace period), ordered by step.
  [[nodiscard]] std::vector<model::TrainingStep> ForgetProcess(int32_t pid);

  // The steps complete as of `now_ns` (CLOCK_REALTIME, the wire's clock), each once, ordered by
  // process and step.
  std::vector<model::TrainingStep> Collect(int64_t now_ns);

  // Closes a metrics window: the steps Collect returned since the last call become the window's
  // gauges (training_metrics.h) that EmitMetrics writes until the next window.
  void FinishWindow();
  void EmitMetrics(model::SampleSink& out) const;

  bool HasProcess(int32_t pid) const { return processes_.contains(pid); }
  const Stats& stats() const { return stats_; }

 private:
  struct Op {
    uint64_t comm_id = 0;
    uint32_t rank = 0;
    int64_t enqueue_ns = 0;
    int64_t start_ns = 0;  // GPU start, else enqueue
    int64_t end_ns = 0;    // GPU end, else completion (else enqueued)
    int64_t exec_ns = 0;   // wire::NcclExecNs
    uint64_t bus_bytes = 0;
  };
  struct Kernel {
    int64_t start_ns = 0;
    int64_t end_ns = 0;
    bool nccl = false;
  };
  struct Comm {
    ::warpscope::cupti::wire::NcclComm desc;
    bool described = false;
    uint64_t bus_bytes = 0;
    std::deque<OpSignature> history;  // collectives, enqueue order
    bool history_changed = false;
    std::optional<StepPattern> pattern;
    int64_t base = 0;  // added to the pattern's step numbers (continuity after a change)
  };
  struct Range {
    int64_t step = 0;
    int64_t start_ns = 0;
    int64_t end_ns = 0;
  };
  struct WindowSums {
    uint64_t steps = 0;
    double duration_ns = 0;
    double compute_ns = 0;  // over the steps whose compute is known
    double known_ns = 0;    // their duration
    double known_comm_ns = 0;
    double comm_ns = 0;
  };
  struct Process {
    model::ProcessInfo info;
    std::string entity;
    std::string step_range;
    std::map<std::pair<uint64_t, uint32_t>, Comm> comms;  // (comm_id, rank)
    std::deque<Op> ops;                                   // enqueue order
    std::deque<Kernel> kernels;                           // start order
    bool has_kernels = false;
    std::deque<Range> ranges;  // step ranges not yet emitted, start order
    bool nvtx = false;         // a step range was seen: steps come from NVTX
    int64_t next_counted = 0;  // the next WARPSCOPE_STEP_RANGE step number
    std::optional<int64_t> last_step;
    int64_t last_end_ns = 0;  // end of the last emitted step
    uint64_t total_steps = 0;
    std::string job;   // the last step's, for the metrics' labels
    std::string rank;
    WindowSums window;
    std::optional<WindowSums> last_window;
  };

  Process* Find(int32_t pid);
  Comm* StepComm(Process& p);
  void CollectProcess(Process& p, int64_t now_ns, std::vector<model::TrainingStep>& out);
  void CollectRanges(Process& p, int64_t now_ns, std::vector<model::TrainingStep>& out);
  void CollectPattern(Process& p, Comm& comm, int64_t now_ns,
                      std::vector<model::TrainingStep>& out);
  void Redetect(Process& p, Comm& comm);
  model::TrainingStep MakeStep(const Process& p, const Comm* comm, int64_t step, int64_t start_ns,
                               int64_t end_ns, std::string_view source) const;
  void Emit(Process& p, model::TrainingStep step, std::vector<model::TrainingStep>& out);
  void Trim(Process& p);

  Options options_;
  std::map<int32_t, Process> processes_;
  Stats stats_;
};

// The step number of an NVTX range's name: N of "ProfilerStep#N" (digits, then the end or a
// non-digit), else nullopt.
std::optional<int64_t> ProfilerStepNumber(std::string_view name);

// The total length of the union of `intervals` ([start, end) pairs) clipped to [from, to).
int64_t UnionLength(std::vector<std::pair<int64_t, int64_t>> intervals, int64_t from, int64_t to);

}  // namespace warpscope::agent::cuda_profiler

#endif  // WARPSCOPE_AGENT_SOURCES_CUDA_PROFILER_STEP_TRACKER_H_

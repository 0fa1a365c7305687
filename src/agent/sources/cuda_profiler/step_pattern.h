// SPDX-License-Identifier: Apache-2.0
// Training steps from the periodicity of one communicator's collectives (docs/design/training.md,
// "Steps in the agent"): a pure function over the communicator's recent operations, in enqueue
// order.
//
// The pattern: the smallest period p (in operations) of the sequence of signatures (func, count,
// datatype) over the longest periodic run at the end of the history (warm-up operations before it
// are left out); p is kept when the run holds at least three periods and at least half as many
// operations as the longest periodic run of any period. The phase (which operation begins a step)
// is the position in the period whose enqueue is preceded by the largest mean gap since the
// enqueue before it: the compute phase (forward, the first backward layers, the optimizer) sits
// between the last collective of one step and the first of the next. When the period's gaps show
// no clear boundary, a multiple m*p whose gaps do (its largest mean gap at least 3x the second) is
// the step: DDP with k buckets of equal size repeats one signature k times a step.
//
// Step numbers come from the operations' identities only, so ranks on different hosts agree
// without talking: NCCL numbers collectives per communicator and func (seq_number), so per func f
// with n_f operations per step and offset o_f (the seq of f's first operation of a step, mod n_f),
// an operation's step is floor((seq - o_f) / n_f). The phase is the one input taken from timing.
#ifndef WARPSCOPE_AGENT_SOURCES_CUDA_PROFILER_STEP_PATTERN_H_
#define WARPSCOPE_AGENT_SOURCES_CUDA_PROFILER_STEP_PATTERN_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace warpscope::agent::cuda_profiler {

// One collective of a communicator, as the pattern search sees it.
struct OpSignature {
  std::string func;
  uint64_t count = 0;
  std::string datatype;
  uint64_t seq = 0;  // NCCL's seq_number: per communicator and func
  int64_t enqueue_ns = 0;
};

struct StepPattern {
  struct Func {
    std::string func;
    uint64_t per_step = 0;  // operations of this func in one step
    uint64_t offset = 0;    // seq of its first operation in a step, mod per_step
    friend bool operator==(const Func&, const Func&) = default;
  };
  size_t period = 0;          // operations per step
  size_t run_start = 0;       // index of the first operation of the periodic run
  size_t first_boundary = 0;  // index (>= run_start) of an operation that begins a step
  std::vector<Func> funcs;    // sorted by func

  // The step of a collective, or nullopt when its func is not in the pattern or its seq is below
  // the func's first step.
  std::optional<int64_t> StepOf(const std::string& func, uint64_t seq) const;
  // The same steps (period, funcs and offsets), wherever the run starts.
  bool SameSteps(const StepPattern& other) const {
    return period == other.period && funcs == other.funcs;
  }
};

// The step pattern of `ops` (enqueue order), or nullopt when there is none: fewer than three
// repetitions of any period up to `max_period`, or seq numbers that do not advance by one per
// func within the run.
std::optional<StepPattern> FindStepPattern(std::span<const OpSignature> ops, size_t max_period);

}  // namespace warpscope::agent::cuda_profiler

#endif  // WARPSCOPE_AGENT_SOURCES_CUDA_PROFILER_STEP_PATTERN_H_

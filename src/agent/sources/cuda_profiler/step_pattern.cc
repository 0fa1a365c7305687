// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/cuda_profiler/step_pattern.h"

#include <algorithm>
#include <map>

namespace warpscope::agent::cuda_profiler {
namespace {

bool SameSignature(const OpSignature& a, const OpSignature& b) {
  return a.func == b.func && a.count == b.count && a.datatype == b.datatype;
}

// The length of the longest run at the end of `ops` that is periodic with period p.
size_t PeriodicRun(std::span<const OpSignature> ops, size_t p) {
  size_t matches = 0;
  for (size_t i = ops.size() - 1; i >= p && SameSignature(ops[i], ops[i - p]); --i) {
    ++matches;
  }
  return matches + p;
}

// Within the run, every func's seq advances by one from one operation to its next.
bool SeqsAdvance(std::span<const OpSignature> run) {
  std::map<std::string_view, uint64_t> last;
  for (const OpSignature& op : run) {
    auto [it, fresh] = last.emplace(op.func, op.seq);
    if (!fresh) {
      if (op.seq != it->second + 1) {
        return false;
      }
      it->second = op.seq;
    }
  }
  return true;
}

// The phase of a step of `period` operations in the run: the position with the largest mean gap
// between an operation's enqueue and the one before. `dominant` tells whether that mean is at
// least 3x every other position's.
size_t Phase(std::span<const OpSignature> run, size_t period, bool* dominant) {
  std::vector<double> sum(period, 0);
  std::vector<uint64_t> n(period, 0);
  for (size_t i = 1; i < run.size(); ++i) {
    const int64_t gap = std::max<int64_t>(0, run[i].enqueue_ns - run[i - 1].enqueue_ns);
    sum[i % period] += static_cast<double>(gap);
    ++n[i % period];
  }
  size_t best = 0;
  double best_mean = -1;
  double second = 0;
  for (size_t r = 0; r < period; ++r) {
    const double mean = n[r] == 0 ? 0 : sum[r] / static_cast<double>(n[r]);
    if (mean > best_mean) {
      second = std::max(second, best_mean);
      best_mean = mean;
      best = r;
    } else {
      second = std::max(second, mean);
    }
  }
  *dominant = period > 1 && best_mean > 0 && best_mean >= 3 * second;
  return best;
}

}  // namespace

std::optional<int64_t> StepPattern::StepOf(const std::string& func, uint64_t seq) const {
  for (const Func& f : funcs) {
    if (f.func == func) {
      if (seq < f.offset || f.per_step == 0) {
        return std::nullopt;
      }
      return static_cast<int64_t>((seq - f.offset) / f.per_step);
    }
  }
  return std::nullopt;
}

std::optional<StepPattern> FindStepPattern(std::span<const OpSignature> ops, size_t max_period) {
  const size_t n = ops.size();
  if (n < 3) {
    return std::nullopt;
  }
  const size_t top = std::min(max_period, n / 3);
  std::vector<size_t> runs(top + 1, 0);
  size_t longest = 0;
  for (size_t p = 1; p <= top; ++p) {
    runs[p] = PeriodicRun(ops, p);
    longest = std::max(longest, runs[p]);
  }
  size_t period = 0;
  for (size_t p = 1; p <= top; ++p) {
    if (runs[p] >= 3 * p && 2 * runs[p] >= longest) {
      period = p;
      break;
    }
  }
  if (period == 0) {
    return std::nullopt;
  }
  StepPattern pattern;
  pattern.run_start = n - runs[period];
  const std::span<const OpSignature> run = ops.subspan(pattern.run_start);
  if (!SeqsAdvance(run)) {
    return std::nullopt;
  }
  // A step of m periods when the period's own gaps show no boundary and a multiple's do.
  bool dominant = false;
  size_t phase = Phase(run, period, &dominant);
  size_t step_ops = period;
  for (size_t m = 2; !dominant && m <= 64 && 3 * m * period <= run.size(); ++m) {
    bool multiple_dominant = false;
    const size_t multiple_phase = Phase(run, m * period, &multiple_dominant);
    if (multiple_dominant) {
      dominant = true;
      phase = multiple_phase;
      step_ops = m * period;
    }
  }
  pattern.period = step_ops;
  pattern.first_boundary = pattern.run_start + phase;
  std::map<std::string, StepPattern::Func> funcs;
  for (size_t i = pattern.first_boundary; i < pattern.first_boundary + step_ops; ++i) {
    auto [it, fresh] = funcs.try_emplace(ops[i].func);
    if (fresh) {
      it->second.func = ops[i].func;
      it->second.offset = ops[i].seq;
    }
    ++it->second.per_step;
  }
  for (auto& [name, f] : funcs) {
    f.offset %= f.per_step;
    pattern.funcs.push_back(f);
  }
  return pattern;
}

}  // namespace warpscope::agent::cuda_profiler

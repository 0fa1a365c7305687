// SPDX-License-Identifier: Apache-2.0
#include "server/training/job_analysis.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

namespace warpscope::server::training {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kNsPerS = 1e9;

// The median of the finite values; NaN when there are none.
double Median(std::vector<double> values) {
  std::erase_if(values, [](double v) { return !std::isfinite(v); });
  if (values.empty()) return kNaN;
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<ptrdiff_t>(mid), values.end());
  double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  double lower = *std::max_element(values.begin(), values.begin() + static_cast<ptrdiff_t>(mid));
  return (lower + upper) / 2;
}

double Mean(const std::vector<double>& values) {
  double sum = 0;
  size_t n = 0;
  for (double v : values) {
    if (std::isfinite(v)) sum += v, ++n;
  }
  return n == 0 ? kNaN : sum / static_cast<double>(n);
}

double Seconds(int64_t ns) { return static_cast<double>(ns) / kNsPerS; }

double DurationS(const model::TrainingStep& s) {
  return std::max(0.0, Seconds((s.end - s.start).count()));
}

// The steps of one job, aligned: cells[step][rank index] is that rank's record of the step.
struct Aligned {
  std::vector<uint32_t> ranks;  // sorted
  std::map<int64_t, std::vector<const StoredStep*>> cells;
};

Aligned Align(std::string_view job, std::span<const StoredStep> steps) {
  Aligned out;
  for (const StoredStep& s : steps) {
    if (s.step.job == job) out.ranks.push_back(s.step.rank);
  }
  std::sort(out.ranks.begin(), out.ranks.end());
  out.ranks.erase(std::unique(out.ranks.begin(), out.ranks.end()), out.ranks.end());
  for (const StoredStep& s : steps) {
    if (s.step.job != job) continue;
    const size_t r = static_cast<size_t>(
        std::lower_bound(out.ranks.begin(), out.ranks.end(), s.step.rank) - out.ranks.begin());
    std::vector<const StoredStep*>& row = out.cells[s.step.step];
    row.resize(out.ranks.size(), nullptr);
    // A step a rank reported twice (a re-sent window): the record that ended last.
    if (!row[r] || row[r]->step.end <= s.step.end) row[r] = &s;
  }
  return out;
}

bool Complete(const std::vector<const StoredStep*>& row, size_t world_size) {
  size_t n = 0;
  for (const StoredStep* s : row) n += s != nullptr;
  return n >= world_size && n == row.size();
}

// The rank index that started the step's last large collective last, with the offsets'
// median; nullopt when fewer than two ranks had one.
struct Lateness {
  size_t last = 0;
  double last_offset_s = 0;
  double median_offset_s = 0;
  double max_offset_s = 0;
};
std::optional<Lateness> LatenessOf(const std::vector<const StoredStep*>& row) {
  std::vector<double> offsets;
  Lateness out;
  double best = -1;
  for (size_t i = 0; i < row.size(); ++i) {
    if (!row[i] || row[i]->step.last_collective_offset_ns < 0) continue;
    const double o = Seconds(row[i]->step.last_collective_offset_ns);
    offsets.push_back(o);
    // Ties go to the lower rank, so the verdict is deterministic.
    if (o > best) best = o, out.last = i;
  }
  if (offsets.size() < 2) return std::nullopt;
  out.last_offset_s = best;
  out.max_offset_s = best;
  out.median_offset_s = Median(offsets);
  return out;
}

void Summarize(const Aligned& aligned, JobAnalysis& out) {
  for (size_t r = 0; r < aligned.ranks.size(); ++r) {
    RankSummary& rank = out.ranks[r];
    std::vector<double> durations;
    std::vector<double> offsets;
    double total_s = 0, known_s = 0, compute_s = 0, comm_s = 0, overlap_s = 0, nccl_s = 0;
    base::TimePoint newest = base::TimePoint::min();
    for (const auto& [number, row] : aligned.cells) {
      const StoredStep* s = row[r];
      if (!s) continue;
      if (s->step.end >= newest) {
        newest = s->step.end;
        rank.host = s->host;
        rank.entity = s->step.entity;
      }
      const double d = DurationS(s->step);
      durations.push_back(d);
      total_s += d;
      nccl_s += Seconds(s->step.nccl_ns);
      if (s->step.last_collective_offset_ns >= 0) {
        offsets.push_back(Seconds(s->step.last_collective_offset_ns));
      }
      if (s->step.compute_ns >= 0) {
        known_s += d;
        compute_s += Seconds(s->step.compute_ns);
        comm_s += Seconds(s->step.comm_ns);
        overlap_s += Seconds(s->step.overlap_ns);
      }
    }
    rank.steps = durations.size();
    rank.step_time_mean_s = Mean(durations);
    rank.step_time_p50_s = Median(durations);
    rank.nccl_time_mean_s = rank.steps ? nccl_s / static_cast<double>(rank.steps) : kNaN;
    rank.last_collective_offset_mean_s = Mean(offsets);
    if (known_s > 0) {
      rank.compute_share = compute_s / known_s;
      rank.comm_share = comm_s / known_s;
      rank.overlap_share = overlap_s / known_s;
      rank.idle_share = std::max(0.0, 1 - rank.compute_share - rank.comm_share);
    } else {
      rank.compute_share = rank.overlap_share = rank.idle_share = kNaN;
      rank.comm_share = total_s > 0 ? nccl_s / total_s : kNaN;
    }
  }
  std::vector<double> compute, comm, overlap, idle;
  for (const RankSummary& r : out.ranks) {
    compute.push_back(r.compute_share);
    comm.push_back(r.comm_share);
    overlap.push_back(r.overlap_share);
    idle.push_back(r.idle_share);
  }
  out.compute_share = Mean(compute);
  out.comm_share = Mean(comm);
  out.overlap_share = Mean(overlap);
  out.idle_share = Mean(idle);
}

// Lateness and compute excess per rank over the complete steps; the straggler, if any.
void FindStraggler(const Aligned& aligned,
                   const std::vector<const std::vector<const StoredStep*>*>& complete,
                   const AnalysisOptions& options, JobAnalysis& out) {
  const size_t n = aligned.ranks.size();
  std::vector<size_t> last_count(n, 0);
  std::vector<std::vector<double>> lag(n);     // offset - the median rank's, per judged step
  std::vector<std::vector<double>> excess(n);  // compute - the median compute, per judged step
  size_t judged = 0, compute_judged = 0;
  for (const auto* row : complete) {
    if (std::optional<Lateness> late = LatenessOf(*row)) {
      ++judged;
      ++last_count[late->last];
      for (size_t r = 0; r < n; ++r) {
        if ((*row)[r]->step.last_collective_offset_ns >= 0) {
          lag[r].push_back(Seconds((*row)[r]->step.last_collective_offset_ns) -
                           late->median_offset_s);
        }
      }
    }
    std::vector<double> compute;
    for (const StoredStep* s : *row) {
      if (s->step.compute_ns >= 0) compute.push_back(Seconds(s->step.compute_ns));
    }
    if (compute.size() != n || n < 2) continue;
    ++compute_judged;
    const double median = Median(compute);
    for (size_t r = 0; r < n; ++r) excess[r].push_back(compute[r] - median);
  }
  const double step_s = out.step_time_p50_s;
  for (size_t r = 0; r < n; ++r) {
    out.ranks[r].late_fraction =
        judged ? static_cast<double>(last_count[r]) / static_cast<double>(judged) : 0;
    out.ranks[r].compute_excess_s = Mean(excess[r]);
  }
  if (n < 2 || complete.size() < options.min_steps || !std::isfinite(step_s) || step_s <= 0) {
    return;
  }
  // By lateness: the rank last most often (ties: the lower rank).
  size_t best = 0;
  for (size_t r = 1; r < n; ++r) {
    if (last_count[r] > last_count[best]) best = r;
  }
  const double late_fraction = out.ranks[best].late_fraction;
  const double lag_s = Median(lag[best]);
  if (judged >= options.min_steps && late_fraction > options.late_fraction &&
      std::isfinite(lag_s) && lag_s >= options.min_lag_fraction * step_s) {
    out.straggler = Straggler{.rank = aligned.ranks[best],
                              .reason = "late_collective",
                              .late_fraction = late_fraction,
                              .lag_s = lag_s};
  } else if (compute_judged >= options.min_steps) {
    // By compute: the rank whose compute exceeds the median by the threshold most often.
    std::vector<size_t> long_count(n, 0);
    for (size_t r = 0; r < n; ++r) {
      for (double e : excess[r]) long_count[r] += e > options.compute_excess * step_s;
    }
    best = 0;
    for (size_t r = 1; r < n; ++r) {
      if (long_count[r] > long_count[best]) best = r;
    }
    const double fraction =
        static_cast<double>(long_count[best]) / static_cast<double>(compute_judged);
    if (fraction > options.late_fraction) {
      out.straggler = Straggler{.rank = aligned.ranks[best],
                                .reason = "long_compute",
                                .late_fraction = fraction,
                                .lag_s = Median(excess[best])};
    }
  }
  if (!out.straggler) return;
  RankSummary& rank = out.ranks[best];
  rank.straggler = true;
  out.straggler->host = rank.host;
  out.straggler->entity = rank.entity;
  out.straggler->step_share = out.straggler->lag_s / step_s;
  out.straggler->gpu_hours_lost = out.straggler->lag_s * static_cast<double>(complete.size()) *
                                  static_cast<double>(out.world_size) / 3600;
}

// A rank whose NCCL time, less the time it waited for the last rank to start the last
// collective, is at least (1 + nccl_excess) x the median rank's in most complete steps.
void FindSlowInterconnect(const Aligned& aligned,
                          const std::vector<const std::vector<const StoredStep*>*>& complete,
                          const AnalysisOptions& options, JobAnalysis& out) {
  const size_t n = aligned.ranks.size();
  if (n < 2 || complete.size() < options.min_steps) return;
  std::vector<size_t> slow(n, 0);
  size_t judged = 0;
  for (const auto* row : complete) {
    std::optional<Lateness> late = LatenessOf(*row);
    std::vector<double> own(n);
    for (size_t r = 0; r < n; ++r) {
      const model::TrainingStep& s = (*row)[r]->step;
      double wait = 0;
      if (late && s.last_collective_offset_ns >= 0) {
        wait = late->max_offset_s - Seconds(s.last_collective_offset_ns);
      }
      own[r] = std::max(0.0, Seconds(s.nccl_ns) - wait);
    }
    const double median = Median(own);
    if (!(median > 0)) continue;
    ++judged;
    for (size_t r = 0; r < n; ++r) slow[r] += own[r] >= (1 + options.nccl_excess) * median;
  }
  if (judged < options.min_steps) return;
  for (size_t r = 0; r < n; ++r) {
    if (static_cast<double>(slow[r]) / static_cast<double>(judged) > options.late_fraction) {
      out.ranks[r].slow_interconnect = true;
      out.slow_interconnect_ranks.push_back(aligned.ranks[r]);
    }
  }
}

StepRow RowOf(int64_t number, const std::vector<const StoredStep*>& row) {
  StepRow out;
  out.step = number;
  out.start = base::TimePoint::max();
  for (const StoredStep* s : row) {
    if (!s) {
      out.duration_s.push_back(kNaN);
      continue;
    }
    out.start = std::min(out.start, s->step.start);
    out.duration_s.push_back(DurationS(s->step));
    out.max_s = std::max(out.max_s, out.duration_s.back());
  }
  return out;
}

// Complete steps longer than slow_step_factor x the median of the trailing_steps complete steps
// before them (at least min_steps of them).
void FindSlowSteps(const std::vector<StepRow>& rows, const AnalysisOptions& options,
                   JobAnalysis& out) {
  std::vector<double> trailing;
  for (const StepRow& row : rows) {
    if (trailing.size() >= std::max<size_t>(options.min_steps, 1)) {
      const double median = Median(trailing);
      if (median > 0 && row.max_s > options.slow_step_factor * median) {
        out.slow_steps.push_back(SlowStep{.step = row.step,
                                          .start = row.start,
                                          .duration_s = row.max_s,
                                          .trailing_median_s = median,
                                          .stall = row.max_s >= options.stall_factor * median});
      }
    }
    trailing.push_back(row.max_s);
    if (trailing.size() > std::max<size_t>(options.trailing_steps, 1)) {
      trailing.erase(trailing.begin());
    }
  }
}

}  // namespace

JobAnalysis AnalyzeJob(std::string_view job, std::span<const StoredStep> steps,
                       const AnalysisOptions& options) {
  JobAnalysis out;
  out.job = std::string(job);
  out.step_time_p50_s = kNaN;
  Aligned aligned = Align(job, steps);
  if (aligned.ranks.empty()) return out;

  base::TimePoint first = base::TimePoint::max(), last = base::TimePoint::min();
  for (const StoredStep& s : steps) {
    if (s.step.job != job) continue;
    out.world_size = std::max(out.world_size, s.step.world_size);
    first = std::min(first, s.step.start);
    last = std::max(last, s.step.end);
    out.hosts.push_back(s.host);
  }
  std::sort(out.hosts.begin(), out.hosts.end());
  out.hosts.erase(std::unique(out.hosts.begin(), out.hosts.end()), out.hosts.end());
  if (out.world_size == 0) out.world_size = static_cast<uint32_t>(aligned.ranks.size());
  out.gpu_hours =
      static_cast<double>(out.world_size) * std::max(0.0, Seconds((last - first).count())) / 3600;

  out.ranks.resize(aligned.ranks.size());
  for (size_t r = 0; r < aligned.ranks.size(); ++r) out.ranks[r].rank = aligned.ranks[r];
  Summarize(aligned, out);

  std::vector<const std::vector<const StoredStep*>*> complete;
  std::vector<StepRow> complete_rows;
  std::vector<double> step_times;
  for (const auto& [number, row] : aligned.cells) {
    if (!Complete(row, out.world_size)) continue;
    complete.push_back(&row);
    complete_rows.push_back(RowOf(number, row));
    step_times.push_back(complete_rows.back().max_s);
  }
  out.complete_steps = complete.size();
  out.step_time_p50_s = Median(step_times);
  FindStraggler(aligned, complete, options, out);
  FindSlowInterconnect(aligned, complete, options, out);
  FindSlowSteps(complete_rows, options, out);

  size_t skip =
      aligned.cells.size() > options.max_steps ? aligned.cells.size() - options.max_steps : 0;
  for (const auto& [number, row] : aligned.cells) {
    if (skip > 0) {
      --skip;
      continue;
    }
    StepRow step = RowOf(number, row);
    if (std::optional<Lateness> late = LatenessOf(row)) step.last_rank = aligned.ranks[late->last];
    out.steps.push_back(std::move(step));
  }
  return out;
}

}  // namespace warpscope::server::training

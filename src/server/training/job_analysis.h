// SPDX-License-Identifier: Apache-2.0
// Where a training job's time goes, per rank and per step, and which rank holds the others
// back: the analysis behind the Jobs view (/api/v1/jobs/{id}) and insight rules 9-11
// (docs/design/training-analysis.md).
//
// Input: the stored steps of one job (every rank, every host), as the agents' step tracker cut
// them (proto TrainingStep). Steps are aligned across ranks by their number; a step is complete
// when every rank the job has (world_size, else the ranks seen) reported it.
//
// Pure functions; thread-safe.
#ifndef WARPSCOPE_SERVER_TRAINING_JOB_ANALYSIS_H_
#define WARPSCOPE_SERVER_TRAINING_JOB_ANALYSIS_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/time.h"
#include "server/storage/storage.h"

namespace warpscope::server::training {

struct AnalysisOptions {
  // Straggler by lateness: the rank that starts the step's last large collective last (largest
  // last_collective_offset) in more than `late_fraction` of the complete steps where two ranks
  // or more had one, later than the median rank by at least `min_lag_fraction` of the median
  // step time (the median of its lag over those steps).
  double late_fraction = 0.5;
  double min_lag_fraction = 0.02;
  // Straggler by compute: a rank whose compute time exceeds its peers' median by more than
  // `compute_excess` of the median step time in more than `late_fraction` of the steps.
  double compute_excess = 0.05;
  // Slow interconnect: time in NCCL, less the wait for the last rank to start the last large
  // collective, >= (1 + nccl_excess) x the median rank's, in more than `late_fraction` of the
  // complete steps.
  double nccl_excess = 0.5;
  // Rule 10: communication (not overlapped) above this share of step time.
  double comm_share = 0.25;
  // Rule 11: a step longer than slow_step_factor x the trailing median of `trailing_steps`
  // steps is slow; stall_factor x is a stall.
  double slow_step_factor = 1.5;
  double stall_factor = 5.0;
  size_t trailing_steps = 20;
  // Fewer complete steps than this: no straggler or slow-step verdicts (shares still given).
  size_t min_steps = 5;
  // Steps kept in JobAnalysis::steps (the newest).
  size_t max_steps = 200;
};

// One rank over the analysed steps. Shares are of the rank's summed step time; compute_share,
// overlap_share and idle_share are NaN when the rank's steps have no kernel records
// (compute_ns = -1), comm_share is then the NCCL operations' share.
struct RankSummary {
  uint32_t rank = 0;
  std::string host;
  std::string entity;  // the process entity id on `host`
  size_t steps = 0;
  double step_time_mean_s = 0;
  double step_time_p50_s = 0;
  double compute_share = 0;
  double comm_share = 0;
  double overlap_share = 0;
  double idle_share = 0;
  double nccl_time_mean_s = 0;               // per step
  double last_collective_offset_mean_s = 0;  // NaN when its steps have none
  double late_fraction = 0;   // complete steps in which it started the last large collective last
  double compute_excess_s = 0;  // mean (its compute - the peers' median compute), NaN: unknown
  bool straggler = false;
  bool slow_interconnect = false;
};

// One step across ranks. duration_s[i] is the step time of ranks[i] (JobAnalysis::ranks order),
// NaN when that rank did not report the step.
struct StepRow {
  int64_t step = 0;
  base::TimePoint start;  // the earliest rank's start
  std::vector<double> duration_s;
  double max_s = 0;  // the job's step time: the slowest rank's
  std::optional<uint32_t> last_rank;  // the rank that started the last large collective last
};

struct Straggler {
  uint32_t rank = 0;
  std::string host;
  std::string entity;
  std::string reason;          // "late_collective" or "long_compute"
  double late_fraction = 0;    // of complete steps
  double lag_s = 0;            // per step: how much later than the median rank (or longer compute)
  double step_share = 0;       // lag_s / the median step time: the share of every step lost
  double gpu_hours_lost = 0;   // lag_s x complete steps x world_size / 3600
};

struct SlowStep {
  int64_t step = 0;
  base::TimePoint start;
  double duration_s = 0;
  double trailing_median_s = 0;
  bool stall = false;  // >= stall_factor x
};

struct JobAnalysis {
  std::string job;
  uint32_t world_size = 0;  // the largest reported; the ranks seen when none
  std::vector<std::string> hosts;  // sorted
  size_t complete_steps = 0;
  double step_time_p50_s = 0;  // of complete steps' max_s
  // Job-wide shares, the mean of the ranks' (NaN as in RankSummary).
  double compute_share = 0;
  double comm_share = 0;
  double overlap_share = 0;
  double idle_share = 0;
  double gpu_hours = 0;  // world_size x the wall time the analysed steps cover / 3600
  std::vector<RankSummary> ranks;  // by rank
  std::vector<StepRow> steps;      // by step number, the newest max_steps
  std::optional<Straggler> straggler;
  std::vector<uint32_t> slow_interconnect_ranks;
  std::vector<SlowStep> slow_steps;  // by step number
};

// Analyses the steps of `job` (others in `steps` are ignored). Never fails: an empty input
// gives an analysis with no ranks.
JobAnalysis AnalyzeJob(std::string_view job, std::span<const StoredStep> steps,
                       const AnalysisOptions& options);

}  // namespace warpscope::server::training

#endif  // WARPSCOPE_SERVER_TRAINING_JOB_ANALYSIS_H_

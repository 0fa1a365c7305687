// SPDX-License-Identifier: Apache-2.0
#include "server/insights/training_inputs.h"

#include <algorithm>
#include <set>
#include <string>
#include <utility>

namespace warpscope::server::insights {
namespace {

constexpr std::string_view kNvlinkMetric = "gpu.nvlink.transmit.bytes";

// Whether any of `gpus` on `host` stored NVLink link series in [start, end); nullopt when the
// rank's GPUs are unknown.
base::Result<std::optional<bool>> HasNvlink(Storage& storage, const std::string& host,
                                            const std::set<std::string>& gpus,
                                            base::TimePoint start, base::TimePoint end) {
  if (gpus.empty()) return std::optional<bool>();
  for (const std::string& gpu : gpus) {
    RangeQuery q;
    q.metric = std::string(kNvlinkMetric);
    q.match.host = host;
    q.match.entity = gpu;
    q.start = start;
    q.end = end;
    q.step = std::max<base::Duration>(end - start, std::chrono::seconds(1));
    q.aggregation = Aggregation::kLast;
    q.max_points = 4;
    base::Result<RangeResult> r = storage.QueryRange(q);
    if (!r) {
      if (r.error().code() == base::StatusCode::kNotFound) return std::optional<bool>(false);
      return base::Error(r.error());
    }
    if (!r->series.empty()) return std::optional<bool>(true);
  }
  return std::optional<bool>(false);
}

}  // namespace

training::AnalysisOptions TrainingAnalysisOptions(const InsightConfig& c) {
  training::AnalysisOptions o;
  o.late_fraction = c.training_late_fraction;
  o.min_lag_fraction = c.training_min_lag_share;
  o.compute_excess = c.training_compute_excess;
  o.nccl_excess = c.training_nccl_excess;
  o.comm_share = c.training_comm_share;
  o.slow_step_factor = c.training_slow_step_factor;
  o.stall_factor = c.training_stall_factor;
  o.trailing_steps = c.training_trailing_steps;
  o.min_steps = c.training_min_steps;
  return o;
}

base::Result<std::vector<JobInput>> ReadTrainingJobs(Storage& storage, base::TimePoint start,
                                                     base::TimePoint end,
                                                     const InsightConfig& config,
                                                     std::span<const ProcessGpuInput> processes) {
  std::vector<JobInput> out;
  JobQuery jobs_query{.start = start, .end = end, .limit = config.training_max_jobs};
  base::Result<std::vector<JobRecord>> jobs = storage.ListJobs(jobs_query);
  if (!jobs) {
    if (jobs.error().code() == base::StatusCode::kUnsupported) return out;
    return base::Error(jobs.error());
  }
  const training::AnalysisOptions options = TrainingAnalysisOptions(config);
  for (const JobRecord& job : *jobs) {
    StepQuery q{
        .job = job.job, .start = start, .end = end, .limit = config.training_max_step_records};
    WARPSCOPE_ASSIGN_OR_RETURN(std::vector<StoredStep> steps, storage.QuerySteps(q));
    JobInput& in = out.emplace_back();
    in.analysis = training::AnalyzeJob(job.job, steps, options);
    in.nvlink.resize(in.analysis.ranks.size());
    for (size_t i = 0; i < in.analysis.ranks.size(); ++i) {
      const training::RankSummary& rank = in.analysis.ranks[i];
      if (!rank.straggler && !rank.slow_interconnect) continue;
      std::set<std::string> gpus;
      for (const ProcessGpuInput& p : processes) {
        if (p.host == rank.host && p.entity == rank.entity) gpus.insert(p.gpu);
      }
      WARPSCOPE_ASSIGN_OR_RETURN(in.nvlink[i], HasNvlink(storage, rank.host, gpus, start, end));
    }
  }
  std::sort(out.begin(), out.end(),
            [](const JobInput& a, const JobInput& b) { return a.analysis.job < b.analysis.job; });
  return out;
}

}  // namespace warpscope::server::insights

// SPDX-License-Identifier: Apache-2.0
// The training jobs the insight rules 9-11 judge: the jobs with steps in a range, each job's
// steps read and analysed (server/training/job_analysis.h), and whether the GPUs of the ranks
// with a verdict have NVLink. Read once per evaluation at most (the engine keeps them for
// InsightConfig::training_refresh); the rules are pure functions of the result.
#ifndef WARPSCOPE_SERVER_INSIGHTS_TRAINING_INPUTS_H_
#define WARPSCOPE_SERVER_INSIGHTS_TRAINING_INPUTS_H_

#include <span>
#include <vector>

#include "base/status.h"
#include "base/time.h"
#include "server/insights/insight_config.h"
#include "server/insights/insight_inputs.h"
#include "server/storage/storage.h"
#include "server/training/job_analysis.h"

namespace warpscope::server::insights {

// The analysis options the config's training thresholds give.
training::AnalysisOptions TrainingAnalysisOptions(const InsightConfig& config);

// The jobs with steps that ended in [start, end): at most config.training_max_jobs (those with
// the newest steps), each from at most config.training_max_step_records step records (the
// newest), ordered by job id. `processes` (the snapshot's) name the GPUs of a rank's process.
// A storage without steps (Unsupported) gives no jobs; other errors are returned.
[[nodiscard]] base::Result<std::vector<JobInput>> ReadTrainingJobs(
    Storage& storage, base::TimePoint start, base::TimePoint end, const InsightConfig& config,
    std::span<const ProcessGpuInput> processes);

}  // namespace warpscope::server::insights

#endif  // WARPSCOPE_SERVER_INSIGHTS_TRAINING_INPUTS_H_

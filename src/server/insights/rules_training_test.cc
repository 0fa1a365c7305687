// SPDX-License-Identifier: Apache-2.0
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "server/insights/rules.h"
#include "server/insights/testing/inputs_builder.h"
#include "server/insights/training_inputs.h"
#include "server/training/testing/job_builder.h"

namespace warpscope::server::insights {
namespace {

using ::testing::HasSubstr;
using testing::InputsBuilder;
using testing::Observe;
using training::testing::JobSpec;
using training::testing::MakeJob;

constexpr size_t kBuckets = 90;  // 15 minutes

// Inputs holding the jobs of `specs`, analysed with the default thresholds; each spec's steps
// end `before_end` before the inputs' end.
InsightInputs WithJobs(std::vector<JobSpec> specs,
                       std::chrono::seconds before_end = std::chrono::seconds(10)) {
  InputsBuilder b(kBuckets);
  InsightInputs in = b.inputs();
  auto jobs = std::make_shared<std::vector<JobInput>>();
  for (JobSpec& spec : specs) {
    const double total_ms = [&] {
      double t = 0;
      for (int i = 0; i < spec.steps; ++i) {
        auto it = spec.long_steps.find(i);
        t += it != spec.long_steps.end() ? it->second : spec.step_ms;
      }
      return t;
    }();
    spec.start = in.end() - before_end - base::Duration(training::testing::Ns(total_ms));
    std::vector<StoredStep> steps = MakeJob(spec);
    JobInput& job = jobs->emplace_back();
    job.analysis = training::AnalyzeJob(spec.job, steps, TrainingAnalysisOptions(InsightConfig{}));
    job.nvlink.resize(job.analysis.ranks.size());
  }
  in.jobs = std::move(jobs);
  return in;
}

TEST(TrainingStragglerTest, NamesTheLateRankWithItsCost) {
  JobSpec spec;
  spec.late_rank = 5;
  spec.lag_ms = 40;
  InsightInputs in = WithJobs({spec});
  ProcessGpuInput& p = in.processes.emplace_back();
  p.host = "node-b";
  p.entity = "pid/1005/1";
  p.gpu = "GPU-5";
  p.attributes.Set("process.pid", "1005");

  std::vector<Observation> obs = Observe(*MakeTrainingStragglerRule(), in);
  ASSERT_EQ(obs.size(), 1u);
  const Observation& o = obs[0];
  EXPECT_EQ(o.host, "node-b");
  EXPECT_EQ(o.entity, "pid/1005/1");
  EXPECT_EQ(o.kind, model::EntityKind::kProcess);
  EXPECT_EQ(o.attributes.Get("job.id"), "job-1");
  EXPECT_EQ(o.attributes.Get("job.rank"), "5");
  EXPECT_EQ(o.attributes.Get("process.pid"), "1005");
  EXPECT_THAT(o.summary, HasSubstr("rank 5 of job job-1 on host node-b starts the last large "
                                   "collective 39 ms after the median rank in 100 % of steps"));
  EXPECT_THAT(o.summary, HasSubstr("(0.00439 GPU-hours over its last 50 steps)"));
  EXPECT_THAT(o.summary, HasSubstr("lose 4 % of every step"));
  EXPECT_EQ(o.evidence["straggler"]["rank"], 5);
  EXPECT_EQ(o.evidence["straggler"]["reason"], "late_collective");
  EXPECT_EQ(o.evidence["ranks"].size(), 8u);
  EXPECT_EQ(o.evidence["ranks"][5]["straggler"], true);
  EXPECT_NEAR(o.lost_fraction, 0.04, 0.003);
  EXPECT_EQ(o.gpus, 8);
  // The peers wait in NCCL: no slow interconnect.
  EXPECT_TRUE(Observe(*MakeTrainingSlowInterconnectRule(), in).empty());
}

TEST(TrainingStragglerTest, QuietForABalancedJobAndWithoutJobs) {
  EXPECT_TRUE(Observe(*MakeTrainingStragglerRule(), WithJobs({JobSpec{}})).empty());
  InputsBuilder b(kBuckets);
  EXPECT_TRUE(Observe(*MakeTrainingStragglerRule(), b.inputs()).empty());  // jobs not read
  EXPECT_TRUE(Observe(*MakeTrainingStragglerRule(), WithJobs({})).empty());
}

TEST(TrainingSlowInterconnectTest, NamesTheRankAndItsPath) {
  JobSpec spec;
  spec.slow_nccl_rank = 2;
  spec.slow_nccl_factor = 2.2;
  InsightInputs in = WithJobs({spec});
  auto jobs = std::make_shared<std::vector<JobInput>>(*in.jobs);
  (*jobs)[0].nvlink[2] = true;
  in.jobs = jobs;
  std::vector<Observation> obs = Observe(*MakeTrainingSlowInterconnectRule(), in);
  ASSERT_EQ(obs.size(), 1u);
  EXPECT_EQ(obs[0].entity, "pid/1002/1");
  EXPECT_EQ(obs[0].host, "node-a");
  EXPECT_THAT(obs[0].summary, HasSubstr("spends 330 ms per step in NCCL, 2.2x the median rank's "
                                        "150 ms"));
  EXPECT_THAT(obs[0].summary,
              HasSubstr("NVLink within node-a and the network between the job's hosts"));
  EXPECT_EQ(obs[0].evidence["interconnect"]["local"], "nvlink");
  EXPECT_EQ(obs[0].evidence["interconnect"]["network"], true);

  (*jobs)[0].nvlink[2] = false;
  obs = Observe(*MakeTrainingSlowInterconnectRule(), in);
  ASSERT_EQ(obs.size(), 1u);
  EXPECT_THAT(obs[0].summary, HasSubstr("PCIe within node-a"));
}

TEST(TrainingCommHeavyTest, RaisesOnRankZeroAboveTheShare) {
  JobSpec heavy;
  heavy.comm_ms = 350;
  heavy.compute_ms = 500;
  InsightInputs in = WithJobs({heavy});
  std::vector<Observation> obs = Observe(*MakeTrainingCommHeavyRule(), in);
  ASSERT_EQ(obs.size(), 1u);
  EXPECT_EQ(obs[0].entity, "pid/1000/1");
  EXPECT_EQ(obs[0].attributes.Get("job.rank"), "0");
  EXPECT_THAT(obs[0].summary, HasSubstr("spends 35 % of its step time in communication"));
  EXPECT_NEAR(obs[0].lost_fraction, 0.10, 1e-6);
  EXPECT_EQ(obs[0].gpus, 8);

  EXPECT_TRUE(Observe(*MakeTrainingCommHeavyRule(), WithJobs({JobSpec{}})).empty());
}

TEST(TrainingStepRegressionTest, ASlowStepIsATicketAndAStallPages) {
  JobSpec slow;
  slow.long_steps = {{40, 2000}};
  std::vector<Observation> obs = Observe(*MakeTrainingStepRegressionRule(), WithJobs({slow}));
  ASSERT_EQ(obs.size(), 1u);
  EXPECT_FALSE(obs[0].severity);
  EXPECT_THAT(obs[0].summary, HasSubstr("step 140 of job job-1 took 2.00 s, 2.0x the median"));
  EXPECT_EQ(obs[0].evidence["step"]["step"], 140);
  EXPECT_EQ(obs[0].evidence["step"]["stall"], false);

  JobSpec stall;
  stall.long_steps = {{40, 2000}, {45, 8000}};
  obs = Observe(*MakeTrainingStepRegressionRule(), WithJobs({stall}));
  ASSERT_EQ(obs.size(), 1u);
  ASSERT_TRUE(obs[0].severity);
  EXPECT_EQ(*obs[0].severity, Severity::kPage);
  EXPECT_EQ(obs[0].evidence["step"]["step"], 145);
  EXPECT_THAT(obs[0].summary, HasSubstr("the job stalled"));

  // A slow step older than the step window is over.
  EXPECT_TRUE(
      Observe(*MakeTrainingStepRegressionRule(), WithJobs({slow}, std::chrono::seconds(400)))
          .empty());
  EXPECT_TRUE(Observe(*MakeTrainingStepRegressionRule(), WithJobs({JobSpec{}})).empty());
}

TEST(TrainingRulesTest, AlertNames) {
  EXPECT_EQ(AlertName("training_straggler"), "TrainingStraggler");
  EXPECT_EQ(AlertName("training_step_regression"), "TrainingStepRegression");
}

}  // namespace
}  // namespace warpscope::server::insights

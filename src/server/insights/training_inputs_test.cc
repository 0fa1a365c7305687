// SPDX-License-Identifier: Apache-2.0
#include "server/insights/training_inputs.h"

#include <gtest/gtest.h>

#include "server/query/testing/query_fixture.h"
#include "server/training/testing/job_builder.h"

namespace warpscope::server::insights {
namespace {

using query::At;
using query::kT0;
using training::testing::JobSpec;
using training::testing::MakeJob;
using training::testing::StepStorage;

class TrainingInputsTest : public query::QueryFixture {};

TEST_F(TrainingInputsTest, AStorageWithoutStepsHasNoJobs) {
  base::Result<std::vector<JobInput>> jobs =
      ReadTrainingJobs(*storage_, At(kT0), At(kT0 + 900), InsightConfig{}, {});
  ASSERT_TRUE(jobs) << jobs.error().message();
  EXPECT_TRUE(jobs->empty());
}

TEST_F(TrainingInputsTest, ReadsAnalysesAndBoundsTheJobs) {
  StepStorage storage(*storage_);
  JobSpec a;
  a.job = "job-a";
  a.start = At(kT0 + 100);
  a.late_rank = 5;
  a.lag_ms = 40;
  storage.Add(MakeJob(a));
  JobSpec b;
  b.job = "job-b";
  b.start = At(kT0 + 200);
  storage.Add(MakeJob(b));
  // The straggler's GPU stored NVLink link series.
  IngestBatch batch = Window("node-b", 150);
  AddGpu(batch, "GPU-5", "1");
  AddGauge(batch, "gpu.nvlink.transmit.bytes", model::EntityKind::kGpu, "GPU-5", 1e9);
  ASSERT_TRUE(storage.WriteBatch(batch));
  ProcessGpuInput p;
  p.host = "node-b";
  p.entity = training::testing::RankEntity(5);
  p.gpu = "GPU-5";

  base::Result<std::vector<JobInput>> jobs =
      ReadTrainingJobs(storage, At(kT0), At(kT0 + 900), InsightConfig{}, {&p, 1});
  ASSERT_TRUE(jobs) << jobs.error().message();
  ASSERT_EQ(jobs->size(), 2u);
  EXPECT_EQ((*jobs)[0].analysis.job, "job-a");
  ASSERT_TRUE((*jobs)[0].analysis.straggler);
  EXPECT_EQ((*jobs)[0].analysis.straggler->rank, 5u);
  ASSERT_EQ((*jobs)[0].nvlink.size(), 8u);
  EXPECT_EQ((*jobs)[0].nvlink[5], std::optional<bool>(true));
  EXPECT_FALSE((*jobs)[0].nvlink[4]);  // no verdict on rank 4: not read

  InsightConfig bounded;
  bounded.training_max_jobs = 1;
  bounded.training_max_step_records = 80;  // 10 steps of 8 ranks
  jobs = ReadTrainingJobs(storage, At(kT0), At(kT0 + 900), bounded, {});
  ASSERT_TRUE(jobs);
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_EQ((*jobs)[0].analysis.job, "job-b");  // the newest steps
  EXPECT_EQ((*jobs)[0].analysis.complete_steps, 10u);
}

}  // namespace
}  // namespace warpscope::server::insights

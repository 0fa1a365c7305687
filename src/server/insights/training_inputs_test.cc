// SPDX-License-Identifier: Apache-2.0
#include "server/insights/training_inputs.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

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

TEST_F(TrainingInputsTest, ReadsTheStepsSqliteStorageKeeps) {
  JobSpec spec;
  spec.start = At(kT0 + 100);
  spec.late_rank = 6;
  spec.lag_ms = 50;
  spec.steps = 20;
  // The steps of each host in the window they ended in (10 s windows from kT0 + 100 s).
  std::map<std::pair<std::string, int64_t>, IngestBatch> batches;
  for (const StoredStep& s : MakeJob(spec)) {
    const int64_t window = (base::ToUnixNanos(s.step.end) / 1'000'000'000 - kT0) / 10 * 10;
    auto [it, added] = batches.try_emplace({s.host, window});
    if (added) it->second = Window(s.host, window);
    it->second.steps.push_back(s.step);
  }
  for (const auto& [key, batch] : batches) Write(batch);

  base::Result<std::vector<JobInput>> jobs =
      ReadTrainingJobs(*storage_, At(kT0), At(kT0 + 900), InsightConfig{}, {});
  ASSERT_TRUE(jobs) << jobs.error().message();
  ASSERT_EQ(jobs->size(), 1u);
  const training::JobAnalysis& a = (*jobs)[0].analysis;
  EXPECT_EQ(a.job, "job-1");
  EXPECT_EQ(a.world_size, 8u);
  EXPECT_EQ(a.hosts, (std::vector<std::string>{"node-a", "node-b"}));
  EXPECT_EQ(a.complete_steps, 20u);
  ASSERT_TRUE(a.straggler);
  EXPECT_EQ(a.straggler->rank, 6u);
  EXPECT_EQ(a.straggler->host, "node-b");
}

}  // namespace
}  // namespace warpscope::server::insights

// SPDX-License-Identifier: Apache-2.0
#include "model/job.h"

#include <gtest/gtest.h>

#include "model/entity.h"
#include "model/process.h"

namespace warpscope::model {
namespace {

using namespace std::string_literals;

TEST(JobEnvironTest, TorchrunWorkerNamesItsRunRankAndWorld) {
  const std::string env =
      "PATH=/usr/bin\0TORCHELASTIC_RUN_ID=llama-7b-42\0RANK=5\0LOCAL_RANK=1\0WORLD_SIZE=16\0"
      "MASTER_ADDR=node-0\0MASTER_PORT=29500\0"s;
  const JobIdentity job = ParseJobEnviron(env);
  EXPECT_EQ(job.launcher, "torchelastic");
  EXPECT_EQ(job.id, "llama-7b-42");
  EXPECT_EQ(job.rank, "5");
  EXPECT_EQ(job.local_rank, "1");
  EXPECT_EQ(job.world_size, "16");
  EXPECT_EQ(job.master_addr, "node-0");
}

TEST(JobEnvironTest, TorchrunUnderSlurmWithoutRendezvousIdTakesTheSlurmJob) {
  const JobIdentity job = ParseJobEnviron(
      "SLURM_JOB_ID=9001\0SLURM_PROCID=0\0TORCHELASTIC_RUN_ID=none\0RANK=3\0WORLD_SIZE=8"s);
  EXPECT_EQ(job.launcher, "torchelastic");
  EXPECT_EQ(job.id, "9001");
  EXPECT_EQ(job.rank, "3") << "torch's rank, not the Slurm task's";
  EXPECT_EQ(job.world_size, "8") << "a last entry without NUL counts";
}

TEST(JobEnvironTest, SrunTaskNamesItsJobAndProcId) {
  const JobIdentity job =
      ParseJobEnviron("SLURM_JOB_ID=9001\0SLURM_PROCID=7\0SLURM_LOCALID=3\0SLURM_NTASKS=32\0"s);
  EXPECT_EQ(job, (JobIdentity{"slurm", "9001", "7", "3", "32", ""}));
}

TEST(JobEnvironTest, AProcessOutsideAnyJobHasNone) {
  EXPECT_TRUE(ParseJobEnviron("HOME=/root\0RANKING=1\0=x\0NOEQUALS\0"s).empty());
  EXPECT_TRUE(ParseJobEnviron("").empty());
}

TEST(JobEnvironTest, LongValuesAreCut) {
  const JobIdentity job = ParseJobEnviron("SLURM_JOB_ID=" + std::string(1000, '7'));
  EXPECT_EQ(job.id.size(), 128u);
}

TEST(JobEnvironTest, TheProcessEntityCarriesTheJobAttributes) {
  ProcessInfo p;
  p.pid = 10;
  p.start_ticks = 20;
  p.executable = "python3";
  p.job = ParseJobEnviron("TORCHELASTIC_RUN_ID=r1\0RANK=0\0WORLD_SIZE=2\0"s);
  const Entity e = MakeProcessEntity(p);
  EXPECT_EQ(e.attributes.Get(attr::kJobId), "r1");
  EXPECT_EQ(e.attributes.Get(attr::kJobRank), "0");
  EXPECT_EQ(e.attributes.Get(attr::kJobWorldSize), "2");
  EXPECT_EQ(e.attributes.Get(attr::kJobLauncher), "torchelastic");
  EXPECT_EQ(e.attributes.Get(attr::kJobLocalRank), "") << "absent, not empty";
}

}  // namespace
}  // namespace warpscope::model

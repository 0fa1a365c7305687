// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/procfs/procfs_process_resolver.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "agent/sources/procfs/procfs_test_util.h"

namespace warpscope::agent {
namespace {

using testing::SnapshotCopy;
using testing::SnapshotT0;

constexpr char kDockerId[] = "81fa5ffbb69a4a5b49534a618ada6e6903574cb069bc996347a9a62ee203649b";
constexpr char kTritonId[] = "f003c254d074af8d148f4df5a930c1bf77cc6b44b30b99c17f3910f0d9d825d1";

void Overwrite(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path, std::ios::trunc) << text;
}

TEST(ProcfsProcessResolverTest, SlurmJobProcess) {
  ProcfsProcessResolver resolver(SnapshotT0());
  const model::ProcessInfo* p = resolver.Resolve(1234);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->pid, 1234);
  EXPECT_EQ(p->container_pid, 1234);
  EXPECT_EQ(p->start_ticks, 300000u);
  EXPECT_EQ(p->executable, "python3.11");
  EXPECT_EQ(p->executable_path, "/usr/bin/python3.11");
  EXPECT_EQ(p->command_line, "python3 train.py --epochs 10");
  EXPECT_EQ(p->user, "alice");
  EXPECT_EQ(p->slurm_job, "4242");
  EXPECT_EQ(p->container_id, "");
  EXPECT_EQ(p->pod_uid, "");
}

TEST(ProcfsProcessResolverTest, JobOfATorchrunWorkerComesFromItsEnviron) {
  SnapshotCopy copy(SnapshotT0());
  Overwrite(copy.path("proc/1234/environ"),
            std::string("HOME=/home/alice\0TORCHELASTIC_RUN_ID=run-7\0RANK=3\0LOCAL_RANK=1\0"
                        "WORLD_SIZE=8\0MASTER_ADDR=node-0\0",
                        95));
  ProcfsProcessResolver resolver(copy.root());
  const model::ProcessInfo* p = resolver.Resolve(1234);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->job, (model::JobIdentity{"torchelastic", "run-7", "3", "1", "8", "node-0"}));
  const model::ProcessInfo* other = resolver.Resolve(777);
  ASSERT_NE(other, nullptr);
  EXPECT_TRUE(other->job.empty()) << "no environ file: no job";
}

TEST(ProcfsProcessResolverTest, DockerContainerProcess) {
  ProcfsProcessResolver resolver(SnapshotT0());
  const model::ProcessInfo* p = resolver.Resolve(2345);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->container_id, kDockerId);
  EXPECT_EQ(p->container_pid, 1);  // NSpid: 2345 1
  EXPECT_EQ(p->user, "root");
  EXPECT_EQ(p->executable, "python3.10");
  EXPECT_EQ(p->pod_uid, "");
  EXPECT_EQ(p->pod_namespace, "");
}

TEST(ProcfsProcessResolverTest, LongCommandLineIsBounded) {
  ProcfsProcessResolver resolver(SnapshotT0());
  const model::ProcessInfo* p = resolver.Resolve(2345);
  ASSERT_NE(p, nullptr);
  EXPECT_LE(p->command_line.size(), 256u);
  EXPECT_TRUE(p->command_line.starts_with(
      "python3 -m vllm.entrypoints.openai.api_server --model "
      "/models/meta-llama/Llama-3.1-70B-Instruct --tensor-parallel-size 4"));
}

TEST(ProcfsProcessResolverTest, KubernetesPodProcessWithUnknownUid) {
  ProcfsProcessResolver resolver(SnapshotT0());
  const model::ProcessInfo* p = resolver.Resolve(3456);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->container_id, kTritonId);
  EXPECT_EQ(p->pod_uid, "0f3c2a61-8b1e-4d2f-9a57-3e6c1d2b4a90");
  EXPECT_EQ(p->container_pid, 27);
  EXPECT_EQ(p->user, "1001");  // no passwd entry: numeric
  EXPECT_EQ(p->executable, "tritonserver");
}

TEST(ProcfsProcessResolverTest, KernelThreadFallsBackToComm) {
  ProcfsProcessResolver resolver(SnapshotT0());
  const model::ProcessInfo* p = resolver.Resolve(2);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->executable, "kthreadd");
  EXPECT_EQ(p->executable_path, "");
  EXPECT_EQ(p->command_line, "");
}

TEST(ProcfsProcessResolverTest, DeletedExecutableAndOddComm) {
  ProcfsProcessResolver resolver(SnapshotT0());
  const model::ProcessInfo* p = resolver.Resolve(4567);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->executable_path, "/usr/local/bin/weird");
  EXPECT_EQ(p->executable, "weird");
  EXPECT_EQ(p->start_ticks, 330000u);
}

TEST(ProcfsProcessResolverTest, MissingOrVanishedProcessIsNull) {
  ProcfsProcessResolver resolver(SnapshotT0());
  EXPECT_EQ(resolver.Resolve(424242), nullptr);
  EXPECT_EQ(resolver.Resolve(9999), nullptr);  // directory without stat
  EXPECT_EQ(resolver.Resolve(0), nullptr);
  EXPECT_EQ(resolver.Resolve(-1), nullptr);
}

// btime 1717000000 plus 300000 ticks at 100 Hz: 3000 s after boot.
TEST(ProcfsProcessResolverTest, StartTimeIsBootTimePlusStartTicks) {
  ProcfsProcessResolver resolver(SnapshotT0(), 100);
  const model::ProcessInfo* p = resolver.Resolve(1234);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->start_time_ms, 1717003000000);
  ProcfsProcessResolver at_250hz(SnapshotT0(), 250);
  EXPECT_EQ(at_250hz.Resolve(1234)->start_time_ms, 1717001200000);
}

TEST(ProcfsProcessResolverTest, StartTimeIsUnknownWithoutBtimeUntilItCanBeRead) {
  SnapshotCopy copy(SnapshotT0());
  Overwrite(copy.path("proc/stat"), "cpu  1 2 3 4\n");
  ProcfsProcessResolver resolver(copy.root(), 100);
  const model::ProcessInfo* p = resolver.Resolve(1234);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->start_time_ms, 0);
  EXPECT_EQ(p->start_ticks, 300000u);  // the identity is still known
  // The next cycle reads it again; a process resolved then has its start time.
  Overwrite(copy.path("proc/stat"), "cpu  1 2 3 4\nbtime 1717000000\n");
  resolver.BeginCycle();
  EXPECT_EQ(resolver.Resolve(777)->start_time_ms, 1717000050000);  // 5000 ticks
}

TEST(ProcfsProcessResolverTest, CachesWithinAndAcrossCyclesWhileStartTimeMatches) {
  SnapshotCopy copy(SnapshotT0());
  ProcfsProcessResolver resolver(copy.root());
  const model::ProcessInfo* first = resolver.Resolve(1234);
  ASSERT_NE(first, nullptr);
  // A changed cmdline is not re-read: the identity (pid, start_ticks) is unchanged.
  Overwrite(copy.path("proc/1234/cmdline"), std::string("other\0", 6));
  resolver.BeginCycle();
  const model::ProcessInfo* again = resolver.Resolve(1234);
  EXPECT_EQ(again, first);
  EXPECT_EQ(again->command_line, "python3 train.py --epochs 10");
}

TEST(ProcfsProcessResolverTest, ReusedPidIsReadAgain) {
  SnapshotCopy copy(SnapshotT0());
  ProcfsProcessResolver resolver(copy.root());
  ASSERT_NE(resolver.Resolve(777), nullptr);
  Overwrite(copy.path("proc/777/stat"),
            "777 (bash) S 1 777 777 0 -1 4194560 1 0 0 0 40 20 0 0 20 0 1 0 390000 9166848 "
            "1280 0\n");
  resolver.BeginCycle();
  const model::ProcessInfo* p = resolver.Resolve(777);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->start_ticks, 390000u);
}

TEST(ProcfsProcessResolverTest, BeginCycleDropsEntriesOfExitedProcesses) {
  SnapshotCopy copy(SnapshotT0());
  ProcfsProcessResolver resolver(copy.root());
  ASSERT_NE(resolver.Resolve(1234), nullptr);
  ASSERT_NE(resolver.Resolve(2345), nullptr);
  EXPECT_EQ(resolver.cached_processes_for_testing(), 2u);
  std::filesystem::remove_all(copy.path("proc/2345"));
  resolver.BeginCycle();
  EXPECT_EQ(resolver.cached_processes_for_testing(), 1u);
  EXPECT_EQ(resolver.Resolve(2345), nullptr);
}

TEST(ProcfsProcessResolverTest, UserAddedLaterIsFoundInTheNextCycle) {
  SnapshotCopy copy(SnapshotT0());
  ProcfsProcessResolver resolver(copy.root());
  ASSERT_EQ(resolver.Resolve(3456)->user, "1001");
  std::ofstream(copy.path("etc/passwd"), std::ios::app)
      << "triton:x:1001:1001::/home/triton:/bin/sh\n";
  // A second process of the same uid appears.
  std::filesystem::copy(
      copy.path("proc/3456"), copy.path("proc/3460"),
      std::filesystem::copy_options::recursive | std::filesystem::copy_options::copy_symlinks);
  resolver.BeginCycle();
  const model::ProcessInfo* p = resolver.Resolve(3460);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->user, "triton");
}

}  // namespace
}  // namespace warpscope::agent

// SPDX-License-Identifier: Apache-2.0
#include "top/remote_snapshot.h"

#include <gtest/gtest.h>

namespace warpscope::top {
namespace {

std::vector<std::string> Answers() {
  return {
      R"({"host": "node1", "gpus": [
           {"entity": "GPU-b", "attributes": {"gpu.index": "1", "gpu.model": "H100"},
            "metrics": {"gpu.utilization": {"avg": 0.5, "max": 0.6, "latest": 0.55}}},
           {"entity": "GPU-a", "attributes": {"gpu.index": "0", "gpu.model": "H100"},
            "metrics": {"gpu.power.usage": {"avg": 600, "latest": 650},
                        "gpu.power.limit": {"latest": 700}}}]})",
      R"({"entries": [
           {"entity": "pid/31000/7", "value": 5e9, "latest": 6e9, "latest_time": 1000,
            "attributes": {"process.pid": "31000", "process.owner": "mlops",
                           "process.executable.name": "python3"}},
           {"entity": "pid/29000/7", "value": 5e9, "latest": 1e9, "latest_time": 900,
            "attributes": {"process.pid": "29000"}}]})",
      R"({"entries": [{"entity": "pid/31000/7", "latest": 0.9, "latest_time": 1000}]})",
      R"({"entries": [{"entity": "pid/31000/7", "latest": 0.01, "latest_time": 1000}]})",
      R"({"entries": [{"entity": "node1", "latest": 100, "latest_time": 1000}]})",
      R"({"insights": [
           {"rule": "a", "severity": "info", "state": "pending", "summary": "p"},
           {"rule": "b", "severity": "page", "state": "resolved", "summary": "r"},
           {"rule": "c", "severity": "page", "state": "firing", "entity": "GPU-a",
            "summary": "hot"}]})",
      R"({"entries": [{"entity": "GPU-a", "latest": 9e6, "latest_time": 1000}]})",
      R"({"entries": [{"entity": "GPU-a", "latest": 3.5e8, "latest_time": 1000}]})"};
}

TEST(RemoteSnapshotTest, RequestsNameTheHostEscaped) {
  std::vector<std::string> r = RemoteRequests("node 1");
  ASSERT_EQ(r.size(), 8u);
  EXPECT_EQ(r[0], "/api/v1/summary?host=node%201&start=now-2m");
  EXPECT_NE(r[1].find("metric=gpu.process.memory.used"), std::string::npos);
  EXPECT_NE(r[5].find("/api/v1/insights?host=node%201"), std::string::npos);
}

TEST(RemoteSnapshotTest, GpusProcessesAndOpenFindings) {
  base::Result<Snapshot> s = SnapshotFromServer("node1", Answers());
  ASSERT_TRUE(s.has_value()) << s.error().message();
  ASSERT_EQ(s->gpus.size(), 2u);
  EXPECT_EQ(s->gpus[0].uuid, "GPU-a");
  EXPECT_DOUBLE_EQ(*s->gpus[0].power, 650);
  EXPECT_DOUBLE_EQ(*s->gpus[0].pcie_tx, 9e6);
  EXPECT_DOUBLE_EQ(*s->gpus[0].pcie_rx, 3.5e8);
  EXPECT_FALSE(s->gpus[1].pcie_tx.has_value());
  EXPECT_DOUBLE_EQ(*s->gpus[1].utilization, 0.55);
  ASSERT_EQ(s->processes.size(), 1u);  // the stale one is left out
  EXPECT_EQ(s->processes[0].pid, 31000);
  EXPECT_EQ(s->processes[0].user, "mlops");
  EXPECT_DOUBLE_EQ(*s->processes[0].gpu_memory, 6e9);
  EXPECT_DOUBLE_EQ(*s->processes[0].sm, 0.9);
  EXPECT_DOUBLE_EQ(*s->processes[0].cpu, 1.0);
  EXPECT_TRUE(s->findings_available);
  ASSERT_EQ(s->findings.size(), 2u);
  EXPECT_EQ(s->findings[0].rule, "c");
  EXPECT_EQ(s->findings[1].rule, "a");
}

TEST(RemoteSnapshotTest, NonJsonAnswerNamesIt) {
  std::vector<std::string> a = Answers();
  a[2] = "<html>";
  base::Result<Snapshot> s = SnapshotFromServer("node1", a);
  ASSERT_FALSE(s.has_value());
  EXPECT_NE(s.error().message().find("gpu.process.sm.utilization"), std::string::npos);
  EXPECT_FALSE(SnapshotFromServer("node1", {}).has_value());
}

}  // namespace
}  // namespace warpscope::top

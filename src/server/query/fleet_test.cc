// SPDX-License-Identifier: Apache-2.0
#include "server/query/fleet.h"

#include <gtest/gtest.h>

#include "server/query/testing/query_fixture.h"

namespace warpscope::server::query {
namespace {

using model::EntityKind;
using nlohmann::json;

class FleetTest : public QueryFixture {
 protected:
  // node1: GPU-a and GPU-b, two windows each; GPU-b degraded in the second. node2: GPU-c and
  // three GPU processes, one window. Events: an XID and a GPU-lost on node1.
  void WriteFleet() {
    for (int64_t offset : {0, 10}) {
      IngestBatch b = Window("node1", offset);
      AddGpu(b, "GPU-a", "0");
      AddGpu(b, "GPU-b", "1");
      AddGauge(b, "gpu.utilization", EntityKind::kGpu, "GPU-a", offset == 0 ? 0.4 : 0.6);
      AddGauge(b, "gpu.utilization", EntityKind::kGpu, "GPU-b", 0.9);
      AddGauge(b, "gpu.power.usage", EntityKind::kGpu, "GPU-a", offset == 0 ? 100 : 150);
      AddGauge(b, "gpu.power.usage", EntityKind::kGpu, "GPU-b", 250);
      AddGauge(b, "gpu.power.limit", EntityKind::kGpu, "GPU-a", 700);
      AddGauge(b, "gpu.power.limit", EntityKind::kGpu, "GPU-b", 700);
      AddGauge(b, "gpu.temperature", EntityKind::kGpu, "GPU-a", 60);
      AddGauge(b, "gpu.temperature", EntityKind::kGpu, "GPU-b", offset == 0 ? 80 : 70);
      AddGauge(b, "gpu.degraded", EntityKind::kGpu, "GPU-b", offset == 0 ? 0 : 1);
      if (offset == 0) {
        AddEvent(b, "GPU-b", "xid", 79);
        AddEvent(b, "GPU-b", "gpu_lost", 0);
      }
      Write(b);
    }
    IngestBatch b = Window("node2", 0);
    AddGpu(b, "GPU-c", "0");
    AddGauge(b, "gpu.utilization", EntityKind::kGpu, "GPU-c", 0.2);
    AddGauge(b, "gpu.memory.used", EntityKind::kGpu, "GPU-c", 4e9);
    AddGauge(b, "gpu.memory.total", EntityKind::kGpu, "GPU-c", 80e9);
    for (const char* pid : {"pid/1/0", "pid/2/0", "pid/3/0"}) {
      AddProcess(b, pid, "python3");
      AddGauge(b, "gpu.process.memory.used", EntityKind::kProcess, pid, 1e9);
    }
    Write(b);
  }
};

TEST_F(FleetTest, EmptyStorageHasNoHostsAndNoFigures) {
  auto fleet = QueryFleet(*storage_, At(kT0), At(kT0 + 60));
  ASSERT_TRUE(fleet) << fleet.error().message();
  EXPECT_EQ(fleet->totals.hosts, 0u);
  EXPECT_TRUE(fleet->hosts.empty());
  EXPECT_FALSE(fleet->totals.gpu_utilization.has_value());
  EXPECT_FALSE(fleet->totals.power_watts.has_value());
  EXPECT_TRUE(fleet->utilization.empty());
  EXPECT_TRUE(fleet->power.empty());
}

TEST_F(FleetTest, SummarisesEachHost) {
  WriteFleet();
  auto fleet = QueryFleet(*storage_, At(kT0), At(kT0 + 60));
  ASSERT_TRUE(fleet) << fleet.error().message();
  ASSERT_EQ(fleet->hosts.size(), 2u);

  const FleetHost& node1 = fleet->hosts[0];
  EXPECT_EQ(node1.host, "node1");
  ASSERT_TRUE(node1.last_seen.has_value());
  EXPECT_EQ(*node1.last_seen, At(kT0 + 20));
  EXPECT_EQ(node1.gpus, 2u);
  // The mean over the host's GPUs of their average: (0.5 + 0.9) / 2.
  ASSERT_TRUE(node1.gpu_utilization.has_value());
  EXPECT_NEAR(*node1.gpu_utilization, 0.7, 1e-9);
  // Sums of the latest values; the hottest GPU's maximum (80 + 0.1 in the first window).
  EXPECT_DOUBLE_EQ(node1.power_watts.value_or(-1), 400);
  EXPECT_DOUBLE_EQ(node1.power_limit_watts.value_or(-1), 1400);
  EXPECT_NEAR(node1.temperature_max.value_or(-1), 80.1, 1e-9);
  EXPECT_FALSE(node1.memory_used_bytes.has_value());
  EXPECT_EQ(node1.degraded_gpus, 1u);
  EXPECT_EQ(node1.events, 2u);
  EXPECT_EQ(node1.xid_events, 1u);
  EXPECT_EQ(node1.gpu_processes, 0u);

  const FleetHost& node2 = fleet->hosts[1];
  EXPECT_EQ(node2.host, "node2");
  EXPECT_EQ(node2.gpus, 1u);
  EXPECT_EQ(node2.gpu_processes, 3u);
  EXPECT_DOUBLE_EQ(node2.memory_used_bytes.value_or(-1), 4e9);
  EXPECT_FALSE(node2.power_watts.has_value());
  EXPECT_EQ(node2.events, 0u);
}

TEST_F(FleetTest, TotalsCoverEveryHostAndGpu) {
  WriteFleet();
  auto fleet = QueryFleet(*storage_, At(kT0), At(kT0 + 60));
  ASSERT_TRUE(fleet) << fleet.error().message();
  const FleetTotals& t = fleet->totals;
  EXPECT_EQ(t.hosts, 2u);
  EXPECT_EQ(t.hosts_with_problems, 1u);
  EXPECT_EQ(t.gpus, 3u);
  EXPECT_EQ(t.degraded_gpus, 1u);
  EXPECT_EQ(t.gpu_processes, 3u);
  EXPECT_EQ(t.events, 2u);
  // The mean over all GPUs, not over hosts: (0.5 + 0.9 + 0.2) / 3.
  EXPECT_NEAR(t.gpu_utilization.value_or(-1), 1.6 / 3, 1e-9);
  EXPECT_DOUBLE_EQ(t.power_watts.value_or(-1), 400);
  EXPECT_DOUBLE_EQ(t.memory_total_bytes.value_or(-1), 80e9);
  EXPECT_NEAR(t.temperature_max.value_or(-1), 80.1, 1e-9);
}

TEST_F(FleetTest, TimelinesAreTheMeanUtilizationAndTheTotalPowerPerStep) {
  WriteFleet();
  auto fleet = QueryFleet(*storage_, At(kT0), At(kT0 + 60));
  ASSERT_TRUE(fleet) << fleet.error().message();
  // A minute in 10 s steps (the smallest): one point per window.
  ASSERT_EQ(fleet->utilization.size(), 2u);
  EXPECT_EQ(fleet->utilization[0].time, At(kT0));
  EXPECT_NEAR(fleet->utilization[0].value, (0.4 + 0.9 + 0.2) / 3, 1e-9);
  EXPECT_NEAR(fleet->utilization[1].value, (0.6 + 0.9) / 2, 1e-9);
  ASSERT_EQ(fleet->power.size(), 2u);
  EXPECT_DOUBLE_EQ(fleet->power[0].value, 350);
  EXPECT_DOUBLE_EQ(fleet->power[1].value, 400);
}

TEST_F(FleetTest, WindowsOutsideTheRangeAreLeftOut) {
  WriteFleet();
  auto fleet = QueryFleet(*storage_, At(kT0 + 3600), At(kT0 + 7200));
  ASSERT_TRUE(fleet) << fleet.error().message();
  EXPECT_TRUE(fleet->hosts.empty());
  EXPECT_EQ(fleet->totals.events, 0u);
  EXPECT_TRUE(fleet->utilization.empty());
}

TEST_F(FleetTest, CountsEachProcessThatRanOnce) {
  // node3 over three windows: a process on two GPUs (pid 10), seen without its start time in its
  // last window as it exited; pid 10 then taken by another process; a process that ended in the
  // first window (pid 12); one the agent never found in /proc (pid 11, no start time).
  for (int64_t offset : {0, 10, 20}) {
    IngestBatch b = Window("node3", offset);
    AddGpu(b, "GPU-d", "0");
    AddGpu(b, "GPU-e", "1");
    auto process = [&](const char* id, const char* gpu) {
      AddProcess(b, id, "python3");
      AddGauge(b, "gpu.process.memory.used", EntityKind::kProcess, id, 1e9,
               model::Labels{{"gpu.uuid", gpu}});
    };
    if (offset == 0) {
      process("pid/10/100", "GPU-d");
      process("pid/10/100", "GPU-e");
      process("pid/12/300", "GPU-e");
    }
    if (offset == 10) {
      process("pid/10/0", "GPU-d");
    }
    if (offset == 20) {
      process("pid/10/900", "GPU-d");
    }
    process("pid/11/0", "GPU-e");
    Write(b);
  }
  WriteFleet();
  auto fleet = QueryFleet(*storage_, At(kT0), At(kT0 + 60));
  ASSERT_TRUE(fleet) << fleet.error().message();
  ASSERT_EQ(fleet->hosts.size(), 3u);
  EXPECT_EQ(fleet->hosts[2].host, "node3");
  // pid 10 (one process, two ids, two GPUs), pid 10 again (reused), pid 11, pid 12.
  EXPECT_EQ(fleet->hosts[2].gpu_processes, 4u);
  EXPECT_EQ(fleet->hosts[1].gpu_processes, 3u);  // node2's three, without a start time
  EXPECT_EQ(fleet->totals.gpu_processes, 7u);
  // Over the last window only: the reused pid's process and pid 11.
  auto last = QueryFleet(*storage_, At(kT0 + 20), At(kT0 + 30));
  ASSERT_TRUE(last) << last.error().message();
  ASSERT_FALSE(last->hosts.empty());
  EXPECT_EQ(last->hosts.back().host, "node3");
  EXPECT_EQ(last->hosts.back().gpu_processes, 2u);
}

TEST_F(FleetTest, JsonWritesAbsentFiguresAsNull) {
  WriteFleet();
  auto fleet = QueryFleet(*storage_, At(kT0), At(kT0 + 60));
  ASSERT_TRUE(fleet) << fleet.error().message();
  json j = FleetJson(*fleet);
  EXPECT_EQ(j["start"], kT0);
  EXPECT_EQ(j["end"], kT0 + 60);
  EXPECT_EQ(j["totals"]["hosts"], 2);
  EXPECT_EQ(j["totals"]["gpus"], 3);
  ASSERT_EQ(j["hosts"].size(), 2u);
  EXPECT_EQ(j["hosts"][0]["host"], "node1");
  EXPECT_EQ(j["hosts"][0]["last_seen"], kT0 + 20);
  EXPECT_EQ(j["hosts"][0]["power_watts"], 400.0);
  EXPECT_TRUE(j["hosts"][0]["memory_used_bytes"].is_null());
  EXPECT_TRUE(j["hosts"][1]["power_watts"].is_null());
  // Timelines: [seconds, value] with the time as a double.
  ASSERT_EQ(j["utilization"].size(), 2u);
  EXPECT_TRUE(j["utilization"][0][0].is_number_float());
  EXPECT_DOUBLE_EQ(j["utilization"][0][0].get<double>(), static_cast<double>(kT0));
  EXPECT_EQ(j["power"].size(), 2u);
}

}  // namespace
}  // namespace warpscope::server::query

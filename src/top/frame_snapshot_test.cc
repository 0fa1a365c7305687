// SPDX-License-Identifier: Apache-2.0
#include "top/frame_snapshot.h"

#include <gtest/gtest.h>

namespace warpscope::top {
namespace {

using model::EntityKind;

const model::MetricDesc kUtil{.key = "gpu.utilization", .entity = EntityKind::kGpu};
const model::MetricDesc kMemUsed{.key = "gpu.memory.used", .entity = EntityKind::kGpu};
const model::MetricDesc kNvTx{.key = "gpu.nvlink.transmit.rate", .entity = EntityKind::kGpu};
const model::MetricDesc kDegraded{.key = "gpu.degraded", .entity = EntityKind::kGpu};
const model::MetricDesc kProcMem{.key = "gpu.process.memory.used", .entity = EntityKind::kProcess};
const model::MetricDesc kProcSm{.key = "gpu.process.sm.utilization",
                                .entity = EntityKind::kProcess};
const model::MetricDesc kProcCpu{.key = "process.cpu.utilization", .entity = EntityKind::kProcess};
const model::MetricDesc kCpus{.key = "host.cpu.logical_count", .entity = EntityKind::kHost};

model::SeriesPoint Point(const model::MetricDesc& m, std::string entity, double v,
                         model::Labels labels = {}) {
  model::SeriesPoint p;
  p.metric = &m;
  p.entity = std::move(entity);
  p.labels = std::move(labels);
  p.last = v;
  return p;
}

model::Entity Gpu(std::string id, std::string index) {
  model::Entity e{EntityKind::kGpu, std::move(id), "node1", {}};
  e.attributes.Set(model::attr::kGpuIndex, index);
  e.attributes.Set(model::attr::kGpuModel, "NVIDIA H100 80GB HBM3");
  return e;
}

model::Labels OnGpu(std::string index) {
  model::Labels l;
  l.Set(model::attr::kGpuIndex, index);
  return l;
}

TEST(FrameSnapshotTest, GpusByIndexWithLinksSummedAndProcessesPerGpu) {
  model::Frame f;
  f.entities = {Gpu("GPU-b", "1"), Gpu("GPU-a", "0")};
  model::Entity proc{EntityKind::kProcess, "pid/31000/77", "node1", {}};
  proc.attributes.Set(model::attr::kPid, "31000");
  proc.attributes.Set(model::attr::kUser, "mlops");
  proc.attributes.Set(model::attr::kExecutable, "python3");
  proc.attributes.Set(model::attr::kCommandLine, "/usr/bin/python3 train.py");
  f.entities.push_back(proc);
  model::Labels link0, link1;
  link0.Set("link", "0");
  link1.Set("link", "1");
  f.series = {Point(kUtil, "GPU-a", 0.98),
              Point(kMemUsed, "GPU-a", 1e9),
              Point(kNvTx, "GPU-a", 2e9, link0),
              Point(kNvTx, "GPU-a", 3e9, link1),
              Point(kDegraded, "GPU-b", 1),
              Point(kProcMem, "pid/31000/77", 5e9, OnGpu("0")),
              Point(kProcMem, "pid/31000/77", 1e9, OnGpu("1")),
              Point(kProcSm, "pid/31000/77", 0.9, OnGpu("0")),
              Point(kProcCpu, "pid/31000/77", 0.05),
              Point(kCpus, "node1", 112)};
  Snapshot s = SnapshotFromFrame(f);
  ASSERT_EQ(s.gpus.size(), 2u);
  EXPECT_EQ(s.gpus[0].uuid, "GPU-a");
  EXPECT_EQ(s.gpus[0].name, "NVIDIA H100 80GB HBM3");
  EXPECT_DOUBLE_EQ(*s.gpus[0].utilization, 0.98);
  EXPECT_DOUBLE_EQ(*s.gpus[0].nvlink_tx, 5e9);
  EXPECT_FALSE(s.gpus[0].temperature.has_value());
  EXPECT_TRUE(s.gpus[1].degraded);
  ASSERT_EQ(s.processes.size(), 2u);
  EXPECT_EQ(s.processes[0].pid, 31000);
  EXPECT_EQ(s.processes[0].gpu_index, 0);
  EXPECT_EQ(s.processes[0].user, "mlops");
  EXPECT_EQ(s.processes[0].executable, "python3");
  EXPECT_DOUBLE_EQ(*s.processes[0].gpu_memory, 5e9);
  EXPECT_DOUBLE_EQ(*s.processes[0].sm, 0.9);
  EXPECT_NEAR(*s.processes[0].cpu, 5.6, 1e-9);
  EXPECT_EQ(s.processes[1].gpu_index, 1);
  EXPECT_FALSE(s.processes[1].sm.has_value());
}

TEST(FrameSnapshotTest, EmptyFrameIsEmptySnapshot) {
  Snapshot s = SnapshotFromFrame(model::Frame{});
  EXPECT_TRUE(s.gpus.empty());
  EXPECT_TRUE(s.processes.empty());
}

}  // namespace
}  // namespace warpscope::top

// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/cuda_profiler/runtime_metrics.h"

#include <gtest/gtest.h>

#include "agent/sources/cuda_profiler/cuda_profiler_metrics.h"
#include "agent/sources/cuda_profiler/profile_builder.h"
#include "model/process.h"
#include "model/testing/collecting_sink.h"

namespace warpscope::agent::cuda_profiler {
namespace {

namespace m = cuda_profiler_metrics;

constexpr int64_t kSecond = 1'000'000'000;
constexpr uint64_t kMiB = 1u << 20;

MemoryActivity Copy(std::string kind, uint64_t bytes, int64_t start, int64_t ns,
                    uint32_t device = 0, uint32_t stream = 7) {
  MemoryActivity a;
  a.op = MemoryActivity::Op::kMemcpy;
  a.kind = std::move(kind);
  a.bytes = bytes;
  a.start_ns = start;
  a.end_ns = start + ns;
  a.device = device;
  a.stream = stream;
  return a;
}

model::Labels Device(uint32_t d) { return {{"cuda.device", std::to_string(d)}}; }
model::Labels Direction(uint32_t d, std::string dir) {
  return {{"cuda.device", std::to_string(d)}, {"direction", std::move(dir)}};
}
model::Labels Stream(uint32_t d, std::string stream) {
  return {{"cuda.device", std::to_string(d)}, {"stream", std::move(stream)}};
}
model::Labels Kind(uint32_t d, std::string kind) {
  return {{"cuda.device", std::to_string(d)}, {"kind", std::move(kind)}};
}

TEST(CopyDirectionTest, NamesEveryCopyKind) {
  EXPECT_EQ(CopyDirection("HtoD"), "H2D");
  EXPECT_EQ(CopyDirection("DtoH"), "D2H");
  EXPECT_EQ(CopyDirection("DtoD"), "D2D");
  EXPECT_EQ(CopyDirection("PtoP"), "P2P");
  EXPECT_EQ(CopyDirection("HtoH"), "H2H");
  EXPECT_EQ(CopyDirection("HtoA"), "H2D");
  EXPECT_EQ(CopyDirection("AtoH"), "D2H");
  EXPECT_EQ(CopyDirection("AtoA"), "D2D");
  EXPECT_EQ(CopyDirection("AtoD"), "D2D");
  EXPECT_EQ(CopyDirection("DtoA"), "D2D");
  EXPECT_EQ(CopyDirection("unknown"), "unknown");
}

TEST(RuntimeMetricsTest, CopiesAreExactBytesAndTimePerDirection) {
  RuntimeMetrics r;
  r.AddMemory(Copy("HtoD", 1 * kMiB, 100, 1000));
  r.AddMemory(Copy("HtoD", 3 * kMiB, 5000, 3000));
  r.AddMemory(Copy("HtoA", 1 * kMiB, 9000, 500));  // to a CUDA array: device memory
  r.AddMemory(Copy("DtoH", 256 * 1024, 200, 500));
  r.AddMemory(Copy("DtoD", 2 * kMiB, 300, 200, 1));
  r.AddMemory(Copy("PtoP", 4 * kMiB, 400, 800, 1, 8));
  MemoryActivity set;
  set.op = MemoryActivity::Op::kMemset;
  set.kind = "device";
  set.bytes = kMiB;
  set.start_ns = 10;
  set.end_ns = 110;
  r.AddMemory(set);
  model::CollectingSink sink;
  r.Emit(sink, "p");
  EXPECT_EQ(sink.Find(m::kMemcpyBytes.key, "p", Direction(0, "H2D")), 5.0 * kMiB);
  EXPECT_DOUBLE_EQ(*sink.Find(m::kMemcpyTime.key, "p", Direction(0, "H2D")), 4500e-9);
  EXPECT_EQ(sink.Find(m::kMemcpyBytes.key, "p", Direction(0, "D2H")), 256.0 * 1024);
  EXPECT_DOUBLE_EQ(*sink.Find(m::kMemcpyTime.key, "p", Direction(0, "D2H")), 500e-9);
  EXPECT_EQ(sink.Find(m::kMemcpyBytes.key, "p", Direction(1, "D2D")), 2.0 * kMiB);
  EXPECT_EQ(sink.Find(m::kMemcpyBytes.key, "p", Direction(1, "P2P")), 4.0 * kMiB);
  EXPECT_DOUBLE_EQ(*sink.Find(m::kMemcpyTime.key, "p", Direction(1, "P2P")), 800e-9);
  EXPECT_EQ(sink.Find(m::kMemcpyBytes.key, "p", Direction(0, "D2D")), std::nullopt);
  EXPECT_EQ(sink.Find(m::kMemsetBytes.key, "p", Device(0)), 1.0 * kMiB);
  EXPECT_DOUBLE_EQ(*sink.Find(m::kMemsetTime.key, "p", Device(0)), 100e-9);
}

TEST(RuntimeMetricsTest, StreamBusyIsKernelTimeOverTheWindow) {
  RuntimeMetrics r;
  // A 2 s window: stream 7 ran 1.5 s of kernels in two aggregates, stream 9 0.2 s, device 1's
  // stream 7 more than the window (clamped at 1).
  r.AddKernelAggregate(KernelAggregate{"gemm", 0, 7, 1000, 1'000'000'000});
  r.AddKernelAggregate(KernelAggregate{"softmax", 0, 7, 500, 500'000'000});
  r.AddKernelAggregate(KernelAggregate{"gemm", 0, 9, 10, 200'000'000});
  r.AddKernelAggregate(KernelAggregate{"gemm", 1, 7, 1, 3 * kSecond});
  r.FinishWindow(10 * kSecond, 12 * kSecond);
  EXPECT_EQ(r.stream_busy(), (std::vector<RuntimeMetrics::StreamBusy>{
                                 {0, "7", 0.75}, {0, "9", 0.1}, {1, "7", 1.0}}));
  model::CollectingSink sink;
  r.Emit(sink, "p");
  EXPECT_DOUBLE_EQ(*sink.Find(m::kStreamBusy.key, "p", Stream(0, "7")), 0.75);
  EXPECT_DOUBLE_EQ(*sink.Find(m::kStreamBusy.key, "p", Stream(0, "9")), 0.1);
  EXPECT_EQ(sink.Find(m::kKernelLaunches.key, "p", Device(0)), 1510);
  EXPECT_DOUBLE_EQ(*sink.Find(m::kKernelTime.key, "p", Device(0)), 1.7);
  EXPECT_EQ(sink.Find(m::kKernelLaunches.key, "p", Device(1)), 1);

  // The next window: stream 9 idle reads 0 once; launches and time keep counting.
  r.AddKernelAggregate(KernelAggregate{"gemm", 0, 7, 10, 100'000'000});
  r.FinishWindow(12 * kSecond, 13 * kSecond);
  EXPECT_EQ(r.stream_busy(), (std::vector<RuntimeMetrics::StreamBusy>{
                                 {0, "7", 0.1}, {0, "9", 0.0}, {1, "7", 0.0}}));
  r.FinishWindow(13 * kSecond, 14 * kSecond);
  EXPECT_EQ(r.stream_busy(), (std::vector<RuntimeMetrics::StreamBusy>{{0, "7", 0.0}}));
  r.FinishWindow(14 * kSecond, 15 * kSecond);
  EXPECT_TRUE(r.stream_busy().empty());
  model::CollectingSink later;
  r.Emit(later, "p");
  EXPECT_EQ(later.Find(m::kKernelLaunches.key, "p", Device(0)), 1520);
}

TEST(RuntimeMetricsTest, StreamsBeyondTheBoundAreSummedUnderOther) {
  RuntimeMetrics r(RuntimeMetrics::Options{.max_streams = 2});
  for (uint32_t s = 1; s <= 5; ++s) {
    r.AddKernelAggregate(KernelAggregate{"k", 0, s, 1, s * 100'000'000ull});
  }
  r.FinishWindow(0, kSecond);
  // The two busiest (5, 4) keep their series; 1 + 2 + 3 = 0.6 s go to "other".
  ASSERT_EQ(r.stream_busy().size(), 3u);
  EXPECT_EQ(r.stream_busy()[0].stream, "4");
  EXPECT_DOUBLE_EQ(r.stream_busy()[0].ratio, 0.4);
  EXPECT_EQ(r.stream_busy()[1].stream, "5");
  EXPECT_EQ(r.stream_busy()[2].stream, kOtherStreams);
  EXPECT_DOUBLE_EQ(r.stream_busy()[2].ratio, 0.6);
}

TEST(RuntimeMetricsTest, AllocatedNowFollowsTheLibraryTotals) {
  RuntimeMetrics r;
  // 64 MiB and 16 MiB allocated, the 16 MiB released; 1 MiB pinned host memory.
  r.UpdateDeviceMemory({{0, "device", 2, 80 * kMiB, 1, 16 * kMiB, 64 * kMiB},
                        {0, "pinned", 1, kMiB, 0, 0, kMiB}});
  model::CollectingSink sink;
  r.Emit(sink, "p");
  EXPECT_EQ(sink.Find(m::kMemoryAllocated.key, "p", Kind(0, "device")), 64.0 * kMiB);
  EXPECT_EQ(sink.Find(m::kMemoryAllocations.key, "p", Kind(0, "device")), 2);
  EXPECT_EQ(sink.Find(m::kMemoryAllocationBytes.key, "p", Kind(0, "device")), 80.0 * kMiB);
  EXPECT_EQ(sink.Find(m::kMemoryReleases.key, "p", Kind(0, "device")), 1);
  EXPECT_EQ(sink.Find(m::kMemoryReleaseBytes.key, "p", Kind(0, "device")), 16.0 * kMiB);
  EXPECT_EQ(sink.Find(m::kMemoryAllocated.key, "p", Kind(0, "pinned")), 1.0 * kMiB);
  // The last totals replace the earlier ones.
  r.UpdateDeviceMemory({{0, "device", 2, 80 * kMiB, 2, 80 * kMiB, 0}});
  model::CollectingSink after;
  r.Emit(after, "p");
  EXPECT_EQ(after.Find(m::kMemoryAllocated.key, "p", Kind(0, "device")), 0);
  EXPECT_EQ(after.Find(m::kMemoryAllocated.key, "p", Kind(0, "pinned")), std::nullopt);
}

// Through the builder: aggregates count every kernel once (kTotals), copies are counted, the
// runtime metrics ride on the process entity and go when the process is forgotten.
TEST(RuntimeMetricsTest, TheBuilderEmitsThemOnTheProcessEntity) {
  ProfileBuilder builder(nullptr, ProfileBuilder::Options{});
  ProcessDesc desc;
  desc.pid = 42;
  desc.executable = "/usr/bin/python3";
  desc.start_ticks = 9;
  builder.AddProcess(desc);
  KernelActivity k;
  k.name = "_Z4gemmv";
  k.stream = 7;
  k.start_ns = kSecond;
  k.end_ns = kSecond + 1000;
  builder.AddKernel(42, k);
  builder.AddKernelAggregate(42, KernelAggregate{"_Z4gemmv", 0, 7, 3, 500'000'000});
  builder.AddMemoryActivity(42, Copy("HtoD", kMiB, kSecond, 1000));
  builder.UpdateDeviceMemory(42, {{0, "device", 1, kMiB, 0, 0, kMiB}});
  builder.FinishWindow(0, 2 * kSecond);
  model::CollectingSink sink;
  builder.EmitSelfMetrics(sink);
  model::ProcessInfo info;
  info.pid = 42;
  info.start_ticks = 9;
  const std::string entity = model::ProcessEntityId(info);
  EXPECT_EQ(sink.Find(m::kKernelLaunches.key, entity, Device(0)), 3);
  EXPECT_DOUBLE_EQ(*sink.Find(m::kStreamBusy.key, entity, Stream(0, "7")), 0.25);
  EXPECT_EQ(sink.Find(m::kMemcpyBytes.key, entity, Direction(0, "H2D")), 1.0 * kMiB);
  EXPECT_EQ(sink.Find(m::kMemoryAllocated.key, entity, Kind(0, "device")), 1.0 * kMiB);
  builder.ForgetProcess(42);
  model::CollectingSink gone;
  builder.EmitSelfMetrics(gone);
  EXPECT_FALSE(gone.Has(m::kKernelLaunches.key));
}

}  // namespace
}  // namespace warpscope::agent::cuda_profiler

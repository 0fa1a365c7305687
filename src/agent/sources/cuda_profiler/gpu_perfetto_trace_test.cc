// SPDX-License-Identifier: Apache-2.0
// The Perfetto trace of a GPU window (gpu_trace.h), decoded by protoc (profiling/testing/
// perfetto_rows.h), not by our encoder.
#include <gtest/gtest.h>

#include <algorithm>

#include "agent/sources/cuda_profiler/profile_builder.h"
#include "base/testing/peer.h"
#include "profiling/perfetto_trace.h"
#include "profiling/testing/perfetto_rows.h"

namespace warpscope::agent::cuda_profiler {
namespace {

using profiling::testing::PerfettoSlice;
using profiling::testing::PerfettoTraceRows;
using profiling::testing::ReadPerfettoTrace;

constexpr char kGemm[] = "_Z4gemmIfEvPfi";
constexpr char kGemmName[] = "void gemm<float>(float*, int)";
constexpr int32_t kPid = 4242;
constexpr int32_t kTid = 4321;

KernelActivity Kernel(uint64_t correlation, int64_t start, int64_t duration, uint32_t stream = 7) {
  KernelActivity k;
  k.correlation_id = correlation;
  k.name = kGemm;
  k.stream = stream;
  k.context = 1;
  k.start_ns = start;
  k.end_ns = start + duration;
  k.grid = {128, 1, 1};
  k.block = {256, 1, 1};
  k.registers_per_thread = 32;
  k.shared_memory_bytes = 4096;
  k.launch_api = "cudaLaunchKernel";
  k.thread_id = kTid;
  k.api_start_ns = start - 5000;
  k.api_end_ns = start - 1000;
  return k;
}

MemoryActivity Copy(MemoryActivity::Op op, std::string kind, uint64_t bytes, int64_t start,
                    int64_t duration, uint32_t stream = 7) {
  MemoryActivity m;
  m.op = op;
  m.kind = std::move(kind);
  m.correlation_id = 40;
  m.bytes = bytes;
  m.start_ns = start;
  m.end_ns = start + duration;
  m.stream = stream;
  m.context = 1;
  return m;
}

std::vector<const PerfettoSlice*> Category(const PerfettoTraceRows& rows, const std::string& c) {
  std::vector<const PerfettoSlice*> out;
  for (const PerfettoSlice& s : rows.slices) {
    if (s.category == c) out.push_back(&s);
  }
  return out;
}

class GpuPerfettoTraceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    WARPSCOPE_REQUIRE_PEER(profiling::testing::ProtocAvailable(), "protoc",
                           profiling::testing::kProtocSetup);
    builder_.AddProcess({kPid, "/usr/bin/python3.11", 1'000'000'000, 55});
  }
  // The window's Perfetto trace, decoded.
  PerfettoTraceRows Finish(int64_t start, int64_t end) {
    auto profiles = builder_.FinishWindow(start, end);
    EXPECT_EQ(profiles.size(), 1u);
    return profiles.empty() ? PerfettoTraceRows{} : ReadPerfettoTrace(profiles[0].perfetto_trace);
  }

  ProfileBuilder builder_{nullptr, {}};
};

TEST_F(GpuPerfettoTraceTest, KernelsOnStreamTracksUnderTheirGpuWithFlowsFromLaunches) {
  builder_.AddKernel(kPid, Kernel(11, 2'000'000'000, 1500));
  builder_.AddKernel(kPid, Kernel(12, 2'000'100'000, 2500, /*stream=*/9));
  const PerfettoTraceRows rows = Finish(0, 3'000'000'000);
  ASSERT_EQ(rows.error, "");
  const auto kernels = Category(rows, "kernel");
  const auto launches = Category(rows, "cuda_api");
  ASSERT_EQ(kernels.size(), 2u);
  ASSERT_EQ(launches.size(), 2u);

  const PerfettoSlice& k = *kernels[0];
  EXPECT_EQ(k.name, kGemmName);
  EXPECT_EQ(k.start_ns, 2'000'000'000);
  EXPECT_EQ(k.end_ns, 2'000'001'500);
  EXPECT_EQ(k.args.at("correlation_id"), "11");
  EXPECT_EQ(k.args.at("grid"), "[128, 1, 1]");
  EXPECT_EQ(k.args.at("block"), "[256, 1, 1]");
  EXPECT_EQ(k.args.at("registers_per_thread"), "32");
  EXPECT_EQ(k.args.at("shared_memory_bytes"), "4096");
  EXPECT_EQ(k.args.count("graph_id"), 0u) << "not in a graph";

  const profiling::testing::PerfettoTrack& stream = rows.tracks.at(k.track);
  EXPECT_EQ(stream.name, "stream 7 (pid 4242)");
  EXPECT_EQ(rows.tracks.at(stream.parent).name, "GPU 0");
  EXPECT_EQ(rows.tracks.at(kernels[1]->track).name, "stream 9 (pid 4242)");
  EXPECT_EQ(rows.tracks.at(kernels[1]->track).parent, stream.parent) << "one GPU track";

  const PerfettoSlice& launch = *launches[0];
  EXPECT_EQ(launch.name, "cudaLaunchKernel");
  EXPECT_EQ(launch.start_ns, 2'000'000'000 - 5000);
  EXPECT_EQ(launch.end_ns, 2'000'000'000 - 1000);
  const profiling::testing::PerfettoTrack& thread = rows.tracks.at(launch.track);
  EXPECT_EQ(thread.pid, kPid);
  EXPECT_EQ(thread.tid, kTid);
  EXPECT_EQ(thread.name, "thread 4321");
  const profiling::testing::PerfettoTrack* process = rows.TrackNamed("python3.11 (pid 4242)");
  ASSERT_NE(process, nullptr);
  EXPECT_EQ(process->pid, kPid);

  ASSERT_EQ(launch.flows.size(), 1u);
  EXPECT_EQ(k.terminating_flows, launch.flows);
  ASSERT_EQ(launches[1]->flows.size(), 1u);
  EXPECT_NE(launches[1]->flows, launch.flows);
  EXPECT_EQ(kernels[1]->terminating_flows, launches[1]->flows);
}

TEST_F(GpuPerfettoTraceTest, CopiesOnStreamTracksAndNvtxAroundTheLaunchOnItsThread) {
  builder_.AddKernel(kPid, Kernel(11, 2'000'000'000, 1500));
  builder_.AddMemoryActivity(
      kPid, Copy(MemoryActivity::Op::kMemcpy, "HtoD", 64 << 20, 1'990'000'000, 2'000'000));
  builder_.AddMemoryActivity(
      kPid, Copy(MemoryActivity::Op::kMemset, "device", 1536, 2'000'010'000, 0, /*stream=*/9));
  NvtxRange step{"train_step \"3\"", "trainer", 1'989'000'000, 2'000'050'000, kTid};
  builder_.AddNvtxRange(kPid, step);
  // A range that ends exactly where the launch begins, and a marker on another thread.
  builder_.AddNvtxRange(kPid, {"data", "", 1'989'500'000, 2'000'000'000 - 5000, kTid});
  builder_.AddNvtxRange(kPid, {"checkpoint", "", 2'000'060'000, 2'000'060'000, 77});
  const PerfettoTraceRows rows = Finish(0, 3'000'000'000);
  ASSERT_EQ(rows.error, "");

  const auto copies = Category(rows, "memcpy");
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_EQ(copies[0]->name, "memcpy HtoD 64 MiB");
  EXPECT_EQ(copies[0]->end_ns - copies[0]->start_ns, 2'000'000);
  EXPECT_EQ(copies[0]->args.at("kind"), "HtoD");
  EXPECT_EQ(copies[0]->args.at("bytes"), std::to_string(64 << 20));
  EXPECT_NEAR(std::stod(copies[0]->args.at("throughput_gb_per_s")), 33.554, 0.001);
  EXPECT_EQ(copies[0]->track, Category(rows, "kernel")[0]->track) << "the copy's stream";
  const auto memsets = Category(rows, "memset");
  ASSERT_EQ(memsets.size(), 1u);
  EXPECT_EQ(memsets[0]->name, "memset 1.5 KiB");
  EXPECT_EQ(memsets[0]->args.at("memory_kind"), "device");
  EXPECT_EQ(memsets[0]->args.count("throughput_gb_per_s"), 0u) << "no duration, no rate";
  EXPECT_EQ(rows.tracks.at(memsets[0]->track).name, "stream 9 (pid 4242)");

  const auto ranges = Category(rows, "nvtx");
  ASSERT_EQ(ranges.size(), 3u);
  const PerfettoSlice& range = *rows.Named("train_step \"3\"")[0];
  EXPECT_EQ(range.start_ns, 1'989'000'000);
  EXPECT_EQ(range.end_ns, 2'000'050'000);
  EXPECT_EQ(range.args.at("domain"), "trainer");
  const PerfettoSlice& launch = *Category(rows, "cuda_api")[0];
  EXPECT_EQ(range.track, launch.track) << "the launch's thread track";
  EXPECT_EQ(launch.end_ns - launch.start_ns, 4000) << "closed in place, not by the range";
  EXPECT_EQ(rows.Named("data")[0]->end_ns, launch.start_ns);
  const PerfettoSlice& marker = *rows.Named("checkpoint")[0];
  EXPECT_EQ(marker.type, "TYPE_INSTANT");
  EXPECT_EQ(rows.tracks.at(marker.track).tid, 77);
}

TEST_F(GpuPerfettoTraceTest, GraphLaunchDrawsOneLaunchSliceWithAFlowToEachKernel) {
  for (int i = 0; i < 3; ++i) {
    KernelActivity k = Kernel(50, 2'000'000'000 + i * 10'000, 1000);
    k.launch_api = "cudaGraphLaunch";
    k.graph_id = 3;
    builder_.AddKernel(kPid, k);
  }
  const PerfettoTraceRows rows = Finish(0, 3'000'000'000);
  ASSERT_EQ(rows.error, "");
  const auto launches = Category(rows, "cuda_api");
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_EQ(launches[0]->name, "cudaGraphLaunch");
  ASSERT_EQ(launches[0]->flows.size(), 3u);
  std::vector<uint64_t> ends;
  for (const PerfettoSlice* k : Category(rows, "kernel")) {
    EXPECT_EQ(k->args.at("graph_id"), "3");
    ends.insert(ends.end(), k->terminating_flows.begin(), k->terminating_flows.end());
  }
  std::vector<uint64_t> starts = launches[0]->flows;
  std::sort(starts.begin(), starts.end());
  std::sort(ends.begin(), ends.end());
  EXPECT_EQ(starts, ends);
}

TEST_F(GpuPerfettoTraceTest, WindowsOfSeveralProcessesConcatenateIntoOneValidTrace) {
  builder_.AddProcess({kPid + 1, "/usr/bin/trainer", 1'000'000'000, 56});
  std::string merged;
  for (int window = 0; window < 3; ++window) {
    const int64_t base = 1'000'000 * (window + 1);
    builder_.AddKernel(kPid, Kernel(100 + window, base + 10'000, 1000));
    builder_.AddKernel(kPid + 1, Kernel(200 + window, base + 10'000, 1000));
    builder_.AddNvtxRange(kPid, {"step", "", base, base + 20'000, kTid});
    for (const profiling::WindowProfile& p : builder_.FinishWindow(base, base + 1'000'000)) {
      merged += p.perfetto_trace;
    }
  }
  const PerfettoTraceRows rows = ReadPerfettoTrace(merged);
  ASSERT_EQ(rows.error, "") << "interning per sequence, one meaning per track uuid";
  EXPECT_EQ(Category(rows, "kernel").size(), 6u);
  EXPECT_EQ(rows.Named("step").size(), 3u);
  std::set<uint64_t> flows;
  for (const PerfettoSlice* launch : Category(rows, "cuda_api")) {
    flows.insert(launch->flows.begin(), launch->flows.end());
  }
  EXPECT_EQ(flows.size(), 6u) << "flow ids unique across windows and processes";
  // Two processes' stream 7 on GPU 0: two tracks under one GPU track.
  EXPECT_NE(rows.TrackNamed("stream 7 (pid 4242)"), nullptr);
  EXPECT_NE(rows.TrackNamed("stream 7 (pid 4243)"), nullptr);
  EXPECT_EQ(rows.TrackNamed("stream 7 (pid 4242)")->parent,
            rows.TrackNamed("stream 7 (pid 4243)")->parent);
}

TEST(GpuTraceFormatsTest, EachTraceIsBuiltOnlyWhenAskedFor) {
  for (const profiling::TraceFormat format :
       {profiling::TraceFormat::kPerfetto, profiling::TraceFormat::kChrome}) {
    ProfileBuilder::Options options;
    options.formats = profiling::ProfileFormats::Files(format);
    ProfileBuilder builder(nullptr, options);
    builder.AddProcess({kPid, "/usr/bin/python3.11", 0, 0});
    builder.AddKernel(kPid, Kernel(1, 1'000'000, 10));
    auto profiles = builder.FinishWindow(0, 2'000'000);
    ASSERT_EQ(profiles.size(), 1u);
    const bool perfetto = format == profiling::TraceFormat::kPerfetto;
    EXPECT_EQ(profiles[0].perfetto_trace.empty(), !perfetto);
    EXPECT_EQ(profiles[0].trace_json.empty(), perfetto);
  }
}

}  // namespace
}  // namespace warpscope::agent::cuda_profiler

// SPDX-License-Identifier: Apache-2.0
#include "profiling/perfetto_trace.h"

#include <gtest/gtest.h>

#include <set>

#include "base/testing/peer.h"
#include "profiling/testing/perfetto_rows.h"

namespace warpscope::profiling {
namespace {

using testing::ProtocAvailable;
using testing::ReadPerfettoTrace;

class PerfettoTraceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    WARPSCOPE_REQUIRE_PEER(ProtocAvailable(), "protoc", testing::kProtocSetup);
  }
};

TEST_F(PerfettoTraceTest, TracksSlicesAnnotationsAndFlowsDecode) {
  PerfettoTraceWriter w(7);
  const uint64_t process = ProcessTrackUuid(42);
  const uint64_t thread = ThreadTrackUuid(42, 43);
  w.ProcessTrack(process, 42, "python3 (pid 42)");
  w.ThreadTrack(thread, 42, 43, "thread 43");
  w.Track(GpuTrackUuid(0), 0, "GPU 0", 1);
  w.Track(GpuStreamTrackUuid(42, 0, 7), GpuTrackUuid(0), "stream 7", 7);
  w.Slice(thread, "cuda_api", "cudaLaunchKernel", 1'700'000'000'000'000'100,
          1'700'000'000'000'000'300)
      .Uint("correlation_id", 9)
      .Flow(1);
  w.Slice(GpuStreamTrackUuid(42, 0, 7), "kernel", "gemm \"tiled\"", 1'700'000'000'000'001'000,
          1'700'000'000'000'003'500)
      .Uint("correlation_id", 9)
      .InternedStr("grid", "[128, 1, 1]")
      .Int("delta", -5)
      .Double("ratio", 0.25)
      .Str("kind", "HtoD")
      .TerminatingFlow(1);
  w.Instant(thread, "nvtx", "marker", 1'700'000'000'000'004'000);
  w.CounterTrack(ProcessChildTrackUuid(42, 1), process, "CPU cores");
  w.Counter(ProcessChildTrackUuid(42, 1), 1'700'000'000'000'005'000, 1.5);

  const testing::PerfettoTraceRows rows = ReadPerfettoTrace(w.Finish());
  ASSERT_EQ(rows.error, "");
  ASSERT_EQ(rows.tracks.size(), 5u);
  EXPECT_EQ(rows.tracks.at(process).pid, 42);
  EXPECT_EQ(rows.tracks.at(process).name, "python3 (pid 42)");
  EXPECT_EQ(rows.tracks.at(thread).tid, 43);
  EXPECT_EQ(rows.tracks.at(GpuStreamTrackUuid(42, 0, 7)).parent, GpuTrackUuid(0));
  EXPECT_TRUE(rows.tracks.at(ProcessChildTrackUuid(42, 1)).counter);

  ASSERT_EQ(rows.slices.size(), 4u);
  const testing::PerfettoSlice& launch = rows.slices[0];
  EXPECT_EQ(launch.name, "cudaLaunchKernel");
  EXPECT_EQ(launch.category, "cuda_api");
  EXPECT_EQ(launch.track, thread);
  EXPECT_EQ(launch.start_ns, 1'700'000'000'000'000'100);
  EXPECT_EQ(launch.end_ns, 1'700'000'000'000'000'300);
  EXPECT_EQ(launch.flows, std::vector<uint64_t>{1});
  const testing::PerfettoSlice& kernel = rows.slices[1];
  EXPECT_EQ(kernel.name, "gemm \"tiled\"");
  EXPECT_EQ(kernel.end_ns - kernel.start_ns, 2500);
  EXPECT_EQ(kernel.terminating_flows, std::vector<uint64_t>{1});
  EXPECT_EQ(kernel.args.at("correlation_id"), "9");
  EXPECT_EQ(kernel.args.at("grid"), "[128, 1, 1]");
  EXPECT_EQ(kernel.args.at("delta"), "-5");
  EXPECT_EQ(kernel.args.at("ratio"), "0.25");
  EXPECT_EQ(kernel.args.at("kind"), "HtoD");
  EXPECT_EQ(rows.slices[2].type, "TYPE_INSTANT");
  EXPECT_EQ(rows.slices[2].name, "marker");
  EXPECT_EQ(rows.slices[3].type, "TYPE_COUNTER");
  EXPECT_EQ(rows.slices[3].counter, 1.5);
}

TEST_F(PerfettoTraceTest, NamesAreInternedOnceAndLongMessagesKeepTheirLength) {
  PerfettoTraceWriter w(1);
  const uint64_t track = GpuStreamTrackUuid(1, 0, 1);
  w.Track(track, 0, "stream 1");
  const std::string long_name(300, 'k');  // a TrackEvent longer than 127 bytes
  for (int i = 0; i < 100; ++i) {
    w.Slice(track, "kernel", i % 2 == 0 ? "a" : long_name, i * 10, i * 10 + 5)
        .InternedStr("grid", "[1, 1, 1]");
  }
  const std::string bytes = w.Finish();
  // Each string appears once in the bytes: interned, then referred to by iid.
  size_t at = 0;
  size_t copies = 0;
  while ((at = bytes.find(long_name, at)) != std::string::npos) {
    ++copies;
    at += long_name.size();
  }
  EXPECT_EQ(copies, 1u);
  const testing::PerfettoTraceRows rows = ReadPerfettoTrace(bytes);
  ASSERT_EQ(rows.error, "");
  ASSERT_EQ(rows.slices.size(), 100u);
  EXPECT_EQ(rows.slices[99].name, long_name);
  EXPECT_EQ(rows.slices[99].start_ns, 990);
  EXPECT_EQ(rows.slices[99].end_ns, 995);
  EXPECT_EQ(rows.slices[98].args.at("grid"), "[1, 1, 1]");
}

TEST_F(PerfettoTraceTest, NestedSlicesWrittenByStartTimeCloseInPlace) {
  PerfettoTraceWriter w(1);
  const uint64_t t = ThreadTrackUuid(1, 1);
  w.ThreadTrack(t, 1, 1, "thread 1");
  // Written by start, the longer first: a range, a launch inside it that ends with it, and a
  // launch that starts where the range ends.
  w.Slice(t, "nvtx", "step", 100, 200);
  w.Slice(t, "cuda_api", "launch 1", 100, 150);
  w.Slice(t, "cuda_api", "launch 2", 180, 200);
  w.Slice(t, "cuda_api", "launch 3", 200, 230);
  const testing::PerfettoTraceRows rows = ReadPerfettoTrace(w.Finish());
  ASSERT_EQ(rows.error, "");
  std::map<std::string, std::pair<int64_t, int64_t>> spans;
  for (const testing::PerfettoSlice& s : rows.slices) spans[s.name] = {s.start_ns, s.end_ns};
  EXPECT_EQ(spans["step"], std::make_pair(int64_t{100}, int64_t{200}));
  EXPECT_EQ(spans["launch 1"], std::make_pair(int64_t{100}, int64_t{150}));
  EXPECT_EQ(spans["launch 2"], std::make_pair(int64_t{180}, int64_t{200}));
  EXPECT_EQ(spans["launch 3"], std::make_pair(int64_t{200}, int64_t{230}));
}

TEST_F(PerfettoTraceTest, ConcatenatedWritersAreOneValidTrace) {
  std::string merged;
  for (uint32_t seq : {1u, 2u, 1u}) {  // a sequence may recur: each writer clears its state
    PerfettoTraceWriter w(seq);
    w.ProcessTrack(ProcessTrackUuid(5), 5, "p (pid 5)");
    w.Slice(ProcessTrackUuid(5), seq == 1 ? "one" : "two", seq == 1 ? "x" : "y", seq * 100,
            seq * 100 + 10)
        .Uint("n", seq);
    merged += w.Finish();
  }
  const testing::PerfettoTraceRows rows = ReadPerfettoTrace(merged);
  ASSERT_EQ(rows.error, "");
  ASSERT_EQ(rows.slices.size(), 3u);
  EXPECT_EQ(rows.tracks.size(), 1u);
  EXPECT_EQ(rows.Named("x").size(), 2u);
  EXPECT_EQ(rows.Named("y")[0]->category, "two");
}

TEST(PerfettoTrackUuidTest, KindsAndIdsNeverCollide) {
  std::set<uint64_t> uuids;
  size_t n = 0;
  for (int32_t pid : {1, 2, 4194303}) {
    uuids.insert(ProcessTrackUuid(pid));
    for (int32_t tid : {1, 2, 4194303}) uuids.insert(ThreadTrackUuid(pid, tid));
    for (uint32_t device : {0u, 1u, 127u}) {
      for (uint32_t stream : {0u, 7u, 0xffffffffu}) {
        uuids.insert(GpuStreamTrackUuid(pid, device, stream));
      }
    }
    uuids.insert(ProcessChildTrackUuid(pid, 0));
    uuids.insert(ProcessChildTrackUuid(pid, 1));
    n += 1 + 3 + 9 + 2;
  }
  for (uint32_t device : {0u, 1u, 127u}) uuids.insert(GpuTrackUuid(device));
  n += 3;
  EXPECT_EQ(uuids.size(), n);
  EXPECT_EQ(uuids.count(0), 0u) << "0 is no track";
}

}  // namespace
}  // namespace warpscope::profiling

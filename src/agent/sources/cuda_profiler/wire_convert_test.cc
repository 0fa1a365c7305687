// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/cuda_profiler/wire_convert.h"

#include <gtest/gtest.h>

#include "cupti/abi.h"

namespace warpscope::agent::cuda_profiler {
namespace {

namespace w = ::warpscope::cupti::wire;

// Keeps every input, in order.
class RecordingInputSink final : public ProfileInputSink {
 public:
  void AddProcess(const ProcessDesc& process) override { processes.push_back(process); }
  void AddStack(int32_t pid, InternedStack stack) override {
    stacks.emplace_back(pid, std::move(stack));
  }
  void AddKernel(int32_t pid, KernelActivity kernel) override {
    kernels.emplace_back(pid, std::move(kernel));
  }
  void AddKernelAggregate(int32_t pid, const KernelAggregate& aggregate) override {
    aggregates.emplace_back(pid, aggregate);
  }
  void AddPcSample(int32_t pid, const PcSample& sample) override {
    samples.emplace_back(pid, sample);
  }
  void AddMemoryActivity(int32_t pid, MemoryActivity activity) override {
    memory.emplace_back(pid, std::move(activity));
  }
  void AddNvtxRange(int32_t pid, NvtxRange range) override {
    ranges.emplace_back(pid, std::move(range));
  }
  void UpdateCounters(int32_t pid, const ProcessCounters& c) override {
    counters.emplace_back(pid, c);
  }
  void UpdateDeviceMemory(int32_t pid, std::vector<DeviceMemoryTotals> totals) override {
    device_memory.emplace_back(pid, std::move(totals));
  }

  std::vector<ProcessDesc> processes;
  std::vector<std::pair<int32_t, InternedStack>> stacks;
  std::vector<std::pair<int32_t, KernelActivity>> kernels;
  std::vector<std::pair<int32_t, KernelAggregate>> aggregates;
  std::vector<std::pair<int32_t, PcSample>> samples;
  std::vector<std::pair<int32_t, ProcessCounters>> counters;
  std::vector<std::pair<int32_t, MemoryActivity>> memory;
  std::vector<std::pair<int32_t, NvtxRange>> ranges;
  std::vector<std::pair<int32_t, std::vector<DeviceMemoryTotals>>> device_memory;
};

w::Hello MakeHello(uint32_t pid) {
  w::Hello h;
  h.pid = pid;
  h.exe = "/usr/bin/python3.11";
  h.start_time_ns = 123;
  return h;
}

w::KernelActivity MakeKernel(uint32_t name_id, uint64_t stack_hash) {
  w::KernelActivity k;
  k.correlation_id = 9;
  k.name_id = name_id;
  k.device = 1;
  k.stream = 7;
  k.context = 3;
  k.start_ns = 1000;
  k.end_ns = 6000;
  k.grid[0] = 4;
  k.grid[1] = 2;
  k.grid[2] = 1;
  k.block[0] = 256;
  k.block[1] = 1;
  k.block[2] = 1;
  k.registers = 32;
  k.static_smem = 100;
  k.dynamic_smem = 28;
  k.graph_id = 5;
  k.stack_hash = stack_hash;
  if (stack_hash != 0) {
    k.launch_tid = 77;
    k.launch_domain = ::warpscope::cupti::abi::kDomainRuntimeApi;
    k.launch_cbid = ::warpscope::cupti::abi::kCbidCudaLaunchKernel;
    k.launch_ns = 900;
  }
  return k;
}

class ConnectionConverterTest : public ::testing::Test {
 protected:
  void Feed(ConnectionConverter& c, w::Message m) {
    ConnectionConverter::Events events;
    c.Handle(std::move(m), sink_, events);
    if (events.hello) {
      ++hellos_;
    }
    for (auto& n : events.notices) {
      notices_.push_back(n);
    }
    for (auto& cubin : events.cubins) {
      cubins_.push_back(cubin);
    }
  }

  RecordingInputSink sink_;
  int hellos_ = 0;
  std::vector<w::Notice> notices_;
  std::vector<std::pair<uint64_t, std::string>> cubins_;
};

TEST_F(ConnectionConverterTest, HelloAnnouncesTheProcess) {
  ConnectionConverter::Options options;
  options.start_ticks_of = [](int32_t pid) { return pid == 42 ? 555u : 0u; };
  ConnectionConverter c(0, options);
  Feed(c, MakeHello(42));
  ASSERT_EQ(sink_.processes.size(), 1u);
  EXPECT_EQ(sink_.processes[0].pid, 42);
  EXPECT_EQ(sink_.processes[0].executable, "/usr/bin/python3.11");
  EXPECT_EQ(sink_.processes[0].start_time_ns, 123);
  EXPECT_EQ(sink_.processes[0].start_ticks, 555u);
  EXPECT_EQ(hellos_, 1);
  EXPECT_EQ(c.pid(), 42);
}

TEST_F(ConnectionConverterTest, PeerPidWinsOverThePidTheProcessClaims) {
  ConnectionConverter c(4242, {});
  Feed(c, MakeHello(7));  // its pid in its own namespace
  EXPECT_EQ(c.pid(), 4242);
  ASSERT_EQ(sink_.processes.size(), 1u);
  EXPECT_EQ(sink_.processes[0].pid, 4242);
}

TEST_F(ConnectionConverterTest, MessagesBeforeHelloWithoutPeerPidAreDropped) {
  ConnectionConverter c(0, {});
  Feed(c, w::KernelName{1, "k"});
  Feed(c, MakeKernel(1, 0));
  EXPECT_TRUE(sink_.kernels.empty());
  EXPECT_EQ(c.stats().before_hello, 2u);
}

TEST_F(ConnectionConverterTest, KernelNamedBeforeItsActivityIsConvertedFieldByField) {
  ConnectionConverter c(0, {});
  Feed(c, MakeHello(42));
  Feed(c, w::KernelName{1, "_Z4gemmv"});
  Feed(c, MakeKernel(1, 0xabc));
  ASSERT_EQ(sink_.kernels.size(), 1u);
  const auto& [pid, k] = sink_.kernels[0];
  EXPECT_EQ(pid, 42);
  EXPECT_EQ(k.name, "_Z4gemmv");
  EXPECT_EQ(k.correlation_id, 9u);
  ASSERT_TRUE(k.stack_hash.has_value());
  EXPECT_EQ(*k.stack_hash, 0xabcu);
  EXPECT_EQ(k.device, 1u);
  EXPECT_EQ(k.stream, 7u);
  EXPECT_EQ(k.context, 3u);
  EXPECT_EQ(k.start_ns, 1000);
  EXPECT_EQ(k.end_ns, 6000);
  EXPECT_EQ(k.grid, (Dim3{4, 2, 1}));
  EXPECT_EQ(k.block, (Dim3{256, 1, 1}));
  EXPECT_EQ(k.registers_per_thread, 32u);
  EXPECT_EQ(k.shared_memory_bytes, 128u);
  EXPECT_EQ(k.graph_id, 5u);
  EXPECT_EQ(k.launch_api, "cudaLaunchKernel");
  EXPECT_EQ(k.thread_id, 77);
  EXPECT_EQ(k.api_start_ns, 900);
  EXPECT_EQ(k.api_end_ns, 900 + kLaunchSliceNs);
}

TEST_F(ConnectionConverterTest, StackHashZeroMeansNoStack) {
  ConnectionConverter c(0, {});
  Feed(c, MakeHello(42));
  Feed(c, w::KernelName{1, "k"});
  Feed(c, MakeKernel(1, 0));
  ASSERT_EQ(sink_.kernels.size(), 1u);
  EXPECT_FALSE(sink_.kernels[0].second.stack_hash.has_value());
  EXPECT_TRUE(sink_.kernels[0].second.launch_api.empty());
  EXPECT_EQ(sink_.kernels[0].second.api_end_ns, 0);
}

TEST_F(ConnectionConverterTest, UnknownStackHashPassesThroughForTheBuilderToResolveLater) {
  ConnectionConverter c(0, {});
  Feed(c, MakeHello(42));
  Feed(c, w::KernelName{1, "k"});
  Feed(c, MakeKernel(1, 0x77));  // its Stack has not arrived (it may never)
  w::Stack stack;
  stack.hash = 0x77;
  stack.native = {0x1000, 0x2000};
  stack.python = {w::PythonFrame{"train_step", "train.py", 6}};
  Feed(c, stack);
  ASSERT_EQ(sink_.kernels.size(), 1u);
  EXPECT_EQ(sink_.kernels[0].second.stack_hash, 0x77u);
  ASSERT_EQ(sink_.stacks.size(), 1u);
  EXPECT_EQ(sink_.stacks[0].second.hash, 0x77u);
  EXPECT_EQ(sink_.stacks[0].second.native_pcs, (std::vector<uint64_t>{0x1000, 0x2000}));
  ASSERT_EQ(sink_.stacks[0].second.python_frames.size(), 1u);
  EXPECT_EQ(sink_.stacks[0].second.python_frames[0], (PythonFrame{"train_step", "train.py", 6}));
}

TEST_F(ConnectionConverterTest, ActivityWaitsForItsNameSentAfter) {
  ConnectionConverter c(0, {});
  Feed(c, MakeHello(42));
  Feed(c, MakeKernel(3, 0));
  w::KernelAggregate agg;
  agg.entries.push_back(w::KernelAggregateEntry{3, 1, 7, 10, 50000, 1000, 9000});
  Feed(c, agg);
  EXPECT_TRUE(sink_.kernels.empty());
  EXPECT_TRUE(sink_.aggregates.empty());
  EXPECT_EQ(c.pending(), 2u);
  Feed(c, w::KernelName{3, "late_kernel"});
  ASSERT_EQ(sink_.kernels.size(), 1u);
  EXPECT_EQ(sink_.kernels[0].second.name, "late_kernel");
  ASSERT_EQ(sink_.aggregates.size(), 1u);
  EXPECT_EQ(sink_.aggregates[0].second.name, "late_kernel");
  EXPECT_EQ(c.pending(), 0u);
}

TEST_F(ConnectionConverterTest, NameThatNeverArrivesIsEmittedAfterTwoWindowBoundaries) {
  ConnectionConverter c(0, {});
  Feed(c, MakeHello(42));
  Feed(c, MakeKernel(3, 0));
  c.OnWindowBoundary(sink_);
  EXPECT_TRUE(sink_.kernels.empty());  // it may still come
  c.OnWindowBoundary(sink_);
  ASSERT_EQ(sink_.kernels.size(), 1u);
  EXPECT_EQ(sink_.kernels[0].second.name, kUnknownKernelName);
  EXPECT_EQ(c.stats().unnamed_kernels, 1u);
}

TEST_F(ConnectionConverterTest, CloseEmitsWhatStillWaits) {
  ConnectionConverter c(0, {});
  Feed(c, MakeHello(42));
  Feed(c, MakeKernel(3, 0));
  c.OnClose(sink_);
  ASSERT_EQ(sink_.kernels.size(), 1u);
  EXPECT_EQ(sink_.kernels[0].second.name, kUnknownKernelName);
}

TEST_F(ConnectionConverterTest, PendingIsBounded) {
  ConnectionConverter::Options options;
  options.max_pending = 2;
  ConnectionConverter c(0, options);
  Feed(c, MakeHello(42));
  for (int i = 0; i < 5; ++i) {
    Feed(c, MakeKernel(100 + i, 0));
  }
  EXPECT_EQ(c.pending(), 2u);
  EXPECT_EQ(sink_.kernels.size(), 3u);
  EXPECT_EQ(c.stats().unnamed_kernels, 3u);
}

TEST_F(ConnectionConverterTest, NameIdsArePerConnectionSoAReconnectStartsAfresh) {
  {
    ConnectionConverter first(0, {});
    Feed(first, MakeHello(42));
    Feed(first, w::KernelName{1, "old_kernel"});
    Feed(first, MakeKernel(1, 0));
    first.OnClose(sink_);
  }
  ConnectionConverter second(0, {});
  Feed(second, MakeHello(42));
  Feed(second, MakeKernel(1, 0));  // id 1 is not "old_kernel" on this connection
  EXPECT_EQ(second.pending(), 1u);
  Feed(second, w::KernelName{1, "new_kernel"});
  ASSERT_EQ(sink_.kernels.size(), 2u);
  EXPECT_EQ(sink_.kernels[0].second.name, "old_kernel");
  EXPECT_EQ(sink_.kernels[1].second.name, "new_kernel");
  EXPECT_EQ(sink_.processes.size(), 2u);
}

TEST_F(ConnectionConverterTest, AggregatesKeepEveryEntryWithCountAndTotal) {
  ConnectionConverter c(0, {});
  Feed(c, MakeHello(42));
  Feed(c, w::KernelName{1, "a"});
  Feed(c, w::KernelName{2, "b"});
  w::KernelAggregate agg;
  agg.window_start_ns = 1;
  agg.window_end_ns = 2;
  agg.entries.push_back(w::KernelAggregateEntry{1, 0, 7, 200, 1000000, 5000, 5000});
  agg.entries.push_back(w::KernelAggregateEntry{2, 1, 8, 3, 3000, 1000, 1000});
  Feed(c, agg);
  ASSERT_EQ(sink_.aggregates.size(), 2u);
  const KernelAggregate& a = sink_.aggregates[0].second;
  EXPECT_EQ(a.name, "a");
  EXPECT_EQ(a.device, 0u);
  EXPECT_EQ(a.stream, 7u);
  EXPECT_EQ(a.count, 200u);
  EXPECT_EQ(a.total_gpu_ns, 1000000u);
  EXPECT_EQ(sink_.aggregates[1].second.name, "b");
  EXPECT_EQ(sink_.aggregates[1].second.device, 1u);
}

TEST_F(ConnectionConverterTest, CountersAreMergedCumulativeValues) {
  ConnectionConverter c(0, {});
  Feed(c, MakeHello(42));
  using Id = w::CounterId;
  Feed(c, w::Counters{{{Id::kLaunchesSeen, 100},
                       {Id::kLaunchesAdmitted, 10},
                       {Id::kRingDrops, 2},
                       {Id::kOverheadNs, 5000},
                       {Id::kPythonFramesSkipped, 7},
                       {static_cast<Id>(999), 12345}}});  // a newer library's counter
  Feed(c,
       w::Counters{
           {{Id::kLaunchesSeen, 150}, {Id::kCuptiDroppedRecords, 4}, {Id::kPcSamplesDropped, 1}}});
  ASSERT_EQ(sink_.counters.size(), 2u);
  const ProcessCounters& last = sink_.counters[1].second;
  EXPECT_EQ(last.launches_seen, 150u);
  EXPECT_EQ(last.launches_admitted, 10u);  // kept from the first message
  EXPECT_EQ(last.launches_dropped, 2u);
  EXPECT_EQ(last.records_lost, 5u);
  EXPECT_EQ(last.overhead_ns, 5000u);
  EXPECT_EQ(last.python_frames_skipped, 7u);
}

TEST_F(ConnectionConverterTest, PcSamplesGetTheirStallReasonNames) {
  ConnectionConverter c(0, {});
  Feed(c, MakeHello(42));
  w::StallReasons reasons;
  reasons.device = 0;
  reasons.reasons = {{7, "smsp__pcsamp_warps_issue_stalled_long_scoreboard"}};
  Feed(c, reasons);
  w::PcSamples samples;
  samples.device = 0;
  samples.samples = {{0xc0b1, "_Z4gemmv", 0x40, 7, 100}, {0xc0b1, "_Z4gemmv", 0x50, 12, 25}};
  Feed(c, samples);
  ASSERT_EQ(sink_.samples.size(), 2u);
  EXPECT_EQ(sink_.samples[0].second.cubin_hash, 0xc0b1u);
  EXPECT_EQ(sink_.samples[0].second.function, "_Z4gemmv");
  EXPECT_EQ(sink_.samples[0].second.pc_offset, 0x40u);
  EXPECT_EQ(sink_.samples[0].second.stall_reason,
            "smsp__pcsamp_warps_issue_stalled_long_scoreboard");
  EXPECT_EQ(sink_.samples[0].second.count, 100u);
  EXPECT_EQ(sink_.samples[1].second.stall_reason, "stall reason 12");
}

TEST_F(ConnectionConverterTest, CubinChunksAreReassembledInAnyOrder) {
  ConnectionConverter c(0, {});
  Feed(c, MakeHello(42));
  Feed(c, w::CubinChunk{0x99, 6, 3, "def"});
  EXPECT_TRUE(cubins_.empty());
  Feed(c, w::CubinChunk{0x99, 6, 0, "abc"});
  ASSERT_EQ(cubins_.size(), 1u);
  EXPECT_EQ(cubins_[0].first, 0x99u);
  EXPECT_EQ(cubins_[0].second, "abcdef");
}

TEST_F(ConnectionConverterTest, CubinsOverTheByteCapOrInconsistentAreDropped) {
  ConnectionConverter::Options options;
  options.max_cubin_bytes = 8;
  ConnectionConverter c(0, options);
  Feed(c, MakeHello(42));
  Feed(c, w::CubinChunk{0x1, 100, 0, "x"});  // too big
  Feed(c, w::CubinChunk{0x2, 4, 3, "xyz"});  // past its end
  EXPECT_TRUE(cubins_.empty());
  EXPECT_EQ(c.stats().cubins_dropped, 2u);
}

TEST_F(ConnectionConverterTest, NoticesAreHandedOn) {
  ConnectionConverter c(0, {});
  Feed(c, MakeHello(42));
  Feed(c, w::Notice{w::Severity::kError, 39, "CUPTI is held by another subscriber"});
  ASSERT_EQ(notices_.size(), 1u);
  EXPECT_EQ(notices_[0].code, 39u);
  EXPECT_EQ(c.stats().notices, 1u);
}

TEST_F(ConnectionConverterTest, MemcpyIsConvertedFieldByField) {
  ConnectionConverter c(0, {});
  Feed(c, MakeHello(42));
  w::Memcpy m;
  m.correlation_id = 31;
  m.copy_kind = 1;  // CUPTI_ACTIVITY_MEMCPY_KIND_HTOD
  m.src_kind = 2;
  m.dst_kind = 3;
  m.bytes = 64u << 20;
  m.start_ns = 5000;
  m.end_ns = 9000;
  m.device = 1;
  m.context = 4;
  m.stream = 13;
  m.graph_id = 6;
  Feed(c, m);
  ASSERT_EQ(sink_.memory.size(), 1u);
  EXPECT_EQ(sink_.memory[0].first, 42);
  const MemoryActivity& a = sink_.memory[0].second;
  EXPECT_EQ(a.op, MemoryActivity::Op::kMemcpy);
  EXPECT_EQ(a.kind, "HtoD");
  EXPECT_EQ(a.correlation_id, 31u);
  EXPECT_EQ(a.bytes, 64u << 20);
  EXPECT_EQ(a.start_ns, 5000);
  EXPECT_EQ(a.end_ns, 9000);
  EXPECT_EQ(a.device, 1u);
  EXPECT_EQ(a.context, 4u);
  EXPECT_EQ(a.stream, 13u);
  EXPECT_EQ(a.graph_id, 6u);
  EXPECT_EQ(c.stats().memory_activities, 1u);
  EXPECT_EQ(c.stats().ignored, 0u);
}

TEST_F(ConnectionConverterTest, DeviceMemoryTotalsPassThroughWithTheirKindNamed) {
  ConnectionConverter c(0, {});
  Feed(c, MakeHello(42));
  Feed(c, w::DeviceMemory{{{1, 3, 2, 80u << 20, 1, 16u << 20, 64u << 20},
                           {1, 2, 1, 4096, 0, 0, 4096},
                           {0, 99, 1, 1, 0, 0, 1}}});
  ASSERT_EQ(sink_.device_memory.size(), 1u);
  EXPECT_EQ(sink_.device_memory[0].first, 42);
  const auto& t = sink_.device_memory[0].second;
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0], (DeviceMemoryTotals{1, "device", 2, 80u << 20, 1, 16u << 20, 64u << 20}));
  EXPECT_EQ(t[1], (DeviceMemoryTotals{1, "pinned", 1, 4096, 0, 0, 4096}));
  EXPECT_EQ(t[2].kind, "unknown");
  EXPECT_EQ(c.stats().device_memory, 1u);
}

TEST_F(ConnectionConverterTest, MemsetIsConvertedWithItsMemoryKind) {
  ConnectionConverter c(0, {});
  Feed(c, MakeHello(42));
  w::Memset m;
  m.correlation_id = 32;
  m.value = 0xff;
  m.bytes = 1536;
  m.start_ns = 100;
  m.end_ns = 300;
  m.device = 2;
  m.context = 5;
  m.stream = 14;
  m.memory_kind = 3;  // CUPTI_ACTIVITY_MEMORY_KIND_DEVICE
  m.graph_id = 0;
  Feed(c, m);
  ASSERT_EQ(sink_.memory.size(), 1u);
  const MemoryActivity& a = sink_.memory[0].second;
  EXPECT_EQ(a.op, MemoryActivity::Op::kMemset);
  EXPECT_EQ(a.kind, "device");
  EXPECT_EQ(a.correlation_id, 32u);
  EXPECT_EQ(a.bytes, 1536u);
  EXPECT_EQ(a.start_ns, 100);
  EXPECT_EQ(a.end_ns, 300);
  EXPECT_EQ(a.device, 2u);
  EXPECT_EQ(a.context, 5u);
  EXPECT_EQ(a.stream, 14u);
}

TEST_F(ConnectionConverterTest, NvtxRangeIsConvertedFieldByField) {
  ConnectionConverter c(0, {});
  Feed(c, MakeHello(42));
  Feed(c, w::NvtxRange{"train_step 3", "trainer", 1000, 2000, 77});
  ASSERT_EQ(sink_.ranges.size(), 1u);
  EXPECT_EQ(sink_.ranges[0].first, 42);
  const NvtxRange& r = sink_.ranges[0].second;
  EXPECT_EQ(r.name, "train_step 3");
  EXPECT_EQ(r.domain, "trainer");
  EXPECT_EQ(r.start_ns, 1000);
  EXPECT_EQ(r.end_ns, 2000);
  EXPECT_EQ(r.thread_id, 77) << "the same tid as KernelActivity's launch_tid";
  EXPECT_EQ(c.stats().nvtx_ranges, 1u);
}

TEST_F(ConnectionConverterTest, LaunchAndControlAreStillIgnored) {
  ConnectionConverter c(0, {});
  Feed(c, MakeHello(42));
  Feed(c, w::Launch{});
  Feed(c, w::Control{w::ControlOp::kEnableCollection, 0});
  EXPECT_EQ(c.stats().ignored, 2u);
  EXPECT_TRUE(sink_.memory.empty());
  EXPECT_TRUE(sink_.ranges.empty());
}

TEST(MemoryKindNamesTest, NameEveryCuptiKindAndUnknownBeyond) {
  const char* copies[] = {"unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                          "AtoD",    "DtoA", "DtoD", "HtoH", "PtoP"};
  for (uint8_t i = 0; i < std::size(copies); ++i) {
    EXPECT_EQ(MemcpyKindName(i), copies[i]) << int{i};
  }
  EXPECT_EQ(MemcpyKindName(11), "unknown");
  EXPECT_EQ(MemcpyKindName(255), "unknown");
  EXPECT_EQ(MemoryKindName(1), "pageable");
  EXPECT_EQ(MemoryKindName(2), "pinned");
  EXPECT_EQ(MemoryKindName(5), "managed");
  EXPECT_EQ(MemoryKindName(7), "managed static");
  EXPECT_EQ(MemoryKindName(8), "unknown");
}

TEST(LaunchApiNameTest, NamesDriverAndRuntimeLaunches) {
  namespace abi = ::warpscope::cupti::abi;
  EXPECT_EQ(LaunchApiName(abi::kDomainRuntimeApi, abi::kCbidCudaLaunchKernel), "cudaLaunchKernel");
  EXPECT_EQ(LaunchApiName(abi::kDomainDriverApi, abi::kCbidCuLaunchKernelEx), "cuLaunchKernelEx");
  EXPECT_EQ(LaunchApiName(abi::kDomainDriverApi, abi::kCbidCuGraphLaunch), "cuGraphLaunch");
  EXPECT_EQ(LaunchApiName(abi::kDomainRuntimeApi, 9999), "runtime cbid 9999");
}

}  // namespace
}  // namespace warpscope::agent::cuda_profiler

// SPDX-License-Identifier: Apache-2.0
#include "cupti/wire.h"

#include <gtest/gtest.h>

#include <string>

namespace warpscope::cupti::wire {
namespace {

std::vector<Message> DecodeAll(const std::string& bytes, DecodeStatus* last) {
  StreamDecoder d;
  d.Append(bytes);
  std::vector<Message> out;
  Message m;
  DecodeStatus s;
  while ((s = d.Next(&m)) == DecodeStatus::kOk) {
    out.push_back(m);
  }
  *last = s;
  return out;
}

TEST(CuptiWireTest, RoundTripsEveryMessageType) {
  std::vector<Message> in;
  Hello hello;
  hello.pid = 42;
  hello.exe = "/usr/bin/python3";
  hello.cupti_version = 130001;
  hello.realtime_ns = 5;
  in.push_back(hello);
  in.push_back(Stack{7, {0x1000, 0x2000}, {{"train_step", "train.py", 12}}});
  in.push_back(Launch{9, 100, 123456, 1, 307, 7, "_Z6kernelv"});
  in.push_back(KernelName{3, "_Z6kernelv"});
  KernelActivity ka;
  ka.correlation_id = 9;
  ka.name_id = 3;
  ka.grid[0] = 128;
  ka.block[2] = 4;
  ka.start_ns = 10;
  ka.end_ns = 20;
  ka.graph_node_id = 1ull << 40;
  ka.stack_hash = 7;
  ka.launch_cbid = 211;
  ka.launch_ns = 99;
  in.push_back(ka);
  in.push_back(KernelAggregate{1, 2, {{3, 0, 7, 10, 1000, 50, 200}}});
  in.push_back(Memcpy{1, 1, 2, 3, 4096, 5, 6, 0, 1, 7, 0});
  in.push_back(Memset{2, 0, 512, 5, 6, 0, 1, 7, 2, 0});
  in.push_back(NvtxRange{"step", "app", 1, 2, 3});
  in.push_back(StallReasons{0, {{4, "smsp__pcsamp_warps_issue_stalled_barrier"}}});
  in.push_back(PcSamples{0, 1, 2, 100, 1, {{0xabc, "_Z6kernelv", 0x40, 4, 17}}});
  in.push_back(CubinChunk{0xabc, 10, 4, "abc"});
  in.push_back(Counters{{{CounterId::kLaunchesSeen, 10}, {CounterId::kRingDrops, 2}}});
  in.push_back(Notice{Severity::kError, 39, "CUPTI is held by another subscriber"});
  in.push_back(Control{ControlOp::kSetRate, 50});
  in.push_back(DeviceMemory{{{0, 3, 2, 3u << 20, 1, 1u << 20, 2u << 20}}});

  std::string bytes;
  for (const auto& m : in) {
    Encode(m, &bytes);
  }
  DecodeStatus last;
  auto out = DecodeAll(bytes, &last);
  EXPECT_EQ(last, DecodeStatus::kNeedMore);
  ASSERT_EQ(out.size(), in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(TypeOf(out[i]), TypeOf(in[i])) << i;
    std::string a, b;
    Encode(in[i], &a);
    Encode(out[i], &b);
    EXPECT_EQ(a, b) << "message " << i << " changed in the round trip";
  }
  const auto& stack = std::get<Stack>(out[1]);
  EXPECT_EQ(stack.native, (std::vector<uint64_t>{0x1000, 0x2000}));
  EXPECT_EQ(stack.python[0].function, "train_step");
  EXPECT_EQ(stack.python[0].line, 12u);
  EXPECT_EQ(std::get<Hello>(out[0]).exe, "/usr/bin/python3");
}

TEST(CuptiWireTest, DeviceMemoryKeepsEveryField) {
  const DeviceMemoryEntry device{1, 3, 5, 5ull << 30, 2, 1ull << 30, 4ull << 30};
  const DeviceMemoryEntry pinned{1, 2, 1, 4096, 0, 0, 4096};
  std::string bytes;
  Encode(DeviceMemory{{device, pinned}}, &bytes);
  // Header, count, two entries of 2 x u32 + 5 x u64.
  EXPECT_EQ(bytes.size(), kHeaderSize + 4 + 2 * 48);
  DecodeStatus last;
  auto out = DecodeAll(bytes, &last);
  ASSERT_EQ(out.size(), 1u);
  const auto& m = std::get<DeviceMemory>(out[0]);
  ASSERT_EQ(m.entries.size(), 2u);
  EXPECT_EQ(m.entries[0], device);
  EXPECT_EQ(m.entries[1], pinned);
  // A count larger than the payload can hold is corrupt, not an allocation.
  std::string bad = bytes.substr(0, kHeaderSize + 4);
  bad[0] = 4;
  bad[kHeaderSize] = static_cast<char>(0xff);
  DecodeAll(bad, &last);
  EXPECT_EQ(last, DecodeStatus::kError);
}

TEST(CuptiWireTest, NcclRecordsKeepEveryField) {
  NcclComm comm{0x1234abcdull, "dp", 8, 3, 2, 6, 1000};
  NcclCollective c;
  c.comm_id = comm.comm_id;
  c.rank = 3;
  c.func = "AllReduce";
  c.seq_number = 41;
  c.count = 1 << 20;
  c.datatype = "ncclFloat32";
  c.bytes = 4u << 20;
  c.bus_bytes = 7u << 20;
  c.root = -1;
  c.algo = "RING";
  c.proto = "SIMPLE";
  c.nchannels = 4;
  c.nwarps = 16;
  c.tid = 77;
  c.enqueue_ns = 10;
  c.enqueued_ns = 11;
  c.complete_ns = 90;
  c.gpu_start_ns = 20;
  c.gpu_end_ns = 80;
  c.gpu_exec_ns = 60;
  c.kernel_channels = 4;
  c.proxy_ops = 8;
  c.proxy_steps = 32;
  c.step_bytes = 1 << 22;
  c.flags = kNcclProxyDetail;
  NcclCollective p2p;
  p2p.kind = NcclOpKind::kP2p;
  p2p.func = "Send";
  p2p.root = 5;
  std::string bytes;
  Encode(comm, &bytes);
  Encode(c, &bytes);
  Encode(p2p, &bytes);
  DecodeStatus last;
  const auto out = DecodeAll(bytes, &last);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(std::get<NcclComm>(out[0]), comm);
  EXPECT_EQ(std::get<NcclCollective>(out[1]), c);
  EXPECT_EQ(std::get<NcclCollective>(out[2]), p2p);
  EXPECT_EQ(NcclExecNs(c), 60u);
}

TEST(CuptiWireTest, NcclExecTimeFallsBackToTheLastChildWithoutKernelTimers) {
  NcclCollective c;
  c.enqueue_ns = 100;
  c.complete_ns = 350;
  EXPECT_EQ(NcclExecNs(c), 250u);
  c.complete_ns = 0;
  EXPECT_EQ(NcclExecNs(c), 0u);
}

TEST(CuptiWireTest, HelloWithoutTheComponentFieldReadsAsTheCudaLibrary) {
  Hello hello;
  hello.component = Component::kNccl;
  std::string bytes;
  Encode(hello, &bytes);
  DecodeStatus last;
  EXPECT_EQ(std::get<Hello>(DecodeAll(bytes, &last).at(0)).component, Component::kNccl);
  // A writer from before the field: the frame one byte shorter.
  bytes.pop_back();
  bytes[0] = static_cast<char>(bytes[0] - 1);
  const auto out = DecodeAll(bytes, &last);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(std::get<Hello>(out[0]).component, Component::kCuda);
}

TEST(CuptiWireTest, StackIntoFixedBufferMatchesEncode) {
  const uint64_t native[] = {1, 2, 3};
  const PythonFrameView py[] = {{"f", "a.py", 3}, {"g", "b.py", 9}};
  uint8_t buf[256];
  const size_t n = EncodeStackInto(77, native, py, buf);
  ASSERT_GT(n, 0u);
  std::string expected;
  Encode(Stack{77, {1, 2, 3}, {{"f", "a.py", 3}, {"g", "b.py", 9}}}, &expected);
  EXPECT_EQ(std::string(reinterpret_cast<char*>(buf), n), expected);
  EXPECT_EQ(EncodeStackInto(77, native, py, std::span<uint8_t>(buf, 20)), 0u);
}

TEST(CuptiWireTest, DecodesAcrossPartialAppends) {
  std::string bytes;
  Encode(Launch{1, 2, 3, 1, 307, 5, "k"}, &bytes);
  Encode(Launch{2, 2, 4, 1, 307, 5, "k2"}, &bytes);
  StreamDecoder d;
  Message m;
  int got = 0;
  for (char c : bytes) {
    d.Append(std::string_view(&c, 1));
    while (d.Next(&m) == DecodeStatus::kOk) {
      ++got;
    }
  }
  EXPECT_EQ(got, 2);
  EXPECT_EQ(std::get<Launch>(m).symbol, "k2");
}

TEST(CuptiWireTest, SkipsUnknownTypesAndTrailingFields) {
  std::string bytes;
  // type 200, 3 bytes of payload
  bytes += std::string("\x03\x00\x00\x00\xc8\x01\x00\x00xyz", 11);
  std::string launch;
  Encode(Launch{1, 2, 3, 1, 307, 5, "k"}, &launch);
  launch[0] = static_cast<char>(launch[0] + 2);  // two bytes of a future field
  launch += "zz";
  bytes += launch;
  StreamDecoder d;
  d.Append(bytes);
  Message m;
  ASSERT_EQ(d.Next(&m), DecodeStatus::kOk);
  EXPECT_EQ(std::get<Launch>(m).symbol, "k");
  EXPECT_EQ(d.unknown_frames(), 1u);
}

// A newer library's counter ids decode like any other: an older agent keeps or ignores them.
TEST(CuptiWireTest, CounterIdsUnknownToTheReaderStillDecode) {
  std::string bytes;
  Encode(Counters{{{CounterId::kLaunchesSeen, 5},
                   {static_cast<CounterId>(999), 7},
                   {CounterId::kPythonFramesSkipped, 3}}},
         &bytes);
  StreamDecoder d;
  d.Append(bytes);
  Message m;
  ASSERT_EQ(d.Next(&m), DecodeStatus::kOk);
  const auto& c = std::get<Counters>(m).counters;
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(static_cast<uint16_t>(c[1].id), 999);
  EXPECT_EQ(c[1].value, 7u);
  EXPECT_EQ(c[2].id, CounterId::kPythonFramesSkipped);
  EXPECT_EQ(c[2].value, 3u);
}

TEST(CuptiWireTest, RejectsNewerVersionOversizeAndShortPayloads) {
  DecodeStatus last;
  std::string newer;
  Encode(Control{ControlOp::kEnableCollection, 0}, &newer);
  newer[5] = 9;
  EXPECT_TRUE(DecodeAll(newer, &last).empty());
  EXPECT_EQ(last, DecodeStatus::kError);

  std::string big("\xff\xff\xff\x7f\x03\x01\x00\x00", 8);
  EXPECT_TRUE(DecodeAll(big, &last).empty());
  EXPECT_EQ(last, DecodeStatus::kError);

  std::string short_launch("\x02\x00\x00\x00\x03\x01\x00\x00\x01\x02", 10);
  StreamDecoder d;
  d.Append(short_launch);
  Message m;
  EXPECT_EQ(d.Next(&m), DecodeStatus::kError);
  EXPECT_NE(d.error().find("malformed"), std::string::npos);
}

TEST(CuptiWireTest, RejectsListCountsLargerThanThePayload) {
  std::string bytes;
  Encode(Stack{1, {}, {}}, &bytes);
  // native count field follows the 8-byte header and the 8-byte hash
  bytes[16] = '\xff';
  bytes[17] = '\xff';
  DecodeStatus last;
  EXPECT_TRUE(DecodeAll(bytes, &last).empty());
  EXPECT_EQ(last, DecodeStatus::kError);
}

TEST(CuptiWireTest, CubinChunkMustLieInsideTheCubin) {
  std::string bytes;
  Encode(CubinChunk{1, 2, 1, "abc"}, &bytes);
  DecodeStatus last;
  EXPECT_TRUE(DecodeAll(bytes, &last).empty());
  EXPECT_EQ(last, DecodeStatus::kError);
}

TEST(CuptiWireTest, OversizedListsAreTruncatedToFitAFrame) {
  KernelAggregate agg;
  agg.entries.resize(100000);
  std::string bytes;
  Encode(agg, &bytes);
  EXPECT_LE(bytes.size(), kHeaderSize + kMaxPayload);
  DecodeStatus last;
  auto out = DecodeAll(bytes, &last);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_GT(std::get<KernelAggregate>(out[0]).entries.size(), 1000u);
}

TEST(CuptiWireTest, ControlOpsUnknownToTheReaderStillDecode) {
  std::string bytes;
  Encode(Control{ControlOp::kSetAllKernelsDutyCycle, (100ull << 32) | 1000}, &bytes);
  Encode(Control{static_cast<ControlOp>(200), 7}, &bytes);  // a future op
  DecodeStatus last;
  auto out = DecodeAll(bytes, &last);
  EXPECT_EQ(last, DecodeStatus::kNeedMore);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(std::get<Control>(out[0]).op, ControlOp::kSetAllKernelsDutyCycle);
  EXPECT_EQ(std::get<Control>(out[0]).value, (100ull << 32) | 1000);
  EXPECT_EQ(static_cast<int>(std::get<Control>(out[1]).op), 200);

  std::string zero;
  Encode(Control{static_cast<ControlOp>(0), 0}, &zero);
  EXPECT_TRUE(DecodeAll(zero, &last).empty());
  EXPECT_EQ(last, DecodeStatus::kError);
}

TEST(CuptiWireTest, HashIsNeverZero) {
  EXPECT_NE(HashBytes(kHashSeed, "", 0), 0u);
  EXPECT_NE(HashBytes(kHashSeed, "a", 1), HashBytes(kHashSeed, "b", 1));
}

}  // namespace
}  // namespace warpscope::cupti::wire

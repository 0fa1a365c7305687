// SPDX-License-Identifier: Apache-2.0
#include "cupti_inject/activity_decode.h"

#include <gtest/gtest.h>

#include <cstring>

namespace warpscope::cupti_inject {
namespace {

namespace abi = ::warpscope::cupti::abi;

const abi::CUpti_Activity* AsRecord(const void* p) {
  return static_cast<const abi::CUpti_Activity*>(p);
}

TEST(ActivityDecodeTest, KernelRecordFields) {
  static const char kName[] = "_Z4gemmv";
  abi::CUpti_ActivityKernel10 k{};
  k.kind = abi::kActivityConcurrentKernel;
  k.correlationId = 77;
  k.deviceId = 1;
  k.contextId = 2;
  k.streamId = 13;
  k.start = 1000;
  k.end = 1500;
  k.gridX = 64;
  k.gridY = 2;
  k.gridZ = 1;
  k.blockX = 128;
  k.blockY = 1;
  k.blockZ = 1;
  k.registersPerThread = 40;
  k.staticSharedMemory = 2048;
  k.dynamicSharedMemory = 4096;
  k.graphId = 5;
  k.graphNodeId = 1ull << 33;
  k.name = kName;
  k.isDeviceLaunched = 1;  // beyond the shared prefix: ignored
  const DecodedKernel d = DecodeKernel(AsRecord(&k), 130001);
  EXPECT_EQ(d.name, kName);
  EXPECT_EQ(d.activity.correlation_id, 77u);
  EXPECT_EQ(d.activity.device, 1u);
  EXPECT_EQ(d.activity.context, 2u);
  EXPECT_EQ(d.activity.stream, 13u);
  EXPECT_EQ(d.activity.end_ns - d.activity.start_ns, 500u);
  EXPECT_EQ(d.activity.grid[0], 64);
  EXPECT_EQ(d.activity.grid[1], 2);
  EXPECT_EQ(d.activity.block[0], 128);
  EXPECT_EQ(d.activity.registers, 40u);
  EXPECT_EQ(d.activity.static_smem, 2048u);
  EXPECT_EQ(d.activity.dynamic_smem, 4096u);
  EXPECT_EQ(d.activity.graph_id, 5u);
  EXPECT_EQ(d.activity.graph_node_id, 1ull << 33);
  EXPECT_EQ(d.activity.name_id, 0u);
  EXPECT_EQ(d.activity.stack_hash, 0u);
}

TEST(ActivityDecodeTest, KernelRecordOfCuda12ReadsOnlyTheSharedPrefix) {
  // A 208-byte Kernel9 record followed by unrelated bytes: nothing past graphId is read, so a
  // buffer ending right after the record is fine (ASan checks the bounds in sanitizer builds).
  alignas(8) unsigned char buf[168] = {};
  abi::CUpti_ActivityKernel10 k{};
  k.kind = abi::kActivityConcurrentKernel;
  k.correlationId = 9;
  k.graphId = 3;
  std::memcpy(buf, &k, sizeof(buf));
  const DecodedKernel d = DecodeKernel(AsRecord(buf), 24);
  EXPECT_EQ(d.activity.correlation_id, 9u);
  EXPECT_EQ(d.activity.graph_id, 3u);
}

TEST(ActivityDecodeTest, MemcpyAndMemsetGraphIdsOnlyFromCuda13) {
  abi::CUpti_ActivityMemcpy6 m{};
  m.kind = abi::kActivityMemcpy;
  m.copyKind = 1;
  m.srcKind = 1;
  m.dstKind = 3;
  m.bytes = 1 << 20;
  m.start = 10;
  m.end = 30;
  m.correlationId = 4;
  m.streamId = 7;
  m.graphId = 9;
  const wire::Memcpy c = DecodeMemcpy(AsRecord(&m), 130001);
  EXPECT_EQ(c.bytes, 1u << 20);
  EXPECT_EQ(c.copy_kind, 1);
  EXPECT_EQ(c.dst_kind, 3);
  EXPECT_EQ(c.stream, 7u);
  EXPECT_EQ(c.graph_id, 9u);
  EXPECT_EQ(DecodeMemcpy(AsRecord(&m), 24).graph_id, 0u);

  abi::CUpti_ActivityMemset4 s{};
  s.kind = abi::kActivityMemset;
  s.value = 0xff;
  s.bytes = 512;
  s.memoryKind = 3;
  s.correlationId = 5;
  s.graphId = 2;
  const wire::Memset ms = DecodeMemset(AsRecord(&s), 130000);
  EXPECT_EQ(ms.value, 0xffu);
  EXPECT_EQ(ms.bytes, 512u);
  EXPECT_EQ(ms.memory_kind, 3);
  EXPECT_EQ(ms.graph_id, 2u);
  EXPECT_EQ(DecodeMemset(AsRecord(&s), 24).graph_id, 0u);
}

abi::CUpti_ActivityMarker2 Marker(uint32_t id, uint32_t flags, uint64_t ts, const char* name) {
  abi::CUpti_ActivityMarker2 m{};
  m.kind = abi::kActivityMarker;
  m.id = id;
  m.flags = flags;
  m.timestamp = ts;
  m.name = name;
  m.objectKind = abi::kActivityObjectThread;
  m.objectThreadId = 42;
  return m;
}

TEST(MarkerPairerTest, PairsStartAndEndById) {
  MarkerPairer p;
  auto a = Marker(1, abi::kActivityFlagMarkerStart, 100, "step");
  auto b = Marker(2, abi::kActivityFlagMarkerStart, 110, "forward");
  auto b_end = Marker(2, abi::kActivityFlagMarkerEnd, 150, nullptr);
  auto a_end = Marker(1, abi::kActivityFlagMarkerEnd, 200, nullptr);
  EXPECT_FALSE(p.Add(AsRecord(&a)));
  EXPECT_FALSE(p.Add(AsRecord(&b)));
  auto r1 = p.Add(AsRecord(&b_end));
  auto r2 = p.Add(AsRecord(&a_end));
  ASSERT_TRUE(r1 && r2);
  EXPECT_EQ(r1->name, "forward");
  EXPECT_EQ(r1->end_ns - r1->start_ns, 40u);
  EXPECT_EQ(r2->name, "step");
  EXPECT_EQ(r2->tid, 42u);
  EXPECT_EQ(p.open(), 0u);
}

TEST(MarkerPairerTest, InstantaneousMarkerIsAZeroLengthRange) {
  MarkerPairer p;
  auto m = Marker(3, abi::kActivityFlagMarkerInstantaneous, 500, "checkpoint");
  auto r = p.Add(AsRecord(&m));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->start_ns, 500u);
  EXPECT_EQ(r->end_ns, 500u);
}

TEST(MarkerPairerTest, EndWithoutStartAndOverflowAreCounted) {
  MarkerPairer p(/*max_open=*/2);
  auto orphan = Marker(9, abi::kActivityFlagMarkerEnd, 1, nullptr);
  EXPECT_FALSE(p.Add(AsRecord(&orphan)));
  for (uint32_t id = 1; id <= 3; ++id) {
    auto s = Marker(id, abi::kActivityFlagMarkerStart, id, "r");
    p.Add(AsRecord(&s));
  }
  EXPECT_EQ(p.open(), 2u);
  EXPECT_EQ(p.dropped(), 2u);
}

}  // namespace
}  // namespace warpscope::cupti_inject

// SPDX-License-Identifier: Apache-2.0
#include "cupti_inject/device_memory.h"

#include <gtest/gtest.h>

#include "cupti/abi.h"

namespace warpscope::cupti_inject {
namespace {

namespace abi = ::warpscope::cupti::abi;

constexpr uint32_t kDevice = abi::kMemoryKindDevice;
constexpr uint32_t kPinned = abi::kMemoryKindPinned;

DecodedMemory Alloc(uint32_t device, uint64_t address, uint64_t bytes, uint32_t kind = kDevice) {
  return DecodedMemory{true, kind, device, address, bytes};
}
DecodedMemory Release(uint32_t device, uint64_t address, uint64_t bytes,
                      uint32_t kind = kDevice) {
  return DecodedMemory{false, kind, device, address, bytes};
}

TEST(DeviceMemoryTotalsTest, AllocatedNowIsAllocationsMinusReleases) {
  DeviceMemoryTotals t;
  t.Add(Alloc(0, 0x1000, 2u << 20));
  t.Add(Alloc(0, 0x9000, 8u << 20));
  t.Add(Alloc(1, 0x7000, 1u << 20));
  t.Add(Alloc(0, 0x5000, 4096, kPinned));
  t.Add(Release(0, 0x1000, 2u << 20));
  const auto e = t.Entries();
  ASSERT_EQ(e.size(), 3u);
  // (device 0, pinned), (device 0, device), (device 1, device).
  EXPECT_EQ(e[0], (wire::DeviceMemoryEntry{0, kPinned, 1, 4096, 0, 0, 4096}));
  EXPECT_EQ(e[1], (wire::DeviceMemoryEntry{0, kDevice, 2, 10u << 20, 1, 2u << 20, 8u << 20}));
  EXPECT_EQ(e[2], (wire::DeviceMemoryEntry{1, kDevice, 1, 1u << 20, 0, 0, 1u << 20}));
}

TEST(DeviceMemoryTotalsTest, AReleaseWithoutBytesUsesTheRememberedSize) {
  DeviceMemoryTotals t;
  t.Add(Alloc(0, 0x1000, 3u << 20));
  t.Add(Release(0, 0x1000, 0));
  EXPECT_EQ(t.Entries()[0], (wire::DeviceMemoryEntry{0, kDevice, 1, 3u << 20, 1, 3u << 20, 0}));
}

TEST(DeviceMemoryTotalsTest, ReleasesOfEarlierAllocationsNeverGoBelowZero) {
  DeviceMemoryTotals t;
  t.Add(Alloc(0, 0x1000, 100));
  t.Add(Release(0, 0x8000, 500));  // allocated before the library started
  EXPECT_EQ(t.Entries()[0], (wire::DeviceMemoryEntry{0, kDevice, 1, 100, 1, 500, 0}));
}

TEST(DeviceMemoryTotalsTest, BoundsAddressesAndPairs) {
  DeviceMemoryTotals t(/*max_live=*/1, /*max_keys=*/1);
  t.Add(Alloc(0, 0x1000, 10));
  t.Add(Alloc(0, 0x2000, 20));  // counted, not remembered
  t.Add(Release(0, 0x2000, 0));  // size unknown: counts as a release of 0 bytes
  t.Add(Alloc(1, 0x3000, 30));  // a second pair: dropped
  EXPECT_EQ(t.dropped(), 1u);
  ASSERT_EQ(t.Entries().size(), 1u);
  EXPECT_EQ(t.Entries()[0], (wire::DeviceMemoryEntry{0, kDevice, 2, 30, 1, 0, 30}));
}

TEST(DeviceMemoryDecodeTest, ReadsAllocationAndReleaseRecords) {
  abi::CUpti_ActivityMemory4 r{};
  r.kind = abi::kActivityMemory2;
  r.memoryOperationType = abi::kMemoryOperationAllocation;
  r.memoryKind = abi::kMemoryKindDevice;
  r.address = 0x7f0000000000;
  r.bytes = 1u << 21;
  r.deviceId = 2;
  auto d = DecodeMemory(reinterpret_cast<const abi::CUpti_Activity*>(&r));
  ASSERT_TRUE(d.has_value());
  EXPECT_TRUE(d->allocation);
  EXPECT_EQ(d->device, 2u);
  EXPECT_EQ(d->memory_kind, kDevice);
  EXPECT_EQ(d->address, 0x7f0000000000u);
  EXPECT_EQ(d->bytes, 1u << 21);
  r.memoryOperationType = abi::kMemoryOperationRelease;
  d = DecodeMemory(reinterpret_cast<const abi::CUpti_Activity*>(&r));
  ASSERT_TRUE(d.has_value());
  EXPECT_FALSE(d->allocation);
  r.memoryOperationType = 0;  // INVALID
  EXPECT_FALSE(DecodeMemory(reinterpret_cast<const abi::CUpti_Activity*>(&r)).has_value());
}

}  // namespace
}  // namespace warpscope::cupti_inject

// SPDX-License-Identifier: Apache-2.0
#include "ipc/spsc_ring.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace warpscope::ipc {
namespace {

TEST(SpscByteRingTest, RecordsComeOutInOrderAcrossWraps) {
  SpscByteRing ring(256);
  uint32_t next_write = 0;
  uint32_t next_read = 0;
  for (int round = 0; round < 1000; ++round) {
    // Variable sizes force wrap markers.
    while (true) {
      uint8_t rec[40];
      const size_t size = 4 + (next_write % 33);
      std::memcpy(rec, &next_write, 4);
      if (!ring.TryWrite(rec, size)) {
        break;
      }
      ++next_write;
    }
    ring.Drain([&](std::span<const uint8_t> r) {
      uint32_t v;
      std::memcpy(&v, r.data(), 4);
      EXPECT_EQ(v, next_read);
      EXPECT_EQ(r.size(), 4 + (v % 33));
      ++next_read;
    });
  }
  EXPECT_EQ(next_read, next_write);
  EXPECT_GT(next_write, 5000u);
}

TEST(SpscByteRingTest, FullRingRefusesWithoutBlocking) {
  SpscByteRing ring(128);
  uint8_t rec[24] = {};
  int written = 0;
  while (ring.TryWrite(rec, sizeof(rec))) {
    ++written;
  }
  EXPECT_EQ(written, 4);  // 4 x 32 bytes
  EXPECT_FALSE(ring.TryWrite(rec, 1));
  EXPECT_EQ(ring.Drain([](auto) {}, 1), 1u);
  EXPECT_TRUE(ring.TryWrite(rec, sizeof(rec)));
}

TEST(SpscByteRingTest, RejectsEmptyAndOversizedRecords) {
  SpscByteRing ring(128);
  uint8_t big[128] = {};
  EXPECT_FALSE(ring.TryWrite(big, 0));
  EXPECT_FALSE(ring.TryWrite(big, ring.max_record() + 1));
  EXPECT_TRUE(ring.TryWrite(big, ring.max_record()));
}

// One producer and one consumer at full speed: every record arrives once, intact, in order.
// Also run under the tsan preset.
TEST(SpscByteRingTest, ProducerAndConsumerUnderContention) {
  SpscByteRing ring(4096);
  constexpr uint64_t kCount = 50000;
  std::atomic<bool> done{false};
  uint64_t dropped = 0;
  std::thread producer([&] {
    for (uint64_t i = 0; i < kCount; ++i) {
      uint64_t rec[4] = {i, ~i, i * 3, i ^ 0x5555};
      const size_t size = 8 + (i % 4) * 8;
      while (!ring.TryWrite(rec, size)) {
        ++dropped;
        std::this_thread::yield();
      }
    }
    done.store(true);
  });
  uint64_t expected = 0;
  bool ok = true;
  while (expected < kCount) {
    ring.Drain([&](std::span<const uint8_t> r) {
      uint64_t rec[4] = {};
      std::memcpy(rec, r.data(), r.size());
      ok = ok && rec[0] == expected && r.size() == 8 + (expected % 4) * 8;
      if (r.size() >= 16) {
        ok = ok && rec[1] == ~expected;
      }
      ++expected;
    });
  }
  producer.join();
  EXPECT_TRUE(ok);
  EXPECT_EQ(expected, kCount);
  EXPECT_TRUE(ring.Empty());
}

}  // namespace
}  // namespace warpscope::ipc

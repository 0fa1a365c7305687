// SPDX-License-Identifier: Apache-2.0
#include "cupti_inject/activity_buffers.h"

#include <gtest/gtest.h>

#include <vector>

namespace warpscope::cupti_inject {
namespace {

constexpr size_t kBig = 1024 * 1024;
constexpr size_t kReserve = ActivityBufferPool::kReserveBytes;

TEST(CuptiBufferPoolTest, HandsOutThePoolThenTheReserveThenCountsRefusals) {
  ActivityBufferPool pool;
  pool.Configure(2, kBig);
  ActivityBuffer a = pool.Request();
  ActivityBuffer b = pool.Request();
  ASSERT_NE(a.data, nullptr);
  ASSERT_NE(b.data, nullptr);
  EXPECT_NE(a.data, b.data);
  EXPECT_EQ(a.size, kBig);
  std::vector<ActivityBuffer> reserve;
  for (size_t i = 0; i < ActivityBufferPool::kReserveBuffers; ++i) {
    reserve.push_back(pool.Request());
    ASSERT_NE(reserve.back().data, nullptr);
    EXPECT_EQ(reserve.back().size, kReserve);
  }
  EXPECT_EQ(pool.reserve_used(), ActivityBufferPool::kReserveBuffers);
  EXPECT_EQ(pool.exhausted(), 0u);
  EXPECT_EQ(pool.Request().data, nullptr);
  EXPECT_EQ(pool.Request().size, 0u);
  EXPECT_EQ(pool.exhausted(), 2u);
  EXPECT_EQ(pool.allocated_bytes(), 2 * kBig + ActivityBufferPool::kReserveBuffers * kReserve);
  // Returned by size: a reserve buffer goes back to the reserve, a pool buffer to the pool.
  pool.Return(reserve[3].data, reserve[3].size);
  EXPECT_EQ(pool.Request().data, reserve[3].data);
  pool.Return(b.data, b.size);
  ActivityBuffer again = pool.Request();
  EXPECT_EQ(again.data, b.data);
  EXPECT_EQ(again.size, kBig);
  EXPECT_EQ(pool.allocated_bytes(), 2 * kBig + ActivityBufferPool::kReserveBuffers * kReserve);
  for (ActivityBuffer& r : reserve) pool.Return(r.data, r.size);
  pool.Return(a.data, a.size);
  pool.Return(b.data, b.size);
}

TEST(CuptiBufferPoolTest, SmallPoolBuffersMakeReserveBuffersOfTheirSize) {
  ActivityBufferPool pool;
  pool.Configure(1, 64 * 1024);
  ActivityBuffer a = pool.Request();
  ActivityBuffer r = pool.Request();
  EXPECT_EQ(a.size, 64u * 1024);
  EXPECT_EQ(r.size, 64u * 1024);
  EXPECT_EQ(pool.reserve_used(), 1u);
  pool.Return(r.data, r.size);
  pool.Return(a.data, a.size);
}

TEST(CuptiBufferPoolTest, CompletedBuffersAreTakenOldestFirstAndReused) {
  ActivityBufferPool pool;
  pool.Configure(2, 4096);
  uint8_t* a = pool.Request().data;
  uint8_t* b = pool.Request().data;
  pool.Complete({nullptr, 1, b, 100, 4096});
  pool.Complete({nullptr, 2, a, 200, 4096});
  std::vector<CompletedBuffer> batch;
  pool.TakeCompleted(&batch);
  ASSERT_EQ(batch.size(), 2u);
  EXPECT_EQ(batch[0].buffer, b);
  EXPECT_EQ(batch[0].stream, 1u);
  EXPECT_EQ(batch[0].valid, 100u);
  EXPECT_EQ(batch[1].buffer, a);
  pool.TakeCompleted(&batch);
  EXPECT_TRUE(batch.empty());
  pool.Return(a, 4096);
  EXPECT_EQ(pool.Request().data, a);  // no third allocation: the returned buffer comes back
  EXPECT_EQ(pool.allocated_bytes(), 2u * 4096);
  EXPECT_EQ(pool.exhausted(), 0u);
}

TEST(CuptiBufferPoolTest, ForkChildReturnsTheParentsQueuedBuffersUnread) {
  ActivityBufferPool pool;
  pool.Configure(1, 4096);
  uint8_t* a = pool.Request().data;
  pool.Complete({nullptr, 0, a, 64, 4096});
  pool.LockForFork();
  pool.UnlockAfterFork();
  pool.ResetInForkChild();
  std::vector<CompletedBuffer> batch;
  pool.TakeCompleted(&batch);
  EXPECT_TRUE(batch.empty());
  EXPECT_EQ(pool.Request().data, a);
  EXPECT_EQ(pool.exhausted(), 0u);
}

}  // namespace
}  // namespace warpscope::cupti_inject

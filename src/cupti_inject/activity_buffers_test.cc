// SPDX-License-Identifier: Apache-2.0
#include "cupti_inject/activity_buffers.h"

#include <gtest/gtest.h>

#include <vector>

namespace warpscope::cupti_inject {
namespace {

TEST(CuptiBufferPoolTest, HandsOutAtMostTheConfiguredBuffersAndCountsRefusals) {
  ActivityBufferPool pool;
  pool.Configure(2, 4096);
  uint8_t* a = pool.Request();
  uint8_t* b = pool.Request();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_NE(a, b);
  EXPECT_EQ(pool.Request(), nullptr);
  EXPECT_EQ(pool.Request(), nullptr);
  EXPECT_EQ(pool.exhausted(), 2u);
  EXPECT_EQ(pool.allocated_bytes(), 2u * 4096);
}

TEST(CuptiBufferPoolTest, CompletedBuffersAreTakenOldestFirstAndReused) {
  ActivityBufferPool pool;
  pool.Configure(2, 4096);
  uint8_t* a = pool.Request();
  uint8_t* b = pool.Request();
  pool.Complete({nullptr, 1, b, 100});
  pool.Complete({nullptr, 2, a, 200});
  std::vector<CompletedBuffer> batch;
  pool.TakeCompleted(&batch);
  ASSERT_EQ(batch.size(), 2u);
  EXPECT_EQ(batch[0].buffer, b);
  EXPECT_EQ(batch[0].stream, 1u);
  EXPECT_EQ(batch[0].valid, 100u);
  EXPECT_EQ(batch[1].buffer, a);
  pool.TakeCompleted(&batch);
  EXPECT_TRUE(batch.empty());
  pool.Return(a);
  EXPECT_EQ(pool.Request(), a);  // no third allocation: the returned buffer comes back
  EXPECT_EQ(pool.allocated_bytes(), 2u * 4096);
  EXPECT_EQ(pool.exhausted(), 0u);
}

TEST(CuptiBufferPoolTest, ForkChildReturnsTheParentsQueuedBuffersUnread) {
  ActivityBufferPool pool;
  pool.Configure(1, 4096);
  uint8_t* a = pool.Request();
  pool.Complete({nullptr, 0, a, 64});
  pool.LockForFork();
  pool.UnlockAfterFork();
  pool.ResetInForkChild();
  std::vector<CompletedBuffer> batch;
  pool.TakeCompleted(&batch);
  EXPECT_TRUE(batch.empty());
  EXPECT_EQ(pool.Request(), a);
  EXPECT_EQ(pool.exhausted(), 0u);
}

}  // namespace
}  // namespace warpscope::cupti_inject

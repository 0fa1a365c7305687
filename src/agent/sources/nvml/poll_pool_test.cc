// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/nvml/poll_pool.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace warpscope::agent::nvml_internal {
namespace {

using Clock = PollPool::Clock;
using std::chrono::milliseconds;
using ::testing::ElementsAre;

constexpr size_t kNone = ~size_t{0};

// GPUs whose reads the test holds back: a held GPU blocks until released, or until another GPU
// has been read. Records the order and threads of the reads, and whether one GPU was ever read by
// two threads at once.
class FakeGpus {
 public:
  explicit FakeGpus(size_t n)
      : held_(n, false), release_after_(n, kNone), active_(n, 0), reads_(n, 0), threads_(n) {}

  void Read(size_t gpu) {
    std::unique_lock lock(mu_);
    overlapped_ = overlapped_ || ++active_[gpu] > 1;
    threads_[gpu] = std::this_thread::get_id();
    cv_.wait(lock, [&] { return !held_[gpu]; });
    --active_[gpu];
    ++reads_[gpu];
    order_.push_back(gpu);
    for (size_t g = 0; g < held_.size(); ++g) {
      if (release_after_[g] == gpu) {
        held_[g] = false;
        release_after_[g] = kNone;
      }
    }
    cv_.notify_all();
  }

  void Hold(size_t gpu) {
    std::lock_guard lock(mu_);
    held_[gpu] = true;
  }
  // Held until GPU `other` has been read.
  void HoldUntilRead(size_t gpu, size_t other) {
    std::lock_guard lock(mu_);
    held_[gpu] = true;
    release_after_[gpu] = other;
  }
  void Release(size_t gpu) {
    std::lock_guard lock(mu_);
    held_[gpu] = false;
    cv_.notify_all();
  }
  void ReleaseAll() {
    for (size_t g = 0; g < held_.size(); ++g) {
      Release(g);
    }
  }

  bool overlapped() {
    std::lock_guard lock(mu_);
    return overlapped_;
  }
  size_t reads(size_t gpu) {
    std::lock_guard lock(mu_);
    return reads_[gpu];
  }
  std::thread::id thread(size_t gpu) {
    std::lock_guard lock(mu_);
    return threads_[gpu];
  }
  // The GPUs in the order their reads returned, since the last call.
  std::vector<size_t> TakeOrder() {
    std::lock_guard lock(mu_);
    return std::exchange(order_, {});
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<bool> held_;
  std::vector<size_t> release_after_;
  std::vector<int> active_;
  std::vector<size_t> reads_;
  std::vector<std::thread::id> threads_;
  std::vector<size_t> order_;
  bool overlapped_ = false;
};

class PollPoolTest : public ::testing::Test {
 protected:
  // A healthy read takes microseconds: the deadline only matters on a very loaded machine.
  static constexpr auto kDue = milliseconds(500);
  static constexpr auto kStall = milliseconds(20);

  void Make(size_t n) {
    gpus_ = std::make_unique<FakeGpus>(n);
    pool_ = std::make_unique<PollPool>(n, [gpus = gpus_.get()](size_t i) { gpus->Read(i); });
    count_ = n;
  }

  // Reads every GPU not in flight, as the source does.
  void PollIdle(Clock::duration due_in = kDue, Clock::duration stall = kStall) {
    std::vector<size_t> batch;
    for (size_t i = 0; i < count_; ++i) {
      if (!pool_->in_flight(i)) {
        batch.push_back(i);
      }
    }
    pool_->Poll(batch, Clock::now() + due_in, stall);
  }

  void TearDown() override {
    if (pool_ != nullptr) {
      gpus_->ReleaseAll();
      EXPECT_TRUE(pool_->Stop(std::chrono::seconds(10)));
      EXPECT_FALSE(gpus_->overlapped()) << "a GPU was read by two threads at once";
    }
  }

  size_t count_ = 0;
  std::unique_ptr<FakeGpus> gpus_;  // before the pool, whose threads read them
  std::unique_ptr<PollPool> pool_;
};

TEST_F(PollPoolTest, ReadsEveryGpuInOrderOnOneThread) {
  Make(8);
  for (int cycle = 0; cycle < 20; ++cycle) {
    PollIdle();
    for (size_t i = 0; i < 8; ++i) {
      EXPECT_TRUE(pool_->answered(i)) << i;
      EXPECT_FALSE(pool_->in_flight(i)) << i;
      EXPECT_EQ(gpus_->thread(i), gpus_->thread(0)) << i;
    }
    EXPECT_THAT(gpus_->TakeOrder(), ElementsAre(0, 1, 2, 3, 4, 5, 6, 7));
  }
  EXPECT_NE(gpus_->thread(0), std::this_thread::get_id());
  EXPECT_EQ(pool_->worker_count(), 1u);
}

TEST_F(PollPoolTest, GpusAfterAStalledOneAnswerOnASpareInTheSamePoll) {
  Make(8);
  gpus_->Hold(3);
  const Clock::time_point start = Clock::now();
  PollIdle();
  EXPECT_GE(Clock::now() - start, kDue);  // waited for GPU 3 up to the deadline
  for (size_t i : {0, 1, 2, 4, 5, 6, 7}) {
    EXPECT_TRUE(pool_->answered(i)) << i;
  }
  EXPECT_FALSE(pool_->answered(3));
  EXPECT_TRUE(pool_->in_flight(3));
  EXPECT_TRUE(pool_->any_in_flight());
  EXPECT_THAT(gpus_->TakeOrder(), ElementsAre(0, 1, 2, 4, 5, 6, 7));
  EXPECT_EQ(gpus_->thread(3), gpus_->thread(0));  // the stalled worker stays with its GPU
  EXPECT_NE(gpus_->thread(4), gpus_->thread(3));
  EXPECT_EQ(gpus_->thread(7), gpus_->thread(4));
  EXPECT_EQ(pool_->worker_count(), 2u);

  gpus_->Release(3);
  ASSERT_TRUE(pool_->WaitIdle(3, Clock::now() + std::chrono::seconds(10)));
  EXPECT_FALSE(pool_->in_flight(3));
  EXPECT_FALSE(pool_->any_in_flight());
}

TEST_F(PollPoolTest, TwoStalledGpusEachKeepTheirWorkerAndTheRestAnswer) {
  Make(8);
  gpus_->Hold(2);
  gpus_->Hold(5);
  PollIdle();
  for (size_t i : {0, 1, 3, 4, 6, 7}) {
    EXPECT_TRUE(pool_->answered(i)) << i;
  }
  EXPECT_TRUE(pool_->in_flight(2));
  EXPECT_TRUE(pool_->in_flight(5));
  EXPECT_THAT(gpus_->TakeOrder(), ElementsAre(0, 1, 3, 4, 6, 7));
  const std::set<std::thread::id> threads = {gpus_->thread(2), gpus_->thread(5), gpus_->thread(6)};
  EXPECT_EQ(threads.size(), 3u);
  EXPECT_EQ(pool_->worker_count(), 3u);

  // While they hang, the other GPUs are read on the one spare left, with no new thread.
  for (int cycle = 0; cycle < 10; ++cycle) {
    PollIdle();
    EXPECT_THAT(gpus_->TakeOrder(), ElementsAre(0, 1, 3, 4, 6, 7));
  }
  EXPECT_EQ(gpus_->reads(2), 0u);
  EXPECT_EQ(pool_->worker_count(), 3u);
}

TEST_F(PollPoolTest, NeverMoreWorkersThanGpus) {
  Make(3);
  for (size_t i = 0; i < 3; ++i) {
    gpus_->Hold(i);
  }
  PollIdle();  // each GPU stalls in turn: three workers, and no fourth as a spare
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(pool_->in_flight(i)) << i;
  }
  EXPECT_EQ(pool_->worker_count(), 3u);
  for (int cycle = 0; cycle < 20; ++cycle) {
    PollIdle();  // nothing to read
  }
  EXPECT_EQ(pool_->worker_count(), 3u);

  gpus_->ReleaseAll();
  for (size_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(pool_->WaitIdle(i, Clock::now() + std::chrono::seconds(10)));
  }
  (void)gpus_->TakeOrder();
  for (int cycle = 0; cycle < 20; ++cycle) {
    PollIdle();
    EXPECT_THAT(gpus_->TakeOrder(), ElementsAre(0, 1, 2));
  }
  EXPECT_EQ(pool_->worker_count(), 3u);
}

TEST_F(PollPoolTest, AWorkerThatComesBackIsReused) {
  Make(4);
  gpus_->Hold(1);
  PollIdle();
  EXPECT_EQ(pool_->worker_count(), 2u);
  gpus_->Release(1);
  ASSERT_TRUE(pool_->WaitIdle(1, Clock::now() + std::chrono::seconds(10)));

  // Stalls on every GPU in turn, each answering once the GPUs after it were read elsewhere:
  // the stalled worker of one poll is the spare of the next.
  for (int round = 0; round < 5; ++round) {
    for (size_t stalled = 0; stalled + 1 < 4; ++stalled) {
      gpus_->HoldUntilRead(stalled, 3);
      PollIdle(std::chrono::seconds(5));
      for (size_t i = 0; i < 4; ++i) {
        EXPECT_TRUE(pool_->answered(i)) << "round " << round << ", GPU " << i;
      }
      EXPECT_NE(gpus_->thread(stalled), gpus_->thread(3));
    }
  }
  EXPECT_EQ(pool_->worker_count(), 2u);
}

TEST_F(PollPoolTest, AGpuThatAnswersAfterTheStallButBeforeTheDeadlineCounts) {
  Make(2);
  gpus_->HoldUntilRead(0, 1);  // answers once GPU 1 was read on the spare
  const Clock::time_point start = Clock::now();
  PollIdle(std::chrono::seconds(5));
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  EXPECT_TRUE(pool_->answered(0));
  EXPECT_TRUE(pool_->answered(1));
  EXPECT_THAT(gpus_->TakeOrder(), ElementsAre(1, 0));
}

TEST_F(PollPoolTest, AGpuNotStartedByTheDeadlineIsNotRead) {
  Make(3);
  gpus_->Hold(0);
  // The stall time is longer than the deadline: GPUs 1 and 2 are still queued behind GPU 0.
  PollIdle(milliseconds(50), std::chrono::seconds(30));
  EXPECT_TRUE(pool_->in_flight(0));
  for (size_t i : {1, 2}) {
    EXPECT_FALSE(pool_->answered(i)) << i;
    EXPECT_FALSE(pool_->in_flight(i)) << i;
  }
  gpus_->Release(0);
  ASSERT_TRUE(pool_->WaitIdle(0, Clock::now() + std::chrono::seconds(10)));
  EXPECT_EQ(gpus_->reads(1), 0u);
  EXPECT_EQ(gpus_->reads(2), 0u);

  PollIdle();
  EXPECT_THAT(gpus_->TakeOrder(), ElementsAre(0, 0, 1, 2));
  EXPECT_EQ(pool_->worker_count(), 2u);  // the spare made when GPU 0 kept its worker
}

}  // namespace
}  // namespace warpscope::agent::nvml_internal

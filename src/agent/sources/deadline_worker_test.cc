// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/deadline_worker.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <latch>
#include <memory>
#include <set>
#include <stdexcept>
#include <thread>

namespace warpscope::agent {
namespace {

using Clock = DeadlineWorker::Clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

Clock::time_point In(Clock::duration d) { return Clock::now() + d; }

TEST(DeadlineWorkerTest, RunsTheJobOnOneThreadOfItsOwnAndHandsBackWhatItWrote) {
  int value = 0;
  std::set<std::thread::id> threads;
  DeadlineWorker worker("test", [&] {
    ++value;
    threads.insert(std::this_thread::get_id());
  });
  for (int i = 1; i <= 3; ++i) {
    ASSERT_TRUE(worker.Run());
    ASSERT_TRUE(worker.WaitUntil(In(seconds(10))));
    EXPECT_EQ(value, i);
  }
  ASSERT_EQ(threads.size(), 1u);  // one persistent thread, reused
  EXPECT_NE(*threads.begin(), std::this_thread::get_id());
  EXPECT_FALSE(worker.busy());
}

TEST(DeadlineWorkerTest, ALateRunKeepsItBusyAndNoSecondRunQueuesBehindIt) {
  std::latch release(1);
  std::atomic<int> started = 0;
  DeadlineWorker worker("test", [&] {
    ++started;
    release.wait();
  });
  ASSERT_TRUE(worker.Run());
  EXPECT_FALSE(worker.WaitUntil(In(milliseconds(20))));  // missed the deadline
  EXPECT_TRUE(worker.busy());
  EXPECT_FALSE(worker.Run());  // refused, not queued
  release.count_down();
  ASSERT_TRUE(worker.WaitUntil(In(seconds(10))));
  EXPECT_EQ(started, 1);      // the refused run never happened
  ASSERT_TRUE(worker.Run());  // rejoins once it has answered
  ASSERT_TRUE(worker.WaitUntil(In(seconds(10))));
  EXPECT_EQ(started, 2);
}

TEST(DeadlineWorkerTest, MeasuresTheLastRun) {
  std::latch started(1);
  std::latch release(1);
  DeadlineWorker worker("test", [&] {
    started.count_down();
    release.wait();
  });
  ASSERT_TRUE(worker.Run());
  started.wait();
  EXPECT_FALSE(worker.WaitUntil(In(milliseconds(30))));
  release.count_down();
  ASSERT_TRUE(worker.WaitUntil(In(seconds(10))));
  EXPECT_GE(worker.last_run_time(), milliseconds(30));
}

TEST(DeadlineWorkerTest, AnExceptionFromTheJobIsContained) {
  int runs = 0;
  DeadlineWorker worker("test", [&] {
    if (++runs == 1) throw std::runtime_error("boom");
  });
  ASSERT_TRUE(worker.Run());
  ASSERT_TRUE(worker.WaitUntil(In(seconds(10))));
  ASSERT_TRUE(worker.Run());
  ASSERT_TRUE(worker.WaitUntil(In(seconds(10))));
  EXPECT_EQ(runs, 2);
}

TEST(DeadlineWorkerTest, StopJoinsAnIdleWorker) {
  int runs = 0;
  DeadlineWorker worker("test", [&] { ++runs; });
  ASSERT_TRUE(worker.Run());
  ASSERT_TRUE(worker.WaitUntil(In(seconds(10))));
  EXPECT_TRUE(worker.Stop(milliseconds(0)));
  EXPECT_FALSE(worker.Run());                 // stopped for good
  EXPECT_TRUE(worker.Stop(milliseconds(0)));  // idempotent
  EXPECT_EQ(runs, 1);
}

TEST(DeadlineWorkerTest, StopLeavesAHungJobBehindAndItsThreadEndsWhenItReturns) {
  // What the job uses outlives the worker, as Stop's contract asks.
  auto started = std::make_shared<std::latch>(1);
  auto release = std::make_shared<std::latch>(1);
  auto finished = std::make_shared<std::promise<void>>();
  std::future<void> done = finished->get_future();
  {
    DeadlineWorker worker("test", [started, release, finished] {
      started->count_down();
      release->wait();
      finished->set_value();
    });
    ASSERT_TRUE(worker.Run());
    started->wait();
    EXPECT_FALSE(worker.Stop(milliseconds(20)));
  }  // destroyed while its detached thread is still inside the job
  release->count_down();
  EXPECT_EQ(done.wait_for(seconds(10)), std::future_status::ready);
}

}  // namespace
}  // namespace warpscope::agent

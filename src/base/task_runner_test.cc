// SPDX-License-Identifier: Apache-2.0
#include "base/task_runner.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "base/testing/fake_task_runner.h"

namespace warpscope::base {
namespace {

using std::chrono::seconds;

TEST(ThreadTaskRunnerTest, RunsPostedTasksInOrderThenQuits) {
  ThreadTaskRunner runner;
  std::vector<int> order;
  runner.PostTask([&] { order.push_back(1); });
  runner.PostTask([&] { order.push_back(2); });
  runner.PostDelayedTask([&] { order.push_back(3); runner.Quit(); }, Duration(1000));
  runner.Run();
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
}

TEST(ThreadTaskRunnerTest, AcceptsTasksFromOtherThreads) {
  ThreadTaskRunner runner;
  int count = 0;
  std::thread poster([&] {
    for (int i = 0; i < 100; ++i) runner.PostTask([&] { ++count; });
    runner.PostTask([&] { runner.Quit(); });
  });
  runner.Run();
  poster.join();
  EXPECT_EQ(count, 100);
}

TEST(FakeTaskRunnerTest, RunsDelayedTasksWhenTimeAdvances) {
  FakeClock clock;
  FakeTaskRunner runner(clock);
  std::vector<int> fired;
  runner.PostDelayedTask([&] { fired.push_back(10); }, seconds(10));
  runner.PostDelayedTask([&] { fired.push_back(5); }, seconds(5));
  runner.AdvanceTimeAndRun(seconds(4));
  EXPECT_TRUE(fired.empty());
  runner.AdvanceTimeAndRun(seconds(1));
  EXPECT_EQ(fired, std::vector<int>{5});
  runner.AdvanceTimeAndRun(seconds(10));
  EXPECT_EQ(fired, (std::vector<int>{5, 10}));
}

TEST(FakeTaskRunnerTest, RepostingTaskFiresPeriodically) {
  FakeClock clock;
  FakeTaskRunner runner(clock);
  int ticks = 0;
  std::function<void()> tick = [&] {
    ++ticks;
    runner.PostDelayedTask(tick, seconds(1));
  };
  runner.PostDelayedTask(tick, seconds(1));
  runner.AdvanceTimeAndRun(seconds(10));
  EXPECT_EQ(ticks, 10);
}

}  // namespace
}  // namespace warpscope::base

// SPDX-License-Identifier: Apache-2.0
#include "server/query/batch.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace warpscope::server::query {
namespace {

TEST(RunConcurrentlyTest, RunsEveryIndexOnce) {
  std::vector<std::atomic<int>> runs(37);
  RunConcurrently(runs.size(), 4, [&](size_t i) { ++runs[i]; });
  for (size_t i = 0; i < runs.size(); ++i) {
    EXPECT_EQ(runs[i].load(), 1) << i;
  }
}

TEST(RunConcurrentlyTest, UsesAtMostTheThreadsAskedForTheCallersIncluded) {
  std::mutex mu;
  std::set<std::thread::id> ids;
  RunConcurrently(64, 3, [&](size_t) {
    std::lock_guard lock(mu);
    ids.insert(std::this_thread::get_id());
  });
  EXPECT_LE(ids.size(), 3u);
  std::set<std::thread::id> one;
  RunConcurrently(5, 1, [&](size_t) { one.insert(std::this_thread::get_id()); });
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(*one.begin(), std::this_thread::get_id());
}

TEST(RunConcurrentlyTest, NothingToRunReturns) {
  bool ran = false;
  RunConcurrently(0, 4, [&](size_t) { ran = true; });
  EXPECT_FALSE(ran);
}

}  // namespace
}  // namespace warpscope::server::query

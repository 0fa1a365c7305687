// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_BASE_TESTING_FAKE_TASK_RUNNER_H_
#define WARPSCOPE_BASE_TESTING_FAKE_TASK_RUNNER_H_

#include <map>
#include <utility>

#include "base/task_runner.h"

namespace warpscope::base {

// Single-threaded TaskRunner driven by a FakeClock: tests post work, then advance time.
class FakeTaskRunner : public TaskRunner {
 public:
  explicit FakeTaskRunner(FakeClock& clock) : clock_(clock) {}

  void PostTask(Task task) override { PostDelayedTask(std::move(task), Duration(0)); }
  void PostDelayedTask(Task task, Duration delay) override {
    tasks_.emplace(std::make_pair(clock_.Monotonic() + delay, seq_++), std::move(task));
  }
  bool RunsTasksOnCurrentThread() const override { return true; }

  // Runs every task that is due now, including ones those tasks post for now.
  void RunUntilIdle() {
    while (!tasks_.empty() && tasks_.begin()->first.first <= clock_.Monotonic()) {
      auto it = tasks_.begin();
      Task task = std::move(it->second);
      tasks_.erase(it);
      task();
    }
  }
  // Advances the clock step by step to each due task up to now + d, running them.
  void AdvanceTimeAndRun(Duration d) {
    Duration end = clock_.Monotonic() + d;
    RunUntilIdle();
    while (!tasks_.empty() && tasks_.begin()->first.first <= end) {
      clock_.Advance(tasks_.begin()->first.first - clock_.Monotonic());
      RunUntilIdle();
    }
    clock_.Advance(end - clock_.Monotonic());
    RunUntilIdle();
  }
  size_t pending() const { return tasks_.size(); }

 private:
  FakeClock& clock_;
  std::map<std::pair<Duration, uint64_t>, Task> tasks_;
  uint64_t seq_ = 0;
};

}  // namespace warpscope::base

#endif  // WARPSCOPE_BASE_TESTING_FAKE_TASK_RUNNER_H_

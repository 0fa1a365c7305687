// SPDX-License-Identifier: Apache-2.0
// Simulated time for tests that run the agent or the server for an hour in seconds: a clock
// that only moves when the test moves it, readable from any thread (the HTTP server's and the
// exporters' threads read it while the test's thread advances it), and a task runner that runs
// the delayed tasks of a main sequence as that clock passes their deadlines.
#ifndef WARPSCOPE_TEST_INTEGRATION_STEPPED_TIME_H_
#define WARPSCOPE_TEST_INTEGRATION_STEPPED_TIME_H_

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <utility>

#include "base/task_runner.h"
#include "base/time.h"

namespace warpscope::test {

// Wall time = start + elapsed, monotonic time = 1 s + elapsed. Thread-safe; only Set moves it,
// and never backwards.
class SteppedClock : public base::Clock {
 public:
  explicit SteppedClock(base::TimePoint start) : start_(start) {}
  base::TimePoint Now() const override { return start_ + elapsed(); }
  base::Duration Monotonic() const override { return std::chrono::seconds(1) + elapsed(); }

  base::Duration elapsed() const { return base::Duration(elapsed_ns_.load()); }
  base::TimePoint start() const { return start_; }
  void Set(base::Duration elapsed) {
    if (elapsed.count() > elapsed_ns_.load()) elapsed_ns_.store(elapsed.count());
  }

 private:
  const base::TimePoint start_;
  std::atomic<int64_t> elapsed_ns_{0};
};

// A main sequence on a SteppedClock. Tasks may be posted from any thread; they run only inside
// RunUntil, on its caller's thread, in deadline order (ties in post order).
class SteppedTaskRunner : public base::TaskRunner {
 public:
  explicit SteppedTaskRunner(SteppedClock& clock) : clock_(clock) {}

  void PostTask(base::Task task) override { PostDelayedTask(std::move(task), base::Duration(0)); }
  void PostDelayedTask(base::Task task, base::Duration delay) override {
    std::lock_guard lock(mu_);
    tasks_.emplace(std::make_pair(clock_.elapsed() + delay, seq_++), std::move(task));
  }
  bool RunsTasksOnCurrentThread() const override { return true; }

  // Moves the clock to each due task's deadline up to `elapsed` and runs the tasks due then;
  // `on_time(t)` runs first whenever the clock is about to reach a new time t (e.g. to move a
  // simulator along). Ends with the clock at `elapsed`.
  void RunUntil(base::Duration elapsed,
                const std::function<void(base::Duration)>& on_time = nullptr) {
    while (true) {
      base::Task task;
      {
        std::lock_guard lock(mu_);
        if (tasks_.empty() || tasks_.begin()->first.first > elapsed) break;
        auto it = tasks_.begin();
        base::Duration due = std::max(it->first.first, clock_.elapsed());
        task = std::move(it->second);
        tasks_.erase(it);
        if (due > clock_.elapsed()) {
          if (on_time) on_time(due);
          clock_.Set(due);
        }
      }
      task();
    }
    if (elapsed > clock_.elapsed()) {
      if (on_time) on_time(elapsed);
      clock_.Set(elapsed);
    }
  }

 private:
  SteppedClock& clock_;
  std::mutex mu_;
  std::map<std::pair<base::Duration, uint64_t>, base::Task> tasks_;
  uint64_t seq_ = 0;
};

}  // namespace warpscope::test

#endif  // WARPSCOPE_TEST_INTEGRATION_STEPPED_TIME_H_

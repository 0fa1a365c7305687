// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_BASE_TASK_RUNNER_H_
#define WARPSCOPE_BASE_TASK_RUNNER_H_

#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include "base/time.h"

namespace warpscope::base {

using Task = std::function<void()>;

// A sequence of tasks that run one at a time on one thread: each daemon's main sequence.
// PostTask and PostDelayedTask may be called from any thread; tasks run in post order (delayed
// tasks in deadline order, ties in post order).
class TaskRunner {
 public:
  virtual ~TaskRunner() = default;
  TaskRunner(const TaskRunner&) = delete;
  TaskRunner& operator=(const TaskRunner&) = delete;

  virtual void PostTask(Task task) = 0;
  virtual void PostDelayedTask(Task task, Duration delay) = 0;
  virtual bool RunsTasksOnCurrentThread() const = 0;

 protected:
  TaskRunner() = default;
};

// Runs tasks on the thread that calls Run(), until Quit(). Delays are measured on the Clock's
// monotonic time.
class ThreadTaskRunner : public TaskRunner {
 public:
  explicit ThreadTaskRunner(const Clock& clock = RealClock::Get()) : clock_(clock) {}
  void PostTask(Task task) override;
  void PostDelayedTask(Task task, Duration delay) override;
  bool RunsTasksOnCurrentThread() const override;

  // Blocks until Quit() is called (from a task or another thread).
  void Run();
  void Quit();

 private:
  const Clock& clock_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  // (deadline, sequence) -> task; immediate tasks use deadline 0.
  std::map<std::pair<Duration, uint64_t>, Task> tasks_;
  uint64_t next_seq_ = 0;
  bool quit_ = false;
  std::thread::id run_thread_;
};

}  // namespace warpscope::base

#endif  // WARPSCOPE_BASE_TASK_RUNNER_H_

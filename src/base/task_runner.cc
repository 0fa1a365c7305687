// SPDX-License-Identifier: Apache-2.0
#include "base/task_runner.h"

#include "base/logging.h"

namespace warpscope::base {

void ThreadTaskRunner::PostTask(Task task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    tasks_.emplace(std::make_pair(Duration(0), next_seq_++), std::move(task));
  }
  cv_.notify_one();
}

void ThreadTaskRunner::PostDelayedTask(Task task, Duration delay) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    tasks_.emplace(std::make_pair(clock_.Monotonic() + delay, next_seq_++), std::move(task));
  }
  cv_.notify_one();
}

bool ThreadTaskRunner::RunsTasksOnCurrentThread() const {
  std::lock_guard<std::mutex> lock(mu_);
  return run_thread_ == std::this_thread::get_id();
}

void ThreadTaskRunner::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  run_thread_ = std::this_thread::get_id();
  while (!quit_) {
    if (tasks_.empty()) {
      cv_.wait(lock);
      continue;
    }
    auto it = tasks_.begin();
    Duration now = clock_.Monotonic();
    if (it->first.first > now) {
      cv_.wait_for(lock, it->first.first - now);
      continue;
    }
    Task task = std::move(it->second);
    tasks_.erase(it);
    lock.unlock();
    task();
    lock.lock();
  }
  quit_ = false;
}

void ThreadTaskRunner::Quit() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    quit_ = true;
  }
  cv_.notify_all();
}

}  // namespace warpscope::base

// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/deadline_worker.h"

#include <pthread.h>

#include <condition_variable>
#include <mutex>

#include "base/logging.h"

namespace warpscope::agent {

struct DeadlineWorker::Shared {
  std::function<void()> job;
  std::string name;
  mutable std::mutex mu;
  std::condition_variable cv;
  bool requested = false;      // guarded by mu: Run() asked for a run not started yet
  bool running = false;        // guarded by mu: the job is running
  bool stop = false;           // guarded by mu
  Clock::duration last_run{};  // guarded by mu

  bool idle() const { return !requested && !running; }  // requires mu

  void Loop() {
    pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
    std::unique_lock lock(mu);
    for (;;) {
      cv.wait(lock, [&] { return requested || stop; });
      if (!requested) {
        return;  // stop, and no run pending
      }
      requested = false;
      running = true;
      lock.unlock();
      const Clock::time_point start = Clock::now();
      try {
        job();
      } catch (...) {
        WARPSCOPE_LOG_FIRST_N(ERROR, 1, "worker {}: unexpected exception from its job", name);
      }
      const Clock::duration took = Clock::now() - start;
      lock.lock();
      running = false;
      last_run = took;
      // Woken after the unlock, the owner does not wake into a held mutex. The only waiter now
      // is the owner.
      lock.unlock();
      cv.notify_one();
      lock.lock();
    }
  }
};

DeadlineWorker::DeadlineWorker(std::string name, std::function<void()> job)
    : shared_(std::make_shared<Shared>()) {
  shared_->job = std::move(job);
  shared_->name = std::move(name);
  // The thread holds its own reference: after a detaching Stop it may outlive this object.
  thread_ = std::thread([shared = shared_] { shared->Loop(); });
}

DeadlineWorker::~DeadlineWorker() { Stop(std::chrono::milliseconds(0)); }

bool DeadlineWorker::Run() {
  {
    std::lock_guard lock(shared_->mu);
    if (!shared_->idle() || shared_->stop) {
      return false;
    }
    shared_->requested = true;
  }
  shared_->cv.notify_one();  // after the unlock, as above; the only waiter now is the worker
  return true;
}

bool DeadlineWorker::WaitUntil(Clock::time_point deadline) {
  std::unique_lock lock(shared_->mu);
  return shared_->cv.wait_until(lock, deadline, [&] { return shared_->idle(); });
}

bool DeadlineWorker::busy() const {
  std::lock_guard lock(shared_->mu);
  return !shared_->idle();
}

DeadlineWorker::Clock::duration DeadlineWorker::last_run_time() const {
  std::lock_guard lock(shared_->mu);
  return shared_->last_run;
}

bool DeadlineWorker::Stop(std::chrono::milliseconds timeout) {
  if (!thread_.joinable()) {
    return true;
  }
  bool idle = false;
  {
    std::unique_lock lock(shared_->mu);
    shared_->stop = true;
    shared_->requested = false;  // a run not started yet is dropped
    shared_->cv.notify_all();
    idle = shared_->cv.wait_for(lock, timeout, [&] { return !shared_->running; });
  }
  if (!idle) {
    WARPSCOPE_LOG(WARNING, "worker {} is still running its job after {} ms; leaving it behind",
                  shared_->name, timeout.count());
    thread_.detach();
    return false;
  }
  thread_.join();
  return true;
}

}  // namespace warpscope::agent

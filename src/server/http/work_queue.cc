// SPDX-License-Identifier: Apache-2.0
#include "server/http/work_queue.h"

#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <exception>

#include "base/logging.h"

namespace warpscope::server::http {

WorkQueue::WorkQueue(std::string name, int threads, size_t capacity, int nice)
    : name_(std::move(name)), capacity_(capacity) {
  for (int i = 0; i < std::max(1, threads); ++i) {
    threads_.emplace_back([this, nice] {
      if (nice > 0) {
        // On Linux the "process" of PRIO_PROCESS with a thread id is that thread alone.
        const id_t tid = static_cast<id_t>(gettid());
        errno = 0;
        const int now = getpriority(PRIO_PROCESS, tid);
        if (errno == 0 && setpriority(PRIO_PROCESS, tid, std::min(now + nice, 19)) != 0) {
          WARPSCOPE_PLOG(WARNING, "http-{}: setpriority", name_);
        }
      }
      Run();
    });
  }
}

WorkQueue::~WorkQueue() { Stop(); }

bool WorkQueue::TryPost(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ || jobs_.size() >= capacity_) return false;
    jobs_.push_back(std::move(job));
  }
  cv_.notify_one();
  return true;
}

size_t WorkQueue::waiting() {
  std::lock_guard<std::mutex> lock(mu_);
  return jobs_.size();
}

void WorkQueue::Stop() {
  std::deque<std::function<void()>> dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
  {
    std::lock_guard<std::mutex> lock(mu_);
    dropped.swap(jobs_);
  }
  // `dropped` is destroyed here, outside the lock: its jobs may own connections.
}

void WorkQueue::Run() {
  const std::string thread_name = ("http-" + name_).substr(0, 15);
  pthread_setname_np(pthread_self(), thread_name.c_str());
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
      if (stopping_) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    try {
      job();
    } catch (const std::exception& e) {
      WARPSCOPE_LOG_EVERY_N(ERROR, 100, "http worker {}: {}", name_, e.what());
    } catch (...) {
      WARPSCOPE_LOG_EVERY_N(ERROR, 100, "http worker {}: unknown exception", name_);
    }
  }
}

}  // namespace warpscope::server::http

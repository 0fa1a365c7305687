// SPDX-License-Identifier: Apache-2.0
// A bounded pool of worker threads for the HTTP front end's handlers: TryPost refuses work
// beyond `capacity` waiting jobs instead of queueing without bound, so that a flood of slow
// queries is answered 503 at once rather than holding memory and connections.
#ifndef WARPSCOPE_SERVER_HTTP_WORK_QUEUE_H_
#define WARPSCOPE_SERVER_HTTP_WORK_QUEUE_H_

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace warpscope::server::http {

// Thread-safe. Jobs run in FIFO order on `threads` threads named "http-<name>".
class WorkQueue {
 public:
  // `nice` (0..19) is added to each thread's nice value (setpriority on the thread).
  WorkQueue(std::string name, int threads, size_t capacity, int nice = 0);
  ~WorkQueue();  // Stop()
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // Queues `job`; false (job dropped) when `capacity` jobs already wait or after Stop().
  bool TryPost(std::function<void()> job);
  // Joins the threads after the running jobs finish; jobs still waiting are destroyed unrun.
  void Stop();
  const std::string& name() const { return name_; }
  // Jobs waiting (not running).
  size_t waiting();

 private:
  void Run();

  const std::string name_;
  const size_t capacity_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace warpscope::server::http

#endif  // WARPSCOPE_SERVER_HTTP_WORK_QUEUE_H_

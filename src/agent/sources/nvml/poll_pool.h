// SPDX-License-Identifier: Apache-2.0
// Internal to the NVML source: PollPool, the threads that read the GPUs (docs/design/nvml.md,
// section 9).
//
// One poll reads the GPUs one after another on one worker thread ("nvml-poll<K>"), so that a
// cycle wakes one thread, not one per GPU. When the GPU being read has not returned after the
// stall time, the GPUs after it are handed to another worker, which goes on with them, and so
// on; the stalled worker stays with its GPU until that returns, then becomes a spare. Workers are
// created only when every one is busy, are kept for the pool's lifetime, and are never more than
// the GPUs: each busy worker holds a GPU of its own.
//
// Threads: Poll, the queries and Stop are called by one owner thread, one at a time; `poll_one`
// runs on the workers. A GPU is read by one worker at a time and is never handed to a worker
// while its previous read runs. Everything `poll_one(i)` wrote is visible to the owner once
// answered(i) returned true or in_flight(i) false (through the pool's mutex), and `poll_one(i)`
// sees everything the owner wrote before the Poll that started it.
#ifndef WARPSCOPE_AGENT_SOURCES_NVML_POLL_POOL_H_
#define WARPSCOPE_AGENT_SOURCES_NVML_POLL_POOL_H_

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "agent/sources/deadline_worker.h"

namespace warpscope::agent::nvml_internal {

class PollPool {
 public:
  using Clock = DeadlineWorker::Clock;

  // Reads GPUs 0 .. `gpu_count` - 1 with `poll_one(index)`. Starts one worker. `poll_one` and
  // what it uses must outlive the pool's threads: see Stop().
  PollPool(size_t gpu_count, std::function<void(size_t)> poll_one);
  // Requires Stop() to have returned true, or no worker to be busy.
  ~PollPool();
  PollPool(const PollPool&) = delete;
  PollPool& operator=(const PollPool&) = delete;

  // Reads the GPUs of `batch` (indexes, in the order given; none in flight) and returns when all
  // have answered, or at `due`. A GPU that has run for `stall` without returning keeps its worker
  // and the GPUs after it go on on another. A GPU not started by `due` is not started at all (nor,
  // in this poll, one left when every worker is busy, which only a worker leaving its job at that
  // moment can make happen).
  void Poll(const std::vector<size_t>& batch, Clock::time_point due, Clock::duration stall);
  // Whether the read of GPU `gpu` that the last Poll started has returned; for a GPU of that
  // batch, right after it.
  bool answered(size_t gpu) const;
  // Whether a read of GPU `gpu` is started or running.
  bool in_flight(size_t gpu) const;
  bool any_in_flight() const;
  // Waits until GPU `gpu` is not in flight, or `until`; true when it is not. Between polls only.
  bool WaitIdle(size_t gpu, Clock::time_point until);
  // Worker threads created so far (at most the GPU count).
  size_t worker_count() const { return workers_.size(); }

  // Ends every worker, waiting up to `timeout` for each still in a read. False: one is still
  // inside `poll_one` and was detached; the pool and what `poll_one` uses must then stay
  // allocated. Idempotent.
  bool Stop(std::chrono::milliseconds timeout);

 private:
  static constexpr size_t kNone = ~size_t{0};
  enum class GpuState { kIdle, kQueued, kPolling, kAnswered };
  enum class Outcome { kAnswered, kStalled, kDue };

  struct Worker {
    // Guarded by mu_: the worker reads queue[next .. end) in order; the owner shortens `end` to
    // take back what it has not started.
    std::vector<size_t> queue;
    size_t next = 0;
    size_t end = 0;
    size_t current = kNone;             // the GPU it is reading
    Clock::time_point current_start{};  // since when
    std::unique_ptr<DeadlineWorker> thread;
  };

  // On a worker: reads its queue.
  void RunQueue(Worker& w);
  // An idle worker, created when none is and the bound allows; nullptr otherwise.
  Worker* IdleWorker();
  // Hands `w` the GPUs `batch[from ..]` and starts it.
  void Assign(Worker& w, const std::vector<size_t>& batch, size_t from);
  // Waits for `w` until it has answered its queue, stalled or `due`; on a stall or at `due`, takes
  // back the GPUs it has not started and says how many.
  Outcome Wait(Worker& w, Clock::time_point due, Clock::duration stall, size_t& taken_back);

  const std::function<void(size_t)> poll_one_;
  mutable std::mutex mu_;
  std::vector<GpuState> gpus_;   // guarded by mu_
  std::vector<Worker*> holder_;  // guarded by mu_: the worker of a GPU in flight
  // Owner only. Workers are never removed: a thread may hold its Worker after a detaching Stop.
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<Worker*> stalled_;  // owner only: the workers that stalled in this Poll
};

}  // namespace warpscope::agent::nvml_internal

#endif  // WARPSCOPE_AGENT_SOURCES_NVML_POLL_POOL_H_

// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/nvml/poll_pool.h"

#include <algorithm>
#include <string>

#include "base/logging.h"

namespace warpscope::agent::nvml_internal {

PollPool::PollPool(size_t gpu_count, std::function<void(size_t)> poll_one)
    : poll_one_(std::move(poll_one)), gpus_(gpu_count, GpuState::kIdle), holder_(gpu_count) {
  (void)IdleWorker();  // the first poll finds its thread started
}

PollPool::~PollPool() {
  const bool joined = Stop(std::chrono::milliseconds(0));
  WARPSCOPE_CHECK(joined);
}

void PollPool::RunQueue(Worker& w) {
  std::unique_lock lock(mu_);
  while (w.next < w.end) {
    const size_t gpu = w.queue[w.next++];
    gpus_[gpu] = GpuState::kPolling;
    w.current = gpu;
    w.current_start = Clock::now();
    lock.unlock();
    poll_one_(gpu);
    lock.lock();
    gpus_[gpu] = GpuState::kAnswered;
    w.current = kNone;
  }
}

PollPool::Worker* PollPool::IdleWorker() {
  for (auto& w : workers_) {
    if (!w->thread->busy()) {
      return w.get();
    }
  }
  if (workers_.size() >= gpus_.size()) {
    return nullptr;  // every GPU holds a worker
  }
  auto w = std::make_unique<Worker>();
  Worker* raw = w.get();
  w->thread = std::make_unique<DeadlineWorker>(fmt::format("nvml-poll{}", workers_.size()),
                                               [this, raw] { RunQueue(*raw); });
  workers_.push_back(std::move(w));
  return raw;
}

void PollPool::Assign(Worker& w, const std::vector<size_t>& batch, size_t from) {
  {
    std::lock_guard lock(mu_);
    w.queue.assign(batch.begin() + static_cast<std::ptrdiff_t>(from), batch.end());
    w.next = 0;
    w.end = w.queue.size();
    w.current = kNone;
    for (size_t gpu : w.queue) {
      gpus_[gpu] = GpuState::kQueued;
      holder_[gpu] = &w;
    }
  }
  const bool started = w.thread->Run();
  WARPSCOPE_CHECK(started);
}

void PollPool::Poll(const std::vector<size_t>& batch, Clock::time_point due,
                    Clock::duration stall) {
  stalled_.clear();
  {
    std::lock_guard lock(mu_);
    for (size_t gpu : batch) {
      WARPSCOPE_CHECK(gpus_[gpu] != GpuState::kQueued && gpus_[gpu] != GpuState::kPolling);
      gpus_[gpu] = GpuState::kIdle;  // answered() speaks of this poll only
    }
  }
  size_t from = 0;
  while (from < batch.size()) {
    // Each busy worker holds a GPU not among those left, so there is one, but for a worker that
    // is leaving its job at this very moment; then the GPUs left are not read this time.
    Worker* w = IdleWorker();
    if (w == nullptr) {
      break;
    }
    Assign(*w, batch, from);
    size_t taken_back = 0;
    const Outcome outcome = Wait(*w, due, stall, taken_back);
    if (outcome == Outcome::kAnswered) {
      break;
    }
    stalled_.push_back(w);
    // A spare now, even with nothing left in this poll, so that the next polls find one while
    // the stalled worker stays with its GPU.
    (void)IdleWorker();
    if (outcome == Outcome::kDue) {
      break;
    }
    from = batch.size() - taken_back;
  }
  // A GPU that stalled may still answer in time.
  for (Worker* w : stalled_) {
    (void)w->thread->WaitUntil(due);
  }
}

PollPool::Outcome PollPool::Wait(Worker& w, Clock::time_point due, Clock::duration stall,
                                 size_t& taken_back) {
  // In the common case the worker answers its whole queue before the first check.
  Clock::time_point check = Clock::now() + stall;
  for (;;) {
    if (w.thread->WaitUntil(std::min(check, due))) {
      return Outcome::kAnswered;
    }
    std::unique_lock lock(mu_);
    if (w.current == kNone && w.next == w.end) {
      // Its last GPU has answered and the thread is leaving the job: wait for that, so that the
      // next poll finds it idle (bounded: no NVML call is left in the job).
      lock.unlock();
      (void)w.thread->WaitUntil(Clock::now() + std::chrono::seconds(1));
      return Outcome::kAnswered;
    }
    const Clock::time_point now = Clock::now();
    if (now < due) {
      // The stall time counts from the start of the GPU being read. A thread that has not picked
      // up its queue yet holds no GPU: it is waited for, never handed over from.
      check = w.current == kNone ? now + stall : w.current_start + stall;
      if (w.current == kNone || now < check) {
        continue;
      }
    }
    taken_back = w.end - w.next;
    for (size_t i = w.next; i < w.end; ++i) {
      gpus_[w.queue[i]] = GpuState::kIdle;
      holder_[w.queue[i]] = nullptr;
    }
    w.end = w.next;
    return now < due ? Outcome::kStalled : Outcome::kDue;
  }
}

bool PollPool::answered(size_t gpu) const {
  std::lock_guard lock(mu_);
  return gpus_[gpu] == GpuState::kAnswered;
}

bool PollPool::in_flight(size_t gpu) const {
  std::lock_guard lock(mu_);
  return gpus_[gpu] == GpuState::kQueued || gpus_[gpu] == GpuState::kPolling;
}

bool PollPool::any_in_flight() const {
  std::lock_guard lock(mu_);
  return std::any_of(gpus_.begin(), gpus_.end(),
                     [](GpuState s) { return s == GpuState::kQueued || s == GpuState::kPolling; });
}

bool PollPool::WaitIdle(size_t gpu, Clock::time_point until) {
  Worker* holder = nullptr;
  {
    std::lock_guard lock(mu_);
    if (gpus_[gpu] != GpuState::kQueued && gpus_[gpu] != GpuState::kPolling) {
      return true;
    }
    holder = holder_[gpu];
  }
  // Between polls a GPU in flight is the last of its worker's queue (the rest was taken back),
  // so the worker is idle once the GPU has answered.
  return holder->thread->WaitUntil(until);
}

bool PollPool::Stop(std::chrono::milliseconds timeout) {
  bool all = true;
  for (auto& w : workers_) {
    all = w->thread->Stop(timeout) && all;
  }
  return all;
}

}  // namespace warpscope::agent::nvml_internal

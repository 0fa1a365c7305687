// SPDX-License-Identifier: Apache-2.0
#include "exporters/delivery.h"

#include <pthread.h>

#include <algorithm>

namespace warpscope::exporters {
namespace {

std::chrono::steady_clock::time_point DeadlineAfter(base::Duration d) {
  // Saturate: a timeout of Duration::max() means "no deadline", not an overflow.
  const auto now = std::chrono::steady_clock::now();
  const auto room = std::chrono::steady_clock::time_point::max() - now;
  const auto step =
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::min<base::Duration>(
          std::max(d, base::Duration::zero()), std::chrono::duration_cast<base::Duration>(room)));
  return now + step;
}

}  // namespace

ExponentialBackoff::ExponentialBackoff(const Options& options)
    : options_(options),
      ceiling_(options.initial),
      rng_(options.seed != 0 ? options.seed : std::random_device{}()) {}

base::Duration ExponentialBackoff::Next() {
  const base::Duration ceiling = std::min(ceiling_, options_.max);
  // Doubling saturates at the cap, so a long outage cannot overflow the duration.
  ceiling_ = ceiling >= options_.max / 2 ? options_.max : ceiling * 2;
  if (!options_.full_jitter || ceiling <= base::Duration::zero()) {
    return ceiling;
  }
  std::uniform_int_distribution<int64_t> pick(0, ceiling.count());
  return base::Duration(pick(rng_));
}

RetryPolicy::RetryPolicy(const Options& options) : options_(options), backoff_(options.backoff) {}

void RetryPolicy::Reset() {
  backoff_.Reset();
  attempts_ = 0;
}

std::optional<base::Duration> RetryPolicy::NextWait(std::optional<base::Duration> retry_after) {
  ++attempts_;
  if (options_.max_attempts > 0 && attempts_ >= options_.max_attempts) {
    return std::nullopt;
  }
  const base::Duration max = options_.backoff.max;
  base::Duration wait = backoff_.Next();
  if (retry_after.has_value()) {
    const base::Duration asked = std::min(*retry_after, max);
    wait = options_.retry_after == RetryAfter::kReplacesBackoff ? asked : std::max(wait, asked);
  }
  return std::min(wait, max);
}

SendLoop::SendLoop(std::string thread_name, LoopMonitor& monitor)
    : thread_name_(std::move(thread_name)), monitor_(monitor) {}

SendLoop::~SendLoop() {
  if (thread_.joinable()) {
    thread_.request_stop();
    thread_.join();
  }
}

void SendLoop::Start(std::function<void(std::stop_token)> run) {
  WARPSCOPE_CHECK(!thread_.joinable());
  thread_ = std::jthread([this, run = std::move(run)](std::stop_token stop) {
    pthread_setname_np(pthread_self(), thread_name_.substr(0, 15).c_str());
    run(stop);
    {
      std::lock_guard<std::mutex> lock(monitor_.mu);
      busy_ = false;
      exited_ = true;  // Shutdown need not wait for its deadline
    }
    monitor_.cv.notify_all();
  });
}

bool SendLoop::BeginShutdown(base::Duration timeout) {
  {
    std::lock_guard<std::mutex> lock(monitor_.mu);
    if (!accepting_) {
      return false;
    }
    accepting_ = false;
    deadline_ = DeadlineAfter(timeout);
  }
  monitor_.cv.notify_all();
  return true;
}

bool SendLoop::Shutdown(base::Duration timeout, const std::function<bool()>& drained,
                        const std::function<void()>& abort_in_flight) {
  if (!thread_.joinable() || !BeginShutdown(timeout)) {
    return false;
  }
  {
    Lock lock(monitor_.mu);
    monitor_.cv.wait_until(lock, deadline_, [&] { return (drained() && !busy_) || exited_; });
  }
  thread_.request_stop();
  {
    // An attempt in flight ends at its own timeout at the latest; aborting it ends it now.
    // Repeated because an attempt may start just after an abort (the thread checks its stop
    // token before each attempt).
    Lock lock(monitor_.mu);
    while (busy_) {
      lock.unlock();
      if (abort_in_flight) {
        abort_in_flight();
      }
      lock.lock();
      monitor_.cv.wait_for(lock, std::chrono::milliseconds(10), [&] { return !busy_; });
    }
  }
  thread_.join();
  return true;
}

void SendLoop::Join() {
  if (thread_.joinable()) {
    thread_.join();
  }
}

bool SendLoop::WaitForWork(Lock& lock, const std::stop_token& stop,
                           const std::function<bool()>& has_work) {
  monitor_.cv.wait(lock, stop, [&] { return has_work(); });
  if (stop.stop_requested()) {
    return false;
  }
  busy_ = true;
  return true;
}

void SendLoop::FinishItem(Lock& lock) {
  WARPSCOPE_DCHECK(lock.owns_lock());
  busy_ = false;
  monitor_.cv.notify_all();
}

bool SendLoop::WaitBeforeRetry(base::Duration d, const std::stop_token& stop) {
  Lock lock(monitor_.mu);
  if (!accepting_ && std::chrono::steady_clock::now() + d > deadline_) {
    return false;  // the retry could not happen before the shutdown deadline
  }
  monitor_.cv.wait_for(lock, stop, d, [] { return false; });
  return !stop.stop_requested();
}

}  // namespace warpscope::exporters

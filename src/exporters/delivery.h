// SPDX-License-Identifier: Apache-2.0
// The delivery mechanics shared by every exporter that sends from a thread of its own (OTLP,
// the warpscope server, the profile uploaders): a bounded queue that drops its oldest item, a
// retry policy (exponential backoff with optional full jitter, Retry-After, an attempt limit),
// and the sender thread with its shutdown protocol (stop accepting, drain until a deadline, no
// retry wait that would end past it, abort the attempt in flight, join).
//
// What stays with each exporter: what an item is, how it is sent, what a failure means, its
// counters and its log lines. docs/design/exporters.md, "Delivery".
#ifndef WARPSCOPE_EXPORTERS_DELIVERY_H_
#define WARPSCOPE_EXPORTERS_DELIVERY_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <random>
#include <stop_token>
#include <string>
#include <thread>
#include <utility>

#include "base/logging.h"
#include "base/time.h"

namespace warpscope::exporters {

// A FIFO of at most `capacity` items; a push into a full queue first drops the oldest (newer
// data is worth more). Not thread-safe: the owner guards it (usually with a LoopMonitor).
template <typename T>
class DropOldestQueue {
 public:
  explicit DropOldestQueue(size_t capacity) : capacity_(capacity) { WARPSCOPE_CHECK(capacity > 0); }

  // Appends `item`. Returns true when the oldest item was dropped to make room (the caller
  // counts and logs it).
  bool Push(T item) {
    const bool dropped = items_.size() >= capacity_;
    if (dropped) {
      items_.pop_front();
    }
    items_.push_back(std::move(item));
    return dropped;
  }
  // The oldest item. The queue must not be empty.
  T& front() {
    WARPSCOPE_DCHECK(!items_.empty());
    return items_.front();
  }
  // Removes and returns the oldest item. The queue must not be empty.
  T Pop() {
    WARPSCOPE_CHECK(!items_.empty());
    T item = std::move(items_.front());
    items_.pop_front();
    return item;
  }
  // Removes everything; returns how many items there were.
  size_t Clear() {
    const size_t n = items_.size();
    items_.clear();
    return n;
  }

  bool empty() const { return items_.empty(); }
  size_t size() const { return items_.size(); }
  size_t capacity() const { return capacity_; }

 private:
  size_t capacity_;
  std::deque<T> items_;
};

// Exponential backoff. The n-th call to Next() (n from 0) returns min(max, initial * 2^n);
// with full jitter it returns a uniformly random duration in [0, that], which spreads the
// retries of many agents after a server outage. Reset() after a success. Not thread-safe.
class ExponentialBackoff {
 public:
  struct Options {
    base::Duration initial = std::chrono::seconds(1);
    base::Duration max = std::chrono::seconds(60);
    bool full_jitter = false;
    uint64_t seed = 0;  // 0: seeded from std::random_device
  };

  explicit ExponentialBackoff(const Options& options);

  base::Duration Next();
  // The ceiling the next Next() draws from: min(max, initial * 2^n) after n calls.
  base::Duration current() const { return std::min(ceiling_, options_.max); }
  void Reset() { ceiling_ = options_.initial; }

 private:
  Options options_;
  base::Duration ceiling_;
  std::mt19937_64 rng_;
};

// When to try an item again after a failed attempt. Not thread-safe: the sender thread's.
class RetryPolicy {
 public:
  // What a Retry-After from the receiver does to the backoff's wait (always capped at
  // max_backoff).
  enum class RetryAfter {
    kReplacesBackoff,  // the receiver knows best: wait what it asks, shorter or longer
    kExtendsBackoff,   // wait at least what it asks, never less than the backoff
  };
  struct Options {
    ExponentialBackoff::Options backoff;  // backoff.max caps every wait
    int max_attempts = 0;                 // per item, the first included; 0: no limit
    RetryAfter retry_after = RetryAfter::kReplacesBackoff;
  };

  explicit RetryPolicy(const Options& options);

  // A new item: the backoff and the attempt count start again.
  void Reset();
  // After a failed attempt that may be retried: the wait before the next attempt, or nullopt
  // when the item has used its attempts. `retry_after`: the receiver's Retry-After, if any.
  std::optional<base::Duration> NextWait(std::optional<base::Duration> retry_after);

 private:
  Options options_;
  ExponentialBackoff backoff_;
  int attempts_ = 0;  // failed attempts on the current item
};

// The mutex that guards an exporter's queue and the condition variable that announces every
// change of it. A SendLoop waits on it; exporters with two threads share one between two loops.
struct LoopMonitor {
  std::mutex mu;
  std::condition_variable_any cv;
};

// One named sender thread and the shutdown protocol around it. The owner keeps its queue under
// `monitor.mu` and notifies `monitor.cv` after every change; the loop keeps, under the same
// mutex, whether it accepts new items, whether its thread is busy with an item, and the shutdown
// deadline.
//
// Threads: Start(), Shutdown(), BeginShutdown() and Join() run on the owner's sequence (the
// agent main sequence); WaitForWork(), FinishItem() and WaitBeforeRetry() on the loop's thread;
// the accessors, with the monitor held, on either.
class SendLoop {
 public:
  using Lock = std::unique_lock<std::mutex>;

  // `thread_name`: the thread's name in ps/top (at most 15 characters).
  SendLoop(std::string thread_name, LoopMonitor& monitor);
  // Requests the stop of a thread still running and joins it, without a drain. Owners shut down
  // first; a thread that does not watch its stop token must have been told by BeginShutdown.
  ~SendLoop();
  SendLoop(const SendLoop&) = delete;
  SendLoop& operator=(const SendLoop&) = delete;

  // Starts the thread, which runs `run(stop_token)`; when `run` returns the loop counts as
  // exited (see Shutdown). Once only.
  void Start(std::function<void(std::stop_token)> run);

  // Shutdown in one call: BeginShutdown(timeout); waits until `drained()` (called with the
  // monitor held) while the thread is not busy, or the thread has exited, or the deadline;
  // requests the thread's stop; while it is still busy, calls `abort_in_flight` (without the
  // monitor; may be empty) every 10 ms so that a blocking attempt ends now rather than at its
  // own timeout; joins. Returns false, doing nothing, before Start() or when the shutdown has
  // begun already.
  bool Shutdown(base::Duration timeout, const std::function<bool()>& drained,
                const std::function<void()>& abort_in_flight);
  // Stops accepting and starts the deadline, `timeout` from now (saturating: Duration::max()
  // means none), without waiting; for a thread that drains and exits by itself, so that several
  // loops drain in parallel. Returns false when the shutdown has begun already.
  bool BeginShutdown(base::Duration timeout);
  // Waits for the thread to return (after BeginShutdown, it decides when). Idempotent.
  void Join();

  // With the monitor held.
  bool accepting() const { return accepting_; }
  bool busy() const { return busy_; }
  std::chrono::steady_clock::time_point deadline() const { return deadline_; }  // if !accepting

  // The thread: waits until `has_work()` (called with the monitor held by `lock`) and marks the
  // thread busy; false, without marking, when the stop is requested.
  bool WaitForWork(Lock& lock, const std::stop_token& stop, const std::function<bool()>& has_work);
  // The thread, with the monitor held: the item taken by WaitForWork is done. Notifies.
  void FinishItem(Lock& lock);
  // The thread, without the monitor: waits `d` before a retry. False when the stop is requested
  // or when the wait would end past the shutdown deadline (the item is to be given up).
  bool WaitBeforeRetry(base::Duration d, const std::stop_token& stop);

 private:
  const std::string thread_name_;
  LoopMonitor& monitor_;
  bool accepting_ = true;  // all below guarded by monitor_.mu
  bool busy_ = false;
  bool exited_ = false;
  std::chrono::steady_clock::time_point deadline_{};
  std::jthread thread_;
};

}  // namespace warpscope::exporters

#endif  // WARPSCOPE_EXPORTERS_DELIVERY_H_

// SPDX-License-Identifier: Apache-2.0
// The shared delivery pieces. The queue and the retry policy are pure (seeded randomness, no
// time); the loop's tests wait on conditions with bounded timeouts, never on sleeps.
#include "exporters/delivery.h"

#include <gtest/gtest.h>
#include <pthread.h>

#include <atomic>
#include <string>
#include <vector>

namespace warpscope::exporters {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr auto kWait = seconds(10);  // upper bound for any condition; normally microseconds

TEST(DropOldestQueueTest, KeepsOrderAndDropsTheOldestWhenFull) {
  DropOldestQueue<int> q(2);
  EXPECT_FALSE(q.Push(1));
  EXPECT_FALSE(q.Push(2));
  EXPECT_TRUE(q.Push(3));  // 1 goes
  EXPECT_EQ(q.size(), 2u);
  EXPECT_EQ(q.front(), 2);
  EXPECT_EQ(q.Pop(), 2);
  EXPECT_EQ(q.Pop(), 3);
  EXPECT_TRUE(q.empty());
}

TEST(DropOldestQueueTest, ClearReportsWhatItRemoved) {
  DropOldestQueue<std::string> q(8);
  q.Push("a");
  q.Push("b");
  EXPECT_EQ(q.Clear(), 2u);
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.capacity(), 8u);
}

TEST(ExponentialBackoffTest, DoublesUpToTheCap) {
  ExponentialBackoff b({.initial = seconds(1), .max = seconds(5)});
  EXPECT_EQ(b.Next(), seconds(1));
  EXPECT_EQ(b.Next(), seconds(2));
  EXPECT_EQ(b.Next(), seconds(4));
  EXPECT_EQ(b.Next(), seconds(5));
  EXPECT_EQ(b.Next(), seconds(5));
  b.Reset();
  EXPECT_EQ(b.Next(), seconds(1));
}

TEST(ExponentialBackoffTest, FullJitterStaysWithinTheCeiling) {
  ExponentialBackoff b(
      {.initial = milliseconds(100), .max = seconds(1), .full_jitter = true, .seed = 42});
  base::Duration ceiling = milliseconds(100);
  bool varied = false;
  base::Duration first = b.Next();
  EXPECT_LE(first, ceiling);
  for (int i = 0; i < 200; ++i) {
    ceiling = std::min<base::Duration>(ceiling * 2, seconds(1));
    base::Duration d = b.Next();
    EXPECT_GE(d, base::Duration::zero());
    EXPECT_LE(d, ceiling);
    varied = varied || d != first;
  }
  EXPECT_TRUE(varied);
}

TEST(ExponentialBackoffTest, LongOutagesDoNotOverflow) {
  ExponentialBackoff b({.initial = seconds(1), .max = std::chrono::hours(24 * 365 * 100)});
  for (int i = 0; i < 200; ++i) {
    EXPECT_GT(b.Next(), base::Duration::zero());
  }
}

TEST(ExponentialBackoffTest, CurrentIsTheNextCeiling) {
  ExponentialBackoff b({.initial = seconds(1), .max = seconds(3)});
  EXPECT_EQ(b.current(), seconds(1));
  EXPECT_EQ(b.Next(), seconds(1));
  EXPECT_EQ(b.current(), seconds(2));
  b.Next();
  EXPECT_EQ(b.current(), seconds(3));
  b.Reset();
  EXPECT_EQ(b.current(), seconds(1));
}

RetryPolicy::Options Policy(RetryPolicy::RetryAfter rule, int max_attempts = 0) {
  return {.backoff = {.initial = seconds(1), .max = seconds(8)},
          .max_attempts = max_attempts,
          .retry_after = rule};
}

TEST(RetryPolicyTest, BacksOffExponentiallyAndResetsPerItem) {
  RetryPolicy p(Policy(RetryPolicy::RetryAfter::kReplacesBackoff));
  EXPECT_EQ(p.NextWait(std::nullopt), seconds(1));
  EXPECT_EQ(p.NextWait(std::nullopt), seconds(2));
  EXPECT_EQ(p.NextWait(std::nullopt), seconds(4));
  p.Reset();
  EXPECT_EQ(p.NextWait(std::nullopt), seconds(1));
}

TEST(RetryPolicyTest, GivesUpAfterMaxAttempts) {
  RetryPolicy p(Policy(RetryPolicy::RetryAfter::kReplacesBackoff, /*max_attempts=*/3));
  EXPECT_TRUE(p.NextWait(std::nullopt).has_value());   // after attempt 1
  EXPECT_TRUE(p.NextWait(std::nullopt).has_value());   // after attempt 2
  EXPECT_FALSE(p.NextWait(std::nullopt).has_value());  // attempt 3 was the last
  p.Reset();
  EXPECT_TRUE(p.NextWait(std::nullopt).has_value());
}

TEST(RetryPolicyTest, WithoutALimitRetriesForever) {
  RetryPolicy p(Policy(RetryPolicy::RetryAfter::kExtendsBackoff));
  for (int i = 0; i < 1000; ++i) {
    ASSERT_LE(p.NextWait(std::nullopt).value(), seconds(8));
  }
}

TEST(RetryPolicyTest, RetryAfterReplacingTheBackoffCanShortenIt) {
  RetryPolicy p(Policy(RetryPolicy::RetryAfter::kReplacesBackoff));
  p.NextWait(std::nullopt);
  p.NextWait(std::nullopt);                        // the backoff is at 4 s now
  EXPECT_EQ(p.NextWait(seconds(0)), seconds(0));   // asked for no wait
  EXPECT_EQ(p.NextWait(seconds(30)), seconds(8));  // capped
}

TEST(RetryPolicyTest, RetryAfterExtendingTheBackoffNeverShortensIt) {
  RetryPolicy p(Policy(RetryPolicy::RetryAfter::kExtendsBackoff));
  p.NextWait(std::nullopt);
  p.NextWait(std::nullopt);
  EXPECT_EQ(p.NextWait(seconds(0)), seconds(4));
  EXPECT_EQ(p.NextWait(seconds(6)), seconds(8));  // the backoff's 8 s is more
  p.Reset();
  EXPECT_EQ(p.NextWait(seconds(5)), seconds(5));   // more than the backoff's 1 s
  EXPECT_EQ(p.NextWait(seconds(30)), seconds(8));  // capped
}

TEST(RetryPolicyTest, FullJitterIsReproducibleFromItsSeed) {
  auto options = Policy(RetryPolicy::RetryAfter::kExtendsBackoff);
  options.backoff.full_jitter = true;
  options.backoff.seed = 7;
  RetryPolicy a(options);
  RetryPolicy b(options);
  for (int i = 0; i < 20; ++i) {
    const auto wait = a.NextWait(std::nullopt);
    EXPECT_EQ(wait, b.NextWait(std::nullopt));
    EXPECT_LE(*wait, seconds(8));
  }
}

// An exporter-like owner of a SendLoop: a queue of ints under the monitor, a thread that
// "sends" each by calling `send` without the monitor and gives up at the first failure.
class Owner {
 public:
  explicit Owner(std::function<bool(int, std::stop_token&)> send) : send_(std::move(send)) {
    loop_.Start([this](std::stop_token stop) { Run(stop); });
  }
  ~Owner() { Shutdown(base::Duration::zero()); }

  bool Push(int item) {
    {
      std::lock_guard<std::mutex> lock(monitor_.mu);
      if (!loop_.accepting()) {
        return false;
      }
      queue_.push_back(item);
    }
    monitor_.cv.notify_all();
    return true;
  }
  bool Shutdown(base::Duration timeout, std::function<void()> abort = nullptr) {
    return loop_.Shutdown(
        timeout, [&] { return queue_.empty(); }, abort);
  }
  // Waits until `done()` holds, with the monitor held.
  bool WaitFor(const std::function<bool()>& done) {
    std::unique_lock<std::mutex> lock(monitor_.mu);
    return monitor_.cv.wait_for(lock, kWait, done);
  }
  std::vector<int> sent() {
    std::lock_guard<std::mutex> lock(monitor_.mu);
    return sent_;
  }
  size_t queued() {
    std::lock_guard<std::mutex> lock(monitor_.mu);
    return queue_.size();
  }
  std::string thread_name() {
    std::lock_guard<std::mutex> lock(monitor_.mu);
    return thread_name_;
  }

  LoopMonitor monitor_;
  SendLoop loop_{"delivery-test", monitor_};

 private:
  void Run(std::stop_token stop) {
    char name[16] = {};
    pthread_getname_np(pthread_self(), name, sizeof(name));
    {
      std::lock_guard<std::mutex> lock(monitor_.mu);
      thread_name_ = name;
    }
    while (true) {
      int item = 0;
      {
        SendLoop::Lock lock(monitor_.mu);
        if (!loop_.WaitForWork(lock, stop, [&] { return !queue_.empty(); })) {
          return;
        }
        item = queue_.front();
        queue_.erase(queue_.begin());
      }
      const bool ok = send_(item, stop);
      SendLoop::Lock lock(monitor_.mu);
      if (ok) {
        sent_.push_back(item);
      }
      loop_.FinishItem(lock);
      if (!ok) {
        return;  // gives up, as an exporter does when it abandons an item
      }
    }
  }

  std::function<bool(int, std::stop_token&)> send_;
  std::vector<int> queue_;  // guarded by monitor_.mu
  std::vector<int> sent_;   // guarded by monitor_.mu
  std::string thread_name_;
};

TEST(SendLoopTest, SendsInOrderOnANamedThreadAndShutdownDrainsFirst) {
  Owner owner([](int, std::stop_token&) { return true; });
  for (int i = 1; i <= 5; ++i) {
    ASSERT_TRUE(owner.Push(i));
  }
  EXPECT_TRUE(owner.Shutdown(kWait));
  EXPECT_EQ(owner.sent(), (std::vector<int>{1, 2, 3, 4, 5}));
  EXPECT_EQ(owner.thread_name(), "delivery-test");
  EXPECT_FALSE(owner.Push(6));          // no longer accepting
  EXPECT_FALSE(owner.Shutdown(kWait));  // twice is harmless
}

// A send that blocks until the test or an abort releases it.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  int entered = 0;
  std::atomic<int> aborts{0};

  bool Pass() {
    std::unique_lock<std::mutex> lock(mu);
    ++entered;
    cv.notify_all();
    cv.wait(lock, [&] { return open; });
    return aborts.load() == 0;
  }
  void Open() {
    {
      std::lock_guard<std::mutex> lock(mu);
      open = true;
    }
    cv.notify_all();
  }
  bool WaitEntered(int n) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, kWait, [&] { return entered >= n; });
  }
};

TEST(SendLoopTest, AtTheDeadlineShutdownAbortsTheAttemptInFlightAndJoins) {
  Gate gate;
  Owner owner([&](int, std::stop_token&) { return gate.Pass(); });
  ASSERT_TRUE(owner.Push(1));
  ASSERT_TRUE(owner.Push(2));
  ASSERT_TRUE(gate.WaitEntered(1));  // the thread is stuck in its first send

  EXPECT_TRUE(owner.Shutdown(milliseconds(20), [&] {
    gate.aborts.fetch_add(1);
    gate.Open();
  }));

  EXPECT_GE(gate.aborts.load(), 1);
  EXPECT_TRUE(owner.sent().empty());
  EXPECT_EQ(owner.queued(), 1u);  // left for the owner to count
}

TEST(SendLoopTest, ARetryWaitPastTheShutdownDeadlineIsRefusedAtOnce) {
  std::atomic<int> refused{0};
  Owner* self = nullptr;
  Owner owner([&](int, std::stop_token& stop) {
    // Wait until Shutdown has begun, then ask for a wait far beyond its deadline.
    self->WaitFor([&] { return !self->loop_.accepting(); });
    if (!self->loop_.WaitBeforeRetry(std::chrono::hours(1), stop)) {
      refused.fetch_add(1);
    }
    return true;
  });
  self = &owner;
  ASSERT_TRUE(owner.Push(1));
  EXPECT_TRUE(owner.Shutdown(kWait));
  EXPECT_EQ(refused.load(), 1);
  EXPECT_EQ(owner.sent(), (std::vector<int>{1}));
}

TEST(SendLoopTest, ARetryWaitWithinTheDeadlineIsWaited) {
  std::atomic<int> waited{0};
  Owner* self = nullptr;
  Owner owner([&](int, std::stop_token& stop) {
    if (self->loop_.WaitBeforeRetry(milliseconds(1), stop)) {
      waited.fetch_add(1);
    }
    return true;
  });
  self = &owner;
  ASSERT_TRUE(owner.Push(1));
  ASSERT_TRUE(owner.WaitFor([&] { return !owner.loop_.busy() && waited.load() == 1; }));
  EXPECT_TRUE(owner.Shutdown(kWait));
  EXPECT_EQ(waited.load(), 1);
}

TEST(SendLoopTest, TheStopEndsARetryWait) {
  std::atomic<int> ended{0};
  Owner* self = nullptr;
  Owner owner([&](int, std::stop_token& stop) {
    ended.fetch_add(self->loop_.WaitBeforeRetry(std::chrono::hours(1), stop) ? 100 : 1);
    return false;
  });
  self = &owner;
  ASSERT_TRUE(owner.Push(1));
  ASSERT_TRUE(owner.WaitFor([&] { return owner.loop_.busy(); }));
  EXPECT_TRUE(owner.Shutdown(base::Duration::zero()));
  EXPECT_EQ(ended.load(), 1);
}

TEST(SendLoopTest, AThreadThatGivesUpEndsShutdownBeforeItsDeadline) {
  Owner owner([](int, std::stop_token&) { return false; });  // the first failure ends the thread
  ASSERT_TRUE(owner.Push(1));
  ASSERT_TRUE(owner.Push(2));
  const auto begin = std::chrono::steady_clock::now();
  EXPECT_TRUE(owner.Shutdown(std::chrono::hours(1)));
  EXPECT_LT(std::chrono::steady_clock::now() - begin, seconds(5));
  EXPECT_EQ(owner.queued(), 1u);
}

TEST(SendLoopTest, BeginShutdownSetsTheDeadlineForAThreadThatStopsByItself) {
  LoopMonitor monitor;
  SendLoop loop("delivery-test", monitor);
  std::chrono::steady_clock::time_point seen{};
  loop.Start([&](std::stop_token) {
    std::unique_lock<std::mutex> lock(monitor.mu);
    monitor.cv.wait(lock, [&] { return !loop.accepting(); });
    seen = loop.deadline();
  });
  const auto before = std::chrono::steady_clock::now();
  EXPECT_TRUE(loop.BeginShutdown(seconds(5)));
  EXPECT_FALSE(loop.BeginShutdown(seconds(1)));  // the first deadline stays
  loop.Join();
  loop.Join();  // idempotent
  EXPECT_GE(seen, before + seconds(5));
  EXPECT_LE(seen, std::chrono::steady_clock::now() + seconds(5));
}

TEST(SendLoopTest, NoDeadlineDoesNotOverflow) {
  LoopMonitor monitor;
  SendLoop loop("delivery-test", monitor);
  EXPECT_FALSE(loop.Shutdown(
      seconds(1), [] { return true; }, nullptr));  // not started
  loop.Start([](std::stop_token) {});
  EXPECT_TRUE(loop.BeginShutdown(base::Duration::max()));
  std::lock_guard<std::mutex> lock(monitor.mu);
  EXPECT_GT(loop.deadline(), std::chrono::steady_clock::now() + std::chrono::hours(24 * 365));
}

}  // namespace
}  // namespace warpscope::exporters

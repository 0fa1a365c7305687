// SPDX-License-Identifier: Apache-2.0
#include "exporters/profiles/profile_uploader.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstring>
#include <filesystem>

namespace warpscope::exporters {
namespace {

using profiling::WindowFuture;
using profiling::WindowProfile;

using namespace std::chrono_literals;

// A sink for another thread: keeps profiles, fails the next `failures` writes with `error`, and
// can hold writes until released.
class ThreadSafeSink final : public ProfileSink {
 public:
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<WindowProfile> profiles;
    int failures = 0;
    base::Status error = base::Unavailable("server down");
    bool held = false;
    int writes = 0;
  };
  explicit ThreadSafeSink(std::shared_ptr<State> state) : state_(std::move(state)) {}
  profiling::ProfileFormats formats() const override { return profiling::ProfileFormats::All(); }
  base::Status Write(const WindowProfile& profile) override {
    std::unique_lock<std::mutex> lock(state_->mu);
    ++state_->writes;
    state_->cv.notify_all();
    state_->cv.wait(lock, [&] { return !state_->held; });
    if (state_->failures > 0) {
      --state_->failures;
      return state_->error;
    }
    state_->profiles.push_back(profile);
    return base::OkStatus();
  }

 private:
  std::shared_ptr<State> state_;
};

WindowFuture Ready(std::vector<int32_t> pids) {
  std::promise<std::vector<WindowProfile>> p;
  std::vector<WindowProfile> profiles;
  for (int32_t pid : pids) {
    WindowProfile profile;
    profile.pid = pid;
    profiles.push_back(profile);
  }
  p.set_value(std::move(profiles));
  return p.get_future().share();
}

ProfileUploader::Options FastRetry() {
  ProfileUploader::Options o;
  o.retry_backoff = 1ms;
  o.max_backoff = 2ms;
  return o;
}

TEST(ProfileUploaderTest, WritesEveryProfileOfAWindow) {
  auto state = std::make_shared<ThreadSafeSink::State>();
  ProfileUploader u(std::make_unique<ThreadSafeSink>(state), {});
  u.Enqueue(Ready({1, 2}));
  ASSERT_TRUE(u.WaitUntil([](const auto& s) { return s.written == 2; }, 10s));
  std::lock_guard<std::mutex> lock(state->mu);
  EXPECT_EQ(state->profiles[0].pid, 1);
  EXPECT_EQ(state->profiles[1].pid, 2);
}

TEST(ProfileUploaderTest, RetriesUnavailableUntilTheSinkAccepts) {
  auto state = std::make_shared<ThreadSafeSink::State>();
  state->failures = 3;
  ProfileUploader u(std::make_unique<ThreadSafeSink>(state), FastRetry());
  u.Enqueue(Ready({7}));
  ASSERT_TRUE(u.WaitUntil([](const auto& s) { return s.written == 1; }, 10s));
  EXPECT_EQ(u.stats().retried, 3u);
  EXPECT_EQ(u.stats().dropped(), 0u);
}

TEST(ProfileUploaderTest, PermanentErrorsDropTheProfile) {
  auto state = std::make_shared<ThreadSafeSink::State>();
  state->failures = 1;
  state->error = base::InvalidArgument("bad profile");
  ProfileUploader u(std::make_unique<ThreadSafeSink>(state), FastRetry());
  u.Enqueue(Ready({7, 8}));
  ASSERT_TRUE(u.WaitUntil([](const auto& s) { return s.written == 1 && s.failed == 1; }, 10s));
  EXPECT_EQ(u.stats().retried, 0u);
}

TEST(ProfileUploaderTest, RetryQueueIsBoundedDroppingTheOldest) {
  auto state = std::make_shared<ThreadSafeSink::State>();
  state->failures = 1000000;
  ProfileUploader::Options o;
  o.max_retry_profiles = 2;
  o.retry_backoff = std::chrono::hours(1);  // never retried during the test
  o.stop_deadline = 0ms;
  ProfileUploader u(std::make_unique<ThreadSafeSink>(state), o);
  u.Enqueue(Ready({1, 2, 3, 4}));
  ASSERT_TRUE(u.WaitUntil([](const auto& s) { return s.dropped_retry == 2; }, 10s));
  u.Stop();
  EXPECT_EQ(u.stats().dropped_shutdown, 2u);
}

TEST(ProfileUploaderTest, ASlowSinkMakesTheQueueDropTheOldestWindow) {
  auto state = std::make_shared<ThreadSafeSink::State>();
  state->held = true;
  ProfileUploader::Options o;
  o.max_queued_windows = 1;
  ProfileUploader u(std::make_unique<ThreadSafeSink>(state), o);
  u.Enqueue(Ready({1}));
  {
    std::unique_lock<std::mutex> lock(state->mu);
    ASSERT_TRUE(state->cv.wait_for(lock, 10s, [&] { return state->writes == 1; }));
  }
  u.Enqueue(Ready({2}));
  u.Enqueue(Ready({3}));  // pushes window 2 out
  EXPECT_EQ(u.stats().dropped_queue, 1u);
  {
    std::lock_guard<std::mutex> lock(state->mu);
    state->held = false;
  }
  state->cv.notify_all();
  ASSERT_TRUE(u.WaitUntil([](const auto& s) { return s.written == 2; }, 10s));
  std::lock_guard<std::mutex> lock(state->mu);
  EXPECT_EQ(state->profiles[1].pid, 3);
}

TEST(ProfileUploaderTest, StopWritesWhatIsQueued) {
  auto state = std::make_shared<ThreadSafeSink::State>();
  ProfileUploader u(std::make_unique<ThreadSafeSink>(state), {});
  u.Enqueue(Ready({1}));
  u.Enqueue(Ready({2}));
  u.Stop();
  EXPECT_EQ(u.stats().written, 2u);
}

// The source: windows at Poll, self-metrics, final window at Stop, errors reported.
}  // namespace
}  // namespace warpscope::exporters

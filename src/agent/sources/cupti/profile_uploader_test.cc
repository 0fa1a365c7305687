// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/cupti/profile_uploader.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "agent/sources/cupti/cuda_profiler_source.h"
#include "model/testing/collecting_sink.h"

namespace warpscope::agent::cupti {
namespace {

namespace w = ::warpscope::cupti::wire;
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
TEST(CudaProfilerSourceTest, FinishesWindowsAtTheIntervalAndAtStop) {
  std::string templ = (std::filesystem::temp_directory_path() / "wssrc-XXXXXX").string();
  ASSERT_NE(mkdtemp(templ.data()), nullptr);
  CudaProfilerSource::Options options;
  options.listener.socket_path = templ + "/cupti.sock";
  options.listener.use_peer_pid = false;
  options.listener.disassemble = false;
  options.window = 10s;
  auto state = std::make_shared<ThreadSafeSink::State>();
  std::vector<CudaProfilerSource::SinkEntry> sinks;
  sinks.push_back({std::make_unique<ThreadSafeSink>(state), {}});
  base::FakeClock clock;
  std::vector<std::string> errors;
  CudaProfilerSource source(options, std::move(sinks), clock,
                            [&](std::string_view reason) { errors.emplace_back(reason); });
  ASSERT_TRUE(source.Start().ok());
  ProfileListener& listener = *source.listener();

  // A process reports through the wire (as bytes over the socket).
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, options.listener.socket_path.data(),
              options.listener.socket_path.size());
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  std::string bytes;
  w::Hello hello;
  hello.pid = 321;
  hello.exe = "/usr/bin/app";
  w::Encode(hello, &bytes);
  w::Encode(w::KernelName{1, "k"}, &bytes);
  w::KernelAggregate agg;
  agg.entries.push_back(w::KernelAggregateEntry{1, 0, 7, 4, 4000, 0, 0});
  w::Encode(agg, &bytes);
  w::Encode(w::Notice{w::Severity::kWarning, 0, "something to know"}, &bytes);
  ASSERT_EQ(send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size()));
  ASSERT_TRUE(listener.WaitUntil([](const auto& s) { return s.messages >= 4; }, 10s));

  model::CollectingSink out;
  const base::TimePoint t0 = clock.Now();
  source.Poll(t0, out);  // opens the first window
  source.Poll(t0 + 5s, out);
  EXPECT_EQ(listener.stats().windows, 0u);
  source.Poll(t0 + 10s, out);
  auto& uploader = *source.uploaders()[0];
  ASSERT_TRUE(uploader.WaitUntil([](const auto& s) { return s.written == 1; }, 10s));
  {
    std::lock_guard<std::mutex> lock(state->mu);
    EXPECT_EQ(state->profiles[0].pid, 321);
    EXPECT_EQ(state->profiles[0].start_ns, base::ToUnixNanos(t0));
    EXPECT_EQ(state->profiles[0].end_ns, base::ToUnixNanos(t0 + 10s));
    EXPECT_EQ(state->profiles[0].gpu_time_ns, 4000u);
  }
  // The self-metrics snapshot taken with the window reaches the next Poll.
  out.Clear();
  source.Poll(t0 + 11s, out);
  EXPECT_TRUE(out.Has("profiler.cuda.launches.seen"));
  EXPECT_EQ(errors, (std::vector<std::string>{"notice"}));

  agg.entries[0].total_ns = 1000;
  bytes.clear();
  w::Encode(agg, &bytes);
  ASSERT_EQ(send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size()));
  ASSERT_TRUE(listener.WaitUntil([](const auto& s) { return s.messages >= 5; }, 10s));
  source.Stop();  // the final window
  close(fd);
  EXPECT_EQ(uploader.stats().written, 2u);
  {
    std::lock_guard<std::mutex> lock(state->mu);
    ASSERT_EQ(state->profiles.size(), 2u);
    EXPECT_EQ(state->profiles[1].gpu_time_ns, 1000u);
  }
  std::filesystem::remove_all(templ);
}

}  // namespace
}  // namespace warpscope::agent::cupti

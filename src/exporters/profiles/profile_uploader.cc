// SPDX-License-Identifier: Apache-2.0
#include "exporters/profiles/profile_uploader.h"

#include <algorithm>

#include "base/logging.h"

namespace warpscope::exporters {

ProfileUploader::ProfileUploader(std::unique_ptr<ProfileSink> sink, Options options)
    : sink_(std::move(sink)),
      options_(std::move(options)),
      queue_(options_.max_queued_windows),
      retry_(options_.max_retry_profiles),
      backoff_({.initial = options_.retry_backoff, .max = options_.max_backoff}) {
  loop_.Start([this](std::stop_token) { Run(); });
}

ProfileUploader::~ProfileUploader() { Stop(); }

void ProfileUploader::Enqueue(profiling::WindowFuture window) {
  {
    std::lock_guard<std::mutex> lock(monitor_.mu);
    if (!loop_.accepting()) {
      ++stats_.dropped_shutdown;
      return;
    }
    if (queue_.Push(std::move(window))) {
      ++stats_.dropped_queue;
      WARPSCOPE_LOG_FIRST_N(
          WARNING, 5, "profiles: the {} sink is behind; dropping the oldest window", options_.name);
    }
  }
  monitor_.cv.notify_all();
}

void ProfileUploader::BeginStop() { loop_.BeginShutdown(options_.stop_deadline); }

void ProfileUploader::Stop() {
  BeginStop();
  loop_.Join();  // the thread writes until the deadline, then returns
}

ProfileUploader::Stats ProfileUploader::stats() const {
  std::lock_guard<std::mutex> lock(monitor_.mu);
  return stats_;
}

bool ProfileUploader::WaitUntil(const std::function<bool(const Stats&)>& done,
                                std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(monitor_.mu);
  return monitor_.cv.wait_for(lock, timeout, [&] { return done(stats_); });
}

bool ProfileUploader::WriteOne(const profiling::WindowProfile& profile) {
  base::Status status = sink_->Write(profile);
  std::lock_guard<std::mutex> lock(monitor_.mu);
  if (status.ok()) {
    ++stats_.written;
    backoff_.Reset();
    return true;
  }
  if (status.code() == base::StatusCode::kUnavailable) {
    WARPSCOPE_LOG_FIRST_N(WARNING, 5, "profiles: the {} sink is unavailable, will retry: {}",
                          options_.name, status.message());
    return false;
  }
  ++stats_.failed;
  WARPSCOPE_LOG_FIRST_N(ERROR, 5, "profiles: the {} sink refused the profile of pid {}: {}",
                        options_.name, profile.pid, status.message());
  return true;
}

void ProfileUploader::Run() {
  auto after = [](base::Duration d) {
    return std::chrono::steady_clock::now() +
           std::chrono::duration_cast<std::chrono::steady_clock::duration>(d);
  };
  SendLoop::Lock lock(monitor_.mu);
  while (true) {
    const auto now = std::chrono::steady_clock::now();
    const bool retry_due = !retry_.empty() && now >= next_retry_;
    // Stopping: write what is queued until the deadline; a retry not due yet is not waited for.
    if (!loop_.accepting() &&
        (now >= loop_.deadline() || (queue_.empty() && (retry_.empty() || !retry_due)))) {
      stats_.dropped_shutdown += queue_.Clear() + retry_.Clear();
      monitor_.cv.notify_all();
      return;
    }
    if (!queue_.empty()) {
      profiling::WindowFuture window = queue_.Pop();
      ++stats_.windows;
      lock.unlock();
      const std::vector<profiling::WindowProfile>& profiles = window.get();
      std::vector<profiling::WindowProfile> failed;
      for (const auto& p : profiles) {
        if (!WriteOne(p)) {
          failed.push_back(p);
        }
      }
      lock.lock();
      const size_t failures = failed.size();
      for (auto& p : failed) {
        if (retry_.Push(std::move(p))) {
          ++stats_.dropped_retry;
        }
      }
      if (failures > 0 && (retry_.size() == failures || next_retry_ <= now)) {
        next_retry_ = after(backoff_.current());
      }
      monitor_.cv.notify_all();
      continue;
    }
    if (retry_due) {
      ++stats_.retried;
      lock.unlock();
      // retry_ is this thread's only, so its head stays put while the monitor is released.
      const bool done = WriteOne(retry_.front());
      lock.lock();
      if (done) {
        retry_.Pop();
      } else {
        backoff_.Next();  // doubles the wait, up to max_backoff
        next_retry_ = after(backoff_.current());
      }
      monitor_.cv.notify_all();
      continue;
    }
    auto woken = [&] { return !loop_.accepting() || !queue_.empty(); };
    if (retry_.empty()) {
      monitor_.cv.wait(lock, woken);
    } else {
      monitor_.cv.wait_until(lock, next_retry_, woken);
    }
  }
}

}  // namespace warpscope::exporters

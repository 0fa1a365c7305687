// SPDX-License-Identifier: Apache-2.0
#include "exporters/profiles/profile_uploader.h"

#include <algorithm>

#include "base/logging.h"

namespace warpscope::exporters {

ProfileUploader::ProfileUploader(std::unique_ptr<ProfileSink> sink, Options options)
    : sink_(std::move(sink)), options_(std::move(options)), backoff_(options_.retry_backoff) {
  thread_ = std::thread([this] { Run(); });
}

ProfileUploader::~ProfileUploader() { Stop(); }

void ProfileUploader::Enqueue(profiling::WindowFuture window) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) {
      ++stats_.dropped_shutdown;
      return;
    }
    if (queue_.size() >= options_.max_queued_windows) {
      queue_.pop_front();
      ++stats_.dropped_queue;
      WARPSCOPE_LOG_FIRST_N(
          WARNING, 5, "profiles: the {} sink is behind; dropping the oldest window", options_.name);
    }
    queue_.push_back(std::move(window));
  }
  cv_.notify_all();
}

void ProfileUploader::BeginStop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stopping_) {
      stopping_ = true;
      deadline_ =
          std::chrono::steady_clock::now() +
          std::chrono::duration_cast<std::chrono::steady_clock::duration>(options_.stop_deadline);
    }
  }
  cv_.notify_all();
}

void ProfileUploader::Stop() {
  BeginStop();
  if (thread_.joinable()) {
    thread_.join();
  }
}

ProfileUploader::Stats ProfileUploader::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

bool ProfileUploader::WaitUntil(const std::function<bool(const Stats&)>& done,
                                std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return done(stats_); });
}

bool ProfileUploader::WriteOne(const profiling::WindowProfile& profile) {
  base::Status status = sink_->Write(profile);
  std::lock_guard<std::mutex> lock(mu_);
  if (status.ok()) {
    ++stats_.written;
    backoff_ = options_.retry_backoff;
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
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    const auto now = std::chrono::steady_clock::now();
    const bool retry_due = !retry_.empty() && now >= next_retry_;
    if (stopping_ && (now >= deadline_ || (queue_.empty() && (retry_.empty() || !retry_due)))) {
      stats_.dropped_shutdown += queue_.size() + retry_.size();
      queue_.clear();
      retry_.clear();
      cv_.notify_all();
      return;
    }
    if (!queue_.empty()) {
      profiling::WindowFuture window = std::move(queue_.front());
      queue_.pop_front();
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
      for (auto& p : failed) {
        if (retry_.size() >= options_.max_retry_profiles) {
          retry_.pop_front();
          ++stats_.dropped_retry;
        }
        retry_.push_back(std::move(p));
      }
      if (!failed.empty() && (retry_.size() == failed.size() || next_retry_ <= now)) {
        next_retry_ = std::chrono::steady_clock::now() +
                      std::chrono::duration_cast<std::chrono::steady_clock::duration>(backoff_);
      }
      cv_.notify_all();
      continue;
    }
    if (retry_due) {
      profiling::WindowProfile p = std::move(retry_.front());
      retry_.pop_front();
      ++stats_.retried;
      lock.unlock();
      const bool done = WriteOne(p);
      lock.lock();
      if (!done) {
        retry_.push_front(std::move(p));
        backoff_ = std::min(backoff_ * 2, options_.max_backoff);
        next_retry_ = std::chrono::steady_clock::now() +
                      std::chrono::duration_cast<std::chrono::steady_clock::duration>(backoff_);
      }
      cv_.notify_all();
      continue;
    }
    if (retry_.empty()) {
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    } else {
      cv_.wait_until(lock, next_retry_, [&] { return stopping_ || !queue_.empty(); });
    }
  }
}

}  // namespace warpscope::exporters

// SPDX-License-Identifier: Apache-2.0
// A ProfileExporter that keeps every window it is given.
#ifndef WARPSCOPE_PROFILING_TESTING_FAKE_PROFILE_EXPORTER_H_
#define WARPSCOPE_PROFILING_TESTING_FAKE_PROFILE_EXPORTER_H_

#include <atomic>
#include <mutex>
#include <vector>

#include "profiling/profile_exporter.h"

namespace warpscope::profiling {

class FakeProfileExporter final : public ProfileExporter {
 public:
  explicit FakeProfileExporter(ProfileFormats formats = ProfileFormats::All())
      : formats_(formats) {}

  std::string_view name() const override { return "fake"; }
  ProfileFormats formats() const override { return formats_; }
  void Enqueue(WindowFuture window) override {
    std::lock_guard<std::mutex> lock(mu_);
    windows_.push_back(std::move(window));
  }
  uint64_t dropped() const override { return dropped_; }
  void BeginStop() override {
    std::lock_guard<std::mutex> lock(mu_);
    begin_stop_calls_++;
  }
  void Stop() override {
    std::lock_guard<std::mutex> lock(mu_);
    stop_calls_++;
  }

  // The windows handed over so far, in order.
  std::vector<WindowFuture> windows() const {
    std::lock_guard<std::mutex> lock(mu_);
    return windows_;
  }
  int stop_calls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return stop_calls_;
  }
  int begin_stop_calls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return begin_stop_calls_;
  }
  void set_dropped(uint64_t dropped) { dropped_ = dropped; }

 private:
  ProfileFormats formats_;
  mutable std::mutex mu_;
  std::vector<WindowFuture> windows_;
  int stop_calls_ = 0;
  int begin_stop_calls_ = 0;
  std::atomic<uint64_t> dropped_{0};
};

}  // namespace warpscope::profiling

#endif  // WARPSCOPE_PROFILING_TESTING_FAKE_PROFILE_EXPORTER_H_

// SPDX-License-Identifier: Apache-2.0
// Hands finished windows to one ProfileSink on a thread of its own, so a slow disk or server
// never stalls the agent's main sequence or the profiler's listener (and one slow sink never
// delays another: each sink gets its own uploader).
//
// Enqueue() takes a shared future of a window's profiles (the listener finishes windows on its
// thread) and returns at once; at most `max_queued_windows` wait, beyond that the oldest is
// dropped and counted. A profile whose Write() returns Unavailable goes to a retry queue of at
// most `max_retry_profiles` (oldest dropped and counted), retried after `retry_backoff`
// (doubling up to `max_backoff`, reset by a success). Other errors drop the profile (counted,
// logged). Stop() keeps writing what is queued until `stop_deadline`, then drops the rest.
//
// Thread contract: every public method is thread-safe. The thread is named "profile-upload".
#ifndef WARPSCOPE_EXPORTERS_PROFILES_PROFILE_UPLOADER_H_
#define WARPSCOPE_EXPORTERS_PROFILES_PROFILE_UPLOADER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "base/time.h"
#include "exporters/delivery.h"
#include "exporters/profiles/profile_sink.h"
#include "profiling/profile_exporter.h"

namespace warpscope::exporters {

class ProfileUploader final : public profiling::ProfileExporter {
 public:
  struct Options {
    std::string name = "sink";  // for logs: "directory", "server"
    size_t max_queued_windows = 8;
    size_t max_retry_profiles = 32;
    base::Duration retry_backoff = std::chrono::seconds(5);
    base::Duration max_backoff = std::chrono::minutes(2);
    base::Duration stop_deadline = std::chrono::seconds(5);
  };

  struct Stats {
    uint64_t windows = 0;           // windows taken from the queue
    uint64_t written = 0;           // profiles the sink accepted
    uint64_t retried = 0;           // Write() attempts of profiles from the retry queue
    uint64_t failed = 0;            // profiles dropped on a permanent error
    uint64_t dropped_queue = 0;     // windows dropped: queue full
    uint64_t dropped_retry = 0;     // profiles dropped: retry queue full
    uint64_t dropped_shutdown = 0;  // windows or profiles left at Stop's deadline
    uint64_t dropped() const { return failed + dropped_queue + dropped_retry + dropped_shutdown; }
  };

  ProfileUploader(std::unique_ptr<ProfileSink> sink, Options options);
  ~ProfileUploader() override;

  std::string_view name() const override { return options_.name; }
  profiling::ProfileFormats formats() const override { return sink_->formats(); }
  void Enqueue(profiling::WindowFuture window) override;
  uint64_t dropped() const override { return stats().dropped(); }
  // Starts the deadline without waiting (so several uploaders can drain in parallel).
  void BeginStop() override;
  // Writes what is queued (until the deadline), then joins the thread. Idempotent.
  void Stop() override;

  Stats stats() const;
  // Waits until `done(stats())` holds or `timeout` passes.
  bool WaitUntil(const std::function<bool(const Stats&)>& done, std::chrono::milliseconds timeout);

 private:
  void Run();
  // Writes one profile; false when it should be retried.
  bool WriteOne(const profiling::WindowProfile& profile);

  std::unique_ptr<ProfileSink> sink_;
  Options options_;
  mutable LoopMonitor monitor_;
  DropOldestQueue<profiling::WindowFuture> queue_;      // guarded by monitor_.mu
  DropOldestQueue<profiling::WindowProfile> retry_;     // the thread's only
  Stats stats_;                                         // guarded by monitor_.mu
  std::chrono::steady_clock::time_point next_retry_{};  // the thread's only
  ExponentialBackoff backoff_;                          // guarded by monitor_.mu
  SendLoop loop_{"profile-upload", monitor_};           // last: its thread uses the above
};

}  // namespace warpscope::exporters

#endif  // WARPSCOPE_EXPORTERS_PROFILES_PROFILE_UPLOADER_H_

// SPDX-License-Identifier: Apache-2.0
// Where a profiler hands its finished windows: the profile exporters (src/exporters/profiles:
// a directory, the server) implement this; profilers (agent sources) see only this interface.
//
// Thread contract: every method is thread-safe. Enqueue() never blocks: an exporter that must
// do I/O owns a thread and a bounded queue (it drops and counts when full).
#ifndef WARPSCOPE_PROFILING_PROFILE_EXPORTER_H_
#define WARPSCOPE_PROFILING_PROFILE_EXPORTER_H_

#include <cstdint>
#include <future>
#include <string_view>
#include <vector>

#include "profiling/window_profile.h"

namespace warpscope::profiling {

// A window's profiles (one per process), as a profiler finishes them on a thread of its own.
using WindowFuture = std::shared_future<std::vector<WindowProfile>>;

class ProfileExporter {
 public:
  virtual ~ProfileExporter() = default;
  ProfileExporter(const ProfileExporter&) = delete;
  ProfileExporter& operator=(const ProfileExporter&) = delete;

  virtual std::string_view name() const = 0;  // for logs: "directory", "server"
  // The formats it writes: the profiler builds the union of its exporters' formats.
  virtual ProfileFormats formats() const = 0;
  // Takes one window; returns at once.
  virtual void Enqueue(WindowFuture window) = 0;
  // Profiles and windows dropped so far (queue full, permanent errors, shutdown).
  virtual uint64_t dropped() const = 0;
  // Starts the shutdown deadline without waiting (so several exporters drain in parallel).
  virtual void BeginStop() = 0;
  // Writes what is queued until the deadline, then stops. Idempotent.
  virtual void Stop() = 0;

 protected:
  ProfileExporter() = default;
};

}  // namespace warpscope::profiling

#endif  // WARPSCOPE_PROFILING_PROFILE_EXPORTER_H_

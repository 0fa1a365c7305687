// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_BASE_TIME_H_
#define WARPSCOPE_BASE_TIME_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace warpscope::base {

using Duration = std::chrono::nanoseconds;
// Wall-clock time, nanoseconds since the Unix epoch.
using TimePoint = std::chrono::time_point<std::chrono::system_clock, std::chrono::nanoseconds>;

inline int64_t ToUnixNanos(TimePoint t) { return t.time_since_epoch().count(); }
inline int64_t ToUnixMillis(TimePoint t) { return ToUnixNanos(t) / 1000000; }
inline TimePoint FromUnixNanos(int64_t ns) { return TimePoint(Duration(ns)); }
inline double ToSeconds(Duration d) { return std::chrono::duration<double>(d).count(); }

// Parses "500ms", "5s", "2m", "1h", "1m30s". A bare number is rejected (the unit is required) so
// that "--collect-metrics-interval=30" cannot silently mean 30 ns. Fractions are rounded to the
// nearest nanosecond; a total beyond Duration::max() (about 292 years) is an error.
Result<Duration> ParseDuration(std::string_view text);
// "1m30s", "250ms", "0s", "1m1s500ms"; exact, so ParseDuration(FormatDuration(d)) == d for d >= 0.
std::string FormatDuration(Duration d);

// Source of time. Everything that reads time takes a Clock& so tests can drive it.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimePoint Now() const = 0;          // wall clock (for timestamps)
  virtual Duration Monotonic() const = 0;     // for intervals and deadlines
};

class RealClock : public Clock {
 public:
  TimePoint Now() const override;
  Duration Monotonic() const override;
  static RealClock& Get();
};

// Manually advanced clock for tests. Not thread-safe.
class FakeClock : public Clock {
 public:
  explicit FakeClock(TimePoint start = FromUnixNanos(1'700'000'000'000'000'000))
      : now_(start) {}
  TimePoint Now() const override { return now_; }
  Duration Monotonic() const override { return mono_; }
  void Advance(Duration d) {
    now_ += d;
    mono_ += d;
  }

 private:
  TimePoint now_;
  Duration mono_{Duration(1'000'000'000)};
};

}  // namespace warpscope::base

#endif  // WARPSCOPE_BASE_TIME_H_

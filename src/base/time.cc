// SPDX-License-Identifier: Apache-2.0
#include "base/time.h"

#include <time.h>

#include <cctype>
#include <cmath>

namespace warpscope::base {

Result<Duration> ParseDuration(std::string_view text) {
  if (text.empty()) {
    return Error(InvalidArgument("empty duration; use a number with a unit, e.g. 30s, 500ms, 2m"));
  }
  Duration total{0};
  size_t i = 0;
  while (i < text.size()) {
    size_t start = i;
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) {
      ++i;
    }
    if (start == i) {
      return Error(InvalidArgument("bad duration '{}': expected a number at '{}'", text,
                                   text.substr(start)));
    }
    double number = 0;
    try {
      number = std::stod(std::string(text.substr(start, i - start)));
    } catch (...) {
      return Error(InvalidArgument("bad duration '{}': '{}' is not a number", text,
                                   text.substr(start, i - start)));
    }
    size_t unit_start = i;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
    std::string_view unit = text.substr(unit_start, i - unit_start);
    double ns_per_unit = 0;
    if (unit == "ns") ns_per_unit = 1;
    else if (unit == "us") ns_per_unit = 1e3;
    else if (unit == "ms") ns_per_unit = 1e6;
    else if (unit == "s") ns_per_unit = 1e9;
    else if (unit == "m") ns_per_unit = 60e9;
    else if (unit == "h") ns_per_unit = 3600e9;
    else if (unit == "d") ns_per_unit = 86400e9;
    else if (unit.empty()) {
      return Error(InvalidArgument("bad duration '{}': missing unit; write e.g. {}s", text,
                                   text.substr(start, i - start)));
    } else {
      return Error(InvalidArgument("bad duration '{}': unknown unit '{}'; use ms, s, m, h or d",
                                   text, unit));
    }
    // Round to the nearest nanosecond ("1.001s" is 1001000000ns although 1.001 * 1e9 is a hair
    // below that in binary), and refuse what does not fit in the int64 nanoseconds of Duration
    // instead of overflowing.
    double ns = std::round(number * ns_per_unit);
    if (!(ns < 0x1p63) || static_cast<int64_t>(ns) > Duration::max().count() - total.count()) {
      return Error(InvalidArgument("bad duration '{}': too long; the maximum is about 292 years",
                                   text));
    }
    total += Duration(static_cast<int64_t>(ns));
  }
  return total;
}

std::string FormatDuration(Duration d) {
  if (d.count() == 0) return "0s";
  std::string out;
  // The magnitude as unsigned: -INT64_MIN does not fit in int64_t.
  uint64_t ns = static_cast<uint64_t>(d.count());
  if (d.count() < 0) {
    out = "-";
    ns = 0 - ns;
  }
  // A sub-second amount in the coarsest unit that keeps it exact.
  auto sub_second = [](uint64_t v) {
    if (v % 1'000'000 == 0) return fmt::format("{}ms", v / 1'000'000);
    if (v % 1'000 == 0) return fmt::format("{}us", v / 1'000);
    return fmt::format("{}ns", v);
  };
  if (ns % 1'000'000'000 != 0 && ns < 60'000'000'000) {
    return out + sub_second(ns);
  }
  uint64_t s = ns / 1'000'000'000;
  uint64_t h = s / 3600, m = (s % 3600) / 60, sec = s % 60;
  if (h) out += fmt::format("{}h", h);
  if (m) out += fmt::format("{}m", m);
  if (sec) out += fmt::format("{}s", sec);
  // Keep the sub-second rest of a long duration, so that the text parses back to the same value.
  if (ns % 1'000'000'000 != 0) out += sub_second(ns % 1'000'000'000);
  return out;
}

TimePoint RealClock::Now() const {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return FromUnixNanos(int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec);
}

Duration RealClock::Monotonic() const {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return Duration(int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec);
}

RealClock& RealClock::Get() {
  static RealClock* clock = new RealClock();
  return *clock;
}

}  // namespace warpscope::base

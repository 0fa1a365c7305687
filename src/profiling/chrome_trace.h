// SPDX-License-Identifier: Apache-2.0
// Writes the Chrome trace event format (JSON), which Perfetto's UI and chrome://tracing open:
// complete and instant events on (pid, tid) tracks, flow arrows, and track names. Times are
// nanoseconds in, microseconds with three decimals out (exact for integer nanoseconds).
//
// Categories, flow names and argument keys are the program's own literals and are written
// without escaping; event names and string values are escaped.
//
// Usage: events are appended in call order; an event's arguments are written through the
// TraceArgs it returns, which closes the event when it goes out of scope, so one event's
// TraceArgs must be gone before the next event starts. Finish() closes the document.
// Not thread-safe.
#ifndef WARPSCOPE_PROFILING_CHROME_TRACE_H_
#define WARPSCOPE_PROFILING_CHROME_TRACE_H_

#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

namespace warpscope::profiling {

// Appends `s` as a JSON string literal (quotes, escapes and control characters as \uXXXX).
void AppendJsonString(fmt::memory_buffer& out, std::string_view s);

class ChromeTraceWriter;

// The "args" object of one event. Closes the event on destruction.
class TraceArgs {
 public:
  ~TraceArgs();
  TraceArgs(const TraceArgs&) = delete;
  TraceArgs& operator=(const TraceArgs&) = delete;

  TraceArgs& Num(std::string_view key, int64_t value);
  TraceArgs& Unsigned(std::string_view key, uint64_t value);
  TraceArgs& Str(std::string_view key, std::string_view value);
  TraceArgs& Fixed3(std::string_view key, double value);  // three decimals
  TraceArgs& Array(std::string_view key, std::initializer_list<uint64_t> values);

 private:
  friend class ChromeTraceWriter;
  explicit TraceArgs(fmt::memory_buffer& out) : out_(out) {}
  void Key(std::string_view key);
  fmt::memory_buffer& out_;
  bool first_ = true;
};

class ChromeTraceWriter {
 public:
  // `reserve_bytes`: the expected size, to allocate once.
  explicit ChromeTraceWriter(size_t reserve_bytes = 4096);

  // Track names and order (metadata events).
  void ProcessName(int64_t pid, std::string_view name);
  void ProcessSortIndex(int64_t pid, int64_t index);
  void ThreadName(int64_t pid, int64_t tid, std::string_view name);

  // A slice [start_ns, start_ns + duration_ns) on track (pid, tid).
  TraceArgs Complete(std::string_view category, int64_t pid, int64_t tid, int64_t start_ns,
                     int64_t duration_ns, std::string_view name);
  // An instant of thread scope.
  TraceArgs Instant(std::string_view category, int64_t pid, int64_t tid, int64_t ts_ns,
                    std::string_view name);
  // The two ends of flow arrow `id`; the end binds to the slice that encloses it.
  void FlowStart(std::string_view category, std::string_view name, uint64_t id, int64_t pid,
                 int64_t tid, int64_t ts_ns);
  void FlowEnd(std::string_view category, std::string_view name, uint64_t id, int64_t pid,
               int64_t tid, int64_t ts_ns);

  // Closes the event list, adds "otherData" with these integer fields, and returns the document.
  std::string Finish(std::initializer_list<std::pair<std::string_view, int64_t>> other_data);

 private:
  fmt::memory_buffer& NextEvent();
  void Micros(int64_t ns);

  fmt::memory_buffer out_;
  bool first_ = true;
};

}  // namespace warpscope::profiling

#endif  // WARPSCOPE_PROFILING_CHROME_TRACE_H_

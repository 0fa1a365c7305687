// SPDX-License-Identifier: Apache-2.0
// One process's profile of one export window, in the formats its exporters asked for: what a
// profiler hands to profile exporters (profile_exporter.h).
#ifndef WARPSCOPE_PROFILING_WINDOW_PROFILE_H_
#define WARPSCOPE_PROFILING_WINDOW_PROFILE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace warpscope::profiling {

// The trace a directory of profiles or `warpscope profile` writes.
enum class TraceFormat {
  kPerfetto,  // Perfetto's native protobuf trace (.perfetto-trace), the default
  kChrome,    // Chrome trace event JSON (.trace.json)
};

// "perfetto" or "chrome" (the flags' values); nullopt for anything else.
inline std::optional<TraceFormat> ParseTraceFormat(std::string_view name) {
  if (name == "perfetto") return TraceFormat::kPerfetto;
  if (name == "chrome") return TraceFormat::kChrome;
  return std::nullopt;
}

// The output formats a window is built in. A profiler builds only what its exporters need.
struct ProfileFormats {
  bool pprof = false;         // WindowProfile::pprof_gz
  bool folded = false;        // WindowProfile::folded and folded_pc_samples
  bool trace = false;         // WindowProfile::perfetto_trace
  bool chrome_trace = false;  // WindowProfile::trace_json
  static ProfileFormats All() { return {true, true, true, true}; }
  // pprof and folded stacks, and the trace in `format`.
  static ProfileFormats Files(TraceFormat format) {
    return {true, true, format == TraceFormat::kPerfetto, format == TraceFormat::kChrome};
  }
  bool any_trace() const { return trace || chrome_trace; }
  ProfileFormats& operator|=(const ProfileFormats& o) {
    pprof |= o.pprof;
    folded |= o.folded;
    trace |= o.trace;
    chrome_trace |= o.chrome_trace;
    return *this;
  }
  bool operator==(const ProfileFormats&) const = default;
};

struct WindowProfile {
  std::string kind = "gpu";  // what was profiled: "gpu" (CUDA kernels and copies)
  int32_t pid = 0;
  std::string executable;  // absolute path
  int64_t start_ns = 0;    // the window, realtime ns
  int64_t end_ns = 0;
  // Each is "" when its format was not asked for.
  std::string pprof_gz;           // gzip(perftools.profiles.Profile)
  std::string folded;             // "a;b;c <gpu ns>\n", root first, sorted
  std::string folded_pc_samples;  // same for pc_samples, "" when there were none
  std::string perfetto_trace;     // perfetto.protos.Trace (profiling/perfetto_trace.h)
  std::string trace_json;         // Chrome trace event format (opens in Perfetto too)
  // Totals of a GPU window.
  uint64_t kernels = 0;             // kernel executions (activities + aggregated counts)
  uint64_t gpu_time_ns = 0;         // kernels and memory copies/memsets
  uint64_t memory_ops = 0;          // memory copies and memsets
  uint64_t memory_gpu_time_ns = 0;  // their part of gpu_time_ns
  uint64_t pc_samples = 0;
};

}  // namespace warpscope::profiling

#endif  // WARPSCOPE_PROFILING_WINDOW_PROFILE_H_

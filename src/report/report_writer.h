// SPDX-License-Identifier: Apache-2.0
// Writes `warpscope profile`'s output directory: report.html (html_report.h), summary.json
// (the report's tables for scripts), the trace (trace_merge.h: trace.perfetto-trace, or
// trace.json in Chrome's format) and one pprof file per process
// and kind, named like --cpu-profile-dir / --cuda-profile-dir files
// (<kind>-<host>-<pid>-<start ms>-<end ms>.pb.gz, with .folded beside it).
//
// Blocking file I/O; call it once, at the end of the run.
#ifndef WARPSCOPE_REPORT_REPORT_WRITER_H_
#define WARPSCOPE_REPORT_REPORT_WRITER_H_

#include <string>
#include <vector>

#include "base/status.h"
#include "profiling/window_profile.h"
#include "report/profile_report.h"

namespace warpscope::report {

struct WrittenReport {
  std::string html_path;
  std::vector<std::string> files;  // every file written, relative to the directory
};

// The directory exists or is created. Fails (naming the file) on the first write that fails.
[[nodiscard]] base::Result<WrittenReport> WriteReport(
    const std::string& dir, const ProfileReport& report,
    const std::vector<profiling::WindowProfile>& windows,
    profiling::TraceFormat trace = profiling::TraceFormat::kPerfetto);

// summary.json's document.
std::string SummaryJson(const ProfileReport& report);

}  // namespace warpscope::report

#endif  // WARPSCOPE_REPORT_REPORT_WRITER_H_

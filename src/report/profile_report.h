// SPDX-License-Identifier: Apache-2.0
// The content of `warpscope profile`'s offline report, computed from the window profiles the
// CPU and CUDA profilers produced during the run: one merged profile per process and kind, the
// merged CPU + GPU flame tree, top kernels with their launch sites, top CPU functions, totals
// per process and per GPU. html_report.h draws it; report_writer.h writes it with the pprof
// files and the trace.
//
// Pure functions over data; no I/O. Not thread-safe: one owner at a time.
#ifndef WARPSCOPE_REPORT_PROFILE_REPORT_H_
#define WARPSCOPE_REPORT_PROFILE_REPORT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "profiling/profile.h"
#include "profiling/window_profile.h"

namespace warpscope::report {

// Whether one part (CPU or GPU) of the profile was collected, and if not why.
struct PartStatus {
  bool present = false;
  std::string reason;              // why it is absent, "" when present
  std::string remedy;              // what to do about it, "" when nothing
  std::vector<std::string> notes;  // caveats of a present part (e.g. "user space only")
};

// What the run was: everything the report shows besides the profiles.
struct RunInfo {
  std::vector<std::string> command;
  std::string host;
  int64_t start_ns = 0;  // realtime, the profiled span
  int64_t end_ns = 0;
  std::string outcome;  // "exited with status 0", "killed by signal 9 (exit status 137)", ...
  PartStatus cpu;
  PartStatus gpu;
};

// One process's profile of one kind over the whole run (its windows merged), frames classified.
struct ProcessProfile {
  std::string kind;  // "cpu" or "gpu"
  int32_t pid = 0;
  std::string executable;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  profiling::Profile profile;
};

// A node of the merged flame tree: frames are merged by (kind, name) under the same parent.
struct FlameNode {
  std::string name;
  profiling::FrameKind kind = profiling::FrameKind::kUnknown;
  int64_t cpu_ns = 0;  // total (self + children)
  int64_t gpu_ns = 0;
  int64_t self_cpu_ns = 0;
  int64_t self_gpu_ns = 0;
  std::vector<FlameNode> children;  // by cpu_ns + gpu_ns descending, then name
  int64_t pc_samples = 0;           // the CUDA profiler's PC samples (SASS and stall frames)
  int64_t self_pc_samples = 0;
};

struct LaunchSite {
  std::string python;  // the innermost Python frame above the launch, "" when none
  std::string native;  // the innermost native frame above the launch API, "" when none
  int64_t gpu_ns = 0;
  int64_t launches = 0;
};

struct KernelRow {
  std::string name;
  int64_t gpu_ns = 0;
  int64_t launches = 0;
  std::vector<LaunchSite> sites;  // by gpu_ns descending, at most ReportOptions::max_sites
};

struct FunctionRow {
  std::string name;
  std::string where;  // module (native, OS kernel) or file:line (Python)
  profiling::FrameKind kind = profiling::FrameKind::kUnknown;
  int64_t self_ns = 0;
  int64_t total_ns = 0;  // samples whose stack holds the function (counted once per sample)
};

struct ProcessRow {
  int32_t pid = 0;
  std::string executable;
  int64_t cpu_ns = 0;
  int64_t cpu_samples = 0;
  int64_t gpu_ns = 0;  // kernels and memory operations
  int64_t launches = 0;
};

struct GpuRow {
  int64_t device = -1;  // -1: the device was not reported
  int64_t kernel_ns = 0;
  int64_t memory_ns = 0;
  int64_t launches = 0;
};

struct ProfileReport {
  RunInfo run;
  std::vector<ProcessProfile> profiles;  // by kind, then pid
  FlameNode flame;                       // root "all"
  std::vector<KernelRow> kernels;        // by gpu_ns descending
  std::vector<FunctionRow> functions;    // by self_ns descending
  std::vector<ProcessRow> processes;     // by pid
  std::vector<GpuRow> gpus;              // by device
  int64_t cpu_ns = 0;
  int64_t cpu_samples = 0;
  int64_t kernel_ns = 0;
  int64_t memory_ns = 0;
  int64_t launches = 0;
  size_t flame_nodes_folded = 0;  // nodes folded into "(other)" to bound the tree
};

struct ReportOptions {
  size_t max_flame_nodes = 5000;  // beyond it the smallest subtrees fold into "(other)"
  size_t max_kernels = 50;
  size_t max_sites = 5;
  size_t max_functions = 50;
};

// Merges `windows` per (kind, pid), classifies frames and computes every table. A window whose
// pprof does not decode is skipped and named in the returned report's run notes (of its part).
ProfileReport BuildReport(RunInfo run, const std::vector<profiling::WindowProfile>& windows,
                          const ReportOptions& options = {});

}  // namespace warpscope::report

#endif  // WARPSCOPE_REPORT_PROFILE_REPORT_H_

// SPDX-License-Identifier: Apache-2.0
// The report of `warpscope profile` as one self-contained HTML page: inline style and script,
// no network access, every name HTML-escaped (kernel and function names hold <, > and &) and
// the flame tree embedded as JSON that cannot close its <script> element.
//
// Sections: run, collected parts (and why one is absent), GPU time vs CPU time, the merged
// flamegraph (weight: CPU time, GPU time, both, PC samples; colours by frame kind with a legend;
// hover shows name, kind, total, self and share; click zooms), top kernels with their launch
// sites, top CPU functions, processes, GPUs, files. docs/profile.md describes each.
#ifndef WARPSCOPE_REPORT_HTML_REPORT_H_
#define WARPSCOPE_REPORT_HTML_REPORT_H_

#include <string>
#include <string_view>
#include <vector>

#include "report/profile_report.h"

namespace warpscope::report {

// `s` with &, <, >, " and ' replaced by character references.
std::string HtmlEscape(std::string_view s);

// "1.23 s", "45.6 ms", "789 µs", "12 ns".
std::string FormatNs(int64_t ns);

// The flame tree as compact JSON, safe inside a <script> element: each node is
// [name, kind index, cpu_ns, gpu_ns, pc_samples, self_cpu_ns, self_gpu_ns, self_pc_samples,
// [children...]], and the document is {"kinds": [...names...], "tree": node}.
std::string FlameJson(const FlameNode& root);

// The page. `files` are the other files of the output directory, listed for the reader.
std::string RenderHtml(const ProfileReport& report, const std::vector<std::string>& files);

}  // namespace warpscope::report

#endif  // WARPSCOPE_REPORT_HTML_REPORT_H_

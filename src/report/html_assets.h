// SPDX-License-Identifier: Apache-2.0
// The report page's inline style and script (html_assets.cc), kept apart from the C++ that
// fills the page.
#ifndef WARPSCOPE_REPORT_HTML_ASSETS_H_
#define WARPSCOPE_REPORT_HTML_ASSETS_H_

#include <string_view>

namespace warpscope::report {

extern const std::string_view kReportCss;
// Draws #flame from the JSON in #flame-data (html_report.h, FlameJson). Sets
// document.body.dataset.flame to "ok" once drawn, or to "error: ..." when it failed.
extern const std::string_view kReportScript;

}  // namespace warpscope::report

#endif  // WARPSCOPE_REPORT_HTML_ASSETS_H_

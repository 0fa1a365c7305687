// SPDX-License-Identifier: Apache-2.0
// Fuzz target for the request-header parsers of the Prometheus endpoint, which read bytes from
// any client that can reach the port: exporters::NegotiateExpositionFormat (Accept) and
// exporters::AcceptsGzip (Accept-Encoding) (docs/design/fuzzing.md).
//
// Invariants, beyond "no crash, leak, UB or exception":
//   - With OpenMetrics disabled the answer is always the 0.0.4 text format.
//   - OpenMetrics is only chosen when the header mentions "openmetrics", gzip only when it
//     mentions "gzip" (case-insensitively).
//   - Entries are independent: appending ",application/openmetrics-text;q=inf" always selects
//     OpenMetrics, appending ",gzip" always accepts gzip, and appending ",gzip;q=0" changes
//     nothing.
#include <cstdint>
#include <string>
#include <string_view>

#include "exporters/prometheus/metrics_http_server.h"
#include "fuzz/fuzz_check.h"

namespace {

namespace exporters = ::warpscope::exporters;
using exporters::ExpositionFormat;
using warpscope::fuzz::Quote;

bool ContainsIgnoreCase(std::string_view haystack, std::string_view needle) {
  std::string lower(haystack);
  for (char& c : lower) {
    if (c >= 'A' && c <= 'Z') {
      c = static_cast<char>(c - 'A' + 'a');
    }
  }
  return lower.find(needle) != std::string::npos;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view header = warpscope::fuzz::AsText(data, size);

  WARPSCOPE_FUZZ_CHECK(exporters::NegotiateExpositionFormat(header, false) ==
                           ExpositionFormat::kText004,
                       "OpenMetrics chosen while disabled for {}", Quote(header));
  const ExpositionFormat format = exporters::NegotiateExpositionFormat(header, true);
  if (format == ExpositionFormat::kOpenMetrics1) {
    WARPSCOPE_FUZZ_CHECK(ContainsIgnoreCase(header, "openmetrics"),
                         "OpenMetrics chosen for {}", Quote(header));
  }
  const std::string with_om = std::string(header) + ",application/openmetrics-text;q=inf";
  WARPSCOPE_FUZZ_CHECK(exporters::NegotiateExpositionFormat(with_om, true) ==
                           ExpositionFormat::kOpenMetrics1,
                       "an OpenMetrics entry with q=inf did not win in {}", Quote(with_om));

  const bool gzip = exporters::AcceptsGzip(header);
  if (gzip) {
    WARPSCOPE_FUZZ_CHECK(ContainsIgnoreCase(header, "gzip"), "gzip accepted for {}",
                         Quote(header));
  }
  WARPSCOPE_FUZZ_CHECK(exporters::AcceptsGzip(std::string(header) + ",gzip"),
                       "a trailing gzip entry was ignored in {}", Quote(header));
  WARPSCOPE_FUZZ_CHECK(exporters::AcceptsGzip(std::string(header) + ",gzip;q=0") == gzip,
                       "a trailing gzip;q=0 entry changed the answer for {}", Quote(header));
  return 0;
}

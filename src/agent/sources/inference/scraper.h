// SPDX-License-Identifier: Apache-2.0
// One HTTP GET of a serving process's metrics endpoint (cpp-httplib), bounded in time and size.
// Blocking: runs on the inference source's poll worker. Any thread; no state.
#ifndef WARPSCOPE_AGENT_SOURCES_INFERENCE_SCRAPER_H_
#define WARPSCOPE_AGENT_SOURCES_INFERENCE_SCRAPER_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "base/status.h"
#include "base/time.h"

namespace warpscope::agent::inference {

struct ScrapeTarget {
  std::string host;  // "127.0.0.1", "[::1]", a name
  int port = 0;
  std::string path;  // "/metrics"
};

// Parses "http://host:port/path" (port defaults to 80, path to /metrics). https and anything
// else is an InvalidArgument that says what is accepted.
[[nodiscard]] base::Result<ScrapeTarget> ParseScrapeUrl(std::string_view url);

// GETs the exposition within `timeout` (connect and the whole read). Errors: Unavailable (no
// connection, timeout, an HTTP status other than 200, naming it), ResourceExhausted (the body
// exceeds `max_bytes`; the read stops there).
[[nodiscard]] base::Result<std::string> Scrape(const ScrapeTarget& target, base::Duration timeout,
                                               size_t max_bytes);

}  // namespace warpscope::agent::inference

#endif  // WARPSCOPE_AGENT_SOURCES_INFERENCE_SCRAPER_H_

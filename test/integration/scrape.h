// SPDX-License-Identifier: Apache-2.0
// Tests only: reading the programs the integration tests start over HTTP — polling an endpoint
// until it says what the test waits for, and reading one sample out of a Prometheus text body.
#ifndef WARPSCOPE_TEST_INTEGRATION_SCRAPE_H_
#define WARPSCOPE_TEST_INTEGRATION_SCRAPE_H_

#include <httplib.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/file_util.h"

namespace warpscope::test {

// The value of the first sample of `name` (exactly: followed by '{' or a space) whose line
// contains every `needle`, in a Prometheus text body; nullopt when there is none.
inline std::optional<double> PromSample(const std::string& text, const std::string& name,
                                        const std::vector<std::string>& needles = {}) {
  for (std::string_view line : base::SplitString(text, "\n")) {
    if (line.rfind(name + "{", 0) != 0 && line.rfind(name + " ", 0) != 0) {
      continue;
    }
    bool all = true;
    for (const auto& n : needles) {
      all = all && line.find(n) != std::string_view::npos;
    }
    if (all) {
      return std::stod(std::string(line.substr(line.rfind(' ') + 1)));
    }
  }
  return std::nullopt;
}

// Polls GET `path` on 127.0.0.1:`port` every 100 ms until `done(body)` holds for a 200 answer,
// at most `attempts` times; returns the last body received ("" if none).
inline std::string WaitForHttp(int port, const std::string& path,
                               const std::function<bool(const std::string&)>& done,
                               int attempts = 200) {
  httplib::Client c("127.0.0.1", port);
  c.set_connection_timeout(1);
  std::string body;
  for (int i = 0; i < attempts; ++i) {
    auto res = c.Get(path.c_str());
    if (res && res->status == 200) {
      body = res->body;
      if (done(body)) {
        return body;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // bounded polling of a peer
  }
  return body;
}

}  // namespace warpscope::test

#endif  // WARPSCOPE_TEST_INTEGRATION_SCRAPE_H_

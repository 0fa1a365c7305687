// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/inference/scraper.h"

#include <httplib.h>

#include <charconv>
#include <chrono>

namespace warpscope::agent::inference {

base::Result<ScrapeTarget> ParseScrapeUrl(std::string_view url) {
  constexpr std::string_view kScheme = "http://";
  if (!url.starts_with(kScheme)) {
    return base::Error(base::InvalidArgument(
        "inference target '{}': expected http://host:port/path (https is not supported)", url));
  }
  std::string_view rest = url.substr(kScheme.size());
  const size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  ScrapeTarget t;
  t.path = slash == std::string_view::npos ? "/metrics" : std::string(rest.substr(slash));
  t.port = 80;
  const size_t colon = authority.rfind(':');
  if (colon != std::string_view::npos && authority.find(']', colon) == std::string_view::npos) {
    std::string_view port = authority.substr(colon + 1);
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), t.port);
    if (ec != std::errc() || end != port.data() + port.size() || t.port <= 0 || t.port > 65535) {
      return base::Error(base::InvalidArgument(
          "inference target '{}': port '{}' is not a number in 1..65535", url, port));
    }
    authority = authority.substr(0, colon);
  }
  if (authority.empty()) {
    return base::Error(base::InvalidArgument("inference target '{}': no host", url));
  }
  t.host = std::string(authority);
  if (t.host.starts_with('[') && t.host.ends_with(']'))
    t.host = t.host.substr(1, t.host.size() - 2);
  return t;
}

base::Result<std::string> Scrape(const ScrapeTarget& target, base::Duration timeout,
                                 size_t max_bytes) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + timeout;
  const auto usec = std::chrono::duration_cast<std::chrono::microseconds>(timeout).count();
  httplib::Client client(target.host, target.port);
  client.set_connection_timeout(usec / 1000000, usec % 1000000);
  client.set_read_timeout(usec / 1000000, usec % 1000000);
  client.set_write_timeout(usec / 1000000, usec % 1000000);
  client.set_keep_alive(false);
  std::string body;
  bool too_large = false;
  bool too_slow = false;
  // The exposition as text 0.0.4: the parser does not read OpenMetrics or protobuf.
  const httplib::Headers headers = {{"Accept", "text/plain;version=0.0.4"}};
  auto res = client.Get(target.path, headers, [&](const char* data, size_t n) {
    if (body.size() + n > max_bytes) {
      too_large = true;
      return false;
    }
    if (Clock::now() > deadline) {
      too_slow = true;
      return false;
    }
    body.append(data, n);
    return true;
  });
  const std::string where = fmt::format("http://{}:{}{}", target.host, target.port, target.path);
  if (too_large) {
    return base::Error(base::ErrStatus(base::StatusCode::kResourceExhausted,
                                       "{}: the exposition exceeds {} bytes", where, max_bytes));
  }
  if (too_slow) {
    return base::Error(base::Unavailable("{}: no complete answer within {}", where,
                                         base::FormatDuration(timeout)));
  }
  if (!res) {
    return base::Error(base::Unavailable("{}: {}", where, httplib::to_string(res.error())));
  }
  if (res->status != 200) {
    return base::Error(base::Unavailable("{}: HTTP {}", where, res->status));
  }
  return body;
}

}  // namespace warpscope::agent::inference

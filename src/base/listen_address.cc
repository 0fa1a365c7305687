// SPDX-License-Identifier: Apache-2.0
#include "base/listen_address.h"

#include <charconv>

namespace warpscope::base {

base::Result<ListenAddress> ParseListenAddress(std::string_view text) {
  ListenAddress out;
  std::string_view port;
  if (!text.empty() && text.front() == '[') {
    size_t close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return Error(
          InvalidArgument("listen address '{}': expected [ipv6]:port, e.g. [::1]:9400", text));
    }
    out.host = std::string(text.substr(1, close - 1));
    port = text.substr(close + 2);
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) {
      return Error(InvalidArgument(
          "listen address '{}': expected host:port or :port, e.g. 127.0.0.1:9400", text));
    }
    if (text.find(':') != colon) {
      return Error(InvalidArgument(
          "listen address '{}': put IPv6 addresses in brackets, e.g. [::1]:9400", text));
    }
    out.host = colon == 0 ? "0.0.0.0" : std::string(text.substr(0, colon));
    port = text.substr(colon + 1);
  }
  int p = -1;
  auto r = std::from_chars(port.data(), port.data() + port.size(), p);
  if (port.empty() || port[0] == '-' || r.ec != std::errc() || r.ptr != port.data() + port.size() ||
      p < 0 || p > 65535) {
    return Error(InvalidArgument("listen address '{}': port '{}' is not a number from 0 to 65535",
                                 text, port));
  }
  if (out.host.empty()) {
    return Error(InvalidArgument("listen address '{}': empty host", text));
  }
  for (char c : out.host) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '-' || c == ':' || c == '_' || c == '%';
    if (!ok) {
      return Error(InvalidArgument("listen address '{}': '{}' is not a host name or IP address",
                                   text, out.host));
    }
  }
  out.port = p;
  return out;
}

}  // namespace warpscope::base

// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_BASE_LISTEN_ADDRESS_H_
#define WARPSCOPE_BASE_LISTEN_ADDRESS_H_

#include <string>
#include <string_view>

#include "base/status.h"

namespace warpscope::base {

struct ListenAddress {
  std::string host;  // "0.0.0.0" for ":port"; IPv6 without brackets
  int port = 0;      // 0: any free port
};

// Parses "host:port", ":port" (all IPv4 interfaces) or "[v6addr]:port".
[[nodiscard]] base::Result<ListenAddress> ParseListenAddress(std::string_view text);

}  // namespace warpscope::base

#endif  // WARPSCOPE_BASE_LISTEN_ADDRESS_H_

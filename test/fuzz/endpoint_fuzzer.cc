// SPDX-License-Identifier: Apache-2.0
// Fuzz target for the exporters' address parsers: exporters::ParseListenAddress
// (--prometheus-listen-address) and exporters::ParseOtlpEndpoint (--otlp-endpoint)
// (docs/design/fuzzing.md).
//
// Invariants, beyond "no crash, leak, overflow or exception":
//   ParseListenAddress
//     - port in [0, 65535], host non-empty; a host with ':' only comes from the [v6]:port form;
//     - round trip: "host:port" (or "[host]:port" when host has ':' or starts with '[') parses
//       to the same address;
//     - a rejection names the "listen address".
//   ParseOtlpEndpoint
//     - scheme_host_port is "http://" or "https://" plus an authority without '/', ' ', '@',
//       '?' or '#', and it is a prefix of the URL; path starts with '/';
//     - an explicit port is 1..65535;
//     - round trip: scheme_host_port + path parses to the same endpoint;
//     - a rejection names "--otlp-endpoint".
#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

#include "exporters/otlp/otlp_exporter.h"
#include "exporters/prometheus/metrics_http_server.h"
#include "fuzz/fuzz_check.h"

namespace {

namespace exporters = ::warpscope::exporters;
using warpscope::fuzz::Quote;

void CheckListenAddress(std::string_view text) {
  auto addr = exporters::ParseListenAddress(text);
  if (!addr) {
    WARPSCOPE_FUZZ_CHECK(addr.error().message().starts_with("listen address"),
                         "ParseListenAddress error: {}", addr.error().message());
    return;
  }
  WARPSCOPE_FUZZ_CHECK(addr->port >= 0 && addr->port <= 65535 && !addr->host.empty(),
                       "ParseListenAddress({}) = host {} port {}", Quote(text), Quote(addr->host),
                       addr->port);
  const bool has_colon = addr->host.find(':') != std::string::npos;
  WARPSCOPE_FUZZ_CHECK(!has_colon || text.starts_with("["),
                       "ParseListenAddress({}) took an unbracketed IPv6 host {}", Quote(text),
                       Quote(addr->host));
  // The bracketed form does not validate the host, so "[[]:80" gives host "[", which must be
  // bracketed again to parse back (docs/design/fuzzing.md, findings).
  const bool bracket = has_colon || addr->host.starts_with("[");
  const std::string again_text = bracket ? fmt::format("[{}]:{}", addr->host, addr->port)
                                         : fmt::format("{}:{}", addr->host, addr->port);
  auto again = exporters::ParseListenAddress(again_text);
  WARPSCOPE_FUZZ_CHECK(again && again->host == addr->host && again->port == addr->port,
                       "ParseListenAddress({}) does not round-trip via {}", Quote(text),
                       Quote(again_text));
}

void CheckOtlpEndpoint(std::string_view url) {
  auto e = exporters::ParseOtlpEndpoint(url);
  if (!e) {
    WARPSCOPE_FUZZ_CHECK(e.error().message().starts_with("--otlp-endpoint"),
                         "ParseOtlpEndpoint error: {}", e.error().message());
    return;
  }
  std::string_view shp = e->scheme_host_port;
  std::string_view scheme = shp.starts_with("https://") ? "https://" : "http://";
  WARPSCOPE_FUZZ_CHECK(shp.starts_with(scheme) && url.starts_with(shp),
                       "ParseOtlpEndpoint({}): scheme_host_port {}", Quote(url), Quote(shp));
  std::string_view authority = shp.substr(scheme.size());
  WARPSCOPE_FUZZ_CHECK(!authority.empty() && authority.find_first_of("/ @?#") == authority.npos,
                       "ParseOtlpEndpoint({}): authority {}", Quote(url), Quote(authority));
  WARPSCOPE_FUZZ_CHECK(e->path.starts_with("/"), "ParseOtlpEndpoint({}): path {}", Quote(url),
                       Quote(e->path));
  size_t colon = authority.rfind(':');
  if (colon != authority.npos && authority.back() != ']') {
    std::string_view port = authority.substr(colon + 1);
    int p = 0;
    auto r = std::from_chars(port.data(), port.data() + port.size(), p);
    WARPSCOPE_FUZZ_CHECK(r.ec == std::errc() && r.ptr == port.data() + port.size() && p >= 1 &&
                             p <= 65535,
                         "ParseOtlpEndpoint({}): port {}", Quote(url), Quote(port));
  }
  const std::string again_url = e->scheme_host_port + e->path;
  auto again = exporters::ParseOtlpEndpoint(again_url);
  WARPSCOPE_FUZZ_CHECK(again && again->scheme_host_port == e->scheme_host_port &&
                           again->path == e->path,
                       "ParseOtlpEndpoint({}) does not round-trip via {}", Quote(url),
                       Quote(again_url));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = warpscope::fuzz::AsText(data, size);
  CheckListenAddress(text);
  CheckOtlpEndpoint(text);
  return 0;
}

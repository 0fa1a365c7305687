// SPDX-License-Identifier: Apache-2.0
// Pieces shared by the exporters that POST to a remote endpoint (OTLP/HTTP, the warpscope
// server): URL parsing, client setup (timeouts, TLS trust) and response helpers. Queues, retry
// policy and the sender thread: exporters/delivery.h.
// Everything here is stateless or owned by one sender thread.
#ifndef WARPSCOPE_EXPORTERS_HTTP_PUSH_H_
#define WARPSCOPE_EXPORTERS_HTTP_PUSH_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "base/time.h"

namespace httplib {
class Client;
struct Response;
}  // namespace httplib

namespace warpscope::exporters {

// An http(s) URL split the way httplib::Client wants it.
struct HttpEndpoint {
  std::string scheme_host_port;  // "https://collector.example:4318"
  std::string path;              // as written after the authority, "" when there is none
};

// Parses "http://host[:port][/path]" or "https://...". IPv6 hosts in brackets. Rejects other
// schemes, an empty or malformed host (spaces, userinfo, '?', '#'), and ports outside 1..65535.
// Errors are kInvalidArgument and name `setting` (the flag, e.g. "--server") and `example`.
[[nodiscard]] base::Result<HttpEndpoint> ParseHttpEndpoint(std::string_view url,
                                                           std::string_view setting,
                                                           std::string_view example);

struct HttpClientOptions {
  base::Duration timeout = std::chrono::seconds(10);  // connect, read and write, each
  bool gzip = false;                                  // Content-Encoding: gzip request bodies
  // https only: PEM file of the CAs to trust instead of the system store. Empty: the system
  // CAs (OpenSSL's default paths). The server certificate and host name are always verified.
  std::string tls_ca_file;
};

// A client for `endpoint.scheme_host_port` with `options` applied. Never fails: connection and
// TLS errors surface on the first request.
std::unique_ptr<httplib::Client> MakeHttpClient(const HttpEndpoint& endpoint,
                                                const HttpClientOptions& options);

// The Retry-After header in seconds; nullopt when absent, negative or an HTTP date.
std::optional<base::Duration> RetryAfter(const httplib::Response& response);

// The first 200 bytes of a response body, for log lines.
std::string BodySnippet(std::string_view body);

// True for values that may go into an HTTP header without splitting it (no CR, LF or NUL).
bool IsValidHeaderValue(std::string_view value);
// True for a non-empty token without separators (no ':', spaces or control characters).
bool IsValidHeaderName(std::string_view name);

}  // namespace warpscope::exporters

#endif  // WARPSCOPE_EXPORTERS_HTTP_PUSH_H_

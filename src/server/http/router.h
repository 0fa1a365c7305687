// SPDX-License-Identifier: Apache-2.0
// Routes of the HTTP front end: method + a regular expression over the whole decoded path, in
// the order added (the first match wins), each naming the worker queue its handler runs on.
// Also what turns raw request parts into cpp-httplib's Request (query parameters, URL
// decoding) and what an answer's body becomes on the wire (gzip when the client accepts it),
// so that the Beast code in http_server.cc stays small.
#ifndef WARPSCOPE_SERVER_HTTP_ROUTER_H_
#define WARPSCOPE_SERVER_HTTP_ROUTER_H_

#include <httplib.h>

#include <functional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace warpscope::server::http {

using Handler = std::function<void(const httplib::Request&, httplib::Response&)>;

// Run on the I/O thread instead of a worker queue: only for handlers that never block
// (/healthz), so that they answer even when every queue is full.
inline constexpr int kInline = -1;

struct Route {
  std::string method;  // "GET", "POST", "DELETE"
  std::regex pattern;
  int queue = 0;  // index into HttpServerOptions::queues, or kInline
  Handler handler;
};

class Router {
 public:
  void Add(std::string method, const std::string& pattern, int queue, Handler handler);
  // The first route matching `req.method` and the whole of `req.path`, with req.matches filled
  // (they point into req.path, so `req` must not be copied or moved afterwards); null when
  // none. A HEAD request matches the GET routes.
  const Route* Match(httplib::Request& req) const;

 private:
  std::vector<Route> routes_;
};

// "%41b+c" -> "Ab c" (with `plus_as_space`). Invalid escapes are kept as they are.
std::string DecodeUrl(std::string_view s, bool plus_as_space);
// Splits "a=1&b=x%20y" into req.params (decoded, in order).
void ParseQuery(std::string_view query, httplib::Params& params);

// Inflates a gzip or zlib (Content-Encoding: deflate) body chunk by chunk, stopping as soon as
// the output would exceed `max_bytes`: memory is bounded by the limit, whatever the body
// inflates to. ResourceExhausted over the limit, InvalidArgument for corrupt data.
[[nodiscard]] base::Result<std::string> InflateBounded(std::string_view compressed,
                                                       size_t max_bytes);

// The same for a brotli body (Content-Encoding: br).
[[nodiscard]] base::Result<std::string> BrotliDecodeBounded(std::string_view compressed,
                                                            size_t max_bytes);

// Whether a body of this Content-Type is worth gzip (text, JSON, JavaScript, XML, SVG,
// protobuf), as cpp-httplib decided.
bool CompressibleType(std::string_view content_type);
// Whether an Accept-Encoding header offers gzip (q=0 refuses it).
bool AcceptsGzip(std::string_view accept_encoding);

}  // namespace warpscope::server::http

#endif  // WARPSCOPE_SERVER_HTTP_ROUTER_H_

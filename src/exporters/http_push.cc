// SPDX-License-Identifier: Apache-2.0
#include "exporters/http_push.h"

#include <httplib.h>

#include <algorithm>
#include <charconv>
#include <ctime>

namespace warpscope::exporters {

base::Result<HttpEndpoint> ParseHttpEndpoint(std::string_view url, std::string_view setting,
                                             std::string_view example) {
  std::string_view scheme;
  if (url.starts_with("http://")) {
    scheme = "http://";
  } else if (url.starts_with("https://")) {
    scheme = "https://";
  } else {
    return base::Error(base::InvalidArgument(
        "{} '{}': expected an http:// or https:// URL, e.g. {}", setting, url, example));
  }
  std::string_view rest = url.substr(scheme.size());
  const size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
  if (authority.empty() || authority.find_first_of(" @?#") != std::string_view::npos) {
    return base::Error(
        base::InvalidArgument("{} '{}': missing or invalid host, e.g. {}", setting, url, example));
  }
  const size_t colon = authority.rfind(':');
  if (colon != std::string_view::npos && authority.back() != ']') {
    std::string_view port = authority.substr(colon + 1);
    int p = 0;
    auto r = std::from_chars(port.data(), port.data() + port.size(), p);
    if (port.empty() || r.ec != std::errc() || r.ptr != port.data() + port.size() || p <= 0 ||
        p > 65535) {
      return base::Error(base::InvalidArgument("{} '{}': port '{}' is not a number from 1 to 65535",
                                               setting, url, port));
    }
  }
  HttpEndpoint out;
  out.scheme_host_port = std::string(scheme) + std::string(authority);
  out.path = std::string(path);
  return out;
}

std::unique_ptr<httplib::Client> MakeHttpClient(const HttpEndpoint& endpoint,
                                                const HttpClientOptions& options) {
  auto client = std::make_unique<httplib::Client>(endpoint.scheme_host_port);
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(options.timeout).count();
  const auto sec = static_cast<time_t>(us / 1000000);
  const auto usec = static_cast<time_t>(us % 1000000);
  client->set_connection_timeout(sec, usec);
  client->set_read_timeout(sec, usec);
  client->set_write_timeout(sec, usec);
  client->set_compress(options.gzip);
#ifdef CPPHTTPLIB_OPENSSL_SUPPORT
  client->enable_server_certificate_verification(true);
  if (!options.tls_ca_file.empty()) {
    client->set_ca_cert_path(options.tls_ca_file);
  }
#endif
  return client;
}

std::optional<base::Duration> RetryAfter(const httplib::Response& response) {
  const std::string v = response.get_header_value("Retry-After");
  int64_t secs = 0;
  auto r = std::from_chars(v.data(), v.data() + v.size(), secs);
  if (v.empty() || r.ec != std::errc() || r.ptr != v.data() + v.size() || secs < 0) {
    return std::nullopt;
  }
  return std::chrono::seconds(secs);
}

std::string BodySnippet(std::string_view body) {
  constexpr size_t kMax = 200;
  return body.size() <= kMax ? std::string(body) : std::string(body.substr(0, kMax)) + "...";
}

bool IsValidHeaderValue(std::string_view value) {
  return value.find_first_of(std::string_view("\r\n\0", 3)) == std::string_view::npos;
}

bool IsValidHeaderName(std::string_view name) {
  if (name.empty()) {
    return false;
  }
  return std::none_of(name.begin(), name.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u <= 0x20 || u == 0x7f || c == ':';
  });
}

}  // namespace warpscope::exporters

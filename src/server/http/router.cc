// SPDX-License-Identifier: Apache-2.0
#include "server/http/router.h"

#include <brotli/decode.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>

namespace warpscope::server::http {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

void Router::Add(std::string method, const std::string& pattern, int queue, Handler handler) {
  routes_.push_back(Route{.method = std::move(method),
                          .pattern = std::regex(pattern),
                          .queue = queue,
                          .handler = std::move(handler)});
}

const Route* Router::Match(httplib::Request& req) const {
  std::string_view method = req.method;
  if (method == "HEAD") method = "GET";
  for (const Route& route : routes_) {
    if (route.method != method) continue;
    if (std::regex_match(req.path, req.matches, route.pattern)) return &route;
  }
  req.matches = {};
  return nullptr;
}

std::string DecodeUrl(std::string_view s, bool plus_as_space) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      const int hi = HexValue(s[i + 1]);
      const int lo = HexValue(s[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out += static_cast<char>(hi * 16 + lo);
        i += 2;
        continue;
      }
    }
    out += plus_as_space && s[i] == '+' ? ' ' : s[i];
  }
  return out;
}

void ParseQuery(std::string_view query, httplib::Params& params) {
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    const size_t eq = pair.find('=');
    std::string key = DecodeUrl(pair.substr(0, eq), true);
    std::string value = eq == std::string_view::npos ? "" : DecodeUrl(pair.substr(eq + 1), true);
    params.emplace(std::move(key), std::move(value));
  }
}

base::Result<std::string> InflateBounded(std::string_view compressed, size_t max_bytes) {
  z_stream z{};
  // 15 + 32: zlib or gzip, detected from the header.
  if (inflateInit2(&z, 15 + 32) != Z_OK) {
    return base::Error(base::Internal("zlib inflateInit2 failed"));
  }
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  z.avail_in = static_cast<uInt>(compressed.size());
  std::string out;
  char buf[64 << 10];
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof(buf);
    rc = inflate(&z, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      inflateEnd(&z);
      return base::Error(base::InvalidArgument("not valid gzip/deflate data"));
    }
    const size_t n = sizeof(buf) - z.avail_out;
    if (out.size() + n > max_bytes) {
      inflateEnd(&z);
      return base::Error(
          base::ErrStatus(base::StatusCode::kResourceExhausted, "inflated body over the limit"));
    }
    out.append(buf, n);
    if (rc == Z_OK && n == 0 && z.avail_in == 0) {
      inflateEnd(&z);
      return base::Error(base::InvalidArgument("gzip/deflate data cut short"));
    }
  }
  inflateEnd(&z);
  return out;
}

base::Result<std::string> BrotliDecodeBounded(std::string_view compressed, size_t max_bytes) {
  BrotliDecoderState* state = BrotliDecoderCreateInstance(nullptr, nullptr, nullptr);
  if (state == nullptr) return base::Error(base::Internal("BrotliDecoderCreateInstance failed"));
  const auto* next_in = reinterpret_cast<const uint8_t*>(compressed.data());
  size_t avail_in = compressed.size();
  std::string out;
  uint8_t buf[64 << 10];
  for (;;) {
    uint8_t* next_out = buf;
    size_t avail_out = sizeof(buf);
    const BrotliDecoderResult rc =
        BrotliDecoderDecompressStream(state, &avail_in, &next_in, &avail_out, &next_out, nullptr);
    const size_t n = sizeof(buf) - avail_out;
    if (out.size() + n > max_bytes) {
      BrotliDecoderDestroyInstance(state);
      return base::Error(
          base::ErrStatus(base::StatusCode::kResourceExhausted, "inflated body over the limit"));
    }
    out.append(reinterpret_cast<const char*>(buf), n);
    if (rc == BROTLI_DECODER_RESULT_SUCCESS) break;
    if (rc == BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT) continue;
    BrotliDecoderDestroyInstance(state);
    return base::Error(base::InvalidArgument("{}", rc == BROTLI_DECODER_RESULT_NEEDS_MORE_INPUT
                                                       ? "brotli data cut short"
                                                       : "not valid brotli data"));
  }
  BrotliDecoderDestroyInstance(state);
  return out;
}

bool CompressibleType(std::string_view content_type) {
  const std::string type = Lower(content_type.substr(0, content_type.find(';')));
  if (type.starts_with("text/")) return type != "text/event-stream";
  return type == "image/svg+xml" || type == "application/javascript" ||
         type == "application/json" || type == "application/xml" ||
         type == "application/protobuf" || type == "application/x-protobuf" ||
         type == "application/xhtml+xml";
}

bool AcceptsGzip(std::string_view accept_encoding) {
  const std::string offer = Lower(accept_encoding);
  size_t pos = 0;
  while (pos < offer.size()) {
    size_t comma = offer.find(',', pos);
    if (comma == std::string::npos) comma = offer.size();
    std::string_view item = std::string_view(offer).substr(pos, comma - pos);
    pos = comma + 1;
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    const size_t semi = item.find(';');
    std::string_view coding = item.substr(0, semi);
    while (!coding.empty() && coding.back() == ' ') coding.remove_suffix(1);
    if (coding != "gzip" && coding != "x-gzip" && coding != "*") continue;
    if (semi != std::string_view::npos) {
      const std::string_view params = item.substr(semi);
      const size_t q = params.find("q=");
      if (q != std::string_view::npos &&
          std::strtod(std::string(params.substr(q + 2)).c_str(), nullptr) <= 0.0) {
        continue;
      }
    }
    if (coding != "*") return true;
  }
  return false;
}

}  // namespace warpscope::server::http

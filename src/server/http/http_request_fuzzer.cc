// SPDX-License-Identifier: Apache-2.0
// Fuzz target for what the HTTP front end decodes from any client before a handler runs
// (docs/design/fuzzing.md): the query string and path (DecodeUrl, ParseQuery), compressed
// request bodies (InflateBounded, BrotliDecodeBounded) and Accept-Encoding (AcceptsGzip).
//
// Invariants, beyond "no crash, leak, UB or exception":
//   - Decoding never grows a string: DecodeUrl's output is at most its input's size.
//   - A decompressed body is never larger than the limit it was given (memory is bounded).
//   - gzip is only accepted when the header mentions it (case-insensitively), and appending
//     ",gzip;q=0" never turns a refusal into an acceptance.
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "server/http/router.h"

namespace {

namespace http = ::warpscope::server::http;
using warpscope::fuzz::Quote;

bool MentionsGzip(std::string_view s) {
  std::string lower(s);
  for (char& c : lower) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return lower.find("gzip") != std::string::npos;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input = warpscope::fuzz::AsText(data, size);

  for (const bool plus : {false, true}) {
    const std::string decoded = http::DecodeUrl(input, plus);
    WARPSCOPE_FUZZ_CHECK(decoded.size() <= input.size(), "DecodeUrl grew {}", Quote(input));
  }
  httplib::Params params;
  http::ParseQuery(input, params);
  size_t total = 0;
  for (const auto& [key, value] : params) total += key.size() + value.size();
  WARPSCOPE_FUZZ_CHECK(total <= input.size(), "ParseQuery grew {}", Quote(input));

  constexpr size_t kLimit = 64u << 10;
  if (auto body = http::InflateBounded(input, kLimit)) {
    WARPSCOPE_FUZZ_CHECK(body->size() <= kLimit, "inflated past the limit: {} bytes", body->size());
  }
  if (auto body = http::BrotliDecodeBounded(input, kLimit)) {
    WARPSCOPE_FUZZ_CHECK(body->size() <= kLimit, "brotli past the limit: {} bytes", body->size());
  }

  const bool gzip = http::AcceptsGzip(input);
  if (gzip) {
    WARPSCOPE_FUZZ_CHECK(MentionsGzip(input), "gzip accepted for {}", Quote(input));
  }
  if (!gzip) {
    WARPSCOPE_FUZZ_CHECK(!http::AcceptsGzip(std::string(input) + ",gzip;q=0"),
                         "a trailing gzip;q=0 accepted gzip for {}", Quote(input));
  }
  return 0;
}

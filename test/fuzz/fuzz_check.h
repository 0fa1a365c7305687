// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the fuzz targets (the *_fuzzer.cc files): an invariant check that prints the
// offending values and aborts, so that both libFuzzer and the corpus replay tests report it as a
// crash with the input that caused it.
#ifndef WARPSCOPE_TEST_FUZZ_FUZZ_CHECK_H_
#define WARPSCOPE_TEST_FUZZ_FUZZ_CHECK_H_

#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <string_view>

namespace warpscope::fuzz {

[[noreturn]] inline void InvariantFailed(const char* file, int line, const char* condition,
                                         const std::string& details) {
  std::fprintf(stderr, "%s:%d: fuzz invariant failed: %s\n  %s\n", file, line, condition,
               details.c_str());
  std::fflush(stderr);
  std::abort();
}

// The fuzzer input as text.
inline std::string_view AsText(const uint8_t* data, size_t size) {
  return std::string_view(reinterpret_cast<const char*>(data), size);
}

// True when `part` lies inside `whole` (an empty view is inside anything): the parsers return
// views into their input and must never point outside it.
inline bool IsWithin(std::string_view part, std::string_view whole) {
  if (part.empty()) {
    return true;
  }
  std::less_equal<const char*> le;
  return le(whole.data(), part.data()) && le(part.data() + part.size(), whole.data() + whole.size());
}

// Quoted and escaped for a message: control and non-ASCII bytes as \xNN, at most 200 bytes.
inline std::string Quote(std::string_view s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size() && i < 200; ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\') {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  if (s.size() > 200) {
    out += "...";
  }
  return out + "\"";
}

}  // namespace warpscope::fuzz

// WARPSCOPE_FUZZ_CHECK(cond, "fmt {}", args...): aborts with the formatted details when `cond`
// is false. Active in every build type (it is the point of the target).
#define WARPSCOPE_FUZZ_CHECK(cond, ...)                                                       \
  do {                                                                                        \
    if (!(cond)) {                                                                            \
      ::warpscope::fuzz::InvariantFailed(__FILE__, __LINE__, #cond, fmt::format(__VA_ARGS__)); \
    }                                                                                         \
  } while (0)

#endif  // WARPSCOPE_TEST_FUZZ_FUZZ_CHECK_H_

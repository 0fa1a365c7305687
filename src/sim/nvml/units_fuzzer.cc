// SPDX-License-Identifier: Apache-2.0
// Fuzz target for the scenario quantity parsers of units.h (docs/design/fuzzing.md).
//
// Invariants, beyond "no crash, overflow or exception":
//   - Every accepted value is finite (the simulator converts them to integers), and every
//     rejection has a message.
//   - ParseNumber accepts only the documented grammar: [+-]digits[.digits][e[+-]digits] (either
//     side of the '.' may be empty, not both) or 0x<hex digits>.
//   - Sizes and durations are non-negative; ParseQuantity dispatches to the parser of its unit.
//   - Suffixes scale exactly: for a number N that parses, "N GiB" is N * 2^30 bytes, "N KB" is
//     N * 1000, "N kW" is N * 1000 W, or an error when the product is not finite.
//   - ParseSeconds agrees with base::ParseDuration where that accepts the text.
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/file_util.h"
#include "base/time.h"
#include "fuzz/fuzz_check.h"
#include "sim/nvml/units.h"

namespace {

namespace sim = ::warpscope::sim;
using warpscope::fuzz::Quote;

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsHexDigit(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

size_t SkipDigits(std::string_view s, size_t i) {
  while (i < s.size() && IsDigit(s[i])) {
    ++i;
  }
  return i;
}

// The documented grammar of ParseNumber, on trimmed text.
bool IsNumberSyntax(std::string_view s) {
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    for (char c : s.substr(2)) {
      if (!IsHexDigit(c)) {
        return false;
      }
    }
    return true;
  }
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
    ++i;
  }
  size_t int_end = SkipDigits(s, i);
  size_t digits = int_end - i;
  i = int_end;
  if (i < s.size() && s[i] == '.') {
    size_t frac_end = SkipDigits(s, i + 1);
    digits += frac_end - (i + 1);
    i = frac_end;
  }
  if (digits == 0) {
    return false;
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
      ++i;
    }
    size_t exp_end = SkipDigits(s, i);
    if (exp_end == i) {
      return false;
    }
    i = exp_end;
  }
  return i == s.size();
}

template <typename R>
void CheckResult(const R& r, std::string_view what, std::string_view text) {
  if (r) {
    WARPSCOPE_FUZZ_CHECK(std::isfinite(*r), "{}({}) = {} is not finite", what, Quote(text), *r);
  } else {
    WARPSCOPE_FUZZ_CHECK(!r.error().message().empty(), "{}({}) failed without a message", what,
                         Quote(text));
  }
}

// `suffixed` must give number * scale, or an error when that is not finite.
void CheckScaled(const warpscope::base::Result<double>& suffixed, double number, double scale,
                 std::string_view text) {
  const double want = number * scale;
  if (std::isfinite(want)) {
    WARPSCOPE_FUZZ_CHECK(suffixed && *suffixed == want, "{} = {}, want {}", Quote(text),
                         suffixed ? *suffixed : NAN, want);
  } else {
    WARPSCOPE_FUZZ_CHECK(!suffixed, "{} accepted as {}", Quote(text), *suffixed);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = warpscope::fuzz::AsText(data, size);

  auto number = sim::ParseNumber(text);
  CheckResult(number, "ParseNumber", text);
  if (number) {
    WARPSCOPE_FUZZ_CHECK(IsNumberSyntax(warpscope::base::TrimWhitespace(text)),
                         "ParseNumber accepted {} as {}", Quote(text), *number);
  }

  auto bytes = sim::ParseBytes(text);
  CheckResult(bytes, "ParseBytes", text);
  if (bytes) {
    WARPSCOPE_FUZZ_CHECK(*bytes >= 0, "ParseBytes({}) = {} is negative", Quote(text), *bytes);
  }
  auto seconds = sim::ParseSeconds(text);
  CheckResult(seconds, "ParseSeconds", text);
  if (seconds) {
    WARPSCOPE_FUZZ_CHECK(*seconds >= 0, "ParseSeconds({}) = {} is negative", Quote(text),
                         *seconds);
  }
  auto duration = warpscope::base::ParseDuration(warpscope::base::TrimWhitespace(text));
  if (duration && !number) {
    WARPSCOPE_FUZZ_CHECK(seconds && *seconds == warpscope::base::ToSeconds(*duration),
                         "ParseSeconds({}) disagrees with ParseDuration", Quote(text));
  }
  auto watts = sim::ParseWatts(text);
  CheckResult(watts, "ParseWatts", text);

  // ParseQuantity is a dispatcher: same outcome as the parser of the unit.
  const std::pair<sim::Unit, const warpscope::base::Result<double>*> units[] = {
      {sim::Unit::kNumber, &number},
      {sim::Unit::kBytes, &bytes},
      {sim::Unit::kWatts, &watts},
      {sim::Unit::kSeconds, &seconds}};
  for (const auto& [unit, expected] : units) {
    auto q = sim::ParseQuantity(text, unit);
    WARPSCOPE_FUZZ_CHECK(q.has_value() == expected->has_value() && (!q || *q == **expected),
                         "ParseQuantity({}, {}) differs from its unit's parser", Quote(text),
                         sim::UnitHint(unit));
  }

  // Suffix scaling, for inputs that are a bare non-negative number.
  if (number && *number >= 0 && IsNumberSyntax(text)) {
    const std::string s(text);
    CheckScaled(sim::ParseBytes(s + "GiB"), *number, 1024.0 * 1024 * 1024, s + "GiB");
    CheckScaled(sim::ParseBytes(s + " KB"), *number, 1e3, s + " KB");
    CheckScaled(sim::ParseWatts(s + "kW"), *number, 1e3, s + "kW");
    CheckScaled(sim::ParseBytes(s), *number, 1, s);
  }
  return 0;
}

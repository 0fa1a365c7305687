// SPDX-License-Identifier: Apache-2.0
// Fuzz target for base::ParseDuration and base::FormatDuration (docs/design/fuzzing.md).
//
// Invariants:
//   - ParseDuration never crashes, overflows or throws; an error has a message.
//   - A parsed duration is non-negative (the syntax has no sign).
//   - FormatDuration(d) parses back to exactly d for every d >= 0 that ParseDuration can return.
//   - For any int64 count n (the first 8 input bytes): FormatDuration(n) does not crash; for
//     n >= 0 it round-trips, and for n < 0 it is "-" followed by FormatDuration(-n).
//   - For 0 <= n < 1e15 (about 11 days), the decimal seconds "<n / 1e9>.<n % 1e9, 9 digits>s"
//     parse to exactly n ns: fractions round to the nearest nanosecond, not down.
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include "base/time.h"
#include "fuzz/fuzz_check.h"

namespace {

using warpscope::base::Duration;
using warpscope::base::FormatDuration;
using warpscope::base::ParseDuration;
using warpscope::fuzz::Quote;

void CheckRoundTrip(Duration d) {
  const std::string text = FormatDuration(d);
  auto again = ParseDuration(text);
  WARPSCOPE_FUZZ_CHECK(again.has_value(), "FormatDuration({}ns) = {} does not parse: {}",
                       d.count(), Quote(text), again ? "" : again.error().message());
  WARPSCOPE_FUZZ_CHECK(*again == d, "FormatDuration({}ns) = {} parses back as {}ns", d.count(),
                       Quote(text), again->count());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = warpscope::fuzz::AsText(data, size);
  auto parsed = ParseDuration(text);
  if (parsed) {
    WARPSCOPE_FUZZ_CHECK(parsed->count() >= 0, "ParseDuration({}) = {}ns is negative", Quote(text),
                         parsed->count());
    CheckRoundTrip(*parsed);
  } else {
    WARPSCOPE_FUZZ_CHECK(!parsed.error().message().empty(), "ParseDuration({}) failed silently",
                         Quote(text));
  }

  if (size >= sizeof(int64_t)) {
    int64_t n = 0;
    std::memcpy(&n, data, sizeof(n));
    const std::string text_n = FormatDuration(Duration(n));
    if (n >= 0) {
      CheckRoundTrip(Duration(n));
      if (n < 1'000'000'000'000'000) {
        const std::string decimal = fmt::format("{}.{:09}s", n / 1'000'000'000, n % 1'000'000'000);
        auto exact = ParseDuration(decimal);
        WARPSCOPE_FUZZ_CHECK(exact && exact->count() == n, "ParseDuration({}) = {}, want {}ns",
                             Quote(decimal), exact ? exact->count() : -1, n);
      }
    } else if (n != std::numeric_limits<int64_t>::min()) {
      const std::string positive = FormatDuration(Duration(-n));
      WARPSCOPE_FUZZ_CHECK(text_n == "-" + positive, "FormatDuration({}ns) = {}, want \"-{}\"", n,
                           Quote(text_n), positive);
    } else {
      WARPSCOPE_FUZZ_CHECK(text_n.starts_with("-"), "FormatDuration({}ns) = {} has no sign", n,
                           Quote(text_n));
    }
  }
  return 0;
}

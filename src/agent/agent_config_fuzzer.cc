// SPDX-License-Identifier: Apache-2.0
// Fuzz target for agent::ParseTags (--tags) and the base string helpers it is built on
// (docs/design/fuzzing.md).
//
// Invariants, beyond "no crash, leak or exception":
//   - Accepted keys are label names ([A-Za-z_][A-Za-z0-9_]*, not starting with "__"); values
//     are trimmed and hold no ';' or ','.
//   - Round trip: joining the pairs as "k:v;k:v" parses back to the same pairs.
//   - A rejection names the flag ("--tags").
//   - base::SplitString returns non-empty pieces of the input, in order, without separators;
//     base::TrimWhitespace returns a view of the input with no surrounding " \t\r\n".
#include <cstdint>
#include <string>
#include <string_view>

#include "agent/agent_config.h"
#include "base/file_util.h"
#include "fuzz/fuzz_check.h"

namespace {

using warpscope::fuzz::IsWithin;
using warpscope::fuzz::Quote;

constexpr std::string_view kSpace = " \t\r\n";

bool IsLabelName(std::string_view s) {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9') || s.starts_with("__")) {
    return false;
  }
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_';
    if (!ok) {
      return false;
    }
  }
  return true;
}

void CheckSplitAndTrim(std::string_view text) {
  const char* cursor = text.data();
  for (std::string_view piece : warpscope::base::SplitString(text, ";,")) {
    WARPSCOPE_FUZZ_CHECK(!piece.empty() && IsWithin(piece, text) && piece.data() >= cursor &&
                             piece.find_first_of(";,") == piece.npos,
                         "SplitString piece {} of {}", Quote(piece), Quote(text));
    cursor = piece.data() + piece.size();
  }
  std::string_view trimmed = warpscope::base::TrimWhitespace(text);
  WARPSCOPE_FUZZ_CHECK(IsWithin(trimmed, text) &&
                           (trimmed.empty() || (kSpace.find(trimmed.front()) == kSpace.npos &&
                                                kSpace.find(trimmed.back()) == kSpace.npos)),
                       "TrimWhitespace({}) = {}", Quote(text), Quote(trimmed));
  WARPSCOPE_FUZZ_CHECK(!trimmed.empty() || text.find_first_not_of(kSpace) == text.npos,
                       "TrimWhitespace({}) dropped content", Quote(text));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = warpscope::fuzz::AsText(data, size);
  CheckSplitAndTrim(text);

  auto tags = warpscope::agent::ParseTags(text);
  if (!tags) {
    WARPSCOPE_FUZZ_CHECK(tags.error().message().starts_with("--tags"),
                         "ParseTags error without the flag name: {}", tags.error().message());
    return 0;
  }
  std::string joined;
  for (const auto& [key, value] : *tags) {
    WARPSCOPE_FUZZ_CHECK(IsLabelName(key), "ParseTags({}) accepted key {}", Quote(text),
                         Quote(key));
    WARPSCOPE_FUZZ_CHECK(value.find_first_of(";,") == value.npos &&
                             (value.empty() || (kSpace.find(value.front()) == kSpace.npos &&
                                                kSpace.find(value.back()) == kSpace.npos)),
                         "ParseTags({}) value {}", Quote(text), Quote(value));
    joined += joined.empty() ? "" : ";";
    joined += key + ":" + value;
  }
  auto again = warpscope::agent::ParseTags(joined);
  WARPSCOPE_FUZZ_CHECK(again && *again == *tags, "ParseTags({}) does not round-trip via {}",
                       Quote(text), Quote(joined));
  return 0;
}

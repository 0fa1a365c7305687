// SPDX-License-Identifier: Apache-2.0
// Fuzz target for the CUPTI wire decoder (cupti/wire.h), the agent's parser of bytes sent by
// injected processes. Invariants, beyond "no crash, leak, overflow or exception":
//   - every decoded message re-encodes to a frame that decodes to the same bytes again;
//   - after an error the decoder stays in error;
//   - decoding the input in two pieces gives the same messages as in one piece.
#include <cstdint>
#include <string>
#include <vector>

#include "cupti/wire.h"
#include "fuzz/fuzz_check.h"

namespace {

namespace wire = ::warpscope::cupti::wire;

std::vector<std::string> DecodeReencoded(std::string_view a, std::string_view b, bool* error) {
  wire::StreamDecoder d;
  std::vector<std::string> out;
  wire::Message m;
  auto drain = [&] {
    wire::DecodeStatus s;
    while ((s = d.Next(&m)) == wire::DecodeStatus::kOk) {
      std::string bytes;
      wire::Encode(m, &bytes);
      out.push_back(std::move(bytes));
    }
    return s;
  };
  d.Append(a);
  auto s = drain();
  d.Append(b);
  s = drain();
  *error = s == wire::DecodeStatus::kError;
  if (*error) {
    WARPSCOPE_FUZZ_CHECK(d.Next(&m) == wire::DecodeStatus::kError, "error did not stick");
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = warpscope::fuzz::AsText(data, size);
  bool error_whole = false;
  auto whole = DecodeReencoded(text, {}, &error_whole);
  bool error_split = false;
  auto split = DecodeReencoded(text.substr(0, size / 2), text.substr(size / 2), &error_split);
  WARPSCOPE_FUZZ_CHECK(whole == split && error_whole == error_split,
                       "split decoding differs: {} vs {} messages", whole.size(), split.size());
  for (const auto& frame : whole) {
    bool err = false;
    auto again = DecodeReencoded(frame, {}, &err);
    WARPSCOPE_FUZZ_CHECK(!err && again.size() == 1 && again[0] == frame,
                         "re-encoded frame {} does not round-trip", warpscope::fuzz::Quote(frame));
  }
  return 0;
}

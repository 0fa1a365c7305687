// SPDX-License-Identifier: Apache-2.0
// Fuzz target for DecodeChunk and ChunkEncoder (docs/design/fuzzing.md). The input is decoded
// as a chunk; it is also read as raw windows (56 bytes each) that are encoded and decoded.
//
// Invariants:
//   - Decoding never crashes or reads outside its input; an error is InvalidArgument with a
//     message that names the chunk.
//   - A chunk that decodes re-encodes to one that decodes to the same windows.
//   - Any windows round-trip through EncodeChunk and DecodeChunk unchanged (values bitwise).
#include <cstdint>
#include <cstring>
#include <vector>

#include "fuzz/fuzz_check.h"
#include "server/storage/sample_chunk.h"

namespace {

using warpscope::base::StatusCode;
using warpscope::server::ChunkWindow;
using warpscope::server::DecodeChunk;
using warpscope::server::EncodeChunk;

void CheckRoundTrip(const std::vector<ChunkWindow>& windows, const char* how) {
  std::string chunk = EncodeChunk(windows);
  auto again = DecodeChunk(chunk);
  WARPSCOPE_FUZZ_CHECK(again.has_value(), "{}: an encoded chunk does not decode: {}", how,
                       again.error().ToString());
  WARPSCOPE_FUZZ_CHECK(*again == windows, "{}: {} windows changed in a round trip", how,
                       windows.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto decoded = DecodeChunk(warpscope::fuzz::AsText(data, size));
  if (!decoded) {
    WARPSCOPE_FUZZ_CHECK(decoded.error().code() == StatusCode::kInvalidArgument,
                         "unexpected error: {}", decoded.error().ToString());
    WARPSCOPE_FUZZ_CHECK(decoded.error().message().find("sample chunk") != std::string::npos,
                         "error does not name the chunk: {}", decoded.error().ToString());
  } else {
    CheckRoundTrip(*decoded, "decoded input");
  }
  constexpr size_t kWindowBytes = 7 * 8;
  std::vector<ChunkWindow> windows;
  for (size_t at = 0; at + kWindowBytes <= size; at += kWindowBytes) {
    ChunkWindow w;
    std::memcpy(&w.start_ms, data + at, 8);
    std::memcpy(&w.duration_ms, data + at + 8, 8);
    std::memcpy(&w.avg, data + at + 16, 8);
    std::memcpy(&w.min, data + at + 24, 8);
    std::memcpy(&w.max, data + at + 32, 8);
    std::memcpy(&w.last, data + at + 40, 8);
    std::memcpy(&w.count, data + at + 48, 8);
    windows.push_back(w);
  }
  CheckRoundTrip(windows, "input as windows");
  return 0;
}

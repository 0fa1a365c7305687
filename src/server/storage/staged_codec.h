// SPDX-License-Identifier: Apache-2.0
// The blobs of the staged_samples table: a batch's samples as written before a move takes them
// into the head (docs/design/storage.md, "Staged samples"). Pure functions; private to
// src/server/storage/.
//
// Version 2 (written): the 8 bytes "WSSTAGE2", the sample count (a LEB128 varint), then per
// sample a flags byte and, as LEB128
// varints of zigzag deltas from the previous sample (0 before the first), the series id and the
// start; then the duration when flag 4 is clear (0 otherwise), one double when flag 1 says all
// four values are equal (else avg, min, max, last), and the count when flag 2 is clear (1
// otherwise). A remote-write sample (one value, count 1, no duration, the next series) takes
// about 12 bytes.
// Version 1 (read only): 64-byte little-endian images of StagedSample, back to back. Its first
// 8 bytes are a series id, far below the value "WSSTAGE2" has as one.
#ifndef WARPSCOPE_SERVER_STORAGE_STAGED_CODEC_H_
#define WARPSCOPE_SERVER_STORAGE_STAGED_CODEC_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace warpscope::server::storage_internal {

struct StagedSample {
  int64_t series_id = 0;
  int64_t start_ms = 0;
  int64_t duration_ms = 0;
  double avg = 0, min = 0, max = 0, last = 0;
  int64_t count = 0;
};

// Appends `rows` to `out` as one version 2 blob.
void EncodeStaged(std::span<const StagedSample> rows, std::string& out);

// Appends the samples of a version 1 or 2 blob to `out`. InvalidArgument naming what is wrong
// for a blob neither version can hold (truncated, a size that is not a whole number of
// version 1 samples); `out` then holds the samples before the damage.
[[nodiscard]] base::Status DecodeStaged(std::string_view blob, std::vector<StagedSample>& out);

}  // namespace warpscope::server::storage_internal

#endif  // WARPSCOPE_SERVER_STORAGE_STAGED_CODEC_H_

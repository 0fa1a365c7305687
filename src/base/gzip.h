// SPDX-License-Identifier: Apache-2.0
// gzip with zlib: the one implementation the exporters (/metrics), the profilers (pprof) and the
// server (pprof decoding, request bodies) use. Library warpscope::gzip (base + zlib), apart from
// warpscope::base so that code without compression does not link zlib.
#ifndef WARPSCOPE_BASE_GZIP_H_
#define WARPSCOPE_BASE_GZIP_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "base/status.h"

namespace warpscope::base {

// Compresses `data` into one gzip member (RFC 1952) with zlib. `level`: 1 (fastest) to 9
// (smallest), or -1 for zlib's default. Errors only on zlib failures (out of memory).
[[nodiscard]] Result<std::string> GzipCompress(std::string_view data, int level = 1);

// Inflates gzip or zlib data. Fails with InvalidArgument on corrupt input and ResourceExhausted
// when the output would exceed `max_size` bytes.
[[nodiscard]] Result<std::string> GzipDecompress(std::string_view data,
                                                 size_t max_size = 64u << 20);

// Whether `data` starts with the gzip magic bytes (1f 8b).
inline bool IsGzip(std::string_view data) {
  return data.size() >= 2 && static_cast<unsigned char>(data[0]) == 0x1f &&
         static_cast<unsigned char>(data[1]) == 0x8b;
}

}  // namespace warpscope::base

#endif  // WARPSCOPE_BASE_GZIP_H_

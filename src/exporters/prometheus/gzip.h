// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_EXPORTERS_PROMETHEUS_GZIP_H_
#define WARPSCOPE_EXPORTERS_PROMETHEUS_GZIP_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "base/status.h"

namespace warpscope::exporters {

// Compresses `data` into one gzip member (RFC 1952) with zlib. `level`: 1 (fastest) to 9
// (smallest), or -1 for zlib's default. Errors only on zlib failures (out of memory).
[[nodiscard]] base::Result<std::string> GzipCompress(std::string_view data, int level = 1);

// Inflates gzip or zlib data. Fails with InvalidArgument on corrupt input and ResourceExhausted
// when the output would exceed `max_size` bytes.
[[nodiscard]] base::Result<std::string> GzipDecompress(std::string_view data,
                                                       size_t max_size = 64u << 20);

}  // namespace warpscope::exporters

#endif  // WARPSCOPE_EXPORTERS_PROMETHEUS_GZIP_H_

// SPDX-License-Identifier: Apache-2.0
#include "base/gzip.h"

#include <zlib.h>

#include <algorithm>
#include <climits>

namespace warpscope::base {

Result<std::string> GzipCompress(std::string_view data, int level) {
  z_stream zs{};
  // windowBits 15 + 16: write a gzip header and trailer instead of a zlib one.
  if (deflateInit2(&zs, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return Error(Internal("gzip: deflateInit2 failed (level {})", level));
  }
  std::string out;
  out.resize(deflateBound(&zs, static_cast<uLong>(data.size())) + 32);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  int rc = deflate(&zs, Z_FINISH);
  const size_t written = zs.total_out;
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) {
    return Error(Internal("gzip: deflate failed ({})", rc));
  }
  out.resize(written);
  return out;
}

Result<std::string> GzipDecompress(std::string_view data, size_t max_size) {
  z_stream zs{};
  // windowBits 15 + 32: detect gzip or zlib headers.
  if (inflateInit2(&zs, 15 + 32) != Z_OK) {
    return Error(Internal("gzip: inflateInit2 failed"));
  }
  std::string out;
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  char buf[16384];
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof(buf);
    rc = inflate(&zs, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      inflateEnd(&zs);
      return Error(InvalidArgument("gzip: corrupt or truncated data (zlib {})", rc));
    }
    const size_t n = sizeof(buf) - zs.avail_out;
    if (out.size() + n > max_size) {
      inflateEnd(&zs);
      return Error(ErrStatus(StatusCode::kResourceExhausted, "gzip: inflated data exceeds {} bytes",
                             max_size));
    }
    out.append(buf, n);
    if (rc == Z_OK && n == 0 && zs.avail_in == 0) {
      inflateEnd(&zs);
      return Error(InvalidArgument("gzip: truncated data"));
    }
  }
  inflateEnd(&zs);
  return out;
}

}  // namespace warpscope::base

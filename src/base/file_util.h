// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_BASE_FILE_UTIL_H_
#define WARPSCOPE_BASE_FILE_UTIL_H_

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace warpscope::base {

// Reads a whole file. Works for /proc files (size 0 in stat). `max_bytes` bounds the read.
Result<std::string> ReadFile(const std::string& path, size_t max_bytes = 64 << 20);
// Reads into `out` (reusing its capacity); returns false on any error. For hot paths.
bool ReadFileInto(const char* path, std::string& out);
Status WriteFile(const std::string& path, std::string_view data);
// Replaces `path` with `data` so that a crash at any moment leaves either the old or the new
// content: writes `path`.tmp, syncs it, renames it over `path` and syncs the directory.
Status WriteFileAtomically(const std::string& path, std::string_view data);
// Splits on any of `seps`, dropping empty pieces.
std::vector<std::string_view> SplitString(std::string_view s, std::string_view seps);
std::string_view TrimWhitespace(std::string_view s);
// Absolute path of the running executable's directory (from /proc/self/exe).
std::string ExecutableDir();

}  // namespace warpscope::base

#endif  // WARPSCOPE_BASE_FILE_UTIL_H_

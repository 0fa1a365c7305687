// SPDX-License-Identifier: Apache-2.0
// Bearer-token files (--auth-token-file): the server reads the token agents must send, the
// agent the token it sends. Both read them here, with the same checks.
#ifndef WARPSCOPE_BASE_TOKEN_FILE_H_
#define WARPSCOPE_BASE_TOKEN_FILE_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "base/status.h"

namespace warpscope::base {

// A token file holds more than a token beyond this size.
inline constexpr size_t kMaxTokenFileBytes = 4096;

// Reads the token in `path`: the file's content with surrounding whitespace (a trailing
// newline) removed. Errors, all naming `flag` (the setting, "--auth-token-file"), the file and
// the remedy:
//   - the file cannot be opened (kNotFound, kPermissionDenied, kUnavailable) or is not a
//     regular file (kInvalidArgument);
//   - it is larger than kMaxTokenFileBytes (kInvalidArgument);
//   - the token is empty, or has spaces, line breaks or control characters inside
//     (kInvalidArgument): it could not travel in an Authorization header;
//   - the group or other users have any access to it (kPermissionDenied): a secret readable by
//     others is no secret; `chmod 600` it.
// The permission check comes last, so a file that is wrong in content says so first.
[[nodiscard]] Result<std::string> ReadTokenFile(std::string_view flag, const std::string& path);

}  // namespace warpscope::base

#endif  // WARPSCOPE_BASE_TOKEN_FILE_H_

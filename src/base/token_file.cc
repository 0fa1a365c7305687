// SPDX-License-Identifier: Apache-2.0
#include "base/token_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "base/file_util.h"
#include "base/logging.h"

namespace warpscope::base {
namespace {

// Closes the descriptor on every return path.
class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser() { close(fd_); }
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;

 private:
  int fd_;
};

}  // namespace

Result<std::string> ReadTokenFile(std::string_view flag, const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    const StatusCode code = err == ENOENT   ? StatusCode::kNotFound
                            : err == EACCES ? StatusCode::kPermissionDenied
                                            : StatusCode::kUnavailable;
    return Error(ErrStatus(code,
                           "{} {}: cannot open it ({}); write the ingest token into it (a new "
                           "one: head -c 32 /dev/urandom | base64 > FILE; chmod 600 FILE)",
                           flag, path, ErrnoString(err)));
  }
  FdCloser closer(fd);
  // One descriptor for the checks and the read, so the file checked is the file read.
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    return Error(Unavailable("{} {}: cannot stat it ({})", flag, path, ErrnoString(errno)));
  }
  if (!S_ISREG(st.st_mode)) {
    return Error(
        InvalidArgument("{} {}: not a regular file; point {} at the file that holds "
                        "the token",
                        flag, path, flag));
  }
  std::string content;
  char buf[1024];
  while (content.size() <= kMaxTokenFileBytes) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      return Error(Unavailable("{} {}: cannot read it ({})", flag, path, ErrnoString(errno)));
    }
    if (n == 0) {
      break;
    }
    content.append(buf, static_cast<size_t>(n));
  }
  if (content.size() > kMaxTokenFileBytes) {
    return Error(
        InvalidArgument("{} {}: larger than {} bytes, more than a token; the file "
                        "must hold the token alone",
                        flag, path, kMaxTokenFileBytes));
  }
  std::string token(TrimWhitespace(content));
  if (token.empty()) {
    return Error(
        InvalidArgument("{} {}: the file is empty; write the ingest token into it", flag, path));
  }
  const bool clean = std::none_of(token.begin(), token.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u <= 0x20 || u == 0x7f;
  });
  if (!clean) {
    return Error(
        InvalidArgument("{} {}: the token has spaces, line breaks or control "
                        "characters; the file must hold the token alone",
                        flag, path));
  }
  if ((st.st_mode & 0077) != 0) {
    return Error(
        PermissionDenied("{} {} is readable or writable by other users (mode {:03o}): chmod 600 {}",
                         flag, path, st.st_mode & 0777, path));
  }
  return token;
}

}  // namespace warpscope::base

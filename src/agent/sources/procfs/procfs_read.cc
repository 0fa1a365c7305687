// SPDX-License-Identifier: Apache-2.0
#include "agent/sources/procfs/procfs_read.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace warpscope::agent::procfs {
namespace {

// Reads from `fd` until EOF, `capacity` bytes or an error. Returns 0 or errno.
int ReadAll(int fd, char* buf, size_t capacity, size_t& length) {
  length = 0;
  while (length < capacity) {
    ssize_t n = read(fd, buf + length, capacity - length);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) break;
    length += static_cast<size_t>(n);
  }
  return 0;
}

}  // namespace

int ReadFileBounded(const char* path, size_t max_bytes, std::string& out) {
  out.clear();
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  int err = 0;
  char chunk[16384];
  while (out.size() < max_bytes) {
    size_t want = std::min(sizeof(chunk), max_bytes - out.size());
    size_t got = 0;
    err = ReadAll(fd, chunk, want, got);
    if (err != 0) break;
    out.append(chunk, got);
    if (got < want) break;  // EOF
  }
  close(fd);
  return err;
}

int ReadFileAt(int dirfd, const char* relative, char* buf, size_t capacity, size_t& length) {
  length = 0;
  int fd = openat(dirfd, relative, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  int err = ReadAll(fd, buf, capacity, length);
  close(fd);
  return err;
}

std::string NormalizeRoot(std::string_view root) {
  while (!root.empty() && root.back() == '/') root.remove_suffix(1);
  return std::string(root);
}

bool IsVanishedErrno(int err) { return err == ENOENT || err == ESRCH; }

}  // namespace warpscope::agent::procfs

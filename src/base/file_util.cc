// SPDX-License-Identifier: Apache-2.0
#include "base/file_util.h"

#include <fcntl.h>
#include <limits.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "base/logging.h"

namespace warpscope::base {

bool ReadFileInto(const char* path, std::string& out) {
  out.clear();
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[16384];
  while (true) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      close(fd);
      return false;
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return true;
}

Result<std::string> ReadFile(const std::string& path, size_t max_bytes) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    StatusCode code = err == ENOENT   ? StatusCode::kNotFound
                      : err == EACCES ? StatusCode::kPermissionDenied
                                      : StatusCode::kUnavailable;
    return Error(ErrStatus(code, "open({}): {}", path, ErrnoString(err)));
  }
  std::string out;
  char buf[16384];
  while (true) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      close(fd);
      return Error(Unavailable("read({}): {}", path, ErrnoString(err)));
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > max_bytes) {
      close(fd);
      return Error(
          ErrStatus(StatusCode::kResourceExhausted, "{} is larger than {} bytes", path, max_bytes));
    }
  }
  close(fd);
  return out;
}

namespace {

// Writes all of `data` to `fd` (retrying short writes and EINTR); the errno of a failure.
int WriteAll(int fd, std::string_view data) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = write(fd, data.data() + off, data.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    off += static_cast<size_t>(n);
  }
  return 0;
}

}  // namespace

Status WriteFile(const std::string& path, std::string_view data) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Unavailable("open({}) for writing: {}", path, ErrnoString(errno));
  if (int err = WriteAll(fd, data); err != 0) {
    close(fd);
    return Unavailable("write({}): {}", path, ErrnoString(err));
  }
  if (close(fd) != 0) return Unavailable("close({}): {}", path, ErrnoString(errno));
  return OkStatus();
}

Status WriteFileAtomically(const std::string& path, std::string_view data) {
  const std::string temp = path + ".tmp";
  int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Unavailable("open({}) for writing: {}", temp, ErrnoString(errno));
  if (int err = WriteAll(fd, data); err != 0) {
    close(fd);
    unlink(temp.c_str());
    return Unavailable("write({}): {}", temp, ErrnoString(err));
  }
  int err = fsync(fd) == 0 ? 0 : errno;
  if (close(fd) != 0 && err == 0) err = errno;
  if (err != 0) {
    unlink(temp.c_str());
    return Unavailable("sync({}): {}", temp, ErrnoString(err));
  }
  if (rename(temp.c_str(), path.c_str()) != 0) {
    err = errno;
    unlink(temp.c_str());
    return Unavailable("rename({}, {}): {}", temp, path, ErrnoString(err));
  }
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  int dfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    fsync(dfd);  // best effort: the rename is already visible
    close(dfd);
  }
  return OkStatus();
}

std::vector<std::string_view> SplitString(std::string_view s, std::string_view seps) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    size_t j = s.find_first_of(seps, i);
    if (j == std::string_view::npos) j = s.size();
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

std::string_view TrimWhitespace(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::string ExecutableDir() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  std::string path(buf, static_cast<size_t>(n));
  auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

}  // namespace warpscope::base
